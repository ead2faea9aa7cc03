package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Resource, prompt and completion suites: extensions.mcp.resource, prompt
// and complete against the fixture, through the Go client and pikoctl.

// readSourceText reads a retained source whole through source.read.
func readSourceText(t testing.TB, d *daemon, id string) string {
	t.Helper()
	var b strings.Builder
	for off := int64(0); ; {
		var res contracts.SourceReadResult
		d.callInto(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: id, Offset: off}, &res)
		b.WriteString(res.Text)
		off += int64(len([]rune(res.Text)))
		if res.EOF || res.Text == "" {
			return b.String()
		}
	}
}

func readResource(t testing.TB, d *daemon, server, uri string) contracts.ResourceReadResult {
	t.Helper()
	var res contracts.ResourceReadResult
	d.callInto(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: server, Op: contracts.ResourceOpRead, URI: uri}, &res)
	if res.Server != server || res.URI != uri || res.Op != contracts.ResourceOpRead || res.OriginalResultSourceID == "" ||
		res.ReceiptID == "" || res.ReceiptKind != contracts.ReceiptResourceRead {
		t.Fatalf("read %s: %+v, want server, uri, source, and an mcp_resource_read receipt", uri, res)
	}
	return res
}

func contentsOf(t testing.TB, res contracts.ResourceReadResult) []contracts.ResourceContent {
	t.Helper()
	var out []contracts.ResourceContent
	if err := json.Unmarshal(res.Contents, &out); err != nil {
		t.Fatalf("contents %s: %v", res.Contents, err)
	}
	return out
}

// blobOf decodes the base64 of the retained read result's contents with
// uri.
func blobOf(t testing.TB, d *daemon, sourceID, uri string) []byte {
	t.Helper()
	var orig struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	text := readSourceText(t, d, sourceID)
	if err := json.Unmarshal([]byte(text), &orig); err != nil {
		t.Fatalf("the retained source is not the read result: %v\n%.300s", err, text)
	}
	for _, c := range orig.Contents {
		if c.URI == uri && c.Blob != nil {
			b, err := base64.StdEncoding.DecodeString(*c.Blob)
			if err != nil {
				t.Fatalf("the retained blob is not base64: %v", err)
			}
			return b
		}
	}
	t.Fatalf("the retained source has no blob for %s: %.300s", uri, text)
	return nil
}

