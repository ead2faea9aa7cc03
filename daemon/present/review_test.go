package present

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// TestReviewShowsHiddenCharacters: what the owner reads before approving
// renders every character that could hide or reorder text, in the name,
// the description and the arguments, and keeps the description's lines.
func TestReviewShowsHiddenCharacters(t *testing.T) {
	r := Review(approvals.Action{
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
	if r := Review(approvals.Action{State: contracts.ActionCompleted, ArgumentsPruned: true}); !strings.Contains(r.ArgumentsText, "dropped by retention") {
		t.Errorf("review of an action whose arguments retention dropped says %q", r.ArgumentsText)
	}
}

// TestReviewShowsCallerSafely: a hostile caller, stored by a real ledger
// as declared (bounded), is shown in the review with every control
// character visible, and reviewing leaves the stored record as it was.
func TestReviewShowsCallerSafely(t *testing.T) {
	dir := t.TempDir()
	db, err := approvals.Open(filepath.Join(dir, "pikod.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := approvals.OpenLedger(db, filepath.Join(dir, "tombstones"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	hostile := contracts.Caller{
		PID:        99,
		Executable: "/tmp/\x1b[2Jevil",
		Client:     contracts.ClientInfo{Name: "\x1b]0;pwned\x07" + strings.Repeat("N\x1b[31m", 2000), Version: strings.Repeat("\u202e1", 100)},
		Via:        strings.Repeat("v", 10_000),
	}
	fp := contracts.Fingerprints{Settings: "set1", ConnectionGeneration: 1, Tool: "tool1"}
	a, err := l.Prepare("s", "t", []byte(`{}`), "", fp, hostile)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := l.Get(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := Review(stored)
	b, err := json.Marshal(r.Caller)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{r.Caller.Executable, r.Caller.Client.Name, r.Caller.Client.Version, r.Caller.Via, r.Caller.Describe()} {
		if strings.ContainsAny(s, "\x1b\x07\u202e") {
			t.Errorf("review shows %q: a control character survived", s)
		}
	}
	if !strings.Contains(r.Caller.Client.Name, `\u{001B}`) {
		t.Errorf("review name %q: want ESC rendered visibly", r.Caller.Client.Name)
	}
	if bytes.Contains(b, []byte(`\u001b`)) {
		t.Errorf("review caller JSON %s still holds an ESC", b)
	}
	if again, err := l.Get(a.ID); err != nil || again.Caller.Client.Name != stored.Caller.Client.Name {
		t.Errorf("reviewing changed the stored caller to %q (%v)", again.Caller.Client.Name, err)
	}
}
