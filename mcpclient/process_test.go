//go:build linux

package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// The test binary doubles as the child program: when envMode is set, init
// runs the named behaviour and exits before any test starts.
const envMode = "PIKO_PROCTEST_MODE"

func init() {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(childMain(mode))
	}
}

// stderrPayload ends the "stderr" child's output: escapes, controls and a
// bidi override around plain text.
const stderrPayload = "\x1b[31mred\x1b[0m|\x1b]0;title\x07|tab\there|\r\x01\x7f|\xc2\x9b31m|\u202eEND\n"

func childMain(mode string) int {
	switch mode {
	case "env":
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
		fmt.Println("--end--")
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "args":
		b, _ := json.Marshal(os.Args[1:])
		fmt.Println(string(b))
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "stdin-eof":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "sleep":
		time.Sleep(300 * time.Second)
	case "escalate":
		// Ignores SIGTERM and stdin EOF; one grandchild stays in the
		// group, one escapes into its own session.
		signal.Ignore(syscall.SIGTERM)
		gc, err1 := spawnSelf("sleep", false)
		esc, err2 := spawnSelf("sleep", true)
		if err := errors.Join(err1, err2); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pids %d %d %d\n", os.Getpid(), gc, esc)
		time.Sleep(300 * time.Second)
	case "group":
		gc, err := spawnSelf("sleep", false)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pids %d %d\n", os.Getpid(), gc)
		time.Sleep(300 * time.Second)
	case "orphan":
		esc, err := spawnSelf("sleep", true)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pids %d\n", esc)
	case "bigline":
		n, _ := strconv.Atoi(os.Getenv("PIKO_PROCTEST_N"))
		w := bufio.NewWriter(os.Stdout)
		_, _ = w.WriteString("hello\n" + strings.Repeat("x", n) + "\n")
		_ = w.Flush()
		time.Sleep(300 * time.Second)
	case "noread":
		fmt.Println("ready")
		time.Sleep(300 * time.Second)
	case "readone":
		// Takes one message, then dies without answering.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return 3
	case "closestdin":
		// The read end of the stdin pipe goes; the process and its stdout
		// stay.
		_ = os.Stdin.Close()
		fmt.Println("ready")
		time.Sleep(300 * time.Second)
	case "stderr":
		_, _ = os.Stderr.WriteString(strings.Repeat("a", 5000) + stderrPayload)
	case "exit3":
		return 3
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	return 0
}

// spawnSelf starts this binary in mode and returns its pid; it is not
// waited for (its parent's death orphans it, on purpose).
func spawnSelf(mode string, setsid bool) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envMode+"="+mode)
	cmd.Stderr = os.Stderr
	if setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// memRecords is an in-memory ProcessRecords.
type memRecords struct {
	mu   sync.Mutex
	recs map[int]ProcessRecord
}

func newMemRecords() *memRecords { return &memRecords{recs: make(map[int]ProcessRecord)} }

func (m *memRecords) PutProcess(r ProcessRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[r.PID] = r
	return nil
}

func (m *memRecords) DeleteProcess(pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, pid)
	return nil
}

