//go:build linux

package proc

import (
	"bufio"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

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

// TestProcessStopFindsMarkedOrphans stops servers whose descendants were
// re-parented to pikod (the subreaper) before any scan could see them in
// the tree: only the mark in their environment says whose they are.
func TestProcessStopFindsMarkedOrphans(t *testing.T) {
	becomeSubreaper(t)
	tests := []struct {
		mode string
		// orphanAt is the index of the orphan's pid in the child's line.
		orphanAt int
		// leaderExits: the leader exits at once, leaving an empty group.
		leaderExits bool
	}{
		{"orphan", 0, true},
		{"escape2", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			recs := newMemRecords()
			spec := baseSpec(t, tt.mode)
			// A race-enabled child lingers 1 s after exiting by default:
			// the parents of the orphans must be gone before the first
			// scan (after 200 ms) could see the orphans in the tree.
			spec.Env["GORACE"] = "atexit_sleep_ms=0"
			p := startTest(t, quickKill(spec), recs)
			pids := parsePids(t, readLine(t, bufio.NewReader(p.Stdout())))
			orphan := pids[tt.orphanAt]
			t.Cleanup(func() {
				if info, ok := readProc(orphan); ok && !info.Zombie {
					_ = syscall.Kill(orphan, syscall.SIGKILL)
				}
				reapChild(orphan, time.Second)
			})
			if tt.leaderExits {
				<-p.Done()
			}
			info, ok := readProc(orphan)
			if !ok || info.PPID != os.Getpid() || info.PGID == p.PID() {
				t.Fatalf("orphan %d: exists %v, ppid %d, pgid %d; want re-parented to the test (%d), outside group %d",
					orphan, ok, info.PPID, info.PGID, os.Getpid(), p.PID())
			}
			if !p.Owns(orphan) {
				t.Errorf("Owns(%d) = false for a process carrying the server's mark", orphan)
			}
			stopTest(t, p)
			if info, ok := readProc(orphan); ok {
				t.Errorf("orphan %d survived Stop: %+v (test pid %d)", orphan, info, os.Getpid())
			}
			assertNoRecords(t, recs)
		})
	}
}
