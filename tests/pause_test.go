package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestPauseResume checks the hand-off: a paused server's calls, even
// autonomous ones, are held as prepared actions that say why, across a
// restart; only the owner at a terminal resumes it.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog).with("autonomousTools", []string{"count"})))
	connectServer(t, d, "fx")

	countCall := func(nonce string) contracts.CallResult {
		return callTool(t, d, "fx", "count", fmt.Sprintf(`{"nonce":%q}`, nonce))
	}
	if res := countCall("before"); res.Status != contracts.CallCompleted {
		t.Fatalf("autonomous count before the pause: %+v, want completed", res)
	}
	wantNonce(t, callLog, "before", 1)

	// Any client may pause: this one has no terminal.
	var pr contracts.PauseResult
	d.callInto(t, contracts.MethodMCPPause, contracts.PauseParams{Server: "fx", Reason: "owner is using the browser"}, &pr)
	if !pr.Paused || !pr.Changed || pr.Pause == nil || pr.Pause.Reason != "owner is using the browser" {
		t.Fatalf("pause answered %+v", pr)
	}
	st := serverStatus(t, d, "fx")
	if st.State != contracts.StatePaused || st.ConnectionState != contracts.StateConnected || st.Pause == nil {
		t.Errorf("status of a paused connected server: state %q, connectionState %q, pause %+v; want paused, connected, set", st.State, st.ConnectionState, st.Pause)
	}
	held := countCall("held")
	if held.Status != contracts.CallApprovalRequired || held.ActionID == "" {
		t.Fatalf("autonomous call to a paused server: %+v, want approval_required", held)
	}
	if !strings.Contains(held.Held, "paused") || !strings.Contains(held.Held, "owner is using the browser") {
		t.Errorf("held call says %q, want why (paused, and the reason)", held.Held)
	}
	read := callTool(t, d, "fx", "echo", `{"text":"hi"}`)
	if read.Status != contracts.CallApprovalRequired || read.Held == "" {
		t.Errorf("read-only call to a paused server: %+v, want held as approval_required", read)
	}
	wantNonce(t, callLog, "held", 0)
	if e := d.callErr(t, contracts.MethodMCPPause, contracts.PauseParams{Server: "nope"}); e.Reason() != "unknown_server" {
		t.Errorf("pausing an unknown server: %v, want unknown_server", e)
	}
	if e := d.callErr(t, contracts.MethodMCPPause, contracts.PauseParams{Server: "fx", Reason: "a\x1b[31mb"}); e.Reason() != "invalid_reason" {
		t.Errorf("a reason with an escape sequence: %v, want invalid_reason", e)
	}

	// resume decides for the owner: a client without a terminal is refused.
	if e := d.callErr(t, contracts.MethodMCPResume, contracts.ResumeParams{Server: "fx"}); e.Reason() != "terminal_required" {
		t.Errorf("resume without a terminal: %v, want terminal_required", e)
	}
	if _, stderr, code := runCtlNoTTY(t, d, "fx\n", "mcp", "resume", "fx"); code == 0 {
		t.Errorf("pikoctl mcp resume from a pipe exited 0; stderr:\n%s", stderr)
	}

	// The pause survives a restart.
	d.restart()
	connectServer(t, d, "fx")
	heldAgain := countCall("after-restart")
	if heldAgain.Status != contracts.CallApprovalRequired || heldAgain.Held == "" {
		t.Fatalf("call after a restart of a paused daemon: %+v, want held", heldAgain)
	}
	wantNonce(t, callLog, "after-restart", 0)
	out, _, code := runCtl(t, d, "", "mcp", "status")
	if code != 0 || !strings.Contains(out, "paused (connected)") {
		t.Errorf("pikoctl mcp status (exit %d) does not show the pause:\n%s", code, out)
	}

	// Anything but the server id keeps it paused.
	p := ctlTTY(t, d, "mcp", "resume", "fx")
	p.waitFor(t, "to keep it paused: ")
	p.typeLine(t, "yes")
	if _, code := p.wait(t); code == 0 {
		t.Errorf("resume answered with something else than the id exited 0")
	}
	if st := serverStatus(t, d, "fx"); st.State != contracts.StatePaused {
		t.Errorf("after a declined resume the server is %q, want paused", st.State)
	}

	p = ctlTTY(t, d, "mcp", "resume", "fx")
	p.waitFor(t, "to keep it paused: ")
	p.typeLine(t, "fx")
	if out, code := p.wait(t); code != 0 || !strings.Contains(out, "resumed fx") {
		t.Fatalf("resume at the terminal: exit %d\n%s", code, out)
	}
	if st := serverStatus(t, d, "fx"); st.State != contracts.StateConnected || st.Pause != nil {
		t.Errorf("after resume: state %q, pause %+v; want connected, none", st.State, st.Pause)
	}
	if res := countCall("resumed"); res.Status != contracts.CallCompleted {
		t.Errorf("autonomous call after resume: %+v, want completed", res)
	}
	wantNonce(t, callLog, "resumed", 1)
	// What was held stays for the owner to decide (the action held before
	// the restart went stale with the reconnect, as every action does).
	wantState(t, d, heldAgain.ActionID, contracts.ActionPrepared)
	wantNonce(t, callLog, "after-restart", 0)
}
