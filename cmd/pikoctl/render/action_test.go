package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// A review shows who asked before what is sent, the arguments line by
// line as sent, what the approval is bound to and the digest; a server's
// escape sequences in any field never reach the terminal.
func TestReviewWords(t *testing.T) {
	r := contracts.ActionReview{
		ActionSummary: contracts.ActionSummary{ID: "act_1", State: contracts.ActionFailed, NotSent: true, Server: "fx",
			Kind: contracts.ReceiptTaskCreate, Advice: "prepare it again"},
		ToolName:        "wr\x1b[2Jite",
		ToolDescription: "Writes.\nTwo lines.",
		ArgumentsText:   "{\n  \"a\": \"\x1b]0;pwned\x07\"\n}",
		Digest:          "0123456789abcdef",
		Fingerprints:    contracts.Fingerprints{Settings: "aaaaaaaaaaaaaaaaaaaa", ConnectionGeneration: 3, CredentialGeneration: 1, Tool: "bbbbbbbbbbbbbbbbbbbb"},
	}
	got := Review(r)
	for _, want := range []string{
		"action:    act_1 (failed (not sent))",
		"sends:     tools/call as a task (task-augmented): the server creates a task that runs on after the call",
		"described: Writes.\nTwo lines.",
		"arguments (sent exactly as shown):",
		"  {",
		"}",
		"bound to:  settings aaaaaaaaaaa…, connection 3, credentials 1, tool definition bbbbbbbbbbb…",
		"digest:    0123456789abcdef",
		"advice:    prepare it again",
	} {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.TrimSpace(l) == strings.TrimSpace(want) }) {
			t.Errorf("no line %q in the review:\n%s", want, strings.Join(got, "\n"))
		}
	}
	asked, args := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, "asked by:") }), slices.Index(got, "arguments (sent exactly as shown):")
	if asked < 0 || asked > args {
		t.Errorf("who asked is not shown before the arguments:\n%s", strings.Join(got, "\n"))
	}
	for _, l := range got {
		if strings.ContainsAny(l, "\x1b\x07") {
			t.Errorf("a review line holds a control character: %q", l)
		}
	}
}

func TestCallStatus(t *testing.T) {
	for _, c := range []struct {
		r    contracts.CallResult
		want string
	}{
		{contracts.CallResult{Status: contracts.CallCompleted, ReceiptID: "rcpt_1", ReceiptKind: contracts.ReceiptRead}, "status: completed, receipt rcpt_1 (mcp_read)"},
		{contracts.CallResult{Status: contracts.CallCompleted, IsError: true}, "status: completed (the tool reported an error)"},
		{contracts.CallResult{Status: contracts.CallFailed, NotSent: true}, "status: failed (not sent)"},
	} {
		if got := CallStatus(c.r); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
