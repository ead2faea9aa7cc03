//go:build linux

package mcpclient

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func reason(err error) string { return contracts.ToError(err).Reason() }

// TestReadResource reads what the fixture lists and templates, and checks
// that anything else is refused before it is sent.
func TestReadResource(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--resource-bytes", "100")})

	list, err := h.sup.Resources(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 5 || len(list.Templates) != 2 || !list.Complete {
		t.Fatalf("Resources = %d resources, %d templates, complete %v; want 5, 2, true", len(list.Resources), len(list.Templates), list.Complete)
	}

	raw, err := h.sup.ReadResource(ctx, "fx", "fixture://resources/0001")
	if err != nil {
		t.Fatalf("reading a listed resource: %v", err)
	}
	var res struct {
		Contents []struct{ URI, MimeType, Text, Blob string }
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "contents of resource 0001\n" {
		t.Errorf("read = %s (%v)", raw, err)
	}
	raw, err = h.sup.ReadResource(ctx, "fx", "fixture://templates/0002/abc")
	if err != nil {
		t.Fatalf("reading a templated resource: %v", err)
	}
	if !strings.Contains(string(raw), "template 0002 read as fixture://templates/0002/abc") {
		t.Errorf("templated read = %s", raw)
	}
	raw, err = h.sup.ReadResource(ctx, "fx", "fixture://binary")
	if err != nil || !strings.Contains(string(raw), `"blob":"AAECAwQF`) {
		t.Errorf("binary read = %.200s (%v)", raw, err)
	}

	for _, tc := range []struct{ uri, reason string }{
		{"", "missing_uri"},
		{"fixture://resources/9999", "unknown_resource"},
		{"fixture://templates/0001/a/b", "unknown_resource"},
		{"file:///etc/passwd", "unknown_resource"},
		{"https://example.com/", "unknown_resource"},
		{"fixture://\xff", "invalid_uri"},
	} {
		if _, err := h.sup.ReadResource(ctx, "fx", tc.uri); reason(err) != tc.reason {
			t.Errorf("ReadResource(%q) = %v, want reason %s", tc.uri, err, tc.reason)
		}
	}
}

func TestGetPrompt(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--rich-prompts")})

	out, err := h.sup.GetPrompt(ctx, PromptRequest{Server: "fx", Name: "briefing", Arguments: json.RawMessage(`{"tone":"dry","topic":"owls"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Arguments) != `{"tone":"dry","topic":"owls"}` || !strings.Contains(string(out.Result), "Brief me on owls in a dry tone.") {
		t.Errorf("arguments %s, result %s", out.Arguments, out.Result)
	}
	for _, tc := range []struct {
		name, args, reason string
	}{
		{"briefing", `{"tone":"dry"}`, "invalid_prompt_arguments"},
		{"briefing", `{"topic":1}`, "invalid_prompt_arguments"},
		{"briefing", `{"topic":"a","extra":"b"}`, "invalid_prompt_arguments"},
		{"briefing", `["topic"]`, "arguments_not_object"},
		{"briefing", `{"topic":"a","Topic":"b"}`, "ambiguous_keys"},
		{"brefing", `{}`, "unknown_prompt"},
		{"", `{}`, "missing_prompt"},
	} {
		_, err := h.sup.GetPrompt(ctx, PromptRequest{Server: "fx", Name: tc.name, Arguments: json.RawMessage(tc.args)})
		if reason(err) != tc.reason {
			t.Errorf("GetPrompt(%q, %s) = %v, want reason %s", tc.name, tc.args, err, tc.reason)
		}
	}
	// The hint of an unknown prompt suggests the close one.
	_, err = h.sup.GetPrompt(ctx, PromptRequest{Server: "fx", Name: "brefing"})
	if we := contracts.ToError(err); we.Data == nil || !strings.Contains(we.Data.Hint, `did you mean "briefing"`) {
		t.Errorf("unknown prompt: %+v", we)
	}
}

func TestComplete(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--completions", "--rich-prompts"), h.stdio("plain")})

	got := func(req CompleteRequest) []string {
		t.Helper()
		out, err := h.sup.Complete(ctx, req)
		if err != nil {
			t.Fatalf("Complete(%+v): %v", req, err)
		}
		return out.Values
	}
	if v := got(CompleteRequest{Server: "fx", Prompt: "briefing", Argument: "topic", Value: "al"}); !slices.Equal(v, []string{"alpha", "alpine"}) {
		t.Errorf("topic al = %q", v)
	}
	// The context reaches the server: tone depends on the topic entered.
	if v := got(CompleteRequest{Server: "fx", Prompt: "briefing", Argument: "tone", Context: map[string]string{"topic": "owls"}}); !slices.Equal(v, []string{"owls-calm", "owls-loud"}) {
		t.Errorf("tone with topic owls = %q", v)
	}
	if v := got(CompleteRequest{Server: "fx", Template: "fixture://templates/0001/{id}", Argument: "id", Value: "1"}); !slices.Equal(v, []string{"1", "12"}) {
		t.Errorf("template id 1 = %q", v)
	}
	out, err := h.sup.Complete(ctx, CompleteRequest{Server: "fx", Prompt: "briefing", Argument: "topic", Value: "many"})
	if err != nil || len(out.Values) != contracts.MaxCompletionValues || out.Omitted != 50 || !out.HasMore {
		t.Errorf("150 values: %+v (%v), want 100 kept, 50 omitted, hasMore", out, err)
	}
	out, err = h.sup.Complete(ctx, CompleteRequest{Server: "fx", Prompt: "briefing", Argument: "topic", Value: "odd"})
	if err != nil || !slices.Equal(out.Values, []string{`odd\u{001B}[2Jvalue\u{000A}line`, "odd-ok"}) || out.Omitted != 1 {
		t.Errorf("odd values: %+v (%v)", out, err)
	}

	for _, tc := range []struct {
		req    CompleteRequest
		reason string
	}{
		{CompleteRequest{Server: "fx", Argument: "topic"}, "invalid_reference"},
		{CompleteRequest{Server: "fx", Prompt: "briefing", Template: "fixture://templates/0001/{id}", Argument: "topic"}, "invalid_reference"},
		{CompleteRequest{Server: "fx", Prompt: "briefing"}, "missing_argument"},
		{CompleteRequest{Server: "fx", Prompt: "nope", Argument: "topic"}, "unknown_prompt"},
		{CompleteRequest{Server: "fx", Template: "fixture://templates/9/{id}", Argument: "id"}, "unknown_template"},
		{CompleteRequest{Server: "fx", Prompt: "briefing", Argument: "colour"}, "invalid_completion_arguments"},
		{CompleteRequest{Server: "fx", Template: "fixture://templates/0001/{id}", Argument: "id", Context: map[string]string{"other": "x"}}, "invalid_completion_arguments"},
		{CompleteRequest{Server: "plain", Prompt: "prompt-0001", Argument: "topic"}, "completions_not_offered"},
	} {
		if _, err := h.sup.Complete(ctx, tc.req); reason(err) != tc.reason {
			t.Errorf("Complete(%+v) = %v, want reason %s", tc.req, err, tc.reason)
		}
	}
}

// TestFeaturesSwitchedOff checks that "resources": false and "prompts":
// false refuse every request before anything connects, and keep the
// catalog empty of them.
func TestFeaturesSwitchedOff(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	off := false
	noRes := h.stdio("nores", "--completions")
	noRes.Resources = &off
	noPrompts := h.stdio("noprompts", "--completions")
	noPrompts.Prompts = &off
	h.sup.Apply([]contracts.ServerSettings{noRes, noPrompts})

	if _, err := h.sup.Resources(ctx, "nores"); reason(err) != "resources_disabled" {
		t.Errorf("Resources = %v, want resources_disabled", err)
	}
	if st := h.status("nores"); st.State != contracts.StateIdle {
		t.Errorf("a refused request connected the server: state %s", st.State)
	}
	if _, err := h.sup.ReadResource(ctx, "nores", "fixture://resources/0001"); reason(err) != "resources_disabled" {
		t.Errorf("ReadResource = %v, want resources_disabled", err)
	}
	if _, err := h.sup.Complete(ctx, CompleteRequest{Server: "nores", Template: "fixture://templates/0001/{id}", Argument: "id"}); reason(err) != "resources_disabled" {
		t.Errorf("template Complete = %v, want resources_disabled", err)
	}
	if _, err := h.sup.Prompts(ctx, "noprompts"); reason(err) != "prompts_disabled" {
		t.Errorf("Prompts = %v, want prompts_disabled", err)
	}
	if _, err := h.sup.GetPrompt(ctx, PromptRequest{Server: "noprompts", Name: "prompt-0001"}); reason(err) != "prompts_disabled" {
		t.Errorf("GetPrompt = %v, want prompts_disabled", err)
	}
	if _, err := h.sup.Complete(ctx, CompleteRequest{Server: "noprompts", Prompt: "prompt-0001", Argument: "topic"}); reason(err) != "prompts_disabled" {
		t.Errorf("prompt Complete = %v, want prompts_disabled", err)
	}
	// The other half still works, and the catalog hides what is off.
	if _, err := h.sup.GetPrompt(ctx, PromptRequest{Server: "nores", Name: "prompt-0001"}); err != nil {
		t.Errorf("GetPrompt on nores: %v", err)
	}
	if _, err := h.sup.ReadResource(ctx, "noprompts", "fixture://resources/0001"); err != nil {
		t.Errorf("ReadResource on noprompts: %v", err)
	}
	c1, err := h.sup.Catalog(ctx, "nores")
	if err != nil || len(c1.Resources)+len(c1.ResourceTemplates) != 0 || len(c1.Prompts) == 0 {
		t.Errorf("nores catalog: %d resources, %d templates, %d prompts (%v)", len(c1.Resources), len(c1.ResourceTemplates), len(c1.Prompts), err)
	}
	c2, err := h.sup.Catalog(ctx, "noprompts")
	if err != nil || len(c2.Prompts) != 0 || len(c2.Resources) == 0 {
		t.Errorf("noprompts catalog: %d resources, %d prompts (%v)", len(c2.Resources), len(c2.Prompts), err)
	}
}
