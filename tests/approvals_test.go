package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/tests/testsupport"
)

// Approval suites: prepared actions are approved only by a process with a
// controlling terminal, so every approval here comes from the compiled
// pikoctl or from this test binary re-executed under a pseudo-terminal
// (the "approver" helper mode). What reached the server is read from the
// fixture's call log (the count tool appends each nonce, with fsync).

// helperModeEnv switches the test binary into a helper program: init runs
// it and exits before any test (or TestMain) starts.
const helperModeEnv = "PIKO_E2E_HELPER"

// proxyMarkEnv names the file whose existence makes the proxy helper
// rewrite the count tool's description.
const proxyMarkEnv = "PIKO_E2E_PROXY_MARK"

func init() {
	switch os.Getenv(helperModeEnv) {
	case "":
		return
	case "approver":
		os.Exit(approverMain())
	case "proxy":
		os.Exit(proxyMain())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperModeEnv, os.Getenv(helperModeEnv))
		os.Exit(2)
	}
}

// approveJob is one request to the approver helper: send Copies
// concurrent extensions.mcp.actions.approve requests for one action, or
// one for each of Targets, each on its own connection.
type approveJob struct {
	ID       int             `json:"id"`
	Socket   string          `json:"socket"`
	ActionID string          `json:"actionId"`
	Digest   string          `json:"digest"`
	Decision string          `json:"decision"`
	Copies   int             `json:"copies"`
	Targets  []approveTarget `json:"targets,omitempty"`
	// Passphrase is sent with every approval when set.
	Passphrase string `json:"passphrase,omitempty"`
}

// approveTarget is one action to approve and the digest to quote.
type approveTarget struct {
	ActionID string `json:"actionId"`
	Digest   string `json:"digest"`
}

// approveEvent is what the helper reports for a job: "sent" right before
// the requests go out, then "done" with one outcome per copy.
type approveEvent struct {
	ID       int              `json:"id"`
	Event    string           `json:"event"`
	Outcomes []approveOutcome `json:"outcomes,omitempty"`
}

// approveOutcome is one approval's answer: a result, a wire error, or a
// failure without an answer (connection refused or lost).
type approveOutcome struct {
	Result  *contracts.CallResult `json:"result,omitempty"`
	Error   *contracts.Error      `json:"error,omitempty"`
	Failure string                `json:"failure,omitempty"`
}

// reason is the wire error's reason, or "" without one.
func (o approveOutcome) reason() string {
	if o.Error == nil {
		return ""
	}
	return o.Error.Reason()
}

func (o approveOutcome) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}

// approverMain reads jobs (JSON lines) from fd 3 and writes events to fd
// 4 until fd 3 ends. It runs under a pseudo-terminal, so the daemon sees a
// peer with a controlling terminal.
func approverMain() int {
	jobs := os.NewFile(3, "jobs")
	events := os.NewFile(4, "events")
	if jobs == nil || events == nil {
		fmt.Fprintln(os.Stderr, "approver: fds 3 and 4 are not open")
		return 2
	}
	enc := json.NewEncoder(events)
	sc := bufio.NewScanner(jobs)
	for sc.Scan() {
		var j approveJob
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			fmt.Fprintln(os.Stderr, "approver: bad job:", err)
			return 2
		}
		if err := runApproveJob(j, enc); err != nil {
			fmt.Fprintln(os.Stderr, "approver:", err)
			return 1
		}
	}
	return 0
}

