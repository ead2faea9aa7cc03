// Package tests holds the end-to-end suites: they build pikod and pikoctl
// once, start real daemons on private instances and drive them over the
// real Unix socket, the way the owner's tools do.
package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/tests/testsupport"
)

// Paths of the binaries TestMain builds once for the whole package.
var (
	binDir     string
	pikodBin   string
	pikoctlBin string
	// fixtureBin is the MCP fixture server (tests/fixtures/mcpfixture),
	// built without -race: it is a peer, not the code under test, and the
	// race runtime would slow every one of its exits.
	fixtureBin string
	// gosdkBin is the server built on the official Go SDK
	// (tests/fixtures/gosdkserver, a module of its own).
	gosdkBin string
	// gosdkClientBin is the official Go SDK's client, driven over
	// pikoctl mcp serve (tests/fixtures/gosdkclient, a module of its own).
	gosdkClientBin string
	// bridgeBin is the desktop browser bridge (cmd/browser-bridge).
	bridgeBin string
)

const (
	readyTimeout = 15 * time.Second
	stopTimeout  = 10 * time.Second
	// One socket call: generous, because the suite runs race-built
	// binaries in parallel on two cores, where a megabyte of arguments or
	// an npx start can take many seconds. Nothing here is a speed check.
	callTimeout = 30 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: finding the module root:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "pikobin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: creating the build dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Another uid runs pikoctl in the socket-permission test: the build
	// dir must be traversable by everyone (MkdirTemp gives 0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "tests: chmod build dir:", err)
		return 1
	}
	binDir = dir
	pikodBin = filepath.Join(dir, "pikod")
	pikoctlBin = filepath.Join(dir, "pikoctl")
	fixtureBin = filepath.Join(dir, "mcpfixture")
	gosdkBin = filepath.Join(dir, "gosdkserver")
	gosdkClientBin = filepath.Join(dir, "gosdkclient")
	bridgeBin = filepath.Join(dir, "browser-bridge")
	for _, b := range []struct {
		out, pkg string
		race     bool
		// dir is the module to build in, relative to root ("" for root).
		dir string
	}{
		{pikodBin, "./cmd/pikod", true, ""},
		{pikoctlBin, "./cmd/pikoctl", true, ""},
		{bridgeBin, "./cmd/browser-bridge", true, ""},
		{fixtureBin, "./tests/fixtures/mcpfixture", false, ""},
		{gosdkBin, ".", false, "tests/fixtures/gosdkserver"},
		{gosdkClientBin, ".", false, "tests/fixtures/gosdkclient"},
	} {
		args := []string{"build", "-o", b.out, b.pkg}
		if b.race {
			args = []string{"build", "-race", "-o", b.out, b.pkg}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(root, b.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "tests: building %s: %v\n%s", b.pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

// moduleRoot finds the directory of go.mod, from `go env GOMOD` or the
// parent of this package.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		if p := strings.TrimSpace(string(out)); p != "" && p != os.DevNull {
			return filepath.Dir(p), nil
		}
	}
	abs, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return "", err
	}
	return abs, nil
}

// proc is one spawned pikod process. done closes once it has been waited
// for; code is its exit code then (-1 when killed by a signal).
type proc struct {
	cmd     *exec.Cmd
	stdout  testsupport.Buffer
	stderr  testsupport.Buffer
	started time.Time
	done    chan struct{}
	code    int
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to exit and reports its code.
func (p *proc) wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.code, true
	case <-time.After(timeout):
		return 0, false
	}
}

// signal sends sig unless the process has already been reaped.
func (p *proc) signal(sig os.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *proc) kill9() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// daemon is one pikod instance (state dir and socket) and the processes
// started on it. Every process is waited for before the test ends.
type daemon struct {
	t        testing.TB
	stateDir string
	sockDir  string
	socket   string
	env      []string
	args     []string
	// cmdHooks adjust each pikod command before it starts (withCmd).
	cmdHooks []func(*exec.Cmd)
	// bin is the pikod binary to run; pikodBin when empty.
	bin string

	// mu guards the fields that follow.
	mu    sync.Mutex
	cur   *proc
	procs []*proc
}

type option func(*daemon)

// withSocket sets the socket path.
func withSocket(path string) option {
	return func(d *daemon) { d.socket = path }
}

// withStateDir sets the state directory.
func withStateDir(dir string) option {
	return func(d *daemon) { d.stateDir = dir }
}

// withCmd adjusts every pikod command of the instance before it starts
// (extra descriptors, a stderr of the test's own).
func withCmd(hook func(*exec.Cmd)) option {
	return func(d *daemon) { d.cmdHooks = append(d.cmdHooks, hook) }
}

