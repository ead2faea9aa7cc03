package tests

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pikod/pikod/contracts"
)

// TestTUI runs pikoctl tui on an 80x24 pseudo-terminal against a real
// pikod with the fixture server, and drives it with keys as the owner
// would: it sees the server connected, reviews a prepared action and
// approves it through pikoctl mcp approve (typing the digest's last 6
// characters), disconnects and connects the server, edits the settings in
// $EDITOR (a refused edit shows its problem in place; the fixed one is
// saved with the revision check), follows the events and quits.
func TestTUI(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)

	// The editor: the first edit adds an unknown field, the second
	// removes it and changes timeoutMs.
	dir := t.TempDir()
	editor := filepath.Join(dir, "edit.sh")
	script := `#!/bin/sh
if [ ! -e "$0.ran" ]; then
  touch "$0.ran"
  exec sed -i 's/"timeoutMs": 10000/"bogusField": 1, "timeoutMs": 10000/' "$1"
fi
exec sed -i -e 's/"bogusField": 1, //' -e 's/"timeoutMs": 10000/"timeoutMs": 45000/' "$1"
`
	if err := os.WriteFile(editor, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}

	p, screen := startConsole(t, d, "EDITOR="+editor)

	screen.waitFor("connected")
	screen.waitFor("1 servers")

	// A prepared action, reviewed and approved at this terminal.
	nonce := "tui-" + randomHex(t, 6)
	prep := prepareCount(t, d, "fx", nonce)
	screen.press("3")
	screen.waitFor(prep.ActionID)
	screen.press("\r")
	screen.waitFor("digest:")
	screen.press("a")
	screen.waitFor(approvePrompt)
	m := regexp.MustCompile(`type ([0-9a-f]{6}) \(`).FindStringSubmatch(screen.since())
	if m == nil {
		t.Fatalf("no digest suffix on the screen:\n%s", screen.since())
	}
	screen.mark()
	p.typeLine(t, m[1])
	screen.waitFor("press Enter to return")
	if out := screen.since(); !strings.Contains(out, "completed") {
		t.Errorf("pikoctl mcp approve did not report the call completed:\n%s", out)
	}
	p.typeLine(t, "")
	screen.waitFor("approved and run")
	wantState(t, d, prep.ActionID, contracts.ActionCompleted)
	wantNonce(t, callLog, nonce, 1)

	// Disconnect and connect the server from the servers pane.
	screen.press("1")
	screen.waitFor("[1 servers]")
	screen.press("d")
	waitServer(t, d, "fx", "to be disconnected by the tui", func(st contracts.ServerStatus) bool { return st.State == contracts.StateIdle })
	screen.waitFor("fx disconnected")
	screen.press("c")
	waitServer(t, d, "fx", "to be connected by the tui", func(st contracts.ServerStatus) bool { return st.State == contracts.StateConnected })
	screen.waitFor("fx connected")

	// The settings: a refused edit shows the problem in place and saves
	// nothing; editing again and saving with y makes a new revision.
	var before contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &before)
	screen.press("4")
	screen.waitFor("e edit")
	screen.press("e")
	screen.waitFor("NOT SAVED")
	screen.waitFor("bogusField")
	var mid contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &mid)
	if mid.Revision != before.Revision {
		t.Fatalf("a refused edit changed the settings: revision %d, was %d", mid.Revision, before.Revision)
	}
	screen.press("e")
	screen.waitFor("valid: saving makes revision")
	screen.press("y")
	screen.waitFor("settings saved: revision")
	var after contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &after)
	if after.Revision != before.Revision+1 || !strings.Contains(string(after.Settings), `"timeoutMs":45000`) || strings.Contains(string(after.Settings), "bogusField") {
		t.Errorf("after saving: revision %d (was %d), settings %s", after.Revision, before.Revision, after.Settings)
	}

	// The log pane shows the events it followed.
	screen.press("5")
	screen.waitFor("state    idle")

	if out := p.out.String(); strings.Contains(out, "\x1b[38;") || strings.Contains(out, "\x1b[1m") {
		t.Errorf("NO_COLOR is set but the screen has colour or bold")
	}
	screen.press("q")
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("pikoctl tui exited %d; terminal:\n%s", code, out)
	}
}

