//go:build linux

package proc

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

	"github.com/rs/zerolog"
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
	case "doublefork":
		// A helper: one child in our group (and session), then exit, so
		// the child is re-parented.
		gc, err := spawnSelf("sleep", false)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pids %d\n", gc)
	case "escape2":
		// Double fork: a helper in its own session starts a grandchild
		// and exits, so the grandchild is re-parented to the subreaper,
		// away from the tree, before any scan can have seen it.
		exe, err := os.Executable()
		if err != nil {
			return 1
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), envMode+"=doublefork")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		// Not captured: the grandchild would hold the pipe open.
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		f := strings.Fields(string(out))
		if err != nil || len(f) != 2 {
			fmt.Fprintln(os.Stderr, "double fork:", err, string(out))
			return 1
		}
		fmt.Printf("pids %d %s\n", os.Getpid(), f[1])
		time.Sleep(300 * time.Second)
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

// memRecords is an in-memory Records.
type memRecords struct {
	mu   sync.Mutex
	recs map[int]Record
}

func newMemRecords() *memRecords { return &memRecords{recs: make(map[int]Record)} }

func (m *memRecords) PutProcess(r Record) error {
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

func (m *memRecords) ListProcesses() ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
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

func baseSpec(t *testing.T, mode string) Spec {
	return Spec{
		ServerID: "proc-test",
		Command:  testExe(t),
		Env:      map[string]string{envMode: mode, "DBUS_SESSION_BUS_ADDRESS": "disabled:"},
		RunDir:   filepath.Join(t.TempDir(), "run"),
	}
}

// quickKill shortens the stop graces for children that ignore stdin EOF.
func quickKill(s Spec) Spec {
	s.CloseGrace = 100 * time.Millisecond
	s.TermGrace = 200 * time.Millisecond
	return s
}

func startTest(t *testing.T, spec Spec, recs Records) *Process {
	t.Helper()
	p, err := Start(spec, recs, zerolog.Nop())
	if err != nil {
		t.Fatalf("Start: %v", err)
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

// startRaw starts a child outside of Process, as a killed daemon would
// have left it, with env added to its environment; the caller reads its
// stdout.
func startRaw(t *testing.T, mode string, attr *syscall.SysProcAttr, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testExe(t))
	cmd.Env = append([]string{envMode + "=" + mode, "DBUS_SESSION_BUS_ADDRESS=disabled:"}, env...)
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