func runApproveJob(j approveJob, enc *json.Encoder) error {
	targets := j.Targets
	if len(targets) == 0 {
		for range max(j.Copies, 1) {
			targets = append(targets, approveTarget{ActionID: j.ActionID, Digest: j.Digest})
		}
	}
	n := len(targets)
	decision := j.Decision
	if decision == "" {
		decision = contracts.DecisionApprove
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outcomes := make([]approveOutcome, n)
	clients := make([]*rpc.Client, n)
	for i := range clients {
		c, err := rpc.Dial(ctx, j.Socket)
		if err != nil {
			outcomes[i].Failure = err.Error()
			continue
		}
		defer c.Close()
		clients[i] = c
	}
	if err := enc.Encode(approveEvent{ID: j.ID, Event: "sent"}); err != nil {
		return err
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		if c == nil {
			continue
		}
		wg.Go(func() {
			<-start
			var res contracts.CallResult
			err := c.Call(ctx, contracts.MethodMCPActionsApprove,
				contracts.ApproveParams{ActionID: targets[i].ActionID, Digest: targets[i].Digest, Decision: decision, Passphrase: j.Passphrase}, &res)
			var we *contracts.Error
			switch {
			case err == nil:
				outcomes[i].Result = &res
			case errors.As(err, &we):
				outcomes[i].Error = we
			default:
				outcomes[i].Failure = err.Error()
			}
		})
	}
	close(start)
	wg.Wait()
	return enc.Encode(approveEvent{ID: j.ID, Event: "done", Outcomes: outcomes})
}

// proxyMain runs the command in its arguments as a stdio MCP server,
// passing stdin through and copying its stdout line by line; while the
// file named by proxyMarkEnv exists, the count tool's description is
// rewritten. The server's tool definition then changes while pikod's
// settings and connection stay the same.
func proxyMain() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "proxy: no command")
		return 2
	}
	mark := os.Getenv(proxyMarkEnv)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin = os.Stdin
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		return 1
	}
	r := bufio.NewReaderSize(out, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, serr := os.Stat(mark); serr == nil {
				line = bytes.ReplaceAll(line, []byte("Returns how many tool calls"), []byte("Returns (changed) how many tool calls"))
			}
			if _, werr := os.Stdout.Write(line); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return 1
	}
	return 0
}

// ttyProc is a process whose terminal is a pseudo-terminal the test
// holds: it reads what the process writes there and types answers.
type ttyProc struct {
	cmd    *exec.Cmd
	master *os.File
	out    *testsupport.Buffer
	// copied closes once everything written to the terminal was read.
	copied chan struct{}
	done   chan struct{}
	code   int
}

// startTTY starts cmd with the slave side of a new pseudo-terminal as its
// controlling terminal (a new session) and stderr, and as stdin and stdout
// unless they are already set.
func startTTY(t testing.TB, cmd *exec.Cmd) *ttyProc {
	t.Helper()
	return startTTYWith(t, cmd, nil)
}

// startTTYWith is startTTY with a hook that may change the pty's slave
// (its owner, say) before the process starts.
func startTTYWith(t testing.TB, cmd *exec.Cmd, prepare func(slave *os.File)) *ttyProc {
	t.Helper()
	p := &ttyProc{cmd: cmd, out: new(testsupport.Buffer), copied: make(chan struct{}), done: make(chan struct{})}
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	if prepare != nil {
		prepare(slave)
	}
	if cmd.Stdin == nil {
		cmd.Stdin = slave
	}
	if cmd.Stdout == nil {
		cmd.Stdout = slave
	}
	// A new session whose controlling terminal is the slave: fd 2 in the
	// child is always the slave.
	cmd.Stderr = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		t.Fatalf("starting %s on a pseudo-terminal: %v", cmd.Path, err)
	}
	p.master = master
	go func() {
		// Reading the master ends with EIO once the process and every
		// copy of the slave are gone.
		_, _ = io.Copy(p.out, master)
		close(p.copied)
	}()
	go func() {
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Kill()
			<-p.done
		}
		master.Close()
	})
	return p
}

func (p *ttyProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitFor waits until the terminal shows substr.
func (p *ttyProc) waitFor(t testing.TB, substr string) {
	t.Helper()
	p.out.WaitFor(t, substr, p.done, waitTimeout)
}

// typeLine types s and Enter on the terminal.
func (p *ttyProc) typeLine(t testing.TB, s string) {
	t.Helper()
	if _, err := io.WriteString(p.master, s+"\r"); err != nil {
		t.Fatalf("typing on the terminal: %v", err)
	}
}

// wait waits for the process to exit and returns everything it wrote to
// the terminal and its exit code.
func (p *ttyProc) wait(t testing.TB) (string, int) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit; terminal output:\n%s", p.cmd.Path, p.out.String())
	}
	select {
	case <-p.copied:
	case <-time.After(stopTimeout):
		// A grandchild may still hold the terminal; what was read is enough.
	}
	out := p.out.String()
	if strings.Contains(out, "WARNING: DATA RACE") {
		t.Errorf("race detected in %s; output:\n%s", p.cmd.Path, out)
	}
	return out, p.code
}

