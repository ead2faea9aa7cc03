package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Agent suites: an agent (a coding assistant, a script) runs as the owner,
// often inside the owner's terminal, and can reach the socket. It may
// prepare actions; it must never approve them. These tests play the agent
// with real processes on real pseudo-terminals.

// shellOnPTY runs script with sh -c as the session leader of a new
// pseudo-terminal, so the shell and the commands it runs in the
// foreground are the terminal's foreground process group, as an agent's
// tool calls are inside the owner's terminal. It returns what was written
// to the terminal and the exit status the script echoed as "EXIT=n".
func shellOnPTY(t *testing.T, d *daemon, script string, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(minimalEnv(t.TempDir()), "PIKOCTL="+pikoctlBin, "SOCK="+d.socket)
	cmd.Env = append(cmd.Env, env...)
	p := startTTY(t, cmd)
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("sh -c %q exited %d; terminal:\n%s", script, code, out)
	}
	m := regexp.MustCompile(`EXIT=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sh -c %q did not report an exit status; terminal:\n%s", script, out)
	}
	n, _ := strconv.Atoi(m[1])
	return strings.ReplaceAll(out, "\r\n", "\n"), n
}

// wireErrorIn finds the JSON error object pikoctl --json printed.
func wireErrorIn(t *testing.T, out string) *contracts.Error {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, `{"code":`) {
			continue
		}
		var we contracts.Error
		if err := json.Unmarshal([]byte(line), &we); err == nil {
			return &we
		}
	}
	t.Fatalf("no JSON error in the output:\n%s", out)
	return nil
}

// TestAgentPipesAndBackgroundJobs: a process in the terminal's foreground
// group whose stdin is a pipe (what an agent's tool call is), and a
// background job on the terminal, try to approve through the RPC and
// through pikoctl. Every attempt is refused and the server sees no call.
func TestAgentPipesAndBackgroundJobs(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	nonce := "agent-" + randomHex(t, 8)
	prep := prepareCount(t, d, "fx", nonce)
	params := fmt.Sprintf(`{"actionId":%q,"digest":%q,"decision":"approve"}`, prep.ActionID, prep.Digest)
	env := []string{"PARAMS=" + params, "ACTION=" + prep.ActionID, "SUFFIX=" + suffixOf(prep.Digest)}

	t.Run("rpc with params on a pipe", func(t *testing.T) {
		out, code := shellOnPTY(t, d,
			`printf '%s' "$PARAMS" | "$PIKOCTL" --socket "$SOCK" --json rpc `+contracts.MethodMCPActionsApprove+` -; echo "EXIT=$?"`, env...)
		we := wireErrorIn(t, out)
		if code != 1 || we.Reason() != "terminal_required" || we.Data.Check != contracts.TerminalStdin {
			t.Fatalf("exit %d, error %+v; want exit 1, terminal_required (%s); terminal:\n%s", code, we, contracts.TerminalStdin, out)
		}
		t.Logf("agent: printf PARAMS | pikoctl rpc %s -\n  exit %d: %s (reason %s, check %s)",
			contracts.MethodMCPActionsApprove, code, we.Message, we.Reason(), we.Data.Check)
	})

	for _, tc := range []struct{ name, stdin string }{
		{"echo y", `echo y`},
		{"the digest suffix", `echo "$SUFFIX"`},
	} {
		t.Run("pikoctl mcp approve with "+tc.name+" piped", func(t *testing.T) {
			out, code := shellOnPTY(t, d, tc.stdin+` | "$PIKOCTL" --socket "$SOCK" mcp approve "$ACTION"; echo "EXIT=$?"`, env...)
			if code != 1 || !strings.Contains(out, "stdin is not the terminal") {
				t.Fatalf("exit %d; want 1 and a refusal; terminal:\n%s", code, out)
			}
			t.Logf("agent: %s | pikoctl mcp approve %s\n  exit %d: %s", tc.stdin, prep.ActionID, code, firstLine(out, "pikoctl:"))
		})
	}

	t.Run("background job", func(t *testing.T) {
		// With job control on, "&" puts the job in a process group of its
		// own; its stdin stays the terminal.
		out, code := shellOnPTY(t, d,
			`set -m; "$PIKOCTL" --socket "$SOCK" --json rpc `+contracts.MethodMCPActionsApprove+` "$PARAMS" & wait $!; echo "EXIT=$?"`, env...)
		we := wireErrorIn(t, out)
		if code != 1 || we.Reason() != "terminal_required" || we.Data.Check != contracts.TerminalBackground {
			t.Fatalf("exit %d, error %+v; want exit 1, terminal_required (%s); terminal:\n%s", code, we, contracts.TerminalBackground, out)
		}
		t.Logf("agent: pikoctl rpc %s PARAMS &\n  exit %d: %s (reason %s, check %s)",
			contracts.MethodMCPActionsApprove, code, we.Message, we.Reason(), we.Data.Check)
	})

	wantState(t, d, prep.ActionID, contracts.ActionPrepared)
	wantNonce(t, callLog, nonce, 0)
	if n := len(d.logLines(t, "terminal-only call refused")); n < 2 {
		t.Errorf("the daemon logged %d refused terminal-only calls, want at least 2", n)
	}
	t.Logf("the fixture's call log has nonce %s %d times; the action is still %s", nonce, nonceCounts(t, callLog)[nonce], contracts.ActionPrepared)
}

// firstLine returns the first line of out that contains substr.
func firstLine(out, substr string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, substr) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// setPassphrase sets the owner approval passphrase with pikoctl at a pty.
func setPassphrase(t *testing.T, d *daemon, pass string) {
	t.Helper()
	p := ctlTTY(t, d, "approvals", "passphrase", "set")
	p.waitFor(t, "new approval passphrase")
	waitNoEcho(t, p)
	p.typeLine(t, pass)
	p.waitFor(t, "again: ")
	p.typeLine(t, pass)
	out, code := p.wait(t)
	if code != 0 || !strings.Contains(out, "approval passphrase set") {
		t.Fatalf("pikoctl approvals passphrase set: exit %d; terminal:\n%s", code, out)
	}
	if strings.Contains(out, pass) {
		t.Fatalf("the passphrase was echoed:\n%s", out)
	}
}

func approvalsStatus(t *testing.T, d *daemon) contracts.ApprovalsStatus {
	t.Helper()
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	return st.Approvals
}

// approveOnPTY runs pikoctl mcp approve on a pty the test drives like an
// agent that has its own pseudo-terminal: it reads the digest suffix off
// the screen, types it, and types pass at the passphrase prompt.
func approveOnPTY(t *testing.T, d *daemon, actionID, pass string) (string, int) {
	t.Helper()
	p := ctlTTY(t, d, "mcp", "approve", actionID)
	p.waitFor(t, approvePrompt)
	m := regexp.MustCompile(`type ([0-9a-f]{6}) \(`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no digest suffix on the screen:\n%s", p.out.String())
	}
	p.typeLine(t, m[1])
	p.waitFor(t, "approval passphrase: ")
	p.typeLine(t, pass)
	out, code := p.wait(t)
	return strings.ReplaceAll(out, "\r\n", "\n"), code
}

// TestAgentDrivingAPTY: an agent that drives its own pseudo-terminal
// passes the terminal checks and can read the digest suffix off the
// screen; only the owner approval passphrase stops it. Five wrong
// passphrases lock terminal-only methods, visibly and across a restart.
//
// Not parallel: each passphrase check is an argon2id derivation (64 MiB, 4
// lanes) that, under the race detector, keeps every core busy for about a
// second, and would starve the timing-bound parallel suites.
func TestAgentDrivingAPTY(t *testing.T) {
	d, callLog := approvalDaemon(t)
	ownerPass := "owner-pass-" + randomHex(t, 6)
	guesses := []string{"password", "hunter22", "letmein!", "12345678", "approve-it", "owner-pass"}
	setPassphrase(t, d, ownerPass)
	if st := approvalsStatus(t, d); !st.PassphraseSet || st.Failures != 0 {
		t.Fatalf("status after set: %+v", st)
	}

	nonce := "pty-" + randomHex(t, 8)
	prep := prepareCount(t, d, "fx", nonce)

	t.Run("agent guesses at its own pty", func(t *testing.T) {
		out, code := approveOnPTY(t, d, prep.ActionID, guesses[0])
		if code != 1 || !strings.Contains(out, "wrong approval passphrase") {
			t.Fatalf("exit %d; want 1 and a wrong passphrase; terminal:\n%s", code, out)
		}
		t.Logf("agent at its own pty, digest suffix read off the screen, passphrase guessed\n  exit %d: %s", code, firstLine(out, "pikoctl:"))
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)
		wantNonce(t, callLog, nonce, 0)
	})

	a := startApprover(t)
	t.Run("direct rpc from a pty without the passphrase", func(t *testing.T) {
		e := a.mustRefuse(d, prep.ActionID, prep.Digest, "passphrase_required")
		t.Logf("agent at its own pty, rpc %s without a passphrase\n  %s (reason %s)", contracts.MethodMCPActionsApprove, e.Message, e.Reason())
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("the owner approves once", func(t *testing.T) {
		out, code := approveOnPTY(t, d, prep.ActionID, ownerPass)
		if code != 0 || !strings.Contains(out, "status: completed") {
			t.Fatalf("exit %d; want 0 and completed; terminal:\n%s", code, out)
		}
		if strings.Contains(out, ownerPass) {
			t.Errorf("the passphrase was echoed:\n%s", out)
		}
		wantState(t, d, prep.ActionID, contracts.ActionCompleted)
		wantNonce(t, callLog, nonce, 1)
		if st := approvalsStatus(t, d); st.Failures != 0 {
			t.Errorf("failures after the right passphrase: %+v, want 0", st)
		}
		id := a.send(approveJob{Socket: d.socket, ActionID: prep.ActionID, Digest: prep.Digest, Passphrase: ownerPass})
		a.event(id, "sent")
		if o := a.event(id, "done").Outcomes[0]; o.reason() != "action_consumed" {
			t.Errorf("approving again: %s, want action_consumed", o)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	nonce2 := "lock-" + randomHex(t, 8)
	prep2 := prepareCount(t, d, "fx", nonce2)
	t.Run("five wrong passphrases lock approvals", func(t *testing.T) {
		for i := range contracts.PassphraseMaxFailures {
			id := a.send(approveJob{Socket: d.socket, ActionID: prep2.ActionID, Digest: prep2.Digest, Passphrase: guesses[1+i]})
			a.event(id, "sent")
			o := a.event(id, "done").Outcomes[0]
			if o.reason() != "passphrase_wrong" {
				t.Fatalf("wrong passphrase %d: %s, want passphrase_wrong", i+1, o)
			}
			t.Logf("wrong passphrase %d: %s", i+1, o.Error.Message)
		}
		st := approvalsStatus(t, d)
		if st.LockedUntil == "" || st.Locks != 1 || st.Failures != 0 {
			t.Fatalf("status after %d wrong passphrases: %+v, want locked", contracts.PassphraseMaxFailures, st)
		}
		t.Logf("status: %+v", st)
		stdout, _, code := runCtl(t, d, "", "mcp", "status")
		if code != 0 || !strings.Contains(stdout, "locked until "+st.LockedUntil) {
			t.Errorf("pikoctl mcp status does not show the lock: exit %d\n%s", code, stdout)
		}

		// Locked: even the right passphrase is refused, and pikoctl says so
		// before asking anything.
		id := a.send(approveJob{Socket: d.socket, ActionID: prep2.ActionID, Digest: prep2.Digest, Passphrase: ownerPass})
		a.event(id, "sent")
		if o := a.event(id, "done").Outcomes[0]; o.reason() != "approvals_locked" {
			t.Errorf("the right passphrase while locked: %s, want approvals_locked", o)
		}
		p := ctlTTY(t, d, "mcp", "approve", prep2.ActionID)
		out, code := p.wait(t)
		if code != 1 || !strings.Contains(out, "approvals are locked until") || strings.Contains(out, approvePrompt) {
			t.Errorf("pikoctl mcp approve while locked: exit %d; terminal:\n%s", code, out)
		}
		wantNonce(t, callLog, nonce2, 0)

		// The lock survives a restart.
		d.restart()
		if after := approvalsStatus(t, d); after.LockedUntil != st.LockedUntil || after.Locks != 1 {
			t.Errorf("status after a restart: %+v, want the lock kept (%s)", after, st.LockedUntil)
		}
		// Rejecting decides nothing: it needs neither terminal nor
		// passphrase, also while locked. (prep2 was prepared on the
		// connection before the restart, so it is stale by now: reject one
		// prepared on the current connection.)
		nonce3 := "lock-" + randomHex(t, 8)
		prep3 := prepareCount(t, d, "fx", nonce3)
		stdout, stderr, code := runCtlNoTTY(t, d, "", "mcp", "reject", prep3.ActionID)
		if code != 0 || !strings.Contains(stdout, "rejected action "+prep3.ActionID) {
			t.Errorf("pikoctl mcp reject while locked: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		wantNonce(t, callLog, nonce2, 0)
		wantNonce(t, callLog, nonce3, 0)
	})

	// No passphrase, right or wrong, is in the log, the database, the vault
	// files or pikod's stderr.
	var stderrs []byte
	d.mu.Lock()
	procs := d.procs
	d.mu.Unlock()
	for _, p := range procs {
		stderrs = append(stderrs, p.stderr.String()...)
	}
	places := map[string][]byte{"pikod's stderr": stderrs}
	filepath.WalkDir(d.stateDir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, rerr := os.ReadFile(path); rerr == nil {
				places[path] = b
			}
		}
		return nil
	})
	for what, b := range places {
		for _, p := range append([]string{ownerPass}, guesses...) {
			if bytes.Contains(b, []byte(p)) {
				t.Errorf("%s holds the passphrase %q", what, p)
			}
		}
	}
	if n := len(d.logLines(t, "wrong approval passphrase")); n != 1+contracts.PassphraseMaxFailures {
		t.Errorf("%d wrong passphrases logged, want %d", n, 1+contracts.PassphraseMaxFailures)
	}
}

// TestOtherUsersTerminal: a terminal owned by another uid is not the
// owner's terminal, even for a process of the owner's uid in its
// foreground with the terminal as stdin.
func TestOtherUsersTerminal(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("skipped: cannot create a terminal owned by another uid (chown of a pty slave needs root; CI runs as root)")
	}
	d, callLog := approvalDaemon(t)
	nonce := "foreign-" + randomHex(t, 8)
	prep := prepareCount(t, d, "fx", nonce)
	chown := func(slave *os.File) {
		if err := os.Chown(slave.Name(), 65534, -1); err != nil {
			t.Skipf("skipped: cannot create a terminal owned by another uid: chown %s: %v", slave.Name(), err)
		}
	}
	a := startApproverWith(t, chown)
	e := a.mustRefuse(d, prep.ActionID, prep.Digest, "terminal_required")
	if e.Data.Check != contracts.TerminalOwner || !strings.Contains(e.Message, "uid 65534") {
		t.Errorf("refusal %+v, want check %s naming uid 65534", e, contracts.TerminalOwner)
	}
	t.Logf("approver on a pty owned by uid 65534: %s (check %s)", e.Message, e.Data.Check)

	p := ctlTTYWith(t, d, chown, "mcp", "approve", prep.ActionID)
	p.waitFor(t, approvePrompt)
	p.typeLine(t, suffixOf(prep.Digest))
	out, code := p.wait(t)
	if code != 1 || !strings.Contains(out, "belongs to uid 65534") {
		t.Errorf("pikoctl mcp approve on a pty owned by uid 65534: exit %d; terminal:\n%s", code, out)
	}
	wantState(t, d, prep.ActionID, contracts.ActionPrepared)
	wantNonce(t, callLog, nonce, 0)
}
