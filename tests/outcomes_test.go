package tests

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Outcome suites: a call that provably never left pikod is "failed (not
// sent)" and may be made again; one cut short after it was sent is
// "uncertain" and never resent; Ctrl-C in pikoctl reports which of the two
// happened.

// wantNotSentResult checks a CallResult of a call that could not be sent.
func wantNotSentResult(t testing.TB, what string, res *contracts.CallResult) {
	t.Helper()
	if res == nil || res.Status != contracts.CallFailed || !res.NotSent || res.Error == nil || res.Error.Data == nil ||
		!res.Error.Data.NotSent || res.ReceiptID == "" {
		t.Fatalf("%s: %+v (error %+v); want failed, notSent, the error saying so, and a receipt", what, res, errOf(res))
	}
}

func errOf(res *contracts.CallResult) any {
	if res == nil || res.Error == nil {
		return nil
	}
	return *res.Error
}

// wantNotSentAction checks that an approved action that was not sent ended
// failed (not sent), with advice to prepare it again, in review and in
// pikoctl's list.
func wantNotSentAction(t testing.TB, d *daemon, id string) {
	t.Helper()
	r := wantState(t, d, id, contracts.ActionFailed)
	if !r.NotSent || !strings.HasPrefix(r.Reason, "not sent") || !strings.Contains(r.Advice, "nothing was sent") ||
		!strings.Contains(r.Advice, "make the call again") {
		t.Errorf("action %s: notSent %v, reason %q, advice %q; want not sent, with advice to prepare it again", id, r.NotSent, r.Reason, r.Advice)
	}
	out, stderr, code := runCtl(t, d, "", "mcp", "actions")
	line := ""
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, id) {
			line = l
		}
	}
	if code != 0 || !strings.Contains(line, "failed (not sent)") {
		t.Errorf("pikoctl mcp actions: exit %d, line %q (stderr %q); want %s failed (not sent)", code, line, stderr, id)
	}
}

// ctlCall runs pikoctl mcp call with arguments on stdin, with and without
// --json, and decodes what --json printed.
func ctlCall(t testing.TB, d *daemon, jsonOut bool, args string, server, tool string) (stdout, stderr string, code int, res *contracts.CallResult, werr *contracts.Error) {
	t.Helper()
	cmd := []string{"mcp", "call", server, tool}
	if jsonOut {
		cmd = append([]string{"--json"}, cmd...)
	}
	stdout, stderr, code = runCtl(t, d, args, cmd...)
	if !jsonOut {
		return stdout, stderr, code, nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &probe); err != nil {
		t.Fatalf("pikoctl --json mcp call printed %q: %v", stdout, err)
	}
	if _, ok := probe["status"]; ok {
		res = &contracts.CallResult{}
		if err := json.Unmarshal([]byte(stdout), res); err != nil {
			t.Fatal(err)
		}
	} else {
		werr = &contracts.Error{}
		if err := json.Unmarshal([]byte(stdout), werr); err != nil {
			t.Fatal(err)
		}
	}
	return stdout, stderr, code, res, werr
}

