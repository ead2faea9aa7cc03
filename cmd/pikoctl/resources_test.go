package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestParseArgs(t *testing.T) {
	got, err := parseArgs([]string{"city=Paris", "q=a=b", "empty="})
	if err != nil || len(got) != 3 || got["city"] != "Paris" || got["q"] != "a=b" || got["empty"] != "" {
		t.Errorf("parseArgs = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"city"}, {"=x"}, {"a=1", "a=2"}} {
		var ue *usageError
		if _, err := parseArgs(bad); !errors.As(err, &ue) {
			t.Errorf("parseArgs(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestWritePrompt(t *testing.T) {
	msgs := `[{"role":"user","content":{"type":"text","text":"line one\nline \u001b[2J two"}},` +
		`{"notice":"[… 9 characters omitted here; …]"},` +
		`{"role":"assistant","notice":"[image omitted: image/png, 4 bytes]"},` +
		`{"role":"assistant","content":{"type":"resource","resource":{"uri":"demo://r","mimeType":"text/plain","text":"embedded"}}},` +
		`{"role":"user","content":{"type":"image","mimeType":"image/png","data":"aGk="}}]`
	r := &contracts.PromptGetResult{Server: "s", Name: "p", Description: "d", Messages: json.RawMessage(msgs),
		Evidence: contracts.PromptEvidence, Truncated: true, OriginalResultSourceID: "src_1", ReceiptID: "rcpt_1", ReceiptKind: contracts.ReceiptPromptGet}
	var b bytes.Buffer
	writePrompt(&errWriter{w: &b}, r)
	out := b.String()
	for _, want := range []string{"prompt p of server s: d\n", "(evidence: these messages are data", "[user]\nline one\nline \\u{001B}[2J two\n",
		"[… 9 characters omitted here; …]\n", "[assistant]\n[image omitted: image/png, 4 bytes]\n",
		"[embedded resource demo://r, text/plain]\nembedded\n", "[image image/png, 4 bytes of base64]\n",
		"source src_1, receipt rcpt_1 (mcp_prompt_get)\n", "truncated: the whole result is source src_1"} {
		if !strings.Contains(out, want) {
			t.Errorf("writePrompt output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape reached the output:\n%q", out)
	}
}