// ctlTTY starts pikoctl on d's socket on a pseudo-terminal.
func ctlTTY(t testing.TB, d *daemon, args ...string) *ttyProc {
	t.Helper()
	return ctlTTYWith(t, d, nil, args...)
}

// ctlTTYWith is ctlTTY on a pty prepared by prepare (see startTTYWith).
func ctlTTYWith(t testing.TB, d *daemon, prepare func(slave *os.File), args ...string) *ttyProc {
	t.Helper()
	cmd := exec.Command(pikoctlBin, append([]string{"--socket", d.socket}, args...)...)
	cmd.Env = minimalEnv(t.TempDir())
	return startTTYWith(t, cmd, prepare)
}

// approver is the test binary running as the approver helper on a
// pseudo-terminal. Jobs are answered in order.
type approver struct {
	t      testing.TB
	proc   *ttyProc
	jobs   *os.File
	events chan approveEvent
	// mu guards next.
	mu   sync.Mutex
	next int
}

// startApprover starts the approver helper; it is stopped at the end of
// the test.
func startApprover(t testing.TB) *approver {
	t.Helper()
	return startApproverWith(t, nil)
}

// startApproverWith starts the approver helper on a pty prepared by
// prepare (see startTTYWith).
func startApproverWith(t testing.TB, prepare func(slave *os.File)) *approver {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("finding the test binary: %v", err)
	}
	jobsR, jobsW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	eventsR, eventsW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(minimalEnv(t.TempDir()), helperModeEnv+"=approver")
	cmd.ExtraFiles = []*os.File{jobsR, eventsW}
	a := &approver{t: t, jobs: jobsW, events: make(chan approveEvent, 16)}
	a.proc = startTTYWith(t, cmd, prepare)
	jobsR.Close()
	eventsW.Close()
	go func() {
		defer close(a.events)
		defer eventsR.Close()
		dec := json.NewDecoder(eventsR)
		for {
			var ev approveEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			a.events <- ev
		}
	}()
	t.Cleanup(func() {
		a.jobs.Close()
		if out, code := a.proc.wait(t); code != 0 {
			t.Errorf("the approver helper exited %d; output:\n%s", code, out)
		}
	})
	return a
}

// send queues a job and returns its id.
func (a *approver) send(j approveJob) int {
	a.t.Helper()
	a.mu.Lock()
	a.next++
	j.ID = a.next
	a.mu.Unlock()
	b, err := json.Marshal(j)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.jobs.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("sending a job to the approver: %v", err)
	}
	return j.ID
}

// event waits for the next event, which must be want for job id.
func (a *approver) event(id int, want string) approveEvent {
	a.t.Helper()
	select {
	case ev, ok := <-a.events:
		if !ok {
			a.t.Fatalf("the approver helper ended; output:\n%s", a.proc.out.String())
		}
		if ev.ID != id || ev.Event != want {
			a.t.Fatalf("approver event %+v, want %q for job %d", ev, want, id)
		}
		return ev
	case <-time.After(90 * time.Second):
		a.t.Fatalf("no %q event for approver job %d; output:\n%s", want, id, a.proc.out.String())
	}
	return approveEvent{}
}

// decideN sends copies concurrent decisions and returns every outcome.
func (a *approver) decideN(d *daemon, actionID, digest, decision string, copies int) []approveOutcome {
	a.t.Helper()
	id := a.send(approveJob{Socket: d.socket, ActionID: actionID, Digest: digest, Decision: decision, Copies: copies})
	a.event(id, "sent")
	return a.event(id, "done").Outcomes
}