func (m *memRecords) ListProcesses() ([]ProcessRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ProcessRecord, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

var subreaperOnce sync.Once

// becomeSubreaper makes the test process behave like pikod: orphans of its
// children come back to it.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	var err error
	subreaperOnce.Do(func() { err = SetSubreaper() })
	if err != nil {
		t.Fatal(err)
	}
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func baseSpec(t *testing.T, mode string) ProcessSpec {
	return ProcessSpec{
		ServerID: "proc-test",
		Command:  testExe(t),
		Env:      map[string]string{envMode: mode, "DBUS_SESSION_BUS_ADDRESS": "disabled:"},
		RunDir:   filepath.Join(t.TempDir(), "run"),
	}
}

// quickKill shortens the stop graces for children that ignore stdin EOF.
func quickKill(s ProcessSpec) ProcessSpec {
	s.CloseGrace = 100 * time.Millisecond
	s.TermGrace = 200 * time.Millisecond
	return s
}

func startTest(t *testing.T, spec ProcessSpec, recs ProcessRecords) *Process {
	t.Helper()
	p, err := StartProcess(spec, recs, zerolog.Nop())
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func stopTest(t *testing.T, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading child stdout: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

func parsePids(t *testing.T, line string) []int {
	t.Helper()
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "pids" {
		t.Fatalf("child said %q, want pids ...", line)
	}
	var out []int
	for _, s := range f[1:] {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func exists(pid int) bool {
	_, ok := readProc(pid)
	return ok
}

func assertNoRecords(t *testing.T, recs *memRecords) {
	t.Helper()
	if left, _ := recs.ListProcesses(); len(left) != 0 {
		t.Errorf("records left after stop: %+v", left)
	}
}

func TestProcessEnvIsScrubbed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("PIKO_CANARY_PROCESS", "canary-7f3a")
	spec := baseSpec(t, "env")
	spec.Env["FOO"] = "bar baz"
	spec.PATH = "/usr/bin:relative::/bin"
	recs := newMemRecords()
	p := startTest(t, spec, recs)

	env := map[string]string{}
	out := bufio.NewReader(p.Stdout())
	for {
		line := readLine(t, out)
		if line == "--end--" {
			break
		}
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	var keys []string
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"DBUS_SESSION_BUS_ADDRESS", "FOO", "HOME", "LANG", "LC_ALL", "PATH", envMode, "TMPDIR",
		"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"}
	sort.Strings(want)
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("child env keys = %v, want %v", keys, want)
	}
	for k, v := range env {
		if strings.Contains(v, "canary-7f3a") {
			t.Errorf("canary leaked into child env as %s", k)
		}
	}
	checks := map[string]string{"FOO": "bar baz", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": p.HomeDir()}
	for k, v := range checks {
		if env[k] != v {
			t.Errorf("child %s = %q, want %q", k, env[k], v)
		}
	}
	if filepath.Dir(p.HomeDir()) != spec.RunDir {
		t.Errorf("home %q is not inside run dir %q", p.HomeDir(), spec.RunDir)
	}
	for _, k := range []string{"HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"} {
		fi, err := os.Stat(env[k])
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s=%q: stat %v, err %v; want a 0700 dir", k, env[k], fi, err)
		}
		if !strings.HasPrefix(env[k], p.HomeDir()) {
			t.Errorf("%s=%q is outside the home %q", k, env[k], p.HomeDir())
		}
	}
	if recs, _ := recs.ListProcesses(); len(recs) != 1 || recs[0].PID != p.PID() || recs[0].StartTicks == 0 || recs[0].HomeDir != p.HomeDir() {
		t.Errorf("records while running = %+v, want one group record for pid %d", recs, p.PID())
	}

	stopTest(t, p)
	if got := p.ExitStatus(); got != "exit status 0" {
		t.Errorf("ExitStatus after stdin close = %q, want exit status 0", got)
	}
	if _, err := os.Stat(p.HomeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("home still there after Stop: %v", err)
	}
	assertNoRecords(t, recs)
}

func TestProcessArgsVerbatim(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "args")
	spec.Args = []string{"$HOME", "a;b", "*", "`id`", "$(id)", "x y", ""}
	p := startTest(t, spec, newMemRecords())
	var got []string
	if err := json.Unmarshal([]byte(readLine(t, bufio.NewReader(p.Stdout()))), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\x00") != strings.Join(spec.Args, "\x00") || len(got) != len(spec.Args) {
		t.Errorf("child args = %q, want %q", got, spec.Args)
	}
	stopTest(t, p)
}

func TestProcessStartErrors(t *testing.T) {
	exe := testExe(t)
	binDir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(binDir, "pikochild")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(*ProcessSpec)
		class   error
		message string
	}{
		{"found in spec PATH", func(s *ProcessSpec) { s.Command, s.PATH = "pikochild", "/nonexistent:"+binDir }, nil, ""},
		{"found in env PATH", func(s *ProcessSpec) { s.Command, s.PATH, s.Env["PATH"] = "pikochild", "/nonexistent", binDir }, nil, ""},
		{"env PATH not quoted", func(s *ProcessSpec) { s.Command, s.Env["PATH"] = "no-such-cmd-pk", "/secret-ish" }, contracts.ErrFailedPrecondition, `not found in PATH from env (install`},
		{"not in PATH", func(s *ProcessSpec) { s.Command, s.PATH = "no-such-cmd-pk", binDir }, contracts.ErrFailedPrecondition, `command "no-such-cmd-pk" not found in PATH`},
		{"relative PATH entry ignored", func(s *ProcessSpec) { s.Command, s.PATH = "pikochild", "."; s.Cwd = binDir }, contracts.ErrFailedPrecondition, "not found in PATH"},
		{"relative command", func(s *ProcessSpec) { s.Command = "./pikochild" }, contracts.ErrInvalidArgument, "must be an absolute path"},
		{"cwd relative", func(s *ProcessSpec) { s.Cwd = "rel" }, contracts.ErrInvalidArgument, `cwd "rel" is not an absolute path`},
		{"cwd is a file", func(s *ProcessSpec) { s.Cwd = file }, contracts.ErrFailedPrecondition, "is not a directory"},
		{"cwd missing", func(s *ProcessSpec) { s.Cwd = file + "-gone" }, contracts.ErrFailedPrecondition, "is not usable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := baseSpec(t, "stdin-eof")
			tt.mod(&spec)
			p, err := StartProcess(spec, newMemRecords(), zerolog.Nop())
			if tt.class == nil {
				if err != nil {
					t.Fatalf("StartProcess: %v", err)
				}
				if line := readLine(t, bufio.NewReader(p.Stdout())); line != "ready" {
					t.Errorf("child said %q, want ready", line)
				}
				stopTest(t, p)
				return
			}
			if err == nil {
				_ = p.Stop(context.Background())
				t.Fatalf("StartProcess succeeded, want %v", tt.class)
			}
			if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("StartProcess error = %v, want class %v containing %q", err, tt.class, tt.message)
			}
			if entries, _ := os.ReadDir(spec.RunDir); len(entries) != 0 {
				t.Errorf("failed start left %d entries in the run dir", len(entries))
			}
		})
	}
}