func TestResources(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("rx", "--resource-bytes", "100000")))

	var list, templates contracts.ResourceListResult
	d.callInto(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: "rx"}, &list)
	d.callInto(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpTemplates}, &templates)
	if list.Op != contracts.ResourceOpList || len(list.Resources) != 5 || list.ResourceTemplates != nil || !list.Complete {
		t.Errorf("list: op %q, %d resources, templates %v, complete %v; want list, 5, none, true", list.Op, len(list.Resources), list.ResourceTemplates, list.Complete)
	}
	if templates.Op != contracts.ResourceOpTemplates || len(templates.ResourceTemplates) != 2 || templates.Resources != nil {
		t.Errorf("templates: op %q, %d templates, resources %v", templates.Op, len(templates.ResourceTemplates), templates.Resources)
	}

	t.Run("text", func(t *testing.T) {
		res := readResource(t, d, "rx", "fixture://resources/0002")
		c := contentsOf(t, res)
		if res.Truncated || len(c) != 1 || c[0].Text != "contents of resource 0002\n" || c[0].MimeType != "text/plain" {
			t.Errorf("read: truncated %v, contents %+v", res.Truncated, c)
		}
		var orig struct{ Contents []json.RawMessage }
		if err := json.Unmarshal([]byte(readSourceText(t, d, res.OriginalResultSourceID)), &orig); err != nil || len(orig.Contents) != 1 {
			t.Errorf("retained source: %v", err)
		}
	})

	t.Run("templated", func(t *testing.T) {
		c := contentsOf(t, readResource(t, d, "rx", "fixture://templates/0001/x%20y"))
		if len(c) != 1 || c[0].Text != "template 0001 read as fixture://templates/0001/x%20y\n" {
			t.Errorf("contents %+v", c)
		}
	})

	t.Run("long text cut", func(t *testing.T) {
		res := readResource(t, d, "rx", "fixture://big")
		c := contentsOf(t, res)
		if !res.Truncated || len(c) != 3 || !strings.HasPrefix(c[0].Text, "begin\n") || !strings.HasSuffix(c[2].Text, "end\n") ||
			!strings.Contains(c[1].Notice, "characters omitted") {
			t.Fatalf("truncated %v, %d contents, want head, notice, tail", res.Truncated, len(c))
		}
		if n := len(c[0].Text) + len(c[2].Text); n != 24_000 {
			t.Errorf("the preview keeps %d characters of text, want 24000", n)
		}
		whole := readSourceText(t, d, res.OriginalResultSourceID)
		var orig struct{ Contents []struct{ Text string } }
		if err := json.Unmarshal([]byte(whole), &orig); err != nil || len(orig.Contents) != 1 || len(orig.Contents[0].Text) != 100_000 ||
			!strings.HasSuffix(orig.Contents[0].Text, "end\n") {
			t.Errorf("the retained source does not hold the whole 100000 characters (%v)", err)
		}
	})

	t.Run("binary", func(t *testing.T) {
		res := readResource(t, d, "rx", "fixture://binary")
		c := contentsOf(t, res)
		if !res.Truncated || len(c) != 1 || c[0].BlobBytes == nil || *c[0].BlobBytes != 100_000 ||
			c[0].MimeType != "application/octet-stream" || c[0].Text != "" || strings.Contains(string(res.Contents), "AAECAw") {
			t.Fatalf("preview %s, want the type and size only", res.Contents)
		}
		b := blobOf(t, d, res.OriginalResultSourceID, "fixture://binary")
		if len(b) != 100_000 || b[0] != 0 || b[255] != 255 || b[256] != 0 || b[99_999] != byte(99_999%256) {
			t.Errorf("the retained blob decodes to %d bytes, not the 100000 served", len(b))
		}
	})

	t.Run("mixed", func(t *testing.T) {
		c := contentsOf(t, readResource(t, d, "rx", "fixture://mixed"))
		if len(c) != 2 || c[0].Text != "the text part\n" || c[1].BlobBytes == nil || *c[1].BlobBytes != 100_000 || c[1].MimeType != "image/png" {
			t.Errorf("contents %+v", c)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			params contracts.ResourceParams
			reason string
		}{
			{contracts.ResourceParams{Op: contracts.ResourceOpList}, "missing_server"},
			{contracts.ResourceParams{Server: "nope"}, "unknown_server"},
			{contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpRead}, "missing_uri"},
			{contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpRead, URI: "file:///etc/passwd"}, "unknown_resource"},
			{contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpRead, URI: "fixture://templates/0001/a/b"}, "unknown_resource"},
			{contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpList, URI: "fixture://big"}, "unexpected_uri"},
			{contracts.ResourceParams{Server: "rx", Op: "delete"}, "invalid_op"},
			// rx's resources capability has no subscribe (see
			// TestSubscribeCLI in modern_test.go for a server that has).
			{contracts.ResourceParams{Server: "rx", Op: contracts.ResourceOpSubscribe, URI: "fixture://big"}, "subscribe_unsupported"},
		} {
			we := d.callErr(t, contracts.MethodMCPResource, tc.params)
			if we.Reason() != tc.reason {
				t.Errorf("%+v: %v (reason %q), want %s", tc.params, we, we.Reason(), tc.reason)
			}
		}
	})

	t.Run("receipts", func(t *testing.T) {
		var rr contracts.ReceiptsResult
		d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Server: "rx"}, &rr)
		read := map[string]contracts.ReceiptInfo{}
		for _, r := range rr.Receipts {
			if r.Kind == contracts.ReceiptResourceRead {
				read[r.Tool] = r
			}
		}
		r, ok := read["fixture://binary"]
		if !ok || r.Status != contracts.CallCompleted || r.SourceID == "" || len(r.ArgumentsDigest) != 64 {
			t.Errorf("receipts of reads %+v, want one for fixture://binary with its source", read)
		}
	})
}

