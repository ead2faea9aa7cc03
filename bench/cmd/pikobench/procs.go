package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

const (
	readyTimeout = 15 * time.Second
	stopTimeout  = 15 * time.Second
	rpcTimeout   = 60 * time.Second
)

// binaries are the release-like builds the scenarios run.
type binaries struct {
	dir, pikod, pikoctl, fixture string
}

// buildBinaries builds pikod, pikoctl and the fixture without the race
// detector and with -trimpath, as a release would be built.
func buildBinaries(root string) (*binaries, error) {
	dir, err := os.MkdirTemp("", "pkbin")
	if err != nil {
		return nil, fmt.Errorf("creating the build dir: %w", err)
	}
	b := &binaries{
		dir:     dir,
		pikod:   filepath.Join(dir, "pikod"),
		pikoctl: filepath.Join(dir, "pikoctl"),
		fixture: filepath.Join(dir, "mcpfixture"),
	}
	for _, t := range []struct{ out, pkg string }{
		{b.pikod, "./cmd/pikod"},
		{b.pikoctl, "./cmd/pikoctl"},
		{b.fixture, "./tests/fixtures/mcpfixture"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", t.out, t.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("building %s: %w\n%s", t.pkg, err, out)
		}
	}
	return b, nil
}

// baseEnv is the environment of every process the benchmark starts: no
// session bus, a private HOME, the caller's PATH.
func baseEnv(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + home,
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
		"LANG=C.UTF-8",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
	}
}

// daemonProc is one pikod on its own state directory and socket.
type daemonProc struct {
	dir, socket, stateDir string
	env                   []string
	cmd                   *exec.Cmd
	done                  chan struct{}
	stderrPath            string
}