func TestProcessStopEscalation(t *testing.T) {
	becomeSubreaper(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	recs := newMemRecords()
	p := startTest(t, quickKill(baseSpec(t, "escalate")), recs)
	pids := parsePids(t, readLine(t, bufio.NewReader(p.Stdout())))
	if len(pids) != 3 || pids[0] != p.PID() {
		t.Fatalf("pids = %v, want leader %d, grandchild, escapee", pids, p.PID())
	}
	leader, grandchild, escapee := pids[0], pids[1], pids[2]

	p.ScanNow()
	all, _ := recs.ListProcesses()
	var recorded bool
	for _, r := range all {
		if r.PID == escapee && r.Escapee && r.StartTicks != 0 {
			recorded = true
		}
		if r.PID == grandchild {
			t.Errorf("group member %d recorded as escapee", grandchild)
		}
	}
	if !recorded {
		t.Fatalf("escapee %d not recorded after ScanNow: %+v", escapee, all)
	}
	if !p.Owns(escapee) || !p.Owns(grandchild) || !p.Owns(leader) || p.Owns(os.Getpid()) {
		t.Errorf("Owns: leader %v grandchild %v escapee %v self %v", p.Owns(leader), p.Owns(grandchild), p.Owns(escapee), p.Owns(os.Getpid()))
	}

	// Two concurrent Stops share one result.
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- p.Stop(context.Background()) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	for _, pid := range pids {
		if exists(pid) {
			t.Errorf("pid %d still exists after Stop", pid)
		}
	}
	if got := p.ExitStatus(); got != "signal: killed" {
		t.Errorf("ExitStatus = %q, want signal: killed (SIGTERM is ignored)", got)
	}
	assertNoRecords(t, recs)
}

// startRaw starts a child outside of Process, as a killed daemon would
// have left it; the caller reads its stdout.
func startRaw(t *testing.T, mode string, attr *syscall.SysProcAttr) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testExe(t))
	cmd.Env = []string{envMode + "=" + mode, "DBUS_SESSION_BUS_ADDRESS=disabled:"}
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	t.Cleanup(func() { _ = r.Close() })
	return cmd, bufio.NewReader(r)
}