func TestPrompts(t *testing.T) {
	t.Parallel()
	secret := newCanary(t, false)
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("px", "--rich-prompts", "--completions", "--leak-env", "FX_SECRET")))
	storeSecret(t, d, "px", map[string]any{"env": map[string]string{"FX_SECRET": secret}})

	var list contracts.PromptListResult
	d.callInto(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: "px"}, &list)
	var names []string
	for _, p := range list.Prompts {
		var def struct{ Name string }
		_ = json.Unmarshal(p, &def)
		names = append(names, def.Name)
	}
	slices.Sort(names)
	if want := []string{"briefing", "hostile", "prompt-0001", "prompt-0002"}; !slices.Equal(names, want) || !list.Complete {
		t.Errorf("prompts %q complete %v, want %q", names, list.Complete, want)
	}

	get := func(name, args string) contracts.PromptGetResult {
		t.Helper()
		var res contracts.PromptGetResult
		d.callInto(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: "px", Op: contracts.PromptOpGet, Name: name,
			Arguments: json.RawMessage(args)}, &res)
		if res.Evidence != contracts.PromptEvidence || res.OriginalResultSourceID == "" || res.ReceiptKind != contracts.ReceiptPromptGet {
			t.Fatalf("get %s: %+v, want evidence, a source and an mcp_prompt_get receipt", name, res)
		}
		return res
	}
	type message struct {
		Role    string
		Content struct{ Type, Text, MimeType string }
	}
	messages := func(res contracts.PromptGetResult) []message {
		var m []message
		if err := json.Unmarshal(res.Messages, &m); err != nil {
			t.Fatalf("messages %s: %v", res.Messages, err)
		}
		return m
	}

	res := get("briefing", `{"topic":"owls","tone":"dry"}`)
	m := messages(res)
	if res.Description != "A briefing on owls" || len(m) != 2 || m[0].Role != "user" || m[0].Content.Text != "Brief me on owls in a dry tone." ||
		m[1].Role != "assistant" || res.Truncated {
		t.Errorf("briefing: %+v", res)
	}

	// A missing required argument, an unknown one and a non-string are
	// refused, all at once, before anything is sent.
	we := d.callErr(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: "px", Op: contracts.PromptOpGet, Name: "briefing",
		Arguments: json.RawMessage(`{"tone":3,"mood":"x"}`)})
	var fields []string
	if we.Data != nil {
		for _, p := range we.Data.Problems {
			fields = append(fields, p.Field)
		}
	}
	if we.Reason() != "invalid_prompt_arguments" || !slices.Equal(fields, []string{`arguments."mood"`, `arguments."tone"`, `arguments."topic"`}) {
		t.Errorf("bad arguments: %v (reason %q, problems %q)", we, we.Reason(), fields)
	}

	// The hostile prompt's messages come back as safe, redacted evidence.
	res = get("hostile", "")
	raw := string(res.Messages) + res.Description
	for _, bad := range []string{"\x1b", `\u001b`, "\u202e", `\u202e`, "\u200b", `\u200b`, secret, "cnry-"} {
		if strings.Contains(raw, bad) {
			t.Errorf("%q reached the caller: %s", bad, raw)
		}
	}
	m = messages(res)
	if len(m) != 2 || !strings.Contains(m[0].Content.Text, `\u{001B}[2J`) || !strings.Contains(m[0].Content.Text, "secret=[REDACTED] end") ||
		m[1].Content.Type != "image" {
		t.Errorf("hostile messages %s", res.Messages)
	}
	if src := readSourceText(t, d, res.OriginalResultSourceID); strings.Contains(src, "cnry-") || !strings.Contains(src, "[REDACTED]") {
		t.Errorf("the retained prompt was not redacted: %.300s", src)
	}

	// Completion, with the arguments entered so far as context.
	complete := func(p contracts.CompleteParams) contracts.CompleteResult {
		t.Helper()
		p.Server = "px"
		var res contracts.CompleteResult
		d.callInto(t, contracts.MethodMCPComplete, p, &res)
		return res
	}
	if c := complete(contracts.CompleteParams{Prompt: "briefing", Argument: "topic", Value: "al"}); !slices.Equal(c.Values, []string{"alpha", "alpine"}) {
		t.Errorf("complete topic: %+v", c)
	}
	if c := complete(contracts.CompleteParams{Prompt: "briefing", Argument: "tone", Arguments: map[string]string{"topic": "owls"}}); !slices.Equal(c.Values, []string{"owls-calm", "owls-loud"}) {
		t.Errorf("complete tone with context: %+v", c)
	}
	if c := complete(contracts.CompleteParams{Template: "fixture://templates/0002/{id}", Argument: "id", Value: "1"}); !slices.Equal(c.Values, []string{"1", "12"}) {
		t.Errorf("complete template id: %+v", c)
	}
	if c := complete(contracts.CompleteParams{Prompt: "briefing", Argument: "topic", Value: "many"}); len(c.Values) != 100 || c.Omitted != 50 || !c.HasMore {
		t.Errorf("complete past the cap: %d values, omitted %d, hasMore %v", len(c.Values), c.Omitted, c.HasMore)
	}
	if we := d.callErr(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: "px", Prompt: "briefing", Argument: "colour"}); we.Reason() != "invalid_completion_arguments" {
		t.Errorf("completing an undeclared argument: %v", we)
	}
}

