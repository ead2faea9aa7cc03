//go:build linux

package proc

import (
	"bufio"
	"context"
	"os"
	"testing"

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
