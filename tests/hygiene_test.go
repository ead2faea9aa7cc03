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

	"github.com/pikod/pikod/contracts"
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

// busProc names one process for good: (pid, start time).
type busProc struct {
	pid   int
	start uint64
}

// busProcs returns the running dbus-daemon and dbus-launch processes,
// whoever started them.
func busProcs(t testing.TB) map[busProc]bool {
	t.Helper()
	out := map[busProc]bool{}
	for _, st := range allProcs(t) {
		if st.state == "Z" || st.state == "X" {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", st.pid))
		if err != nil {
			continue
		}
		if name := strings.TrimSpace(string(comm)); name == "dbus-daemon" || name == "dbus-launch" {
			out[busProc{st.pid, st.start}] = true
		}
	}
	return out
}

// TestNoSessionBusStarted runs pikod and pikoctl with
// DBUS_SESSION_BUS_ADDRESS unset: --help, --version, a start and a stop.
// No dbus-daemon or dbus-launch may appear. Every bus process that is new
// afterwards is checked for the canary variable the test gave the
// binaries (a launched bus inherits its launcher's environment), so buses
// other tests start at the same time do not count.
func TestNoSessionBusStarted(t *testing.T) {
	t.Parallel()
	canary := "PIKO_TEST_BUS_CANARY=" + randomHex(t, 8)
	noBus := func(env []string) []string {
		env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") })
		return append(env, canary)
	}
	before := busProcs(t)
	t.Cleanup(func() {
		// A bus started by this test's binaries is the test's own: end it.
		for p := range busProcs(t) {
			if !before[p] && hasEnv(p.pid, canary) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	run := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(noBus(minimalEnv(t.TempDir())), "GODEBUG=inittrace=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
		}
		return string(out)
	}

	// The order that makes it work: busenv's init runs before keyring's,
	// which dials the bus.
	var inits []string
	for line := range strings.Lines(run(pikodBin, "--version")) {
		if rest, ok := strings.CutPrefix(line, "init "); ok {
			inits = append(inits, strings.Fields(rest)[0])
		}
	}
	busenvAt, keyringAt := slices.Index(inits, "a.pikod.internal/busenv"), slices.Index(inits, "github.com/99designs/keyring")
	if busenvAt < 0 || keyringAt < 0 || busenvAt > keyringAt {
		t.Errorf("init order: busenv at %d, keyring at %d (of %d); want busenv first", busenvAt, keyringAt, len(inits))
	}
	run(pikodBin, "--help")
	run(pikoctlBin, "--help")

	// A start and a stop. Without a user bus, auto says in status why the
	// Secret Service is unavailable; with one, the test leaves the owner's
	// keyring alone and uses the file vault.
	userBus := fmt.Sprintf("/run/user/%d/bus", os.Getuid())
	fi, err := os.Stat(userBus)
	haveBus := err == nil && fi.Mode()&os.ModeSocket != 0
	opts := []option{withCmd(func(c *exec.Cmd) { c.Env = noBus(c.Env) })}
	if haveBus {
		opts = append(opts, withPikodArgs("--vault", "file"))
	}
	d := startDaemon(t, opts...)
	if !haveBus {
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if st.Vault.Backend != "file" || !strings.Contains(st.Vault.Note, "no session bus") || !strings.Contains(st.Vault.Note, "pikod never starts a bus") {
			t.Errorf("vault status %+v; want the file backend and a note saying there is no session bus", st.Vault)
		}
	}
	d.stop(t)
	// What pikod said about the bus, as the README promises.
	said := []string{"no session bus: DBUS_SESSION_BUS_ADDRESS was unset", "the secret-service vault is unavailable"}
	if haveBus {
		said = []string{"using the session bus at " + userBus}
	}
	if len(d.logLines(t, said...)) == 0 {
		t.Errorf("the log has no line with %q", said)
	}

	others := 0
	for p := range busProcs(t) {
		if before[p] {
			continue
		}
		if hasEnv(p.pid, canary) {
			t.Errorf("pid %d (a D-Bus process) was started by pikod or pikoctl", p.pid)
		} else {
			others++
		}
	}
	if others > 0 {
		t.Logf("%d bus processes started meanwhile by others (no canary)", others)
	}
}

// hasEnv reports whether pid's environment holds the entry kv.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && slices.Contains(strings.Split(string(b), "\x00"), kv)
}