// TestNotSentHTTP kills an HTTP server under a connected session: the next
// request is refused before a byte of it left, so approved actions and
// granted calls fail "not sent", the server is failed with the reason, and
// once the server is back the same call can be prepared and sent.
func TestNotSentHTTP(t *testing.T) {
	t.Parallel()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	fx := startFixtureServer(t, "http", "127.0.0.1:0", "--call-log", callLog)
	d := startDaemon(t)
	hx := remoteFixture("hx", "http", fx.url).with("tools", []string{"count", "echo"}, "readOnlyTools", []string{"echo"})
	configureMCP(t, d, mcpSettings(t, hx))
	connectServer(t, d, "hx")
	a := startApprover(t)
	// A new fixture on the same port.
	restart := func(t *testing.T) {
		fx.kill9(t)
		fx = startFixtureServer(t, "http", fx.hostPort, "--call-log", callLog)
		connectServer(t, d, "hx")
	}

	nonce := "http-" + randomHex(t, 8)
	t.Run("approved action", func(t *testing.T) {
		prep := prepareCount(t, d, "hx", nonce)
		fx.kill9(t)
		o := a.approve(d, prep.ActionID, prep.Digest)
		wantNotSentResult(t, "approving after the server died", o.Result)
		if !strings.Contains(o.Result.Error.Message, "refused") {
			t.Errorf("the error %q does not say the connection was refused", o.Result.Error.Message)
		}
		wantNotSentAction(t, d, prep.ActionID)
		st := serverStatus(t, d, "hx")
		if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "refused") {
			t.Errorf("status: %s, lastError %q; want failed, connection refused", st.State, st.LastError)
		}
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("granted call while the server is down", func(t *testing.T) {
		// The server is failed now: the call's connect is refused, and
		// that error answer says nothing was sent too.
		stdout, stderr, code, _, _ := ctlCall(t, d, false, `{"text":"x"}`, "hx", "echo")
		if code != 1 || !strings.Contains(stdout+stderr, "nothing was sent") {
			t.Errorf("pikoctl mcp call: exit %d, stdout %q, stderr %q; want 1 and nothing was sent", code, stdout, stderr)
		}
		_, stderr, code, _, werr := ctlCall(t, d, true, `{"text":"x"}`, "hx", "echo")
		if code != 1 || werr == nil || werr.Data == nil || !werr.Data.NotSent {
			t.Errorf("pikoctl --json mcp call: exit %d, error %+v (stderr %q); want 1 and data.notSent", code, werr, stderr)
		}
	})

	t.Run("prepared again once the server is back", func(t *testing.T) {
		restart(t)
		prep := prepareCount(t, d, "hx", nonce)
		if o := a.approve(d, prep.ActionID, prep.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted || o.Result.NotSent {
			t.Fatalf("approving the call again: %s", o)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	for _, jsonOut := range []bool{false, true} {
		name := "granted call, server died while connected"
		if jsonOut {
			name += ", json"
		}
		t.Run(name, func(t *testing.T) {
			restart(t)
			if res := callTool(t, d, "hx", "echo", `{"text":"up"}`); res.Status != contracts.CallCompleted {
				t.Fatalf("echo while the server is up: %+v", res)
			}
			fx.kill9(t)
			stdout, stderr, code, res, werr := ctlCall(t, d, jsonOut, `{"text":"x"}`, "hx", "echo")
			t.Logf("pikoctl exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			if code != 1 {
				t.Errorf("pikoctl mcp call: exit %d, want 1; stdout %q stderr %q", code, stdout, stderr)
			}
			if jsonOut {
				if werr != nil {
					t.Fatalf("--json printed an error %+v, want a failed CallResult", werr)
				}
				wantNotSentResult(t, "pikoctl --json mcp call", res)
			} else if !strings.Contains(stdout, "status: failed (not sent)") || !strings.Contains(stdout, "nothing was sent") {
				t.Errorf("pikoctl mcp call printed %q; want failed (not sent) and nothing was sent", stdout)
			}
			if st := serverStatus(t, d, "hx"); st.State != contracts.StateFailed || !strings.Contains(st.LastError, "could not be sent") {
				t.Errorf("status: %s, lastError %q; want failed, could not be sent", st.State, st.LastError)
			}
		})
	}
}

// TestNotSentStdio closes a stdio server's stdin while the process lives:
// the next write fails before a byte left (EPIPE), with the same outcomes
// as a refused connection. (A server process that dies is noticed at once
// and the next call starts a new one, so that case has no race to test.)
func TestNotSentStdio(t *testing.T) {
	t.Parallel()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t)
	sx := stdioFixture("sx", "--stdin-closer", "--call-log", callLog).with(
		"tools", []string{"count", "echo", "close-stdin", "tool-0001"}, "readOnlyTools", []string{"echo", "close-stdin"},
		"autonomousTools", []string{"tool-0001"})
	configureMCP(t, d, mcpSettings(t, sx))
	connectServer(t, d, "sx")
	a := startApprover(t)
	closeStdin := func() {
		t.Helper()
		if res := callTool(t, d, "sx", "close-stdin", ""); res.Status != contracts.CallCompleted {
			t.Fatalf("close-stdin: %+v", res)
		}
	}

	nonce := "stdio-" + randomHex(t, 8)
	t.Run("approved action", func(t *testing.T) {
		prep := prepareCount(t, d, "sx", nonce)
		closeStdin()
		o := a.approve(d, prep.ActionID, prep.Digest)
		wantNotSentResult(t, "approving after the server closed its stdin", o.Result)
		wantNotSentAction(t, d, prep.ActionID)
		st := serverStatus(t, d, "sx")
		if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "could not be sent") || !strings.Contains(st.LastError, "broken pipe") {
			t.Errorf("status: %s, lastError %q; want failed, could not be sent (broken pipe)", st.State, st.LastError)
		}
		wantNonce(t, callLog, nonce, 0)
		// The next call starts a new process: the same call is prepared
		// and sent.
		again := prepareCount(t, d, "sx", nonce)
		if o := a.approve(d, again.ActionID, again.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
			t.Fatalf("approving the call again: %s", o)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	t.Run("autonomous call", func(t *testing.T) {
		closeStdin()
		res := callTool(t, d, "sx", "tool-0001", `{"input":"x"}`)
		wantNotSentResult(t, "an autonomous call after the server closed its stdin", &res)
		var list contracts.ActionsListResult
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &list)
		for _, x := range list.Actions {
			if x.Tool == "tool-0001" {
				wantNotSentAction(t, d, x.ID)
				return
			}
		}
		t.Fatalf("no action recorded for the autonomous call: %+v", list.Actions)
	})

	for _, jsonOut := range []bool{false, true} {
		name := "granted call"
		if jsonOut {
			name += ", json"
		}
		t.Run(name, func(t *testing.T) {
			closeStdin()
			stdout, stderr, code, res, _ := ctlCall(t, d, jsonOut, `{"text":"x"}`, "sx", "echo")
			if code != 1 {
				t.Errorf("pikoctl mcp call: exit %d, want 1; stdout %q stderr %q", code, stdout, stderr)
			}
			if jsonOut {
				wantNotSentResult(t, "pikoctl --json mcp call", res)
			} else if !strings.Contains(stdout, "status: failed (not sent)") || !strings.Contains(stdout, "nothing was sent") {
				t.Errorf("pikoctl mcp call printed %q; want failed (not sent) and nothing was sent", stdout)
			}
		})
	}
}

// ctlTTYStdin starts pikoctl on a pseudo-terminal (its controlling
// terminal, stdout and stderr) with stdin from a file holding stdin, so a
// call can take arguments and still be interrupted from the terminal.
func ctlTTYStdin(t testing.TB, d *daemon, stdin string, args ...string) *ttyProc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(path, []byte(stdin), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd := exec.Command(pikoctlBin, append([]string{"--socket", d.socket}, args...)...)
	cmd.Env = minimalEnv(t.TempDir())
	cmd.Stdin = f
	// The terminal is fd 1 in the child: make it the controlling one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Ctty: 1}
	return startTTY(t, cmd)
}

// interrupt types Ctrl-C on the terminal: the line discipline sends SIGINT
// to the foreground process group.
func (p *ttyProc) interrupt(t testing.TB) {
	t.Helper()
	if _, err := io.WriteString(p.master, "\x03"); err != nil {
		t.Fatalf("typing Ctrl-C: %v", err)
	}
}

// TestCallCtrlC interrupts pikoctl mcp call at the terminal, once after the
// call was sent and once while it still waited for the server's connection.
func TestCallCtrlC(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	fx := stdioFixture("fx").with("tools", []string{"sleep"}, "autonomousTools", []string{"sleep"})
	hang := stdioFixture("hang", "--hang-init").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"}, "timeoutMs", 120000)
	configureMCP(t, d, mcpSettings(t, fx, hang))
	connectServer(t, d, "fx")

	t.Run("after sending", func(t *testing.T) {
		p := ctlTTYStdin(t, d, `{"ms":120000}`, "mcp", "call", "fx", "sleep")
		// The progress bar shows the server is working on it.
		p.waitFor(t, "slept ")
		p.interrupt(t)
		out, code := p.wait(t)
		t.Logf("pikoctl exit %d; terminal:\n%s", code, out)
		if code != exitUncertainCode || !strings.Contains(out, "cancelled after the call was sent") || !strings.Contains(out, "uncertain") {
			t.Fatalf("pikoctl interrupted mid-call: exit %d; terminal:\n%s\nwant exit 5 and the uncertain message", code, out)
		}
		if strings.Contains(out, "context canceled") {
			t.Errorf("the terminal shows a bare context error:\n%s", out)
		}
		var list contracts.ActionsListResult
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &list)
		if len(list.Actions) != 1 || list.Actions[0].State != contracts.ActionUncertain || list.Actions[0].ReceiptID == "" {
			t.Fatalf("actions after the interrupted autonomous call: %+v; want one uncertain with a receipt", list.Actions)
		}
		if rcpt := list.Actions[0].ReceiptID; !strings.Contains(out, "receipt "+rcpt) {
			t.Errorf("the terminal does not name receipt %s:\n%s", rcpt, out)
		}
		if adv := list.Actions[0].Advice; !strings.Contains(adv, "will not resend") {
			t.Errorf("advice %q", adv)
		}
		// The server was told (notifications/cancelled).
		waitServer(t, d, "fx", "logging the cancellation", func(st contracts.ServerStatus) bool {
			return strings.Contains(st.StderrTail, "sleep cancelled after")
		})
	})

	t.Run("before sending", func(t *testing.T) {
		p := ctlTTYStdin(t, d, `{"text":"x"}`, "mcp", "call", "hang", "echo")
		// The call waits for a handshake that never ends.
		waitServer(t, d, "hang", "connecting", func(st contracts.ServerStatus) bool {
			return st.State == contracts.StateConnecting
		})
		p.interrupt(t)
		out, code := p.wait(t)
		t.Logf("pikoctl exit %d; terminal:\n%s", code, out)
		if code != 1 || !strings.Contains(out, "cancelled: nothing was sent") {
			t.Fatalf("pikoctl interrupted before sending: exit %d; terminal:\n%s\nwant exit 1 and nothing was sent", code, out)
		}
		if strings.Contains(out, "context canceled") || strings.Contains(out, "uncertain") {
			t.Errorf("the terminal shows a bare context error or uncertainty:\n%s", out)
		}
	})
}

// exitUncertainCode is pikoctl's exit status for an uncertain call.
const exitUncertainCode = 5
