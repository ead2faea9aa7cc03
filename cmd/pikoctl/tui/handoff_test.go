package tui

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/pikod/pikod/contracts"
)

// TestHandOffHoldsKeys: while a hand-off is out no key acts; when its
// outcome arrives the keys act in order on the screen it leads to, a line
// feed counting as Enter; a key that starts another hand-off holds the
// rest again.
func TestHandOffHoldsKeys(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // e writes the file the editor would open
	m := testModel(t)
	m.opts.Approve = func(string) *exec.Cmd { return exec.Command("true") }
	m.Update(statusMsg{res: sampleStatus()})
	acts := []contracts.ActionSummary{
		{ID: "act_02", State: contracts.ActionPrepared, Server: "fx", Tool: "count"},
		{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count"},
		{ID: "act_00", State: contracts.ActionCompleted, Server: "fx", Tool: "count"},
	}
	m.Update(actionsMsg{res: contracts.ActionsListResult{Actions: acts}})
	keys(m, "3")
	m.Update(reviewMsg{res: contracts.ActionReview{ActionSummary: acts[0], Digest: "sha256:00"}})
	if _, cmd := m.Update(keyMsg("a")); cmd == nil || !m.handingOff {
		t.Fatal("a on the review did not hand the terminal to the approver")
	}
	for _, k := range []tea.KeyMsg{keyMsg("down"), {Type: tea.KeyCtrlJ}} {
		if _, cmd := m.Update(k); cmd != nil {
			t.Fatalf("%s during the hand-off acted", k)
		}
	}
	if m.actList.cursor != 0 || m.review == nil {
		t.Fatalf("keys acted during the hand-off: cursor %d, review open %v", m.actList.cursor, m.review != nil)
	}
	// The approval's outcome: the review closes, then down moves to
	// act_01 and enter (the line feed) asks for its review.
	_, cmd := m.Update(approvedMsg{id: "act_02"})
	if cmd == nil || m.review != nil || m.actList.cursor != 1 || len(m.held) != 0 || m.handingOff {
		t.Fatalf("after the outcome: cmd %v, review open %v, cursor %d, %d held, handing off %v; want a request, closed, 1, 0, false",
			cmd != nil, m.review != nil, m.actList.cursor, len(m.held), m.handingOff)
	}

	// Keys held over one hand-off that start another: 4 and e open the
	// editor (a hand-off), and the down after them waits for its outcome.
	m.Update(reviewMsg{res: contracts.ActionReview{ActionSummary: acts[1], Digest: "sha256:01"}})
	keys(m, "a")
	for _, k := range []string{"4", "e", "down"} {
		m.Update(keyMsg(k))
	}
	m.Update(approvedMsg{id: "act_01"})
	if m.pane != paneSettings || !m.handingOff || len(m.held) != 1 || m.held[0].Type != tea.KeyDown {
		t.Fatalf("after the approval: pane %d, handing off %v, held %v; want the editor out with down held", m.pane, m.handingOff, m.held)
	}
	m.Update(editedMsg{text: m.settingsText()})
	if m.handingOff || len(m.held) != 0 {
		t.Errorf("after the editor: handing off %v, %d held", m.handingOff, len(m.held))
	}

	// Not more than maxHeld keys are kept.
	keys(m, "e")
	for range maxHeld + 10 {
		m.Update(keyMsg("down"))
	}
	if len(m.held) != maxHeld {
		t.Errorf("%d keys held, want %d", len(m.held), maxHeld)
	}
}

// TestPausedServer: a paused server shows why, keeps its catalog, and p
// on it hands the terminal to the resume command.
func TestPausedServer(t *testing.T) {
	m := testModel(t)
	var resumed []string
	m.opts.Resume = func(id string) *exec.Cmd { resumed = append(resumed, id); return exec.Command("true") }
	st := sampleStatus()
	st.Servers[0].ConnectionState, st.Servers[0].State = contracts.StateConnected, contracts.StatePaused
	st.Servers[0].Pause = &contracts.PauseInfo{Since: "2026-12-01T18:00:00Z", Reason: "agent handed over"}
	m.Update(statusMsg{res: st})
	m.Update(catalogMsg{server: "fx", res: sampleCatalog()})
	m.Update(statusMsg{res: st})
	s := golden(t, m, "servers_paused")
	for _, want := range []string{"> fx               paused      2025-06-18      3", "paused:      since 2026-12-01T18:00:00Z: agent handed over", "p resume"} {
		if !strings.Contains(s, want) {
			t.Errorf("the paused server lacks %q:\n%s", want, s)
		}
	}
	if _, ok := m.catalogs["fx"]; !ok {
		t.Error("pausing dropped the server's catalog")
	}
	if _, cmd := m.Update(keyMsg("p")); cmd == nil || !m.handingOff || !slices.Equal(resumed, []string{"fx"}) {
		t.Errorf("p on a paused server: cmd %v, handing off %v, resume commands %q", cmd != nil, m.handingOff, resumed)
	}
	m.Update(resumedMsg{server: "fx", err: &exec.ExitError{}})
	if !m.flashBad || !strings.Contains(m.flash, "fx stays paused") {
		t.Errorf("a failed resume: flash %q", m.flash)
	}
}
