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

// TestTeaGrant changes a tool's grant from the catalog: the chooser, the
// dry run with its widens line, y saving with the revision read, and the
// save reported as applied live.
func TestTeaGrant(t *testing.T) {
	f := startFake(t)
	cat := sampleCatalog()
	cat.Tools[0].Grant = contracts.GrantApproval
	f.set(func(f *fakePikod) {
		f.status = fxStatus()
		f.revision, f.settings = 3, []byte(`{"servers":[{"id":"fx","transport":"stdio","command":"/bin/fx"}]}`)
		f.catalogs["fx"] = cat
	})
	sc := startLive(t, f, Options{})
	sc.waitFor("> fx")
	sc.press("2")
	sc.waitFor("fx/echo")
	sc.press("e")
	sc.waitFor("Grant of fx/echo")
	sc.press("r")
	var dry contracts.ConfigureParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodConfigure, 1), &dry); err != nil {
		t.Fatal(err)
	}
	want := `{"servers":[{"id":"fx","transport":"stdio","command":"/bin/fx","readOnlyTools":["echo"]}]}`
	if !dry.DryRun || dry.ExpectRevision != 3 || string(dry.Settings) != want {
		t.Fatalf("grant read sent dryRun %v expectRevision %d settings %s; want a dry run of %s at revision 3", dry.DryRun, dry.ExpectRevision, dry.Settings, want)
	}
	sc.waitFor(`WIDENS: fx: tool "echo" now runs without approval`)
	sc.waitFor("y saves it")
	catalogs := len(f.called(contracts.MethodMCPCatalog))
	sc.press("y")
	var save contracts.ConfigureParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodConfigure, 2), &save); err != nil {
		t.Fatal(err)
	}
	if save.DryRun || save.ExpectRevision != 3 || string(save.Settings) != want {
		t.Errorf("y saved dryRun %v expectRevision %d settings %s; want the checked settings at revision 3", save.DryRun, save.ExpectRevision, save.Settings)
	}
	sc.waitFor("settings saved: revision 4; applied live: fx (nothing restarted)")
	f.waitCalled(contracts.MethodMCPCatalog, catalogs+1) // the grants are read again

	// autonomous needs a tools list: refused in place, nothing sent.
	sc.press("e")
	sc.waitFor("Grant of fx/echo")
	sc.press("a")
	sc.waitFor("NOT SAVED")
	sc.waitFor("selects every tool (no tools list), and autonomousTools needs an")
	sc.press("esc")
	sc.waitFor("nothing was saved: the settings are as they were")
	if n := len(f.called(contracts.MethodConfigure)); n != 2 {
		t.Errorf("a refused grant sent configure: %d calls, want 2", n)
	}
}

// TestTeaAddRemove adds a server with the one-line add (dry run, y), is
// offered the new server's credentials at once, and removes it with X.
func TestTeaAddRemove(t *testing.T) {
	f := startFake(t)
	f.set(func(f *fakePikod) {
		f.status = fxStatus()
		f.revision, f.settings = 1, []byte(`{"servers":[{"id":"fx","transport":"stdio","command":"/bin/fx"},{"id":"web","transport":"http","url":"https://web.example/mcp"}]}`)
	})
	sc := startLive(t, f, Options{})
	sc.waitFor("> fx")
	sc.press("a")
	sc.waitFor("Add a server")
	sc.typeText("files")
	sc.press("enter")
	sc.waitFor("files needs the command to run")
	sc.typeText(` /usr/bin/mcp-files --root "/srv/my docs"`)
	sc.press("enter")
	var dry contracts.ConfigureParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodConfigure, 1), &dry); err != nil {
		t.Fatal(err)
	}
	var got contracts.MCPSettings
	if err := json.Unmarshal(dry.Settings, &got); err != nil || len(got.Servers) != 3 {
		t.Fatalf("add sent %s (%v)", dry.Settings, err)
	}
	if s := got.Servers[2]; !dry.DryRun || dry.ExpectRevision != 1 || s.ID != "files" || s.Command != "/usr/bin/mcp-files" || !slices.Equal(s.Args, []string{"--root", "/srv/my docs"}) {
		t.Errorf("add sent dryRun %v expectRevision %d entry %+v", dry.DryRun, dry.ExpectRevision, s)
	}
	sc.waitFor("added: files")
	sc.press("y")
	f.waitCalled(contracts.MethodConfigure, 2)
	// The new server's credentials are offered at once.
	sc.waitFor("files was just added")
	sc.press("esc")
	sc.waitFor("no credentials entered for files")

	sc.press("G")
	sc.waitFor("> files")
	sc.press("X")
	sc.waitFor("removed: files")
	sc.waitFor("stored credentials stay in the vault")
	sc.press("y")
	var rm contracts.ConfigureParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodConfigure, 4), &rm); err != nil {
		t.Fatal(err)
	}
	if rm.DryRun || rm.ExpectRevision != 2 || strings.Contains(string(rm.Settings), "files") {
		t.Errorf("remove saved dryRun %v expectRevision %d settings %s", rm.DryRun, rm.ExpectRevision, rm.Settings)
	}
	sc.waitFor("removed files")
}

// TestTeaLogout signs out of an http server after y; any other answer
// sends nothing; a stdio server has nothing to sign out of.
func TestTeaLogout(t *testing.T) {
	f := startFake(t)
	f.set(func(f *fakePikod) { f.status = fxStatus() })
	sc := startLive(t, f, Options{})
	sc.waitFor("> fx")
	sc.press("L")
	sc.waitFor("fx is a stdio server")
	sc.press("down", "L")
	sc.waitFor("Sign out of web?")
	sc.press("n")
	sc.waitFor("still signed in to web")
	sc.press("L")
	sc.waitFor("Sign out of web?")
	sc.press("y")
	var p contracts.ServerParams
	if err := json.Unmarshal(f.waitCalled(contracts.MethodMCPLogout, 1), &p); err != nil || p.Server != "web" {
		t.Fatalf("logout sent %+v (%v)", p, err)
	}
	sc.waitFor("signed out of web")
	if n := len(f.called(contracts.MethodMCPLogout)); n != 1 {
		t.Errorf("logout sent %d times, want once (n answered no)", n)
	}
}