func ticksOf(t *testing.T, pid int) uint64 {
	t.Helper()
	info, ok := readProc(pid)
	if !ok {
		t.Fatalf("pid %d not found", pid)
	}
	return info.Ticks
}

func TestReapOrphans(t *testing.T) {
	becomeSubreaper(t)
	recs := newMemRecords()
	home := filepath.Join(t.TempDir(), "home-a")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}

	// A: a live group with a grandchild.
	_, outA := startRaw(t, "group", &syscall.SysProcAttr{Setpgid: true})
	a := parsePids(t, readLine(t, outA))
	// B: a live process whose record carries other start ticks, as if its
	// pid had been reused: it must not be touched.
	cmdB, outB := startRaw(t, "noread", &syscall.SysProcAttr{Setpgid: true})
	_ = readLine(t, outB)
	b := cmdB.Process.Pid
	t.Cleanup(func() { _ = cmdB.Process.Kill(); _ = cmdB.Wait() })
	// C: a group whose leader died, leaving its grandchild in the group.
	cmdC, outC := startRaw(t, "group", &syscall.SysProcAttr{Setpgid: true})
	c := parsePids(t, readLine(t, outC))
	ticksC := ticksOf(t, c[0])
	// E: a recorded escapee.
	cmdE, outE := startRaw(t, "noread", &syscall.SysProcAttr{Setsid: true})
	_ = readLine(t, outE)
	e := cmdE.Process.Pid

	put := func(r ProcessRecord) {
		if err := recs.PutProcess(r); err != nil {
			t.Fatal(err)
		}
	}
	put(ProcessRecord{ServerID: "a", PID: a[0], PGID: a[0], StartTicks: ticksOf(t, a[0]), HomeDir: home})
	put(ProcessRecord{ServerID: "b", PID: b, PGID: b, StartTicks: ticksOf(t, b) + 12345})
	put(ProcessRecord{ServerID: "e", PID: e, PGID: e, StartTicks: ticksOf(t, e), Escapee: true})
	put(ProcessRecord{ServerID: "c", PID: c[0], PGID: c[0], StartTicks: ticksC})
	put(ProcessRecord{ServerID: "ghost", PID: 1 << 30, PGID: 1 << 30, StartTicks: 1})
	if err := cmdC.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmdC.Wait()

	killed, err := ReapOrphans(recs, zerolog.Nop())
	if err != nil {
		t.Fatalf("ReapOrphans: %v", err)
	}
	// A's leader and grandchild, C's grandchild, E.
	if killed != 4 {
		t.Errorf("ReapOrphans killed %d, want 4", killed)
	}
	for _, pid := range []int{a[0], a[1], c[1], e} {
		if exists(pid) {
			t.Errorf("pid %d survived ReapOrphans", pid)
		}
	}
	if info, ok := readProc(b); !ok || info.Zombie {
		t.Errorf("pid %d with mismatched start ticks was hit (exists %v, zombie %v)", b, ok, info.Zombie)
	}
	assertNoRecords(t, recs)
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("home of a reaped group still there: %v", err)
	}
}