// withEnv adds KEY=VALUE entries to the daemon's environment, replacing
// an entry of the same name.
func withEnv(kv ...string) option {
	return func(d *daemon) {
		for _, e := range kv {
			name, _, _ := strings.Cut(e, "=")
			d.env = slices.DeleteFunc(d.env, func(old string) bool {
				return strings.HasPrefix(old, name+"=")
			})
			d.env = append(d.env, e)
		}
	}
}

// minimalEnv is the environment every spawned process gets: no session
// bus, a private HOME, no XDG_RUNTIME_DIR.
func minimalEnv(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + home,
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
		"LANG=C.UTF-8",
		// The race runtime sleeps 1s at exit by default; every pikoctl run
		// would pay it.
		"GORACE=atexit_sleep_ms=10",
	}
}

// newInstance prepares a pikod instance without starting it.
func newInstance(t testing.TB, opts ...option) *daemon {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatalf("creating socket dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	d := &daemon{
		t:        t,
		stateDir: filepath.Join(t.TempDir(), "state"),
		sockDir:  sockDir,
		socket:   filepath.Join(sockDir, "pikod.sock"),
		env:      minimalEnv(t.TempDir()),
	}
	for _, o := range opts {
		o(d)
	}
	if len(d.socket) >= 100 {
		t.Fatalf("socket path %q is too long for a Unix socket", d.socket)
	}
	t.Cleanup(d.cleanup)
	return d
}

// startDaemon starts pikod on a fresh instance and waits until it answers
// system.hello. At the end of the test it is stopped with SIGINT and must
// exit 0.
func startDaemon(t testing.TB, opts ...option) *daemon {
	t.Helper()
	d := newInstance(t, opts...)
	d.start(t)
	return d
}

// spawn starts one pikod process on the instance without waiting for it.
func (d *daemon) spawn(t testing.TB) *proc {
	t.Helper()
	args := append([]string{"--state-dir", d.stateDir, "--socket", d.socket}, d.args...)
	bin := d.bin
	if bin == "" {
		bin = pikodBin
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = d.env
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	detach(p.cmd)
	for _, hook := range d.cmdHooks {
		hook(p.cmd)
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting pikod: %v", err)
	}
	d.mu.Lock()
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	return p
}

// start spawns pikod, waits until it is ready and makes it the current
// process of d.
func (d *daemon) start(t testing.TB) *proc {
	t.Helper()
	p := d.spawn(t)
	d.waitReady(t, p)
	d.mu.Lock()
	d.cur = p
	d.mu.Unlock()
	return p
}

// waitReady polls system.hello with backoff until p answers it (the pid
// in the answer must be p's), and returns the time of the first answer.
func (d *daemon) waitReady(t testing.TB, p *proc) time.Time {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	backoff := 2 * time.Millisecond
	var lastErr error
	for {
		hello, err := rawHello(d.socket, time.Second)
		if err == nil {
			if hello.PID != p.pid() {
				t.Fatalf("system.hello answered by pid %d, want %d (the daemon just started)", hello.PID, p.pid())
			}
			return time.Now()
		}
		lastErr = err
		if p.exited() {
			t.Fatalf("pikod exited with code %d before it was ready (last probe: %v); stderr:\n%s", p.code, lastErr, p.stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("pikod not ready after %v (last probe: %v); stderr:\n%s", readyTimeout, lastErr, p.stderr.String())
		}
		time.Sleep(backoff)
		if backoff < 100*time.Millisecond {
			backoff *= 2
		}
	}
}

// current returns the process serving the instance now.
func (d *daemon) current() *proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// kill9 kills the current daemon process with SIGKILL and waits for it.
func (d *daemon) kill9() {
	d.mu.Lock()
	p := d.cur
	d.cur = nil
	d.mu.Unlock()
	if p != nil {
		p.kill9()
	}
}

// restart starts a new daemon process on the same instance (after kill9 or
// stop) and waits until it is ready.
func (d *daemon) restart() {
	d.t.Helper()
	if d.current() != nil {
		d.stop(d.t)
	}
	d.start(d.t)
}

// stop sends SIGINT to the current process and asserts a clean exit.
func (d *daemon) stop(t testing.TB) {
	t.Helper()
	d.stopWith(t, syscall.SIGINT)
}

// stopWith sends sig to the current process and asserts exit code 0
// within stopTimeout; a process that does not stop is killed.
func (d *daemon) stopWith(t testing.TB, sig os.Signal) {
	t.Helper()
	d.mu.Lock()
	p := d.cur
	d.cur = nil
	d.mu.Unlock()
	if p == nil {
		return
	}
	p.signal(sig)
	code, ok := p.wait(stopTimeout)
	if !ok {
		p.kill9()
		t.Errorf("pikod did not exit within %v after %v; killed; stderr:\n%s", stopTimeout, sig, p.stderr.String())
		return
	}
	if code != 0 {
		t.Errorf("pikod exited with code %d after %v, want 0; stderr:\n%s", code, sig, p.stderr.String())
	}
	checkNoRace(t, p)
}

// checkNoRace fails the test if the race detector reported in p's stderr.
func checkNoRace(t testing.TB, p *proc) {
	t.Helper()
	if s := p.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		t.Errorf("race detected in pikod; stderr:\n%s", s)
	}
}

// cleanup stops the current process cleanly and kills any other one.
func (d *daemon) cleanup() {
	d.stop(d.t)
	d.mu.Lock()
	procs := d.procs
	d.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			p.kill9()
		}
	}
}

