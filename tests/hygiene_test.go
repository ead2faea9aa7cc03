package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestChildDescriptors starts pikod with two descriptors it inherits
// without close-on-exec, as a careless parent leaves them: a file holding
// a canary and the write end of a pipe. A stdio server must get neither:
// exactly fds 0, 1 and 2 of what pikod inherited.
func TestChildDescriptors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("PIKO-FD-CANARY-"+randomHex(t, 8)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	var pst syscall.Stat_t
	if err := syscall.Fstat(int(pr.Fd()), &pst); err != nil {
		t.Fatal(err)
	}
	pipeTarget := fmt.Sprintf("pipe:[%d]", pst.Ino)

	// ExtraFiles become pikod's fds 3 and 4, without close-on-exec.
	d := startDaemon(t, withCmd(func(c *exec.Cmd) { c.ExtraFiles = []*os.File{f, pw} }))
	for fd, want := range map[int]string{3: secret, 4: pipeTarget} {
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", d.current().pid(), fd)); err != nil || got != want {
			t.Fatalf("pikod's fd %d is %q, %v; want %q (else the test proves nothing)", fd, got, err, want)
		}
	}
	probe := filepath.Join(dir, "probe")
	configureMCP(t, d, mcpSettings(t, stdioFixture("fds", "--probe-fds", probe)))
	connectServer(t, d, "fds")

	// The probe is written before the fixture serves: connected means done.
	b, err := os.ReadFile(probe)
	if err != nil || !strings.HasSuffix(string(b), "end\n") {
		t.Fatalf("the fixture's descriptor probe: %q, %v; want a complete list", b, err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		if f[4] == "canary=yes" || f[3] == secret || f[3] == pipeTarget {
			t.Errorf("the server got a descriptor pikod inherited: %s", strings.TrimSpace(line))
		}
	}
	line := d.waitLog(t, "inherited descriptors marked close-on-exec")
	var logged struct{ FDs []int }
	if err := json.Unmarshal([]byte(line), &logged); err != nil || !slices.Contains(logged.FDs, 3) || !slices.Contains(logged.FDs, 4) {
		t.Errorf("log line %s (%v): want fds 3 and 4 among the marked", line, err)
	}
}

// TestBrokenStderr runs pikod with stderr a pipe whose reader goes away,
// as `make run 2>&1 | tee log` and Ctrl-C leave it when tee dies first:
// pikod must still shut down cleanly, remove its socket and keep logging
// to its log file.
func TestBrokenStderr(t *testing.T) {
	t.Parallel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	d := startDaemon(t, withCmd(func(c *exec.Cmd) { c.Stderr = pw }))
	// pikod holds its own copy: the pipe breaks when the reader closes.
	_ = pw.Close()
	_ = pr.Close()
	d.stop(t) // SIGINT; asserts exit status 0
	if _, err := os.Stat(d.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s after the stop: %v; want it removed", d.socket, err)
	}
	for _, msg := range []string{"stderr is gone", "shutting down", "stopped serving", "database closed", "pikod stopped cleanly"} {
		if len(d.logLines(t, msg)) == 0 {
			t.Errorf("the log file has no line %q", msg)
		}
	}
}