// approve approves one action once, from the terminal.
func (a *approver) approve(d *daemon, actionID, digest string) approveOutcome {
	a.t.Helper()
	return a.decideN(d, actionID, digest, contracts.DecisionApprove, 1)[0]
}

// mustRefuse approves an action that must be refused with reason.
func (a *approver) mustRefuse(d *daemon, actionID, digest, reason string) *contracts.Error {
	a.t.Helper()
	o := a.approve(d, actionID, digest)
	if o.reason() != reason {
		a.t.Fatalf("approving %s: %s, want an error with reason %q", actionID, o, reason)
	}
	return o.Error
}

// countServer is a stdio fixture entry whose count tool needs approval
// and appends nonces to callLog.
func countServer(id, callLog string, args ...string) srv {
	return stdioFixture(id, append([]string{"--call-log", callLog}, args...)...).with(
		"tools", []string{"count", "echo", "tool-0001", "notify-list-changed"},
		"readOnlyTools", []string{"echo", "notify-list-changed"})
}

// callTool makes extensions.mcp.call with args (raw JSON, "" for none).
func callTool(t testing.TB, d *daemon, server, tool, args string) contracts.CallResult {
	t.Helper()
	p := contracts.CallParams{Server: server, Tool: tool}
	if args != "" {
		p.Arguments = json.RawMessage(args)
	}
	var res contracts.CallResult
	d.callInto(t, contracts.MethodMCPCall, p, &res)
	return res
}

// prepare makes a call that must become a prepared action.
func prepare(t testing.TB, d *daemon, server, tool, args string) contracts.CallResult {
	t.Helper()
	res := callTool(t, d, server, tool, args)
	if res.Status != contracts.CallApprovalRequired || res.ActionID == "" || len(res.Digest) != 64 {
		t.Fatalf("calling %s/%s %s: %+v, want approval_required with an action id and digest", server, tool, args, res)
	}
	return res
}

// prepareCount prepares a count call carrying nonce.
func prepareCount(t testing.TB, d *daemon, server, nonce string) contracts.CallResult {
	t.Helper()
	return prepare(t, d, server, "count", fmt.Sprintf(`{"nonce":%q}`, nonce))
}

// review returns an action's review (its summary, state and reason).
func review(t testing.TB, d *daemon, id string) contracts.ActionReview {
	t.Helper()
	var r contracts.ActionReview
	d.callInto(t, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: id}, &r)
	return r
}

// wantState checks an action's state.
func wantState(t testing.TB, d *daemon, id, state string) contracts.ActionReview {
	t.Helper()
	r := review(t, d, id)
	if r.State != state {
		t.Fatalf("action %s is %q (reason %q), want %q", id, r.State, r.Reason, state)
	}
	return r
}

// nonceCounts reads the fixture's call log: how many times each nonce
// reached the count tool.
func nonceCounts(t testing.TB, callLog string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(callLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading the call log: %v", err)
	}
	out := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line != "" {
			out[line]++
		}
	}
	return out
}

// wantNonce checks how many times nonce reached the server.
func wantNonce(t testing.TB, callLog, nonce string, n int) {
	t.Helper()
	if got := nonceCounts(t, callLog)[nonce]; got != n {
		t.Fatalf("nonce %s reached the server %d times, want %d", nonce, got, n)
	}
}

// approvalDaemon starts a daemon with server "fx" (countServer) connected.
func approvalDaemon(t testing.TB, extra ...srv) (d *daemon, callLog string) {
	t.Helper()
	callLog = filepath.Join(t.TempDir(), "calls.log")
	d = startDaemon(t)
	configureMCP(t, d, mcpSettings(t, append([]srv{countServer("fx", callLog)}, extra...)...))
	connectServer(t, d, "fx")
	return d, callLog
}

// runCtlNoTTY runs pikoctl in a new session (no controlling terminal)
// with stdin from a pipe.
func runCtlNoTTY(t testing.TB, d *daemon, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCtlOpts(t, d.socket, ctlOpts{}, stdin, args...)
}