// TestTUIOAuth signs in to an OAuth server from the console: the link is
// on the screen, the browser's visit completes the flow the console waits
// for, and the console says so.
func TestTUIOAuth(t *testing.T) {
	t.Parallel()
	o := newOAuthSetup(t)
	o.configure(t, "auto", "")
	if _, err := o.rpc(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "o"}); contracts.ToError(err).Reason() != "needs_auth" {
		t.Fatalf("connect without a grant answered %v, want needs_auth", err)
	}

	cmd := exec.Command(pikoctlBin, "--socket", o.d.socket, "tui")
	cmd.Env = append(minimalEnv(t.TempDir()), "TERM=xterm-256color")
	p := startTTYWith(t, cmd, func(slave *os.File) {
		if err := pty.Setsize(slave, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
			t.Fatalf("sizing the terminal: %v", err)
		}
	})
	screen := &tuiScreen{t: t, p: p}
	screen.waitFor("needs_auth")
	screen.press("s")
	screen.waitFor("The browser is sent back")
	// The link, as the screen shows it: wrapped at the edge only.
	text := ansiSeq.ReplaceAllString(screen.since(), "")
	_, rest, _ := strings.Cut(text, "sign in and consent:")
	link, _, _ := strings.Cut(rest, "The browser is sent back")
	link = strings.Join(strings.Fields(link), "")
	if !strings.HasPrefix(link, o.as.issuer) {
		t.Fatalf("no authorization link on the screen (read %q):\n%s", link, text)
	}
	screen.waitFor("waiting for the sign-in")
	loc := authorizeInBrowser(t, link)
	if status, body := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d %q", status, body)
	}
	screen.waitFor("signed in")
	if st := o.status(t); st.OAuth == nil || st.OAuth.Grant == "none" {
		t.Errorf("after the sign-in in the console: oauth %+v", st.OAuth)
	}
	screen.press("\x1b")
	screen.waitFor("c connect")
	screen.quit()
}

// TestPikoctlAsksTheTerminalNothing: linking the console into pikoctl
// must not make every command query the terminal as it starts (Bubble
// Tea's init asks for the background colour and waits for the answer).
// On a pseudo-terminal that never answers, no query may be written.
func TestPikoctlAsksTheTerminalNothing(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(pikoctlBin, "--socket", filepath.Join(t.TempDir(), "none.sock"), "version")
	cmd.Env = append(minimalEnv(t.TempDir()), "TERM=xterm-256color")
	p := startTTYWith(t, cmd, nil)
	out, _ := p.wait(t)
	for _, q := range []string{"\x1b]11;?", "\x1b[6n"} {
		if strings.Contains(out, q) {
			t.Errorf("pikoctl version wrote the terminal query %q:\n%q", q, out)
		}
	}
	if !strings.Contains(out, "pikoctl") {
		t.Errorf("pikoctl version printed nothing recognisable: %q", out)
	}
}

