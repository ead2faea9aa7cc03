package proc

import "sync"

// leaders holds the pids of the group leaders Start forked and Stop has
// not reaped yet. They are pikod's own children from the instant they
// exist, so the sweep of adopted orphans never takes one for an orphan,
// however far its caller got in recording and tracking it. An unreaped
// leader keeps its pid (exited, it stays a zombie), so the pid names the
// same process until it is removed.
var leaders struct {
	// mu guards pids.
	mu   sync.Mutex
	pids map[int]struct{}
}

func addLeader(pid int) {
	leaders.mu.Lock()
	defer leaders.mu.Unlock()
	if leaders.pids == nil {
		leaders.pids = map[int]struct{}{}
	}
	leaders.pids[pid] = struct{}{}
}

func removeLeader(pid int) {
	leaders.mu.Lock()
	defer leaders.mu.Unlock()
	delete(leaders.pids, pid)
}

func isLeader(pid int) bool {
	leaders.mu.Lock()
	defer leaders.mu.Unlock()
	_, ok := leaders.pids[pid]
	return ok
}
