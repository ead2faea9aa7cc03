//go:build linux

package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

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

	// M: a process carrying the mark of a group whose leader (D) is gone,
	// in no recorded group, not recorded itself: found by the mark. O
	// carries the same mark but started before D, so it cannot be a
	// descendant of D: it must not be touched.
	mark := "test-mark-" + strconv.Itoa(os.Getpid())
	cmdO, outO := startRaw(t, "noread", &syscall.SysProcAttr{Setsid: true}, MarkVariable+"="+mark)
	_ = readLine(t, outO)
	o := cmdO.Process.Pid
	t.Cleanup(func() { _ = cmdO.Process.Kill(); _ = cmdO.Wait() })
	time.Sleep(50 * time.Millisecond) // start times count in clock ticks (10 ms)
	cmdD, outD := startRaw(t, "noread", &syscall.SysProcAttr{Setpgid: true})
	_ = readLine(t, outD)
	dPID, ticksD := cmdD.Process.Pid, ticksOf(t, cmdD.Process.Pid)
	if ticksOf(t, o) >= ticksD {
		t.Fatalf("O started at %d, not before D at %d", ticksOf(t, o), ticksD)
	}
	_ = cmdD.Process.Kill()
	_ = cmdD.Wait()
	cmdM, outM := startRaw(t, "noread", &syscall.SysProcAttr{Setsid: true}, MarkVariable+"="+mark)
	_ = readLine(t, outM)
	m := cmdM.Process.Pid

	put := func(r Record) {
		if err := recs.PutProcess(r); err != nil {
			t.Fatal(err)
		}
	}
	put(Record{ServerID: "a", PID: a[0], PGID: a[0], StartTicks: ticksOf(t, a[0]), HomeDir: home})
	put(Record{ServerID: "b", PID: b, PGID: b, StartTicks: ticksOf(t, b) + 12345})
	put(Record{ServerID: "e", PID: e, PGID: e, StartTicks: ticksOf(t, e), Escapee: true})
	put(Record{ServerID: "c", PID: c[0], PGID: c[0], StartTicks: ticksC})
	put(Record{ServerID: "ghost", PID: 1 << 30, PGID: 1 << 30, StartTicks: 1})
	put(Record{ServerID: "m", PID: dPID, PGID: dPID, StartTicks: ticksD, Mark: mark})
	if err := cmdC.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmdC.Wait()

	killed, err := ReapOrphans(recs, zerolog.Nop())
	if err != nil {
		t.Fatalf("ReapOrphans: %v", err)
	}
	// A's leader and grandchild, C's grandchild, E, M.
	if killed != 5 {
		t.Errorf("ReapOrphans killed %d, want 5", killed)
	}
	for _, pid := range []int{a[0], a[1], c[1], e, m} {
		if exists(pid) {
			t.Errorf("pid %d survived ReapOrphans", pid)
		}
	}
	if info, ok := readProc(b); !ok || info.Zombie {
		t.Errorf("pid %d with mismatched start ticks was hit (exists %v, zombie %v)", b, ok, info.Zombie)
	}
	if info, ok := readProc(o); !ok || info.Zombie {
		t.Errorf("pid %d, marked but older than its record's leader, was hit (exists %v, zombie %v)", o, ok, info.Zombie)
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

func TestParseProcArgs2(t *testing.T) {
	argc := func(n byte) []byte { return []byte{n, 0, 0, 0} }
	join := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		in   []byte
		want string
		ok   bool
	}{
		{"args and env", join(argc(2), []byte("/bin/x\x00\x00\x00x\x00-v\x00A=1\x00"+MarkVariable+"=m\x00\x00junk")), "A=1\x00" + MarkVariable + "=m", true},
		{"no env", join(argc(1), []byte("/bin/x\x00x\x00")), "", true},
		{"cut short", join(argc(3), []byte("/bin/x\x00x\x00")), "", false},
		{"too short", []byte{1}, "", false},
	}
	for _, tt := range tests {
		got, err := parseProcArgs2(tt.in)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("%s: parseProcArgs2 = %q, %v; want %q, ok %v", tt.name, got, err, tt.want, tt.ok)
		}
	}
}

// TestSweepSparesStartedLeaders: a server Start forked is pikod's own
// child from the first instant, even before its caller knows of it (the
// supervisor learns of a process only after Start returned, its record
// written): a sweep in between must not take it for an adopted orphan.
func TestSweepSparesStartedLeaders(t *testing.T) {
	p := startTest(t, baseSpec(t, "sleep"), newMemRecords())
	if n := SweepAdopted(func(int) bool { return false }, zerolog.Nop()); n != 0 {
		t.Errorf("SweepAdopted killed %d processes, want 0: the only child is a leader Start forked", n)
	}
	select {
	case <-p.Done():
		t.Fatalf("the leader %d was killed by the sweep (%s)", p.PID(), p.ExitStatus())
	default:
	}
	stopTest(t, p)
	if isLeader(p.PID()) {
		t.Errorf("leader %d is still listed after Stop reaped it", p.PID())
	}
}