// TestResourcesPromptsSwitchedOff: "resources": false and "prompts":
// false refuse every op of the server, over the socket and through
// pikoctl, and the catalog shows none of them.
func TestResourcesPromptsSwitchedOff(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("nores", "--completions").with("resources", false),
		stdioFixture("noprompts", "--completions").with("prompts", false)))

	for _, tc := range []struct {
		method string
		params any
		reason string
	}{
		{contracts.MethodMCPResource, contracts.ResourceParams{Server: "nores"}, "resources_disabled"},
		{contracts.MethodMCPResource, contracts.ResourceParams{Server: "nores", Op: contracts.ResourceOpTemplates}, "resources_disabled"},
		{contracts.MethodMCPResource, contracts.ResourceParams{Server: "nores", Op: contracts.ResourceOpRead, URI: "fixture://resources/0001"}, "resources_disabled"},
		{contracts.MethodMCPComplete, contracts.CompleteParams{Server: "nores", Template: "fixture://templates/0001/{id}", Argument: "id"}, "resources_disabled"},
		{contracts.MethodMCPPrompt, contracts.PromptParams{Server: "noprompts"}, "prompts_disabled"},
		{contracts.MethodMCPPrompt, contracts.PromptParams{Server: "noprompts", Op: contracts.PromptOpGet, Name: "prompt-0001"}, "prompts_disabled"},
		{contracts.MethodMCPComplete, contracts.CompleteParams{Server: "noprompts", Prompt: "prompt-0001", Argument: "topic"}, "prompts_disabled"},
	} {
		we := d.callErr(t, tc.method, tc.params)
		if we.Reason() != tc.reason || we.Code != 1005 || we.Data.Hint == "" {
			t.Errorf("%s %+v: %v (code %d, reason %q), want 1005 %s with a hint", tc.method, tc.params, we, we.Code, we.Reason(), tc.reason)
		}
	}
	if st := serverStatus(t, d, "nores"); st.State == contracts.StateConnected {
		t.Errorf("a refused request connected nores")
	}
	for _, args := range [][]string{{"mcp", "resources", "nores"}, {"mcp", "read", "nores", "fixture://resources/0001"},
		{"mcp", "prompts", "noprompts"}, {"mcp", "prompt", "noprompts", "prompt-0001"}} {
		_, stderr, code := runCtl(t, d, "", args...)
		if code != 1 || !strings.Contains(stderr, "switched off by its settings") || !strings.Contains(stderr, "hint: set ") {
			t.Errorf("pikoctl %v: exit %d, stderr %q; want 1 and the reason", args, code, stderr)
		}
	}
	var cat contracts.CatalogResult
	d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "nores"}, &cat)
	if len(cat.Resources)+len(cat.ResourceTemplates) != 0 || len(cat.Prompts) != 2 {
		t.Errorf("nores catalog: %d resources, %d templates, %d prompts; want none, none, 2", len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts))
	}
	d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "noprompts"}, &cat)
	if len(cat.Prompts) != 0 || len(cat.Resources) != 2 {
		t.Errorf("noprompts catalog: %d resources, %d prompts; want 2, none", len(cat.Resources), len(cat.Prompts))
	}
}