func TestSweepAdopted(t *testing.T) {
	becomeSubreaper(t)
	cmd, out := startRaw(t, "orphan", &syscall.SysProcAttr{Setpgid: true})
	x := parsePids(t, readLine(t, out))[0]
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	info, ok := readProc(x)
	if !ok || info.PPID != os.Getpid() {
		t.Fatalf("orphan %d: exists %v, ppid %d; want adopted by the test process %d", x, ok, info.PPID, os.Getpid())
	}
	if n := SweepAdopted(func(pid int) bool { return pid == x }, zerolog.Nop()); n != 0 || !exists(x) {
		t.Errorf("SweepAdopted with the orphan known killed %d (exists %v), want 0 and alive", n, exists(x))
	}
	if n := SweepAdopted(func(int) bool { return false }, zerolog.Nop()); n < 1 {
		t.Errorf("SweepAdopted killed %d, want at least the orphan", n)
	}
	if exists(x) {
		t.Errorf("adopted orphan %d still exists (or is an unreaped zombie)", x)
	}
}

func TestStdoutLineCap(t *testing.T) {
	tests := []struct {
		name    string
		line    int
		tooLong bool
	}{
		{"line at the cap passes", 1 << 20, false},
		{"line over the cap fails", 2 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			spec := baseSpec(t, "bigline")
			spec.ServerID = "cap"
			spec.Env["PIKO_PROCTEST_N"] = strconv.Itoa(tt.line)
			spec.MaxLineBytes = 1 << 20
			p := startTest(t, quickKill(spec), newMemRecords())
			out := bufio.NewReader(p.Stdout())
			if got := readLine(t, out); got != "hello" {
				t.Fatalf("first line = %q, want hello", got)
			}
			line, err := out.ReadString('\n')
			if tt.tooLong {
				if !errors.Is(err, ErrMessageTooLarge) || !errors.Is(err, contracts.ErrResourceExhausted) {
					t.Fatalf("reading a %d-byte line: err %v, want ErrMessageTooLarge", tt.line, err)
				}
				if want := `server "cap" sent a message over maxBytes (1048576 bytes)`; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
				if !errors.Is(p.CloseReason(), ErrMessageTooLarge) {
					t.Errorf("CloseReason = %v, want ErrMessageTooLarge", p.CloseReason())
				}
			} else if err != nil || len(line) != tt.line+1 {
				t.Errorf("reading a %d-byte line: %d bytes, err %v", tt.line, len(line), err)
			}
			stopTest(t, p)
		})
	}
}

func TestStdoutLineCapChunks(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		tooLong bool
	}{
		{"ab\ncd\n", "ab\ncd\n", false},
		{"abc\n", "", true},
		{"ok\nTOOLONG", "ok\n", true},
		{"ok\nab", "ok\nab", false},
	}
	for _, tt := range tests {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.WriteString(tt.in)
		_ = w.Close()
		lr := &lineCapReader{p: &Process{log: zerolog.Nop()}, f: r, max: 2}
		got, err := io.ReadAll(lr)
		_ = r.Close()
		if string(got) != tt.want || errors.Is(err, ErrMessageTooLarge) != tt.tooLong {
			t.Errorf("read %q with max 2 = %q, %v; want %q, too long %v", tt.in, got, err, tt.want, tt.tooLong)
		}
	}
}

func TestStdinWriteTimeout(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "noread")
	spec.WriteTimeout = 200 * time.Millisecond
	p := startTest(t, quickKill(spec), newMemRecords())
	if got := readLine(t, bufio.NewReader(p.Stdout())); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	n, err := p.Stdin().Write(make([]byte, 1<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, contracts.ErrDeadlineExceeded) {
		t.Fatalf("Write of 1 MiB to a child that never reads: n %d err %v, want a deadline error", n, err)
	}
	if n >= 1<<20 {
		t.Errorf("Write reported %d bytes written", n)
	}
	// The pipe took part of the frame before the deadline: it was sent in
	// part, so it is not "not sent".
	if n == 0 || unsentFrame(err) {
		t.Errorf("partial write: n %d, not-sent record %v; want n > 0 and no record", n, unsentFrame(err))
	}
	if got := p.StdinWritten(); got != uint64(n) {
		t.Errorf("StdinWritten = %d, want the %d bytes that went", got, n)
	}
	n2, err2 := p.Stdin().Write([]byte("x\n"))
	if !errors.Is(err2, contracts.ErrDeadlineExceeded) {
		t.Errorf("Write after a timeout = %v, want the same sticky error", err2)
	}
	// Nothing of the next frame went.
	if n2 != 0 || !unsentFrame(err2) || p.StdinWritten() != uint64(n) {
		t.Errorf("Write after a timeout: n %d, not-sent record %v, written %d; want 0, a record, %d", n2, unsentFrame(err2), p.StdinWritten(), n)
	}
	if !errors.Is(p.CloseReason(), contracts.ErrDeadlineExceeded) {
		t.Errorf("CloseReason = %v", p.CloseReason())
	}
	stopTest(t, p)
}

