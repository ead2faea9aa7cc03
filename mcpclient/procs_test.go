//go:build linux

package mcpclient

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/rs/zerolog"
)

// The test binary doubles as a stdio child for the tests that need one
// below the MCP layer: when envMode is set, init runs the named behaviour
// and exits before any test starts.
const envMode = "PIKO_MCPTEST_MODE"

func init() {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(childMain(mode))
	}
}

func childMain(mode string) int {
	switch mode {
	case "readone":
		// Takes one message, then dies without answering.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return 3
	case "exit3":
		return 3
	default:
		_, _ = os.Stderr.WriteString("unknown mode " + mode + "\n")
		return 2
	}
}

// startChild starts this test binary in mode as a supervised process.
func startChild(t *testing.T, mode string) *proc.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start(proc.Spec{
		ServerID:   "child",
		Command:    exe,
		Env:        map[string]string{envMode: mode, "DBUS_SESSION_BUS_ADDRESS": "disabled:"},
		RunDir:     filepath.Join(t.TempDir(), "run"),
		CloseGrace: 100 * time.Millisecond,
		TermGrace:  200 * time.Millisecond,
	}, newMemRecords(), zerolog.Nop())
	if err != nil {
		t.Fatalf("starting a child: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// memRecords is an in-memory proc.Records.
type memRecords struct {
	mu   sync.Mutex
	recs map[int]proc.Record
}

func newMemRecords() *memRecords { return &memRecords{recs: make(map[int]proc.Record)} }

func (m *memRecords) PutProcess(r proc.Record) error {
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

func (m *memRecords) ListProcesses() ([]proc.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]proc.Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

func assertNoRecords(t *testing.T, recs *memRecords) {
	t.Helper()
	if left, _ := recs.ListProcesses(); len(left) != 0 {
		t.Errorf("records left after stop: %+v", left)
	}
}

// exists reports whether pid is in the process table, zombies included.
func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