func TestResourcesCLI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("cx", "--resource-bytes", "30000", "--rich-prompts", "--completions")))
	ctl := func(stdin string, args ...string) (string, string) {
		t.Helper()
		stdout, stderr, code := runCtl(t, d, stdin, args...)
		if code != 0 {
			t.Fatalf("pikoctl %v: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
		return stdout, stderr
	}

	out, _ := ctl("", "mcp", "resources", "cx")
	for _, want := range []string{"RESOURCE", "fixture://resources/0001", "fixture://binary", "application/octet-stream", "TEMPLATE", "fixture://templates/0002/{id}"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp resources lacks %q:\n%s", want, out)
		}
	}
	out, _ = ctl("", "--json", "mcp", "resources", "cx")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var l1, l2 contracts.ResourceListResult
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &l1) != nil || json.Unmarshal([]byte(lines[1]), &l2) != nil ||
		len(l1.Resources) != 5 || len(l2.ResourceTemplates) != 2 {
		t.Errorf("--json mcp resources: %s", out)
	}

	out, errOut := ctl("", "mcp", "read", "cx", "fixture://resources/0001")
	if out != "contents of resource 0001\n" || !strings.Contains(errOut, "receipt rcpt_") {
		t.Errorf("mcp read: stdout %q stderr %q", out, errOut)
	}
	out, errOut = ctl("", "mcp", "read", "cx", "fixture://big")
	if !strings.HasPrefix(out, "begin\n") || !strings.HasSuffix(out, "end\n") || !strings.Contains(out, "characters omitted") ||
		!strings.Contains(errOut, "truncated: the whole result is source src_") {
		t.Errorf("mcp read big: stderr %q, stdout %d bytes", errOut, len(out))
	}
	out, _ = ctl("", "mcp", "read", "cx", "fixture://binary")
	if !strings.Contains(out, "binary contents: fixture://binary, application/octet-stream, 30000 bytes") ||
		!strings.Contains(out, "pikoctl mcp source src_") || !strings.Contains(out, "base64 -d") {
		t.Errorf("mcp read binary: %q", out)
	}
	out, _ = ctl("", "--json", "mcp", "read", "cx", "fixture://binary")
	var rr contracts.ResourceReadResult
	if json.Unmarshal([]byte(out), &rr) != nil || rr.OriginalResultSourceID == "" {
		t.Fatalf("--json mcp read: %s", out)
	}
	// What the hint says gets the bytes: the blob from the retained source.
	src, _ := ctl("", "mcp", "source", rr.OriginalResultSourceID)
	var orig struct{ Contents []struct{ Blob string } }
	if err := json.Unmarshal([]byte(src), &orig); err != nil || len(orig.Contents) != 1 {
		t.Fatalf("mcp source: %v", err)
	}
	if b, err := base64.StdEncoding.DecodeString(orig.Contents[0].Blob); err != nil || len(b) != 30000 {
		t.Errorf("the blob from mcp source decodes to %d bytes (%v), want 30000", len(b), err)
	}

	out, _ = ctl("", "mcp", "prompts", "cx")
	if !strings.Contains(out, "briefing") || !strings.Contains(out, "topic*, tone") {
		t.Errorf("mcp prompts:\n%s", out)
	}
	want := "Brief me on owls in a loud tone."
	out, _ = ctl("", "mcp", "prompt", "cx", "briefing", "--arg", "topic=owls", "--arg", "tone=loud")
	if !strings.Contains(out, want) || !strings.Contains(out, "[user]") || !strings.Contains(out, "evidence: ") {
		t.Errorf("mcp prompt --arg:\n%s", out)
	}
	out, _ = ctl(`{"topic":"owls","tone":"loud"}`, "mcp", "prompt", "cx", "briefing")
	if !strings.Contains(out, want) {
		t.Errorf("mcp prompt with JSON on stdin:\n%s", out)
	}
	out, _ = ctl("", "--json", "mcp", "prompt", "cx", "briefing", "--arg", "topic=owls")
	var pr contracts.PromptGetResult
	if json.Unmarshal([]byte(out), &pr) != nil || pr.Evidence == "" || !strings.Contains(string(pr.Messages), "plain tone") {
		t.Errorf("--json mcp prompt: %s", out)
	}
	out, _ = ctl("", "mcp", "prompt", "cx", "hostile")
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `\u{001B}[2J`) {
		t.Errorf("mcp prompt hostile printed %q", out)
	}
	stdout, stderr, code := runCtl(t, d, "", "mcp", "prompt", "cx", "briefing", "--arg", "tone=loud")
	if code != 1 || !strings.Contains(stderr, `arguments."topic": required by the prompt`) || stdout != "" {
		t.Errorf("mcp prompt without topic: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := runCtl(t, d, "", "mcp", "prompt", "cx", "briefing", "--arg", "topic"); code != 2 || !strings.Contains(stderr, "want NAME=VALUE") {
		t.Errorf("--arg without '=': exit %d, stderr %q", code, stderr)
	}

	out, _ = ctl("", "mcp", "complete", "cx", "--prompt", "briefing", "tone", "owls-c", "--arg", "topic=owls")
	if out != "owls-calm\n" {
		t.Errorf("mcp complete --prompt: %q", out)
	}
	out, _ = ctl("", "mcp", "complete", "cx", "--template", "fixture://templates/0001/{id}", "id", "")
	if out != "1\n2\n3\n12\n" {
		t.Errorf("mcp complete --template: %q", out)
	}
	out, errOut = ctl("", "mcp", "complete", "cx", "--prompt", "briefing", "topic", "many")
	if strings.Count(out, "\n") != 100 || !strings.Contains(errOut, "50 left out") {
		t.Errorf("mcp complete past the cap: %d lines, stderr %q", strings.Count(out, "\n"), errOut)
	}
	out, _ = ctl("", "--json", "mcp", "complete", "cx", "--prompt", "briefing", "topic", "a")
	var cr contracts.CompleteResult
	if json.Unmarshal([]byte(out), &cr) != nil || !slices.Equal(cr.Values, []string{"alpha", "alpine"}) {
		t.Errorf("--json mcp complete: %s", out)
	}
	if _, stderr, code := runCtl(t, d, "", "mcp", "complete", "cx", "topic", "a"); code != 2 || !strings.Contains(stderr, "exactly one of --prompt") {
		t.Errorf("complete without --prompt or --template: exit %d, stderr %q", code, stderr)
	}
}