// TestStdinWriteClosedPipe writes to a child that closed its stdin, and to
// a stdin pikod closed: nothing of the frame went, and the error says so.
func TestStdinWriteClosedPipe(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := startTest(t, quickKill(baseSpec(t, "closestdin")), newMemRecords())
	if got := readLine(t, bufio.NewReader(p.Stdout())); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	frame := []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call"}` + "\n")
	n, err := p.Stdin().Write(frame)
	if err == nil || n != 0 || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a closed pipe: n %d, err %v; want 0 bytes and EPIPE", n, err)
	}
	if !unsentFrame(err) {
		t.Errorf("Write to a closed pipe: %v carries no not-sent record", err)
	}
	// mcp-go wraps the write error with %w: the record survives.
	if !unsentFrame(fmt.Errorf("failed to write request: %w", err)) {
		t.Errorf("the not-sent record does not survive wrapping")
	}
	if p.StdinWritten() != 0 {
		t.Errorf("StdinWritten = %d after a failed write, want 0", p.StdinWritten())
	}
	stopTest(t, p)
	// Stop closed our end: a later write fails before writing anything.
	if n, err := p.Stdin().Write(frame); err == nil || n != 0 || !unsentFrame(err) {
		t.Errorf("Write after Stop: n %d, err %v; want 0 bytes and a not-sent record", n, err)
	}
}

func TestStderrTail(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "stderr")
	spec.StderrRingBytes = 1024
	p := startTest(t, spec, newMemRecords())
	<-p.Done()
	stopTest(t, p) // waits for the stderr drain
	got := p.StderrTail()
	want := strings.Repeat("a", 1024-len(stderrPayload)) +
		`\u{001B}[31mred\u{001B}[0m|\u{001B}]0;title\u{0007}|tab` + "\t" + `here|\u{000D}\u{0001}\u{007F}|\u{009B}31m|\u{202E}END` + "\n"
	if got != want {
		t.Errorf("StderrTail = %q, want %q", got, want)
	}
	if !utf8.ValidString(got) {
		t.Errorf("StderrTail is not valid UTF-8")
	}
}

