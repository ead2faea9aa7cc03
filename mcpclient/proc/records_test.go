//go:build linux

package proc

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