// approvePrompt ends the question pikoctl mcp approve asks at the
// terminal; suffixOf is the answer that approves.
const approvePrompt = "Anything else approves nothing: "

func suffixOf(digest string) string { return digest[len(digest)-6:] }

// TestApproveAtTerminal approves, declines and refuses through pikoctl on
// a pseudo-terminal and without one.
func TestApproveAtTerminal(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)

	t.Run("digest suffix executes once", func(t *testing.T) {
		nonce := "yes-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		wantNonce(t, callLog, nonce, 0)
		p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
		p.waitFor(t, approvePrompt)
		if !strings.Contains(p.out.String(), nonce) || !strings.Contains(p.out.String(), prep.Digest) {
			t.Errorf("the review shown before the question lacks the nonce or the digest:\n%s", p.out.String())
		}
		if !strings.Contains(p.out.String(), "type "+suffixOf(prep.Digest)) {
			t.Errorf("the question does not show the digest's last 6 characters %s:\n%s", suffixOf(prep.Digest), p.out.String())
		}
		p.typeLine(t, suffixOf(prep.Digest))
		out, code := p.wait(t)
		if code != 0 {
			t.Fatalf("pikoctl mcp approve answered with the digest suffix exited %d, want 0; terminal:\n%s", code, out)
		}
		if !strings.Contains(out, "status: completed") || !strings.Contains(out, "("+contracts.ReceiptApproved+")") {
			t.Errorf("approve output lacks the completed status and the mcp_approved receipt:\n%s", out)
		}
		r := wantState(t, d, prep.ActionID, contracts.ActionCompleted)
		if r.ReceiptID == "" {
			t.Errorf("completed action %s has no receipt", prep.ActionID)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	for _, answer := range []string{"y", "yes", "n", "", "yes please", "N", "digest", "another"} {
		t.Run(fmt.Sprintf("answer %q sends nothing", answer), func(t *testing.T) {
			nonce := "no-" + randomHex(t, 8)
			prep := prepareCount(t, d, "fx", nonce)
			switch answer {
			case "digest":
				answer = prep.Digest
			case "another":
				// Another action's suffix.
				answer = suffixOf(prepareCount(t, d, "fx", "other-"+nonce).Digest)
			}
			p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
			p.waitFor(t, approvePrompt)
			p.typeLine(t, answer)
			out, code := p.wait(t)
			if code != 1 || !strings.Contains(out, "not approved") {
				t.Errorf("answer %q: exit %d, want 1 and \"not approved\"; terminal:\n%s", answer, code, out)
			}
			wantState(t, d, prep.ActionID, contracts.ActionPrepared)
			wantNonce(t, callLog, nonce, 0)
		})
	}

	t.Run("type-ahead is discarded", func(t *testing.T) {
		// The right answer typed before the question is shown must not
		// answer it: pikoctl flushes the terminal's input first.
		nonce := "ahead-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
		p.typeLine(t, suffixOf(prep.Digest))
		p.waitFor(t, approvePrompt)
		p.typeLine(t, "n")
		out, code := p.wait(t)
		if code != 1 || !strings.Contains(out, "not approved") {
			t.Errorf("type-ahead: exit %d, want 1 and \"not approved\"; terminal:\n%s", code, out)
		}
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("no controlling terminal", func(t *testing.T) {
		nonce := "notty-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		refusals := func() int { return len(d.logLines(t, "terminal-only call refused", contracts.TerminalNone)) }
		before := refusals()
		params := fmt.Sprintf(`{"actionId":%q,"digest":%q,"decision":"approve"}`, prep.ActionID, prep.Digest)
		stdout, stderr, code := runCtlNoTTY(t, d, params, "--json", "rpc", contracts.MethodMCPActionsApprove, "-")
		var we contracts.Error
		if code != 1 || json.Unmarshal([]byte(stdout), &we) != nil || we.Reason() != "terminal_required" ||
			we.Data.Check != contracts.TerminalNone || !errors.Is(&we, contracts.ErrPermissionDenied) {
			t.Fatalf("rpc approve without a terminal: exit %d, stdout %q, stderr %q; want exit 1 and error terminal_required (no_terminal)", code, stdout, stderr)
		}
		if n := refusals(); n != before+1 {
			t.Errorf("the daemon log records %d new refusals, want 1", n-before)
		}
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)

		// pikoctl itself refuses before asking the daemon anything.
		_, stderr, code = runCtlNoTTY(t, d, suffixOf(prep.Digest)+"\n", "mcp", "approve", prep.ActionID)
		if code != 1 || !strings.Contains(stderr, "stdin is not the terminal") {
			t.Fatalf("pikoctl mcp approve with stdin from a pipe: exit %d, stderr %q; want 1 and a terminal refusal", code, stderr)
		}
		if n := refusals(); n != before+1 {
			t.Errorf("the daemon saw %d refused approvals, want 1 (pikoctl must refuse before calling)", n-before)
		}
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)
		wantNonce(t, callLog, nonce, 0)

		// And the same action is still approvable from a terminal.
		a := startApprover(t)
		if o := a.approve(d, prep.ActionID, prep.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
			t.Fatalf("approving from the pty helper after the refusals: %s", o)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	t.Run("reject", func(t *testing.T) {
		nonce := "reject-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		out, stderr, code := runCtlNoTTY(t, d, "", "mcp", "reject", prep.ActionID)
		if code != 0 || !strings.Contains(out, "rejected action "+prep.ActionID) {
			t.Fatalf("pikoctl mcp reject: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		wantState(t, d, prep.ActionID, contracts.ActionRejected)
		p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
		out, code = p.wait(t)
		if code != 1 || !strings.Contains(out, "rejected and cannot be approved") {
			t.Errorf("pikoctl mcp approve of a rejected action: exit %d; terminal:\n%s", code, out)
		}
		wantNonce(t, callLog, nonce, 0)
	})
}

// TestConcurrentApprovals approves one action from 100 connections at
// once: exactly one executes.
func TestConcurrentApprovals(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	a := startApprover(t)
	nonce := "race-" + randomHex(t, 8)
	prep := prepareCount(t, d, "fx", nonce)
	const copies = 100
	outcomes := a.decideN(d, prep.ActionID, prep.Digest, contracts.DecisionApprove, copies)
	if len(outcomes) != copies {
		t.Fatalf("got %d outcomes, want %d", len(outcomes), copies)
	}
	completed, consumed := 0, 0
	for _, o := range outcomes {
		switch {
		case o.Result != nil && o.Result.Status == contracts.CallCompleted && o.Result.ReceiptKind == contracts.ReceiptApproved:
			completed++
		case o.reason() == "action_consumed":
			consumed++
		default:
			t.Errorf("unexpected outcome %s", o)
		}
	}
	if completed != 1 || consumed != copies-1 {
		t.Errorf("%d completed and %d action_consumed, want 1 and %d", completed, consumed, copies-1)
	}
	wantState(t, d, prep.ActionID, contracts.ActionCompleted)
	wantNonce(t, callLog, nonce, 1)
}

// TestApprovalBindings changes what an action is bound to between its
// review and its approval: every approval is refused and nothing is sent.
func TestApprovalBindings(t *testing.T) {
	t.Parallel()
	callLog := filepath.Join(t.TempDir(), "calls.log")
	mark := filepath.Join(t.TempDir(), "changed")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// px runs the fixture behind the proxy helper, which can change the
	// count tool's description without touching settings or connection.
	px := srv{
		"id": "px", "transport": "stdio", "command": self,
		"args":          []string{fixtureBin, "--call-log", callLog},
		"env":           map[string]string{helperModeEnv: "proxy", proxyMarkEnv: mark, "GORACE": "atexit_sleep_ms=10"},
		"tools":         []string{"count", "notify-list-changed"},
		"readOnlyTools": []string{"notify-list-changed"}, "timeoutMs": 10000,
	}
	d := startDaemon(t)
	servers := []srv{countServer("fx", callLog), countServer("fy", callLog), px}
	configureMCP(t, d, mcpSettings(t, servers...))
	for _, id := range []string{"fx", "fy", "px"} {
		connectServer(t, d, id)
	}
	a := startApprover(t)

	t.Run("digest of another action", func(t *testing.T) {
		for _, tc := range []struct {
			name                   string
			server, tool, args     string
			otherServer, otherTool string
			otherArgs              string
		}{
			{"one argument byte", "fx", "count", `{"nonce":"dA"}`, "fx", "count", `{"nonce":"dB"}`},
			{"server", "fx", "count", `{"nonce":"dS"}`, "fy", "count", `{"nonce":"dS"}`},
			{"tool", "fx", "count", `{}`, "fx", "tool-0001", `{}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				base := prepare(t, d, tc.server, tc.tool, tc.args)
				other := prepare(t, d, tc.otherServer, tc.otherTool, tc.otherArgs)
				if base.Digest == other.Digest {
					t.Fatalf("two different actions share digest %s", base.Digest)
				}
				before := nonceCounts(t, callLog)
				a.mustRefuse(d, base.ActionID, other.Digest, "digest_mismatch")
				a.mustRefuse(d, base.ActionID, strings.Repeat("0", 64), "digest_mismatch")
				wantState(t, d, base.ActionID, contracts.ActionPrepared)
				wantState(t, d, other.ActionID, contracts.ActionPrepared)
				if after := nonceCounts(t, callLog); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("refused approvals reached the server: call log %v, was %v", after, before)
				}
				// The refusals left the action intact: its own digest works.
				if o := a.approve(d, base.ActionID, base.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
					t.Fatalf("approving %s with its own digest after the refusals: %s", base.ActionID, o)
				}
			})
		}
	})

	t.Run("settings changed", func(t *testing.T) {
		nonce := "settings-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fy", nonce)
		// What the approval covers (a timeout or a grant would not be:
		// they apply live, see TestLivePolicy).
		servers[1] = servers[1].with("env", map[string]string{"BINDING": "changed"})
		configureMCP(t, d, mcpSettings(t, servers...))
		connectServer(t, d, "fy")
		e := a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
		if !strings.Contains(e.Message, "settings changed") {
			t.Errorf("stale refusal %q does not name the settings", e.Message)
		}
		r := wantState(t, d, prep.ActionID, contracts.ActionStale)
		if !strings.Contains(r.Reason, "settings changed") {
			t.Errorf("stale action's reason %q does not name the settings", r.Reason)
		}
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("reconnected", func(t *testing.T) {
		nonce := "reconnect-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
		connectServer(t, d, "fx")
		e := a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
		if !strings.Contains(e.Message, "reconnected") || strings.Contains(e.Message, "settings") {
			t.Errorf("stale refusal %q should name the reconnection only", e.Message)
		}
		wantState(t, d, prep.ActionID, contracts.ActionStale)
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("tool definition changed", func(t *testing.T) {
		nonce := "tooldef-" + randomHex(t, 8)
		prep := prepareCount(t, d, "px", nonce)
		before := review(t, d, prep.ActionID).Fingerprints
		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if res := callTool(t, d, "px", "notify-list-changed", ""); res.Status != contracts.CallCompleted {
			t.Fatalf("notify-list-changed: %+v", res)
		}
		var desc string
		poll(t, "the count tool's new description", func() bool {
			for _, tool := range catalogOf(t, d, "px").Tools {
				if tool.OriginalName == "count" {
					desc = tool.Description
					return tool.Digest != before.Tool
				}
			}
			return false
		}, func() string { return "description " + desc })
		e := a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
		if !strings.Contains(e.Message, "definition changed") || strings.Contains(e.Message, "reconnected") || strings.Contains(e.Message, "settings") {
			t.Errorf("stale refusal %q should name the tool definition only", e.Message)
		}
		wantState(t, d, prep.ActionID, contracts.ActionStale)
		wantNonce(t, callLog, nonce, 0)
		// A new action on the changed tool is approvable.
		again := prepareCount(t, d, "px", nonce)
		if o := a.approve(d, again.ActionID, again.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
			t.Fatalf("approving the re-prepared call: %s", o)
		}
		wantNonce(t, callLog, nonce, 1)
	})
	// Credential generations are not testable end to end until the vault
	// exists; the approvals package tests that fingerprint.
}

// TestSettledActionsSurvive checks that expired, rejected, consumed and
// stale actions cannot be approved, before and after a restart, and that
// restoring an older database does not bring an approved action back.
func TestSettledActionsSurvive(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	a := startApprover(t)

	// Expiry: the deadline is 15 minutes after creation (expiry itself is
	// unit-tested with a clock in the approvals package).
	exp := prepareCount(t, d, "fx", "expiry")
	r := review(t, d, exp.ActionID)
	created, err1 := time.Parse(time.RFC3339, r.CreatedAt)
	expires, err2 := time.Parse(time.RFC3339, r.ExpiresAt)
	if err := errors.Join(err1, err2); err != nil || expires.Sub(created) != contracts.ApprovalTTLMinutes*time.Minute || r.ExpiresAt != exp.ExpiresAt {
		t.Errorf("created %q, expires %q (call said %q): want expiry 15 minutes after creation (%v)", r.CreatedAt, r.ExpiresAt, exp.ExpiresAt, err)
	}

	type settled struct {
		name, id, digest, nonce string
		state, reason           string
		sent                    int
	}
	var all []settled

	rej := prepareCount(t, d, "fx", "rejected")
	if o := a.decideN(d, rej.ActionID, rej.Digest, contracts.DecisionReject, 1)[0]; o.Result == nil || o.Result.Status != contracts.ActionRejected {
		t.Fatalf("rejecting: %s", o)
	}
	all = append(all, settled{"rejected", rej.ActionID, rej.Digest, "rejected", contracts.ActionRejected, "action_rejected", 0})

	used := prepareCount(t, d, "fx", "consumed")
	if o := a.approve(d, used.ActionID, used.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
		t.Fatalf("approving: %s", o)
	}
	all = append(all, settled{"consumed", used.ActionID, used.Digest, "consumed", contracts.ActionCompleted, "action_consumed", 1})

	stale := prepareCount(t, d, "fx", "stale")
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
	connectServer(t, d, "fx")
	a.mustRefuse(d, stale.ActionID, stale.Digest, "action_stale")
	all = append(all, settled{"stale", stale.ActionID, stale.Digest, "stale", contracts.ActionStale, "action_stale", 0})

	check := func(t *testing.T) {
		for _, s := range all {
			wantState(t, d, s.id, s.state)
			a.mustRefuse(d, s.id, s.digest, s.reason)
			wantNonce(t, callLog, s.nonce, s.sent)
		}
	}
	t.Run("before restart", check)
	d.restart()
	connectServer(t, d, "fx")
	t.Run("after restart", check)

	t.Run("restored database", func(t *testing.T) {
		nonce := "restore-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		// The copy is taken while the daemon is idle: every commit is on
		// disk (fsync), so the file is a consistent database. It cannot be
		// taken with the daemon stopped, because the action is bound to
		// this connection and a restart makes it stale.
		dbPath := filepath.Join(d.stateDir, "pikod.db")
		old, err := os.ReadFile(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		if o := a.approve(d, prep.ActionID, prep.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
			t.Fatalf("approving: %s", o)
		}
		wantNonce(t, callLog, nonce, 1)
		d.stop(t)
		if err := os.WriteFile(dbPath, old, 0o600); err != nil {
			t.Fatal(err)
		}
		d.start(t)
		connectServer(t, d, "fx")
		r := review(t, d, prep.ActionID)
		if r.State != contracts.ActionUncertain || !strings.Contains(r.Reason, "tombstone") {
			t.Errorf("restored action is %q (%q), want uncertain by the tombstone file", r.State, r.Reason)
		}
		a.mustRefuse(d, prep.ActionID, prep.Digest, "action_consumed")
		// Settled actions of the old copy stay settled too.
		for _, s := range all {
			if s.name == "rejected" {
				a.mustRefuse(d, s.id, s.digest, "action_rejected")
			}
		}
		wantNonce(t, callLog, nonce, 1)
	})
}
