package proc

import "time"

// firstScanAfter and scanEvery pace the escapee scan.
const (
	firstScanAfter = 200 * time.Millisecond
	scanEvery      = time.Second
)

// Owns reports whether pid belongs to this server: its leader, a recorded
// escapee, (until the leader is reaped) a member of its group, or a
// process that carries the server's mark. The supervisor's known func for
// SweepAdopted is built from it, so an orphan of one server is not taken
// for an orphan of another.
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
	info, ok := readProc(pid)
	if !ok {
		return false
	}
	if !reaped && info.PGID == p.pid {
		return true
	}
	return !info.Zombie && info.Ticks >= p.ticks && carriesMark(info, p.mark)
}

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

// ScanNow looks for the server's processes outside its group and records
// each, with its start time, as an escapee that Stop and ReapOrphans will
// kill: descendants of the group or of known escapees that left it
// (setsid, setpgid), and every process carrying the server's mark,
// wherever it is in the process tree (a double fork re-parents the
// grandchild to pikod or to init, out of reach of the tree walk). It runs
// every second on its own and in Stop. Only a process that both built a
// new environment without the mark and detached from the tree between
// two scans is missed. It returns how many new escapees it recorded.
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
	// Marked processes not yet known: group members carry the mark too,
	// but need no reading.
	var others []procInfo
	for _, pr := range procs {
		if _, isKnown := known[pr.PID]; pr.PGID != p.pid && !isKnown {
			others = append(others, pr)
		}
	}
	queue = append(queue, markedIn(others, p.mark, p.ticks, p.unmarked)...)
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
