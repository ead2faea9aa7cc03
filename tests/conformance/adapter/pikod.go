package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/pikod/pikod/contracts"
)

// instance is the temporary pikod the adapter starts for one scenario: its
// own state directory and socket under dir, the file vault, no session bus,
// output to files in the log directory.
type instance struct {
	pikod, pikoctl string
	dir            string
	socket         string
	stateDir       string
	env            []string
	log            *logger
	cmd            *exec.Cmd
	waited         chan struct{}
	// stderrPath receives pikod's stderr (readable lines, race reports).
	stderrPath string
}

// start starts pikod and waits until it answers on its socket.
func (in *instance) start(ctx context.Context) error {
	in.socket = filepath.Join(in.dir, "s.sock")
	in.stateDir = filepath.Join(in.dir, "state")
	home := filepath.Join(in.dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	in.env = []string{
		"PATH=" + path,
		"HOME=" + home,
		"TMPDIR=" + in.dir,
		"LANG=C.UTF-8",
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
	}
	if v, ok := os.LookupEnv("GORACE"); ok {
		in.env = append(in.env, "GORACE="+v)
	}
	// Never the inherited stdout and stderr: the suite waits for those
	// pipes to close, and a pikod holding them would hold it.
	out, err := os.OpenFile(in.stderrPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	in.cmd = exec.Command(in.pikod, "--state-dir", in.stateDir, "--socket", in.socket,
		"--vault", "file", "--log-level", "debug")
	in.cmd.Env = in.env
	in.cmd.Stdin = nil
	in.cmd.Stdout = out
	in.cmd.Stderr = out
	in.cmd.Dir = in.dir
	// Its own process group: a signal meant for the suite's group never
	// reaches it, and the adapter alone decides when it stops.
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := in.cmd.Start(); err != nil {
		return fmt.Errorf("starting pikod: %w", err)
	}
	in.waited = make(chan struct{})
	go func() {
		_ = in.cmd.Wait()
		close(in.waited)
	}()
	in.log.printf("pikod pid %d, state %s, socket %s", in.cmd.Process.Pid, in.stateDir, in.socket)

	deadline := time.Now().Add(15 * time.Second)
	for {
		r := in.ctl(ctx, nil, "version")
		if r.code == 0 {
			in.log.printf("pikod ready: %s", firstLineOf(r.stdout))
			return nil
		}
		select {
		case <-in.waited:
			return fmt.Errorf("pikod exited at start (%s); its stderr is in %s", in.cmd.ProcessState, in.stderrPath)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pikod did not answer on %s: %s", in.socket, strings.TrimSpace(r.stderr))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends pikod by its pid: SIGTERM, then SIGKILL after 5 s. It copies
// pikod's JSON log next to the adapter's before the directory goes.
func (in *instance) stop(logCopy string) {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.waited:
		in.log.printf("pikod stopped: %s", in.cmd.ProcessState)
	case <-time.After(5 * time.Second):
		in.log.printf("pikod did not stop within 5s of SIGTERM: killing pid %d", in.cmd.Process.Pid)
		_ = in.cmd.Process.Kill()
		<-in.waited
	}
	if logCopy != "" {
		if b, err := os.ReadFile(filepath.Join(in.stateDir, "pikod.log")); err == nil {
			_ = os.WriteFile(logCopy, b, 0o600)
		}
	}
}

// result is one finished pikoctl run.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs pikoctl on the instance's socket with stdin (nil: none) and
// waits for it.
func (in *instance) ctl(ctx context.Context, stdin []byte, args ...string) result {
	cmd := exec.CommandContext(ctx, in.pikoctl, append([]string{"--socket", in.socket}, args...)...)
	cmd.Env = in.env
	cmd.Dir = in.dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	if err != nil && r.code == 0 {
		r.code = -1
		r.stderr += err.Error()
	}
	return r
}

// wireError finds the error object pikoctl --json printed, if any.
func wireError(stdout string) *contracts.Error {
	for line := range strings.SplitSeq(stdout, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, `{"code":`) {
			continue
		}
		var e contracts.Error
		if json.Unmarshal([]byte(line), &e) == nil && e.Message != "" {
			return &e
		}
	}
	return nil
}

// status reads the server's state and last error.
func (in *instance) status(ctx context.Context, server string) (contracts.ServerStatus, error) {
	r := in.ctl(ctx, nil, "--json", "mcp", "status")
	if r.code != 0 {
		return contracts.ServerStatus{}, fmt.Errorf("pikoctl mcp status: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	}
	var st contracts.StatusResult
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		return contracts.ServerStatus{}, fmt.Errorf("decoding status: %w", err)
	}
	for _, s := range st.Servers {
		if s.ID == server {
			return s, nil
		}
	}
	return contracts.ServerStatus{}, fmt.Errorf("status has no server %q", server)
}

// approvePrompt ends the question 'pikoctl mcp approve' asks.
const approvePrompt = "Anything else approves nothing: "

var suffixRE = regexp.MustCompile(`type ([0-9a-f]{6}) \(`)

// approve approves an action the way its owner does: 'pikoctl mcp
// approve' on a terminal (a pseudo-terminal the adapter drives, as the
// session leader with it as controlling terminal and stdin), typing the
// digest's last 6 characters that the review shows. pikoctl's --json
// result goes to a separate pipe so the screen and the result stay apart.
func (in *instance) approve(ctx context.Context, actionID string) (result, error) {
	t, err := in.onTerminal(ctx, "--json", "mcp", "approve", actionID)
	if err != nil {
		return result{}, err
	}
	defer t.master.Close()

	typed := false
	for !typed {
		if m := suffixRE.FindStringSubmatch(t.screen.String()); m != nil && strings.Contains(t.screen.String(), approvePrompt) {
			in.log.printf("approve %s: the terminal asks for %s; typing it", actionID, m[1])
			if _, err := io.WriteString(t.master, m[1]+"\r"); err != nil {
				return result{}, fmt.Errorf("typing on the terminal: %w", err)
			}
			typed = true
			break
		}
		select {
		case <-t.screen.changed:
		case err := <-t.waitErr:
			<-t.copied
			t.waitErr <- err
			typed = true // pikoctl ended before asking
		case <-ctx.Done():
			<-t.waitErr
			return result{}, fmt.Errorf("approving %s: %w; terminal:\n%s", actionID, ctx.Err(), t.screen.String())
		}
	}
	return t.finish(), nil
}

// terminalRun is pikoctl running on a pseudo-terminal the adapter drives,
// as the session leader with it as controlling terminal, stdin and
// stderr; its stdout (a --json result) goes to out, apart from the screen.
type terminalRun struct {
	cmd    *exec.Cmd
	master *os.File
	out    bytes.Buffer
	screen *screenBuffer
	// copied closes once everything pikoctl wrote is on the screen.
	copied chan struct{}
	// waitErr receives cmd.Wait's error once pikoctl exited.
	waitErr chan error
}

// onTerminal starts pikoctl with args on the instance's socket on a new
// pseudo-terminal. The caller closes master.
func (in *instance) onTerminal(ctx context.Context, args ...string) (*terminalRun, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	t := &terminalRun{master: master, screen: &screenBuffer{changed: make(chan struct{}, 1)},
		copied: make(chan struct{}), waitErr: make(chan error, 1)}
	t.cmd = exec.CommandContext(ctx, in.pikoctl, append([]string{"--socket", in.socket}, args...)...)
	t.cmd.Env = in.env
	t.cmd.Dir = in.dir
	t.cmd.Stdin, t.cmd.Stderr, t.cmd.Stdout = slave, slave, &t.out
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = t.cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("starting pikoctl %s on a pseudo-terminal: %w", strings.Join(args, " "), err)
	}
	go func() {
		// Ends with EIO once pikoctl and every copy of the slave are gone.
		_, _ = io.Copy(t.screen, master)
		close(t.copied)
	}()
	go func() { t.waitErr <- t.cmd.Wait() }()
	return t, nil
}

// finish waits for pikoctl to exit (and, for 2 s at most, for the screen
// to have all it wrote) and returns the run.
func (t *terminalRun) finish() result {
	err := <-t.waitErr
	select {
	case <-t.copied:
	case <-time.After(2 * time.Second):
	}
	r := result{code: t.cmd.ProcessState.ExitCode(), stdout: t.out.String(), stderr: t.screen.String()}
	if err != nil && r.code == 0 {
		r.code = -1
	}
	return r
}

// screenBuffer collects what pikoctl wrote to the terminal.
type screenBuffer struct {
	// mu guards buf.
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (s *screenBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *screenBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.ReplaceAll(s.buf.String(), "\r\n", "\n")
}

var errNoCall = errors.New("no call result")

// callResult decodes what 'pikoctl --json mcp call' or 'approve' printed:
// a call result, or an error object.
func callResult(r result) (*contracts.CallResult, *contracts.Error, error) {
	if e := wireError(r.stdout); e != nil {
		return nil, e, nil
	}
	for line := range strings.SplitSeq(r.stdout, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var res contracts.CallResult
		if json.Unmarshal([]byte(line), &res) == nil && res.Status != "" {
			return &res, nil, nil
		}
	}
	return nil, nil, errNoCall
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// answerElicitations answers, as the owner at the terminal, the
// elicitations the server sends while the call runs: for each pending
// request, 'pikoctl mcp respond' on a pseudo-terminal, accepting and
// leaving every field empty so the schema's defaults apply. It returns
// when ctx ends.
func (in *instance) answerElicitations(ctx context.Context) {
	answered := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		r := in.ctl(ctx, nil, "--json", "mcp", "requests", "--state", contracts.RequestPending)
		var list contracts.RequestsResult
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			continue
		}
		for _, req := range list.Requests {
			if answered[req.ID] || req.Kind != contracts.RequestKindElicitation {
				continue
			}
			answered[req.ID] = true
			res, err := in.respond(ctx, req.ID)
			if err != nil {
				in.log.printf("respond %s: %v", req.ID, err)
				continue
			}
			in.log.printf("respond %s: exit %d; terminal:\n%s", req.ID, res.code, indent(res.stderr))
		}
	}
}

// respond accepts a form elicitation at a pseudo-terminal, typing an
// empty line for every field (the defaults apply).
func (in *instance) respond(ctx context.Context, id string) (result, error) {
	r := in.ctl(ctx, nil, "--json", "mcp", "request", id)
	var info contracts.ServerRequestInfo
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &info) != nil {
		return result{}, fmt.Errorf("pikoctl mcp request %s: exit %d: %s", id, r.code, strings.TrimSpace(r.stderr))
	}
	fields, err := propertyNames(info.Schema)
	if err != nil {
		return result{}, err
	}
	t, err := in.onTerminal(ctx, "mcp", "respond", id)
	if err != nil {
		return result{}, err
	}
	defer t.master.Close()

	// The answers, each typed once its prompt is on the screen.
	steps := []struct{ prompt, typed string }{{"(a/d/c): ", "a"}}
	for _, f := range fields {
		// Each of the server's fields is asked inside its frame,
		// "SERVER │ NAME: ".
		steps = append(steps, struct{ prompt, typed string }{"│ " + f + ": ", ""})
	}
	done := false
	for _, st := range steps {
		for !done && !strings.Contains(t.screen.String(), st.prompt) {
			select {
			case <-t.screen.changed:
			case err := <-t.waitErr:
				t.waitErr <- err
				done = true // pikoctl ended early
			case <-ctx.Done():
				<-t.waitErr
				return result{}, fmt.Errorf("answering %s: %w; terminal:\n%s", id, ctx.Err(), t.screen.String())
			}
		}
		if done {
			break
		}
		if _, err := io.WriteString(t.master, st.typed+"\r"); err != nil {
			return result{}, fmt.Errorf("typing on the terminal: %w", err)
		}
	}
	return t.finish(), nil
}

// propertyNames lists a schema's properties in their order.
func propertyNames(schema json.RawMessage) ([]string, error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil || len(s.Properties) == 0 {
		return nil, fmt.Errorf("the requested schema has no readable properties")
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return names, nil
}