// client dials the daemon with the rpc client; it is closed at the end of
// the test.
func (d *daemon) client(t testing.TB) *rpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := rpc.Dial(ctx, d.socket)
	if err != nil {
		t.Fatalf("dialing %s: %v", d.socket, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call makes one call on a fresh connection and fails the test on error.
func (d *daemon) call(t testing.TB, method string, params any) json.RawMessage {
	t.Helper()
	res, err := d.tryCall(t, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res
}

// tryCall makes one call on a fresh connection, closed after it (pikod
// serves a bounded number of connections at once), and returns its
// error.
func (d *daemon) tryCall(t testing.TB, method string, params any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := rpc.Dial(ctx, d.socket)
	if err != nil {
		t.Fatalf("dialing %s: %v", d.socket, err)
	}
	defer c.Close()
	var res json.RawMessage
	err = c.Call(ctx, method, params, &res)
	return res, err
}

// callErr makes a call that must fail and returns its wire error.
func (d *daemon) callErr(t testing.TB, method string, params any) *contracts.Error {
	t.Helper()
	res, err := d.tryCall(t, method, params)
	if err == nil {
		t.Fatalf("%s succeeded with %s, want an error", method, res)
	}
	var we *contracts.Error
	if !errors.As(err, &we) {
		t.Fatalf("%s: error %v (%T) is not a *contracts.Error", method, err, err)
	}
	return we
}

// callInto makes a call and decodes its result into out.
func (d *daemon) callInto(t testing.TB, method string, params, out any) {
	t.Helper()
	res := d.call(t, method, params)
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("%s: decoding result %s: %v", method, res, err)
	}
}

// runCtl runs the compiled pikoctl against d's socket with stdin as its
// input and returns its output and exit code.
func runCtl(t testing.TB, d *daemon, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCtlSocket(t, d.socket, stdin, args...)
}

// runCtlSocket runs pikoctl with --socket socket.
func runCtlSocket(t testing.TB, socket, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCtlOpts(t, socket, ctlOpts{}, stdin, args...)
}

// ctlOpts vary how runCtlOpts starts pikoctl.
type ctlOpts struct {
	// env is added to the minimal environment.
	env []string
}

// detach starts cmd in a session of its own, without a controlling
// terminal: whatever terminal 'go test' was started from (a person's
// shell, tmux, none in CI), the command cannot prompt on it or pass the
// daemon's terminal checks through it. Tests that need a terminal drive
// their own pseudo-terminal (startTTY).
func detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}

// runCtlOpts runs pikoctl with --socket socket and stdin as its input,
// fails the test if it cannot run, does not end within a minute or
// reports a data race, and returns its output and exit code.
func runCtlOpts(t testing.TB, socket string, o ctlOpts, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pikoctlBin, append([]string{"--socket", socket}, args...)...)
	cmd.Env = append(minimalEnv(t.TempDir()), o.env...)
	detach(cmd)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
	default:
		t.Fatalf("running pikoctl %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("pikoctl %v did not finish in time; stderr:\n%s", args, errb.String())
	}
	if strings.Contains(errb.String(), "WARNING: DATA RACE") {
		t.Errorf("race detected in pikoctl %v; stderr:\n%s", args, errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// rawHello asks system.hello on a fresh raw connection, independent of the
// rpc package, so readiness checks do not depend on the client under test.
func rawHello(socket string, timeout time.Duration) (*contracts.HelloResult, error) {
	c, err := net.DialTimeout("unix", socket, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"system.hello","params":{}}`+"\n"); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result *contracts.HelloResult `json:"result"`
		Error  *contracts.Error       `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("decoding hello response %q: %w", line, err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.Result == nil || resp.Result.APIVersion == "" {
		return nil, fmt.Errorf("hello response without a result: %s", line)
	}
	return resp.Result, nil
}

// sameJSON reports whether a and b decode to equal values.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	return canonJSON(t, a) == canonJSON(t, b)
}

// canonJSON re-encodes a JSON document with sorted keys.
func canonJSON(t testing.TB, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding JSON %q: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding JSON: %v", err)
	}
	return string(out)
}

// The helpers below serve the connection suites: settings and status over
// the socket, the daemon's log, fixture servers run by the test itself,
// and a view of processes through /proc.

// waitTimeout bounds every poll for a state the daemon reaches by itself.
const waitTimeout = 20 * time.Second

// configureMCP saves mcp settings and returns the result.
func configureMCP(t testing.TB, d *daemon, settings string) contracts.ConfigureResult {
	t.Helper()
	var res contracts.ConfigureResult
	d.callInto(t, contracts.MethodConfigure, map[string]any{"extension": "mcp", "settings": json.RawMessage(settings)}, &res)
	return res
}

// serverStatus returns one server's status.
func serverStatus(t testing.TB, d *daemon, id string) contracts.ServerStatus {
	t.Helper()
	var res contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{Server: id}, &res)
	if len(res.Servers) != 1 || res.Servers[0].ID != id {
		t.Fatalf("status of %q answered %+v", id, res.Servers)
	}
	return res.Servers[0]
}

// waitServer polls a server's status until ok accepts it, and fails the
// test after waitTimeout.
func waitServer(t testing.TB, d *daemon, id, what string, ok func(contracts.ServerStatus) bool) contracts.ServerStatus {
	t.Helper()
	var st contracts.ServerStatus
	poll(t, "server "+id+" "+what, func() bool {
		st = serverStatus(t, d, id)
		return ok(st)
	}, func() string { return fmt.Sprintf("last status %+v", st) })
	return st
}

// poll calls cond with backoff until it is true; after waitTimeout it
// fails the test with what and last().
func poll(t testing.TB, what string, cond func() bool, last func() string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	backoff := 5 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if last != nil {
				msg = last()
			}
			t.Fatalf("timed out after %v waiting for %s; %s", waitTimeout, what, msg)
		}
		time.Sleep(backoff)
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// logPath is the daemon's JSON log file.
func (d *daemon) logPath() string { return filepath.Join(d.stateDir, "pikod.log") }

// logLines returns the lines of the daemon's JSON log that contain every
// one of parts.
func (d *daemon) logLines(t testing.TB, parts ...string) []string {
	t.Helper()
	b, err := os.ReadFile(d.logPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading the daemon log: %v", err)
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		match := line != ""
		for _, p := range parts {
			match = match && strings.Contains(line, p)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// waitLog waits until the daemon log has a line containing every part.
func (d *daemon) waitLog(t testing.TB, parts ...string) string {
	t.Helper()
	var lines []string
	poll(t, fmt.Sprintf("a daemon log line with %q", parts), func() bool {
		lines = d.logLines(t, parts...)
		return len(lines) > 0
	}, nil)
	return lines[0]
}

// fixtureServer is an HTTP or SSE fixture the test runs itself.
type fixtureServer struct {
	cmd *exec.Cmd
	// url is the endpoint the fixture announced (http://HOST:PORT/mcp or
	// /sse).
	url string
	// hostPort is HOST:PORT of url.
	hostPort string
	// acceptLog is the file the fixture appends a line to per accepted
	// connection.
	acceptLog string
	stderr    testsupport.Buffer
	// done closes once the fixture process has been waited for.
	done chan struct{}
}

// kill9 kills the fixture with SIGKILL and waits until it is gone: its
// port is closed when kill9 returns.
func (f *fixtureServer) kill9(t testing.TB) {
	t.Helper()
	_ = f.cmd.Process.Kill()
	select {
	case <-f.done:
	case <-time.After(stopTimeout):
		t.Fatalf("the fixture did not die after SIGKILL")
	}
}

// startFixtureServer runs the fixture with --transport and --listen set
// from transport and listen, plus args and an accept log, and waits for
// its LISTENING line. It is stopped at the end of the test.
func startFixtureServer(t testing.TB, transport, listen string, args ...string) *fixtureServer {
	t.Helper()
	f := &fixtureServer{acceptLog: filepath.Join(t.TempDir(), "accept.log")}
	all := append([]string{"--transport", transport, "--listen", listen, "--accept-log", f.acceptLog}, args...)
	return startListening(t, f, fixtureBin, all...)
}

// startListening runs bin with args as f's process and waits for its
// LISTENING line. It is stopped at the end of the test.
func startListening(t testing.TB, f *fixtureServer, bin string, all ...string) *fixtureServer {
	t.Helper()
	f.cmd = exec.Command(bin, all...)
	f.cmd.Env = minimalEnv(t.TempDir())
	f.cmd.Stderr = &f.stderr
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("fixture stdout: %v", err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("starting the fixture: %v", err)
	}
	done := make(chan struct{})
	f.done = done
	t.Cleanup(func() {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopTimeout):
			_ = f.cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				lines <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = f.cmd.Wait()
		close(done)
	}()
	select {
	case f.url = <-lines:
	case <-done:
		t.Fatalf("fixture %v exited before listening; stderr:\n%s", all, f.stderr.String())
	case <-time.After(readyTimeout):
		t.Fatalf("fixture %v did not listen within %v; stderr:\n%s", all, readyTimeout, f.stderr.String())
	}
	_, rest, _ := strings.Cut(f.url, "://")
	f.hostPort, _, _ = strings.Cut(rest, "/")
	return f
}

// accepted returns how many connections the fixture has accepted.
func (f *fixtureServer) accepted(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(f.acceptLog)
	if err != nil {
		t.Fatalf("reading the accept log: %v", err)
	}
	return strings.Count(string(b), "\n")
}

// procStat is one process as /proc/PID/stat shows it.
type procStat struct {
	pid, ppid, pgid int
	state           string
	// start is the start time in clock ticks since boot: (pid, start)
	// names one process for good, whatever reuses the pid later.
	start uint64
}

// readStat reads /proc/PID/stat; false when there is no such process.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command (field 2) may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0]}
	var err1, err2, err3 error
	st.ppid, err1 = strconv.Atoi(f[1])
	st.pgid, err2 = strconv.Atoi(f[2])
	st.start, err3 = strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return st, true
}

// running reports whether st's process still runs: it exists with the same
// start time and is not a zombie (a zombie has ended; only its exit status
// waits for its parent).
func (st procStat) running() bool {
	now, ok := readStat(st.pid)
	return ok && now.start == st.start && now.state != "Z" && now.state != "X"
}

// allProcs lists every process in /proc.
func allProcs(t testing.TB) []procStat {
	t.Helper()
	names, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("listing /proc: %v", err)
	}
	var out []procStat
	for _, e := range names {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// groupRunning returns the running (non-zombie) members of process group
// pgid.
func groupRunning(t testing.TB, pgid int) []procStat {
	t.Helper()
	var out []procStat
	for _, st := range allProcs(t) {
		if st.pgid == pgid && st.state != "Z" && st.state != "X" {
			out = append(out, st)
		}
	}
	return out
}

// procsWithArg returns the running processes whose command line has an
// argument equal to arg.
func procsWithArg(t testing.TB, arg string) []procStat {
	t.Helper()
	var out []procStat
	for _, st := range allProcs(t) {
		if st.state == "Z" || st.state == "X" {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.pid))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(b), "\x00"), arg) {
			out = append(out, st)
		}
	}
	return out
}

// trackProc reads pid's identity now and kills that very process (never a
// later one with the same pid) at the end of the test, whatever the test
// did: processes the daemon failed to stop must not outlive the test.
func trackProc(t testing.TB, pid int) procStat {
	t.Helper()
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("process %d does not exist", pid)
	}
	t.Cleanup(func() {
		if st.running() {
			_ = syscall.Kill(st.pid, syscall.SIGKILL)
		}
	})
	return st
}

// callSocket makes one call on a fresh connection without a testing.TB, so
// goroutines may use it; it decodes the result into out unless out is nil.
func callSocket(socket, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	var res json.RawMessage
	if err := c.Call(ctx, method, params, &res); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res, out)
}

// TestHarnessDetaches proves the harness never lends a command the
// terminal 'go test' runs on: a command started through detach cannot
// open /dev/tty, even when this test process has a controlling terminal
// (.ci/run runs make test under a pseudo-terminal, as a person's shell
// does).
func TestHarnessDetaches(t *testing.T) {
	probe := `if (exec 3</dev/tty) 2>/dev/null; then echo tty; else echo none; fi`
	cmd := exec.Command("sh", "-c", probe)
	detach(cmd)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "none" {
		t.Errorf("a detached command has a controlling terminal (%s)", got)
	}
	if f, err := os.Open("/dev/tty"); err == nil {
		f.Close()
		// The control: without detach, the same probe sees the terminal.
		out, _ := exec.Command("sh", "-c", probe).Output()
		if got := strings.TrimSpace(string(out)); got != "tty" {
			t.Errorf("the probe does not see this test's terminal (%s): it proves nothing", got)
		}
	}
}