// TestResourcesModernHeaders: on a 2026-07-28 connection, resources/read
// and prompts/get carry Mcp-Name (the URI, the prompt's name), and a get
// refused for its arguments sends nothing.
func TestResourcesModernHeaders(t *testing.T) {
	t.Parallel()
	headers := filepath.Join(t.TempDir(), "headers.log")
	f := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "modern", "--rich-prompts", "--header-log", headers)
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, remoteFixture("mx", "http", f.url)))
	if st := connectServer(t, d, "mx"); st.ProtocolVersion != contracts.ProtocolVersions[0] {
		t.Fatalf("protocol %s, want %s", st.ProtocolVersion, contracts.ProtocolVersions[0])
	}
	log := func() string {
		b, err := os.ReadFile(headers)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	c := contentsOf(t, readResource(t, d, "mx", "fixture://templates/0001/abc"))
	if len(c) != 1 || !strings.Contains(c[0].Text, "read as fixture://templates/0001/abc") {
		t.Errorf("modern read: %+v", c)
	}
	var pr contracts.PromptGetResult
	d.callInto(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: "mx", Op: contracts.PromptOpGet, Name: "briefing",
		Arguments: json.RawMessage(`{"topic":"bats"}`)}, &pr)
	if !strings.Contains(string(pr.Messages), "Brief me on bats") {
		t.Errorf("modern prompt: %s", pr.Messages)
	}
	text := log()
	for _, want := range []string{"Mcp-Method: resources/read\n", "Mcp-Name: fixture://templates/0001/abc\n", "Mcp-Method: prompts/get\n", "Mcp-Name: briefing\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the server saw no %q; header log:\n%s", want, text)
		}
	}
	gets := strings.Count(text, "Mcp-Method: prompts/get\n")
	d.callErr(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: "mx", Op: contracts.PromptOpGet, Name: "briefing"})
	d.callErr(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: "mx", Op: contracts.ResourceOpRead, URI: "https://example.com/"})
	// Another request after the refused ones, so the log is known to be
	// written up to here.
	readResource(t, d, "mx", "fixture://resources/0001")
	text = log()
	if n := strings.Count(text, "Mcp-Method: prompts/get\n"); n != gets {
		t.Errorf("a refused prompt get reached the server (%d gets, want %d)", n, gets)
	}
	if strings.Contains(text, "example.com") || bytes.Count([]byte(text), []byte("Mcp-Method: resources/read\n")) != 2 {
		t.Errorf("a refused read reached the server; header log:\n%s", text)
	}
}
