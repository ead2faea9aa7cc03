package tui

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// These teatest tests run the console with every command it returns, on
// a client of fakePikod: a key press makes the request pikod would get,
// the fake answers, and the screen shows the answer. Hand-offs run a real
// command on the program's terminal (teatest's buffers).

func fxStatus() contracts.StatusResult {
	st := sampleStatus()
	st.Servers = st.Servers[:2] // fx (stdio, connected), web (http, needs_auth)
	return st
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTeaPauseResume: p pauses the selected server directly
// (extensions.mcp.pause); on a paused server p hands the terminal to the
// resume command, and the console never resumes by itself.
func TestTeaPauseResume(t *testing.T) {
	f := startFake(t)
	dir := t.TempDir()
	f.set(func(f *fakePikod) { f.status, f.resumedFile = fxStatus(), filepath.Join(dir, "resumed") })
	var asked []string
	sc := startLive(t, f, Options{Resume: func(server string) *exec.Cmd {
		asked = append(asked, server)
		return exec.Command("sh", "-c", `echo "resume asks you for $0"; echo "$0" > "$1"`, server, filepath.Join(dir, "resumed"))
	}})
	sc.waitFor("> fx")
	sc.press("p")
	var p contracts.PauseParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodMCPPause, 1), &p); err != nil || p.Server != "fx" {
		t.Fatalf("p sent pause %+v (%v), want server fx", p, err)
	}
	sc.waitFor("fx paused: every new call to it is held")
	sc.waitFor("p resume")
	sc.waitFor("paused:      since 2026-12-01T18:00:00Z")

	sc.press("p")
	sc.waitFor("resume asks you for fx")
	sc.waitFor("fx resumed: calls run under their grants again")
	sc.waitFor("p pause")
	if b, err := os.ReadFile(filepath.Join(dir, "resumed")); err != nil || strings.TrimSpace(string(b)) != "fx" || !slices.Equal(asked, []string{"fx"}) {
		t.Errorf("the resume command ran for %q (file %q, %v), want fx once", asked, b, err)
	}
	if n := len(f.called(contracts.MethodMCPPause)); n != 1 {
		t.Errorf("pause was sent %d times, want once", n)
	}
}

// TestTeaKeysAfterHandOff: keys typed as soon as the approver gives the
// terminal back act on the screen the approval leads to (the list), not
// on the review it closed: down, then enter, open the next action.
func TestTeaKeysAfterHandOff(t *testing.T) {
	f := startFake(t)
	f.set(func(f *fakePikod) {
		f.status = fxStatus()
		f.actions = []contracts.ActionSummary{
			{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count", Caller: testCaller},
			{ID: "act_00", State: contracts.ActionCompleted, Server: "fx", Tool: "count"},
		}
		f.reviews["act_01"] = contracts.ActionReview{ActionSummary: f.actions[0], ToolName: "count", ArgumentsText: "{}", Digest: "sha256:0011223344556677"}
		f.reviews["act_00"] = contracts.ActionReview{ActionSummary: f.actions[1], ToolName: "count", ArgumentsText: "{}", Digest: "sha256:8899aabbccddeeff"}
	})
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	sc := startLive(t, f, Options{Approve: func(id string) *exec.Cmd {
		return exec.Command("sh", "-c", `: > "$1"; while [ ! -e "$2" ]; do sleep 0.01; done; echo "approved $0"`, id, started, release)
	}})
	sc.waitFor("> fx")
	sc.press("3")
	sc.waitFor("act_00")
	sc.press("enter")
	sc.waitFor("sha256:0011223344556677")
	sc.press("a")
	waitFile(t, started)
	// Typed while the approver has the terminal: the program reads them
	// when it takes the terminal back, before the approval's outcome.
	typed := make(chan struct{})
	go func() {
		defer close(typed)
		pressKeys(sc.tm, "down", "enter")
	}()
	time.Sleep(100 * time.Millisecond)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-typed
	sc.waitFor("action:    act_00 (completed)")
	if got := f.called(contracts.MethodMCPActionsReview); len(got) != 2 || !strings.Contains(string(got[1]), "act_00") {
		t.Errorf("reviews requested: %s; want act_01, then act_00 from the keys typed after the hand-off", got)
	}
}
