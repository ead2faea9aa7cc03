package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

const (
	// killWait bounds the wait for processes to vanish after SIGKILL: only
	// a process stuck in uninterruptible sleep takes longer.
	killWait = 5 * time.Second
	// pollEvery is how often /proc is re-read while waiting for a group to
	// empty. Exit of the leader is seen at once through Done.
	pollEvery = 20 * time.Millisecond
	// killRounds bounds the SIGKILL rounds of Stop (scan, kill, wait).
	killRounds = 3
)

// Stop ends the child: close stdin, wait CloseGrace, SIGTERM the group and
// the escapees (ScanNow finds them), wait TermGrace, SIGKILL them, scan
// again and SIGKILL what it found until nothing is left; then reap, remove
// the home and delete the records. A done ctx skips the graceful waits.
// It is idempotent and safe to call concurrently; later callers get the
// first result. Records are kept when something survived SIGKILL so the
// next daemon start retries.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.stopErr = p.stop(ctx, true)
	})
	return p.stopErr
}

func (p *Process) stop(ctx context.Context, graceful bool) error {
	_ = p.stdin.Close()
	if graceful {
		p.waitGone(ctx, p.spec.CloseGrace)
	}
	// Whatever left the group meanwhile (by the tree or by the mark) is
	// recorded before anything is signalled: an empty group does not mean
	// that nothing of the server runs.
	p.ScanNow()
	if graceful && p.alive() > 0 && ctx.Err() == nil {
		p.signalAll(syscall.SIGTERM)
		p.waitGone(ctx, p.spec.TermGrace)
	}
	var errs []error
	// A process that forked while it had SIGTERM to handle may have left
	// a child nobody recorded yet: scan again after each SIGKILL round,
	// until a round finds nothing alive.
	for round := 0; ; round++ {
		p.ScanNow()
		if p.alive() == 0 {
			break
		}
		if round == killRounds {
			errs = append(errs, fmt.Errorf("stopping server %q: processes of group %d kept appearing after %d SIGKILL rounds", p.spec.ServerID, p.pid, killRounds))
			break
		}
		p.signalAll(syscall.SIGKILL)
		if !p.waitGone(context.Background(), killWait) {
			errs = append(errs, fmt.Errorf("stopping server %q: processes of group %d survived SIGKILL", p.spec.ServerID, p.pid))
			break
		}
	}
	select {
	case <-p.stopScan:
	default:
		close(p.stopScan)
	}
	<-p.scanDone

	select {
	case <-p.done:
		// Under scanMu so that no scan uses the group id once it is free.
		p.scanMu.Lock()
		reapLeader(p)
		removeLeader(p.pid)
		p.mu.Lock()
		p.reaped = true
		p.mu.Unlock()
		p.scanMu.Unlock()
	default:
	}
	// Anything still holding the pipes is beyond reach; closing our ends
	// ends the drain and mcp-go's reader.
	_ = p.outR.Close()
	_ = p.errR.Close()
	<-p.stderrDone

	if err := os.RemoveAll(p.home); err != nil {
		errs = append(errs, fmt.Errorf("stopping server %q: removing home: %w", p.spec.ServerID, err))
	}
	if p.tmp != "" {
		if err := os.RemoveAll(p.tmp); err != nil {
			errs = append(errs, fmt.Errorf("stopping server %q: removing its temporary directory: %w", p.spec.ServerID, err))
		}
	}
	if len(errs) == 0 {
		p.mu.Lock()
		pids := make([]int, 0, len(p.escapees))
		for pid := range p.escapees {
			pids = append(pids, pid)
		}
		p.mu.Unlock()
		for _, pid := range append(pids, p.pid) {
			if err := p.records.DeleteProcess(pid); err != nil {
				errs = append(errs, fmt.Errorf("stopping server %q: deleting process record %d: %w", p.spec.ServerID, pid, err))
			}
		}
		// The pids are free for reuse now: Owns must not claim them.
		p.mu.Lock()
		clear(p.escapees)
		p.mu.Unlock()
	}
	err := errors.Join(errs...)
	p.log.Info().Int("pid", p.pid).Str("exit_status", p.ExitStatus()).AnErr("error", err).Msg("server process stopped")
	return err
}

// waitGone waits up to d (or until ctx ends) for the whole tree to go.
func (p *Process) waitGone(ctx context.Context, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	done := p.done
	for {
		if p.alive() == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return p.alive() == 0
		case <-done:
			done = nil // seen once; later members are polled
		case <-tick.C:
		}
	}
}

// alive counts the living processes of the tree: the leader until it
// exits, group members and recorded escapees. Members and escapees that
// died as pikod's adopted children (subreaper) are reaped on the way.
func (p *Process) alive() int {
	n := 0
	select {
	case <-p.done:
	default:
		n++
	}
	procs, err := listProcs()
	if err != nil {
		p.log.Warn().Err(err).Msg("listing processes")
		return n + 1
	}
	p.mu.Lock()
	esc := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		esc[pid] = t
	}
	p.mu.Unlock()
	self := os.Getpid()
	for _, pr := range procs {
		if pr.PID == p.pid {
			continue
		}
		t, isEsc := esc[pr.PID]
		if pr.PGID != p.pid && (!isEsc || t != pr.Ticks) {
			continue
		}
		if pr.Zombie {
			// A multi-threaded process shows as a zombie once its main
			// thread exited, before wait can take it: count it until it
			// is reaped, or it would stay a zombie of pikod.
			if pr.PPID == self && !reapChild(pr.PID, 0) {
				n++
			}
			continue
		}
		n++
	}
	return n
}

// signalAll signals the group and every recorded escapee. The group is
// signalled by number, which is safe because the leader is not reaped
// before Stop is done with it.
func (p *Process) signalAll(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.log.Warn().Err(err).Int("pgid", p.pid).Str("signal", sig.String()).Msg("signalling server process group")
	}
	p.mu.Lock()
	esc := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		esc[pid] = t
	}
	p.mu.Unlock()
	for pid, t := range esc {
		if _, err := signalVerified(pid, t, sig); err != nil {
			p.log.Warn().Err(err).Int("pid", pid).Str("signal", sig.String()).Msg("signalling escaped server process")
		}
	}
	p.log.Info().Int("pgid", p.pid).Int("escapees", len(esc)).Str("signal", sig.String()).Msg("signalled server processes")
}

// reapChild reaps pid if it is pikod's child, polling up to within.
// It waits for that pid only, never -1: a wildcard wait would steal exit
// statuses that os/exec is waiting for.
func reapChild(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case wpid == pid, errors.Is(err, syscall.ECHILD):
			return true
		case err != nil:
			return false
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}