func TestStderrTailLines(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "secret-value-18chr", "[REDACTED]") }
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"one line", 16, []string{"abc\n"}, "abc\n"},
		{"the ring keeps the end", 8, []string{"abcdef\n", "ghij\n"}, "ef\nghij\n"},
		{"a line in pieces", 64, []string{"ab", "c\nde", "f\n"}, "abc\ndef\n"},
		{"a line still being written shows", 64, []string{"done\nhalf"}, "done\nhalf"},
		// A secret split across writes is redacted as one line, and the
		// ring's cap then cuts only redacted text.
		{"secret across writes", 64, []string{"key=secret-val", "ue-18chr end\n"}, "key=[REDACTED] end\n"},
		{"secret at the cap", 20, []string{"xxxxxxxxxx secret-value-18chr\n"}, "xxxxxxxx [REDACTED]\n"},
		{"pending secret", 64, []string{"a secret-value-18chr"}, "a [REDACTED]"},
	}
	for _, tt := range tests {
		tail := newStderrTail(tt.size, redact)
		for _, w := range tt.writes {
			if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write(%q) = %d, %v", tt.name, w, n, err)
			}
		}
		if got := tail.String(); got != tt.want {
			t.Errorf("%s: tail = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestStderrTailOverlongLine: a line far longer than the tail loses its
// beginning, and with it every piece of a secret that straddled the cut,
// even when redacting what follows shrinks the line a lot.
func TestStderrTailOverlongLine(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 400; i++ {
		fmt.Fprintf(&sb, "%x-", i*7919)
	}
	secret := sb.String()
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	for _, after := range []int{0, 1, 40} {
		tail := newStderrTail(1024, redact)
		window := 1024 + stderrCutMargin
		// Written in chunks of 100 bytes, the line is trimmed when it
		// first passes 2*window bytes, to its last window bytes: put a
		// secret across that cut, then after more copies of it (which
		// redaction shrinks), the end.
		const chunk = 100
		cutAt := (2*window/chunk+1)*chunk - window
		line := strings.Repeat("h", cutAt-10) + strings.Repeat(secret, 1+after) + " end\n"
		for i := 0; i < len(line); i += chunk {
			_, _ = tail.Write([]byte(line[i:min(i+chunk, len(line))]))
		}
		got := tail.String()
		for i := 0; i+6 <= len(secret); i++ {
			if strings.Contains(got, secret[i:i+6]) {
				t.Fatalf("%d copies after: the tail %q holds %q, a piece of the secret", after, got, secret[i:i+6])
			}
		}
		if !strings.HasSuffix(got, " end\n") || len(got) > 1024 {
			t.Errorf("%d copies after: tail of %d bytes ends %q", after, len(got), got[max(0, len(got)-20):])
		}
	}
}

func TestProcessExitStatus(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	recs := newMemRecords()
	p := startTest(t, baseSpec(t, "exit3"), recs)
	if p.ExitStatus() != "" {
		select {
		case <-p.Done():
		default:
			t.Errorf("ExitStatus %q before Done", p.ExitStatus())
		}
	}
	<-p.Done()
	if got := p.ExitStatus(); got != "exit status 3" {
		t.Errorf("ExitStatus = %q, want exit status 3", got)
	}
	// The exited leader stays unreaped until Stop, holding its group id.
	if info, ok := readProc(p.PID()); !ok || !info.Zombie {
		t.Errorf("leader before Stop: exists %v zombie %v, want an unreaped zombie", ok, info.Zombie)
	}
	stopTest(t, p)
	if exists(p.PID()) {
		t.Errorf("leader %d not reaped by Stop", p.PID())
	}
	if _, err := os.Stat(p.HomeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("home still there after Stop: %v", err)
	}
	assertNoRecords(t, recs)
}

func TestParseStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 4242 18 19 20"
	tests := []struct {
		in   string
		want procInfo
		ok   bool
	}{
		{"10 (sleep) S 1 10" + tail, procInfo{PID: 10, PPID: 1, PGID: 10, Ticks: 4242}, true},
		{"10 (a) (b) Z) Z 7 8" + tail, procInfo{PID: 10, PPID: 7, PGID: 8, Ticks: 4242, Zombie: true}, true},
		{"10 (short) S 1 2 3", procInfo{}, false},
		{"garbage", procInfo{}, false},
	}
	for _, tt := range tests {
		got, ok := parseStat(10, []byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCleanRunDir(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"live-1", "dead-1", "dead-2"} {
		if err := os.MkdirAll(filepath.Join(dir, name, "tmp"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	n, err := CleanRunDir(dir, func(d string) bool { return filepath.Base(d) == "live-1" })
	if err != nil || n != 2 {
		t.Fatalf("CleanRunDir = %d, %v; want 2, nil", n, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "live-1" {
		t.Errorf("left %v, want only live-1", entries)
	}
	if n, err := CleanRunDir(filepath.Join(dir, "missing"), nil); n != 0 || err != nil {
		t.Errorf("CleanRunDir(missing) = %d, %v", n, err)
	}
}