// startDaemon starts pikod on a fresh temporary instance under root (the
// system temp dir when empty) and waits until it answers system.hello.
func startDaemon(b *binaries, root string, extraArgs ...string) (*daemonProc, error) {
	// Short, so the socket path stays far below the 108-byte limit.
	dir, err := os.MkdirTemp(root, "pkb")
	if err != nil {
		return nil, fmt.Errorf("creating the instance dir: %w", err)
	}
	if len(filepath.Join(dir, "s.sock")) >= 100 {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("instance dir %s is too long for a Unix socket path: choose a shorter -state-root", dir)
	}
	d := &daemonProc{
		dir:        dir,
		socket:     filepath.Join(dir, "s.sock"),
		stateDir:   filepath.Join(dir, "state"),
		stderrPath: filepath.Join(dir, "stderr"),
		done:       make(chan struct{}),
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("creating HOME: %w", err)
	}
	d.env = baseEnv(home)
	errf, err := os.Create(d.stderrPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("creating the stderr file: %w", err)
	}
	defer errf.Close()
	d.cmd = exec.Command(b.pikod, append([]string{"--state-dir", d.stateDir, "--socket", d.socket}, extraArgs...)...)
	d.cmd.Env = d.env
	d.cmd.Stderr = errf
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting pikod: %w", err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		var hello contracts.HelloResult
		err := d.call(contracts.MethodHello, struct{}{}, &hello)
		if err == nil && hello.PID == d.cmd.Process.Pid {
			return d, nil
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("pikod exited before it was ready: %s", d.stderrTail())
		default:
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("pikod not ready after %v (last: %v): %s", readyTimeout, err, d.stderrTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (d *daemonProc) pid() int { return d.cmd.Process.Pid }

// stderrTail returns the last lines pikod wrote to stderr, for errors.
func (d *daemonProc) stderrTail() string {
	b, _ := os.ReadFile(d.stderrPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// instanceDirs are the daemons' directories, removed when the run ends
// rather than after each scenario: deleting tens of thousands of retained
// results makes the file system slower at creating files for a while
// (ext4 skips recently freed inodes), which would tax the next scenario.
var (
	instanceMu   sync.Mutex
	instanceDirs []string
)

func removeInstanceDirs() {
	instanceMu.Lock()
	defer instanceMu.Unlock()
	for _, d := range instanceDirs {
		os.RemoveAll(d)
	}
	instanceDirs = nil
}

// stop sends SIGINT to pikod (by pid), waits for it, and kills it if it
// does not stop in time.
func (d *daemonProc) stop() error {
	instanceMu.Lock()
	instanceDirs = append(instanceDirs, d.dir)
	instanceMu.Unlock()
	_ = d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-d.done:
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("pikod did not stop within %v of SIGINT; killed", stopTimeout)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("pikod exited with status %d: %s", code, d.stderrTail())
	}
	return nil
}

// dial opens one rpc connection to the daemon.
func (d *daemonProc) dial() (*rpc.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rpc.Dial(ctx, d.socket)
}

// call makes one call on a fresh connection and decodes the result into
// out (unless nil).
func (d *daemonProc) call(method string, params, out any) error {
	c, err := d.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return callOn(c, method, params, out)
}

func callOn(c *rpc.Client, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	return c.Call(ctx, method, params, out)
}

// configure saves mcp settings given as JSON.
func (d *daemonProc) configure(settings any) error {
	raw, err := json.Marshal(settings)
	if err != nil {
		return err
	}
	var res contracts.ConfigureResult
	return d.call(contracts.MethodConfigure, contracts.ConfigureParams{Extension: "mcp", Settings: raw}, &res)
}

// connect connects one server and returns its status.
func (d *daemonProc) connect(id string) (contracts.ServerStatus, error) {
	var res contracts.ConnectResult
	err := d.call(contracts.MethodMCPConnect, contracts.ServerParams{Server: id}, &res)
	return res.Server, err
}

// server is one entry of the mcp settings, as the benchmark writes them.
type server struct {
	ID                  string   `json:"id"`
	Transport           string   `json:"transport"`
	Command             string   `json:"command,omitempty"`
	Args                []string `json:"args,omitempty"`
	URL                 string   `json:"url,omitempty"`
	AllowPrivateNetwork bool     `json:"allowPrivateNetwork,omitempty"`
	MaxBytes            int      `json:"maxBytes,omitempty"`
	Tools               []string `json:"tools,omitempty"`
	ReadOnlyTools       []string `json:"readOnlyTools,omitempty"`
	AutonomousTools     []string `json:"autonomousTools,omitempty"`
}

type settings struct {
	Servers []server `json:"servers"`
}

// pikodCall makes one extensions.mcp.call on c and checks it completed.
func pikodCall(c *rpc.Client, params contracts.CallParams) error {
	var res contracts.CallResult
	if err := callOn(c, contracts.MethodMCPCall, params, &res); err != nil {
		return err
	}
	if res.Status != contracts.CallCompleted {
		return fmt.Errorf("call %s/%s ended %s: %+v", params.Server, params.Tool, res.Status, res.Error)
	}
	return nil
}

// directClient is an mcp-go client talking to a stdio server process that
// the benchmark started itself, over os.Pipe, the way pikod's sessions do.
type directClient struct {
	cmd  *exec.Cmd
	c    *client.Client
	done chan struct{}
	out  *os.File
}

// startDirect starts command with args and completes the legacy handshake.
func startDirect(command string, args ...string) (*directClient, error) {
	home, err := os.MkdirTemp("", "pkd")
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(command, args...)
	cmd.Env = baseEnv(home)
	cmd.Dir = home
	cmd.Stdin, cmd.Stdout = inR, outW
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting %s: %w", command, err)
	}
	inR.Close()
	outW.Close()
	dc := &directClient{cmd: cmd, done: make(chan struct{}), out: outR}
	go func() {
		_ = cmd.Wait()
		os.RemoveAll(home)
		close(dc.done)
	}()
	dc.c = client.NewClient(transport.NewIO(outR, inW, nil), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := dc.c.Start(context.Background()); err != nil {
		dc.close()
		return nil, fmt.Errorf("starting the stdio transport: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := dc.c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "pikobench", Version: "0"},
	}}); err != nil {
		dc.close()
		return nil, fmt.Errorf("handshake with %s: %w; its stderr: %s", command, err, clip(stderr.String()))
	}
	return dc, nil
}

// call makes one tools/call and checks the tool did not report an error.
func (dc *directClient) call(tool string, args map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := dc.c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool %s reported an error: %+v", tool, res.Content)
	}
	return nil
}

// listTools reads every page of tools/list and returns the number of
// tools.
func (dc *directClient) listTools(ctx context.Context) (int, error) {
	var tools int
	var cursor mcp.Cursor
	for {
		var req mcp.ListToolsRequest
		req.Params.Cursor = cursor
		res, err := dc.c.ListToolsByPage(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("tools/list: %w", err)
		}
		tools += len(res.Tools)
		if cursor = res.NextCursor; cursor == "" {
			return tools, nil
		}
	}
}

// listAll reads every page of every list the fixture offers, as pikod's
// discovery does, and returns the number of tools.
func (dc *directClient) listAll() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	tools, err := dc.listTools(ctx)
	if err != nil {
		return 0, err
	}
	var cursor mcp.Cursor
	for {
		var req mcp.ListResourcesRequest
		req.Params.Cursor = cursor
		res, err := dc.c.ListResourcesByPage(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("resources/list: %w", err)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	for cursor = ""; ; {
		var req mcp.ListResourceTemplatesRequest
		req.Params.Cursor = cursor
		res, err := dc.c.ListResourceTemplatesByPage(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("resources/templates/list: %w", err)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	for cursor = ""; ; {
		var req mcp.ListPromptsRequest
		req.Params.Cursor = cursor
		res, err := dc.c.ListPromptsByPage(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("prompts/list: %w", err)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	return tools, nil
}

// close closes the server's stdin (it exits on EOF) and waits for it,
// killing it by pid if it lingers.
func (dc *directClient) close() {
	if dc.c != nil {
		_ = dc.c.Close()
	}
	select {
	case <-dc.done:
	case <-time.After(5 * time.Second):
		_ = dc.cmd.Process.Kill()
		<-dc.done
	}
	dc.out.Close()
}

// timeProcess runs cmd to completion and returns its wall time; a non-zero
// exit is an error carrying its output.
func timeProcess(cmd *exec.Cmd, stdin string) (time.Duration, string, error) {
	var out, errb bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w\nstdout: %s\nstderr: %s", strings.Join(cmd.Args, " "), err, clip(out.String()), clip(errb.String()))
	}
	return elapsed, out.String(), nil
}

func clip(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}

// procRSS reads VmRSS (or another Vm* field) of one process, in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", field, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// fileSystemOf names the mount that holds path, from /proc/mounts.
func fileSystemOf(path string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "unknown"
	}
	abs, err := filepath.EvalSymlinks(path)
	if err != nil {
		abs = path
	}
	best, desc := "", "unknown"
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mnt := f[1]
		if (abs == mnt || strings.HasPrefix(abs, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) >= len(best) {
			best, desc = mnt, fmt.Sprintf("%s (%s on %s)", path, f[2], mnt)
		}
	}
	return desc
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPU returns the user+system CPU time pid has used, or -1.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields 14 and 15 of the line (utime, stime) are 11 and 12 after
	// the command.
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+s) * time.Second / clockTicks
}

// childrenRSS sums VmRSS of the direct children of pid.
func childrenRSS(pid int) (total int64, n int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		cpid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cpid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if rss, err := procStatusBytes(cpid, "VmRSS"); err == nil {
			total += rss
			n++
		}
	}
	return total, n
}

// syncBuffer collects a child's stderr while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// errUnavailable marks a comparison that cannot run on this machine; the
// report says why instead of giving a number.
var errUnavailable = errors.New("unavailable")