// ansiSeq matches the terminal control sequences a full-screen program
// writes between its text.
var ansiSeq = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-B]|[=>])`)

// tuiScreen reads a full-screen program's output on a pty: waits look
// only at what was written since the last mark, so text from an earlier
// screen cannot satisfy them.
type tuiScreen struct {
	t    *testing.T
	p    *ttyProc
	from int
}

func (s *tuiScreen) mark() { s.from = len(s.p.out.String()) }

func (s *tuiScreen) since() string { return s.p.out.String()[s.from:] }

// quit presses q, and the console must end with exit status 0.
func (s *tuiScreen) quit() {
	s.t.Helper()
	s.press("q")
	if out, code := s.p.wait(s.t); code != 0 {
		s.t.Fatalf("pikoctl tui exited %d; terminal:\n%s", code, out)
	}
}

// press types keys after setting the mark.
func (s *tuiScreen) press(keys string) {
	s.t.Helper()
	s.mark()
	if _, err := io.WriteString(s.p.master, keys); err != nil {
		s.t.Fatalf("typing %q: %v", keys, err)
	}
}

// waitFor waits until substr was written since the mark.
func (s *tuiScreen) waitFor(substr string) {
	s.t.Helper()
	deadline := time.After(waitTimeout)
	for !strings.Contains(s.since(), substr) {
		select {
		case <-s.p.out.Changed():
		case <-s.p.done:
			if !strings.Contains(s.since(), substr) {
				s.t.Fatalf("pikoctl tui ended before showing %q; terminal:\n%s", substr, s.p.out.String())
			}
			return
		case <-deadline:
			s.t.Fatalf("timed out after %v waiting for %q; since the last key:\n%s", waitTimeout, substr, s.since())
		}
	}
}

// TestTUIRequests answers server requests from the console: a 2026-07-28
// tool asks for a name (input_required); the requests pane shows it as it
// arrives, reads it whole, and a hands the terminal to pikoctl mcp
// respond, where the owner types the answer and the same call completes
// with it; a second request is declined with x (pikoctl mcp respond
// --decline). The catalog search ranks tools with extensions.mcp.search.
func TestTUIRequests(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--protocol", "modern", "--input-tools").with(
		"protocol", map[string]string{"pin": modernVersion}, "readOnlyTools", []string{"ask"}, "elicitation", true)))
	connectServer(t, d, "fx")

	p, screen := startConsole(t, d)
	screen.waitFor("connected")

	// Ranked search: the score and the server are on the screen.
	screen.press("2")
	screen.waitFor("tools · every connected server")
	screen.press("/")
	screen.waitFor("name or description")
	screen.press("client")
	screen.waitFor("(BM25)")
	screen.waitFor("fx/ask")
	screen.press("\x1b")
	screen.waitFor("/ search")

	screen.press("6")
	screen.waitFor("no server requests")
	call := ctlProgress(t, d, `{}`, "mcp", "call", "fx", "ask")
	screen.mark()
	screen.waitFor("what is your name?")
	req := waitPending(t, d, "fx")
	screen.press("\r")
	screen.waitFor("the server asks:")
	screen.press("a")
	screen.waitFor("(a/d/c): ")
	p.typeLine(t, "a")
	screen.waitFor("name: ")
	screen.mark()
	p.typeLine(t, "Ada")
	screen.waitFor("press Enter to return")
	if out := screen.since(); !strings.Contains(out, "request "+req.ID+": answered") {
		t.Errorf("pikoctl mcp respond did not report the answer:\n%s", out)
	}
	p.typeLine(t, "")
	screen.waitFor("answered with pikoctl mcp respond")
	if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "hello Ada") {
		t.Fatalf("the call exited %d; stdout %q; want it completed with the answer typed in the console", code, call.stdout.String())
	}
	if st := requestState(t, d, req.ID); st.State != contracts.RequestAnswered {
		t.Errorf("request %s is %s, want answered", req.ID, st.State)
	}

	// A second request, declined from the console.
	screen.mark()
	call = ctlProgress(t, d, `{}`, "mcp", "call", "fx", "ask")
	var second contracts.ServerRequestInfo
	poll(t, "a second pending request", func() bool {
		var list contracts.RequestsResult
		d.callInto(t, contracts.MethodMCPRequests, contracts.RequestsParams{Server: "fx", State: contracts.RequestPending}, &list)
		if len(list.Requests) > 0 && list.Requests[0].ID != req.ID {
			second = list.Requests[0]
			return true
		}
		return false
	}, func() string { return "" })
	screen.waitFor("6 requests(1)")
	screen.press("g")
	screen.press("\r")
	screen.waitFor(second.ID + " (pending)")
	screen.press("x")
	screen.waitFor("press Enter to return")
	if out := screen.since(); !strings.Contains(out, "request "+second.ID+": declined") {
		t.Errorf("pikoctl mcp respond --decline did not report the decline:\n%s", out)
	}
	p.typeLine(t, "")
	screen.waitFor("answered with pikoctl mcp respond --decline")
	if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "no name given (decline)") {
		t.Errorf("the declined call exited %d; stdout %q; want the server told of the decline", code, call.stdout.String())
	}
	if st := requestState(t, d, second.ID); st.State != contracts.RequestDeclined {
		t.Errorf("request %s is %s, want declined", second.ID, st.State)
	}

	screen.quit()
}

// TestTUICredentials enters a server's credentials in the console's
// masked form: the value never reaches the screen, it is stored in the
// vault (extensions.secret), and after a reconnect the server has it. A
// form left blank sends nothing and keeps what is stored.
func TestTUICredentials(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	envFile := filepath.Join(t.TempDir(), "fx.env")
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--env-file", envFile)))
	connectServer(t, d, "fx")

	p, screen := startConsole(t, d)
	screen.waitFor("credentials: none")

	canary := newCanary(t, true)
	screen.press("v")
	screen.waitFor("Credentials of fx (stdio)")
	screen.press("FX_TOKEN")
	screen.waitFor("FX_TOKEN")
	screen.press("\t")
	screen.press(canary)
	screen.waitFor(strings.Repeat("*", len(canary)))
	screen.press("\x13") // ctrl+s stores
	screen.waitFor("stored env.FX_TOKEN for fx (generation 1)")
	if st := serverStatus(t, d, "fx"); st.Credentials != "stored" || st.CredentialGeneration != 1 {
		t.Fatalf("after the form: credentials %q generation %d, want stored, 1", st.Credentials, st.CredentialGeneration)
	}
	screen.waitFor("r reconnects to use them")
	screen.press("r")
	screen.waitFor("fx connected")
	if got := readEnvFile(t, envFile)["FX_TOKEN"]; got != canary {
		t.Errorf("after reconnecting the server got FX_TOKEN=%q, want the value typed in the form", got)
	}

	// Blank: nothing is sent, the stored credentials stay.
	screen.press("v")
	screen.waitFor("Stored: env.FX_TOKEN")
	screen.press("\x13")
	screen.waitFor("unchanged")
	if st := serverStatus(t, d, "fx"); st.Credentials != "stored" || st.CredentialGeneration != 1 {
		t.Errorf("after a blank form: credentials %q generation %d, want stored, 1", st.Credentials, st.CredentialGeneration)
	}

	// A partial entry is merged: the form names what is stored, a row
	// with a name but a blank value sends nothing, and the new variable
	// is added beside the stored one, which keeps its value.
	canary2 := newCanary(t, true)
	screen.press("v")
	screen.waitFor("Stored: env.FX_TOKEN")
	screen.press("FX_TOKEN")
	screen.waitFor("FX_TOKEN")
	screen.press("\t\t")
	screen.press("OTHER_TOKEN")
	screen.waitFor("OTHER_TOKEN")
	screen.press("\t")
	screen.press(canary2)
	screen.waitFor(strings.Repeat("*", len(canary2)))
	screen.press("\x13")
	screen.waitFor("stored env.FX_TOKEN, env.OTHER_TOKEN for fx (generation 2)")
	if st := serverStatus(t, d, "fx"); st.CredentialGeneration != 2 || !slices.Equal(st.CredentialFields, []string{"env.FX_TOKEN", "env.OTHER_TOKEN"}) {
		t.Fatalf("after a partial entry: generation %d fields %q, want 2 [env.FX_TOKEN env.OTHER_TOKEN]", st.CredentialGeneration, st.CredentialFields)
	}
	screen.press("r")
	screen.waitFor("fx connected")
	if env := readEnvFile(t, envFile); env["FX_TOKEN"] != canary || env["OTHER_TOKEN"] != canary2 {
		t.Errorf("after reconnecting: FX_TOKEN kept %t, OTHER_TOKEN set %t; want both", env["FX_TOKEN"] == canary, env["OTHER_TOKEN"] == canary2)
	}

	screen.press("q")
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("pikoctl tui exited %d; terminal:\n%s", code, out)
	}
	for _, c := range []string{canary, canary2} {
		if strings.Contains(out, c) {
			t.Errorf("a credential value was written to the terminal")
		}
	}
}

// TestTUICall calls a tool from the console: found by search, its page
// opened, arguments typed as JSON; the server's progress is shown while it
// runs, then the outcome with its receipt.
func TestTUICall(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)
	_, screen := startConsole(t, d)
	screen.waitFor("connected")
	screen.press("2")
	screen.waitFor("tools · every connected server")
	screen.press("/")
	screen.waitFor("name or description")
	screen.press("sleeps milliseconds")
	screen.waitFor("fx/sleep")
	screen.press("\r")
	screen.press("\r")
	screen.waitFor("r call it")
	screen.press("r")
	screen.waitFor("arguments: {}")
	screen.press("\x7f\x7f")
	screen.press(`{"ms":1500}`)
	screen.waitFor(`{"ms":1500}`)
	screen.press("\r")
	screen.waitFor("/1500")
	screen.waitFor("status: completed, receipt ")
	screen.press("\x1b")
	screen.waitFor("r call it")
	screen.quit()
}

// startConsole runs pikoctl tui on an 80x24 pseudo-terminal against d.
func startConsole(t *testing.T, d *daemon, env ...string) (*ttyProc, *tuiScreen) {
	t.Helper()
	cmd := exec.Command(pikoctlBin, "--socket", d.socket, "tui")
	cmd.Env = append(append(minimalEnv(t.TempDir()), "TERM=xterm-256color", "NO_COLOR=1"), env...)
	p := startTTYWith(t, cmd, func(slave *os.File) {
		if err := pty.Setsize(slave, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
			t.Fatalf("sizing the terminal: %v", err)
		}
	})
	return p, &tuiScreen{t: t, p: p}
}

// TestTUIPauseResume pauses a server from the console (p: any client may
// pause) and resumes it (p again), which hands the terminal to pikoctl
// mcp resume: the owner types the server id there, exactly as on its own;
// a wrong answer keeps the server paused. A granted call is held while it
// is paused and runs after.
func TestTUIPauseResume(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	p, screen := startConsole(t, d)
	screen.waitFor("connected")

	screen.press("p")
	screen.waitFor("fx paused: every new call to it is held")
	waitServer(t, d, "fx", "to be paused by the console", func(st contracts.ServerStatus) bool {
		return st.State == contracts.StatePaused && st.Pause != nil
	})
	screen.waitFor("p resume")
	if res := callTool(t, d, "fx", "echo", `{"text":"while paused"}`); res.Status != contracts.CallApprovalRequired || !strings.Contains(res.Held, "paused") {
		t.Errorf("a read-only call while the console paused fx: %+v, want held as approval_required", res)
	}

	// Resuming asks at the terminal; anything but the id keeps the pause.
	screen.press("p")
	screen.waitFor("Type the server id (fx) to resume")
	screen.mark()
	p.typeLine(t, "no")
	screen.waitFor("not resumed: the server stays paused")
	screen.waitFor("press Enter to return")
	screen.press("\r")
	screen.waitFor("fx stays paused (pikoctl mcp resume: exit status 1)")
	if st := serverStatus(t, d, "fx"); st.State != contracts.StatePaused {
		t.Fatalf("after a wrong answer fx is %s, want still paused", st.State)
	}

	screen.press("p")
	screen.waitFor("Type the server id (fx) to resume")
	screen.mark()
	p.typeLine(t, "fx")
	screen.waitFor("resumed fx: calls run under their grants again")
	screen.waitFor("press Enter to return")
	screen.press("\r")
	screen.waitFor("fx resumed: calls run under their grants again")
	screen.waitFor("p pause")
	if st := serverStatus(t, d, "fx"); st.State != contracts.StateConnected || st.Pause != nil {
		t.Errorf("after resuming in the console fx is %s (pause %+v), want connected", st.State, st.Pause)
	}
	nonce := "tui-resumed-" + randomHex(t, 4)
	if res := callTool(t, d, "fx", "echo", `{"text":"`+nonce+`"}`); res.Status != contracts.CallCompleted {
		t.Errorf("a read-only call after the resume: %+v, want completed", res)
	}

	screen.quit()
}

// TestTUIKeysAfterHandOff: keys typed together with the Enter that ends a
// hand-off act on the console as soon as it is back: "j" and Enter on the
// actions list (not on the review the approval closed), and a second
// Enter (not turned into a line feed by the terminal's line discipline).
func TestTUIKeysAfterHandOff(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)
	p, screen := startConsole(t, d)
	screen.waitFor("connected")
	older := prepareCount(t, d, "fx", "tui-older-"+randomHex(t, 4))
	newer := prepareCount(t, d, "fx", "tui-newer-"+randomHex(t, 4))
	screen.press("3")
	screen.waitFor(older.ActionID)
	approveAt := func() {
		t.Helper()
		screen.waitFor("digest:")
		screen.press("a")
		screen.waitFor(approvePrompt)
		m := regexp.MustCompile(`type ([0-9a-f]{6}) \(`).FindStringSubmatch(screen.since())
		if m == nil {
			t.Fatalf("no digest suffix on the screen:\n%s", screen.since())
		}
		screen.mark()
		p.typeLine(t, m[1])
		screen.waitFor("press Enter to return")
	}
	screen.press("\r") // the newest first: newer
	approveAt()
	// Enter, then j and Enter at once: the second row's review opens.
	screen.press("\rj\r")
	screen.waitFor("action:    " + older.ActionID + " (prepared)")
	wantState(t, d, newer.ActionID, contracts.ActionCompleted)

	approveAt()
	screen.press("\r\r")
	screen.waitFor("approved and run")
	screen.waitFor("action:    act_")
	wantState(t, d, older.ActionID, contracts.ActionCompleted)

	screen.quit()
}

// TestTUIGrantAddRemove changes settings from the panes against a real
// pikod: a tool granted read from the catalog (the dry run's widens line
// first, then y) applies live, so its next call runs without approval; a
// server added with the one-line add is offered its credentials at once;
// X removes it. Each save is checked against the revision it was made
// from.
func TestTUIGrantAddRemove(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	_, screen := startConsole(t, d)
	screen.waitFor("connected")
	var before contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &before)
	gen := serverStatus(t, d, "fx").Generation

	screen.press("2")
	screen.waitFor("tools · every connected server")
	screen.press("/")
	screen.waitFor("name or description")
	screen.press("count")
	screen.waitFor("fx/count")
	screen.press("\r")
	screen.press("e")
	screen.waitFor("Grant of fx/count")
	screen.press("r")
	screen.waitFor(`WIDENS: server "fx": "count" runs without approval`)
	screen.waitFor("y saves it")
	screen.press("y")
	screen.waitFor("applied live: fx (nothing restarted)")
	if st := serverStatus(t, d, "fx"); st.State != contracts.StateConnected || st.Generation != gen {
		t.Errorf("after a grant from the console fx is %s, generation %d (was %d): want the same connection", st.State, st.Generation, gen)
	}
	nonce := "tui-granted-" + randomHex(t, 4)
	if res := callTool(t, d, "fx", "count", fmt.Sprintf(`{"nonce":%q}`, nonce)); res.Status != contracts.CallCompleted {
		t.Errorf("count after granting it read in the console: %+v, want completed without approval", res)
	}
	wantNonce(t, callLog, nonce, 1)

	screen.press("1")
	screen.waitFor("[1 servers]")
	screen.press("a")
	screen.waitFor("Add a server")
	screen.press(`extra ` + fixtureBin + ` --name "extra one"`)
	screen.press("\r")
	screen.waitFor("added: extra")
	screen.press("y")
	screen.waitFor("extra was just added")
	screen.press("\x1b")
	screen.waitFor("no credentials entered for extra")
	var mid contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &mid)
	if mid.Revision != before.Revision+2 || !strings.Contains(string(mid.Settings), `"id":"extra"`) || !strings.Contains(string(mid.Settings), `"extra one"`) {
		t.Fatalf("after adding: revision %d (was %d), settings %s", mid.Revision, before.Revision, mid.Settings)
	}

	screen.press("G")
	screen.waitFor("> extra")
	screen.press("X")
	screen.waitFor("removed: extra")
	screen.press("y")
	screen.waitFor("removed extra")
	var after contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &after)
	if after.Revision != mid.Revision+1 || strings.Contains(string(after.Settings), `"extra"`) {
		t.Errorf("after removing: revision %d, settings %s", after.Revision, after.Settings)
	}

	screen.quit()
}
