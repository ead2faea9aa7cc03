package proc

import "time"

// firstScanAfter and scanEvery pace the escapee scan.
const (
	firstScanAfter = 200 * time.Millisecond
	scanEvery      = time.Second
)

// Owns reports whether pid belongs to this server: its leader, a recorded
// escapee, or (until the leader is reaped) a member of its group. The
// supervisor's known func for SweepAdopted is built from it.
func (p *Process) Owns(pid int) bool {
	if pid == p.pid {
		return true
	}
	p.mu.Lock()
	_, esc := p.escapees[pid]
	reaped := p.reaped
	p.mu.Unlock()
	if esc {
		return true
	}
	if reaped {
		return false
	}
	info, ok := readProc(pid)
	return ok && info.PGID == p.pid
}

// own waits for the leader to exit and publishes how it ended.

func (p *Process) scanLoop() {
	defer close(p.scanDone)
	t := time.NewTimer(firstScanAfter)
	defer t.Stop()
	for {
		select {
		case <-p.stopScan:
			return
		case <-t.C:
			p.ScanNow()
			t.Reset(scanEvery)
		}
	}
}

// ScanNow looks for descendants of the group that left it (setsid, setpgid)
// and records each, with its start time, as an escapee that Stop and
// ReapOrphans will kill. It runs every second on its own; an escapee that
// appears and detaches from the tree (its parent exits) between two scans
// is missed, and so is one that double-forks away after pikod died. It
// returns how many new escapees it recorded.
func (p *Process) ScanNow() int {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	p.mu.Lock()
	if p.reaped {
		p.mu.Unlock()
		return 0
	}
	known := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		known[pid] = t
	}
	p.mu.Unlock()

	procs, err := listProcs()
	if err != nil {
		p.log.Warn().Err(err).Msg("listing processes for escapees")
		return 0
	}
	children := make(map[int][]procInfo)
	byPID := make(map[int]procInfo, len(procs))
	for _, pr := range procs {
		children[pr.PPID] = append(children[pr.PPID], pr)
		byPID[pr.PID] = pr
	}
	var queue []procInfo
	for _, pr := range procs {
		if pr.PGID == p.pid {
			queue = append(queue, pr)
		}
	}
	for pid, t := range known {
		if pr, ok := byPID[pid]; ok && pr.Ticks == t {
			queue = append(queue, pr)
		} else {
			p.forgetEscapee(pid)
		}
	}
	seen := make(map[int]bool)
	var found []procInfo
	for len(queue) > 0 {
		pr := queue[0]
		queue = queue[1:]
		if seen[pr.PID] {
			continue
		}
		seen[pr.PID] = true
		if pr.PGID != p.pid && !pr.Zombie {
			if t, ok := known[pr.PID]; !ok || t != pr.Ticks {
				found = append(found, pr)
			}
		}
		queue = append(queue, children[pr.PID]...)
	}
	for _, pr := range found {
		p.mu.Lock()
		p.escapees[pr.PID] = pr.Ticks
		p.mu.Unlock()
		rec := Record{ServerID: p.spec.ServerID, PID: pr.PID, PGID: pr.PGID, StartTicks: pr.Ticks, Escapee: true}
		if err := p.records.PutProcess(rec); err != nil {
			p.log.Warn().Err(err).Int("pid", pr.PID).Msg("recording escaped process")
		}
		p.log.Info().Int("pid", pr.PID).Int("pgid", pr.PGID).Msg("server process left its group; recorded")
	}
	return len(found)
}

func (p *Process) forgetEscapee(pid int) {
	p.mu.Lock()
	delete(p.escapees, pid)
	p.mu.Unlock()
	if err := p.records.DeleteProcess(pid); err != nil {
		p.log.Warn().Err(err).Int("pid", pid).Msg("deleting the record of a gone escapee")
	}
}
