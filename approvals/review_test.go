package approvals

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReviewShowsHiddenCharacters: what the owner reads before approving
// renders every character that could hide or reorder text, in the name,
// the description and the arguments, and keeps the description's lines.
func TestReviewShowsHiddenCharacters(t *testing.T) {
	r := Review(Action{
		Server: "fx", Tool: "del\u202Eete\n", State: "prepared",
		ToolDescription: "first line\n\x1b[2Jsecond line",
		Arguments:       json.RawMessage("{\"path\":\"a\u200Bb\",\"x\":1}"),
	})
	for what, s := range map[string]string{"tool name": r.ToolName, "summary tool": r.Tool, "description": r.ToolDescription, "arguments": r.ArgumentsText} {
		if strings.ContainsAny(s, "\u202E\u200B\x1b") {
			t.Errorf("%s %q holds a hidden character", what, s)
		}
	}
	if r.ToolName != `del\u{202E}ete\u{000A}` {
		t.Errorf("tool name %q", r.ToolName)
	}
	if r.ToolDescription != "first line\n\\u{001B}[2Jsecond line" {
		t.Errorf("description %q", r.ToolDescription)
	}
	if !strings.Contains(r.ArgumentsText, `a\u{200B}b`) || !strings.Contains(r.ArgumentsText, "\n") {
		t.Errorf("arguments text %q", r.ArgumentsText)
	}
}
