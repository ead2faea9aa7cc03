package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Record is the durable trace of one server process, written before
// Start returns and deleted once the process is gone, so a daemon
// that was killed can be cleaned up after by the next one.
type Record struct {
	ServerID string
	// PID is the process; for a group record it is also the group id.
	PID  int
	PGID int
	// StartTicks is the process start time (Linux: clock ticks since boot,
	// field 22 of /proc/PID/stat). A live pid with other ticks is another
	// process that reused the number and is never signalled.
	StartTicks uint64
	// Escapee marks a descendant that left the group (setsid): it is
	// killed by pid, not by group.
	Escapee bool
	// HomeDir is the disposable home of a group record, removed with it.
	HomeDir string
	// TempDir is the short temporary directory of a group record
	// (Spec.ShortTempDir), removed with it.
	TempDir string `json:",omitempty"`
	// Mark is the server's MarkVariable value (group records): every
	// process that carries it and started no earlier than the leader
	// belongs to the server. Empty in records of older versions.
	Mark string `json:",omitempty"`
}

// Records stores Records durably (bbolt in the daemon),
// keyed by PID. Implementations must be safe for concurrent use.
type Records interface {
	PutProcess(Record) error
	DeleteProcess(pid int) error
	ListProcesses() ([]Record, error)
}

// ReapOrphans kills what a previous daemon left running: every recorded
// group (by its live members and every process carrying its mark) and
// every recorded escapee, each checked against its start time so a
// reused pid is never hit. It waits for them
// to die (reaping those that are pikod's own children), removes the
// records and the homes they name, and returns how many processes it
// killed. Call it at daemon start, before any server starts. Records of
// processes that survive stay for the next start and are reported in err.
func ReapOrphans(records Records, log zerolog.Logger) (int, error) {
	recs, err := records.ListProcesses()
	if err != nil {
		return 0, fmt.Errorf("reaping orphaned server processes: listing records: %w", err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	self := os.Getpid()
	killed := make(map[int]bool)
	deadline := time.Now().Add(killWait)
	var remaining map[int][]procInfo // record pid -> processes still alive
	// caches remember, per record, the processes found without its mark.
	caches := make(map[int]map[procKey]bool)
	for {
		procs, err := listProcs()
		if err != nil {
			return len(killed), fmt.Errorf("reaping orphaned server processes: %w", err)
		}
		byPID := make(map[int]procInfo, len(procs))
		for _, pr := range procs {
			byPID[pr.PID] = pr
		}
		for _, pr := range procs {
			if pr.Zombie && pr.PPID == self && killed[pr.PID] {
				reapChild(pr.PID, 0)
			}
		}
		remaining = make(map[int][]procInfo)
		for _, rec := range recs {
			if caches[rec.PID] == nil {
				caches[rec.PID] = make(map[procKey]bool)
			}
			if t := orphanTargets(rec, procs, byPID, caches[rec.PID]); len(t) > 0 {
				remaining[rec.PID] = t
			}
		}
		if len(remaining) == 0 || time.Now().After(deadline) {
			break
		}
		for _, targets := range remaining {
			for _, t := range targets {
				ok, err := signalVerified(t.PID, t.Ticks, syscall.SIGKILL)
				if err != nil {
					log.Warn().Err(err).Int("pid", t.PID).Msg("killing orphaned server process")
				}
				if ok && !killed[t.PID] {
					killed[t.PID] = true
					log.Info().Int("pid", t.PID).Int("pgid", t.PGID).Msg("killed orphaned server process")
				}
			}
		}
		time.Sleep(pollEvery)
	}

	// Killed processes that are pikod's children (adopted as subreaper)
	// are reaped, however long their last threads take.
	for pid := range killed {
		if info, ok := readProc(pid); ok && info.PPID == self {
			reapChild(pid, killWait)
		}
	}
	var errs []error
	for _, rec := range recs {
		if left := remaining[rec.PID]; len(left) > 0 {
			errs = append(errs, fmt.Errorf("reaping server %q: %d processes of pid %d survived SIGKILL", rec.ServerID, len(left), rec.PID))
			continue
		}
		if rec.HomeDir != "" && filepath.IsAbs(rec.HomeDir) {
			if err := os.RemoveAll(rec.HomeDir); err != nil {
				errs = append(errs, fmt.Errorf("reaping server %q: removing home: %w", rec.ServerID, err))
			}
		}
		if ownDir(rec.TempDir) {
			if err := os.RemoveAll(rec.TempDir); err != nil {
				errs = append(errs, fmt.Errorf("reaping server %q: removing its temporary directory: %w", rec.ServerID, err))
			}
		}
		if err := records.DeleteProcess(rec.PID); err != nil {
			errs = append(errs, fmt.Errorf("reaping server %q: deleting record %d: %w", rec.ServerID, rec.PID, err))
		}
	}
	if len(killed) > 0 {
		log.Info().Int("killed", len(killed)).Int("records", len(recs)).Msg("reaped orphaned server processes")
	}
	return len(killed), errors.Join(errs...)
}

// orphanTargets returns the live processes rec stands for: for a group
// record, its members and every process carrying its mark that started no
// earlier than the leader, wherever it went.
func orphanTargets(rec Record, procs []procInfo, byPID map[int]procInfo, unmarked map[procKey]bool) []procInfo {
	out := recordTargets(rec, procs, byPID)
	if rec.Escapee || rec.Mark == "" {
		return out
	}
	have := make(map[int]bool, len(out))
	for _, pr := range out {
		have[pr.PID] = true
	}
	for _, pr := range markedIn(procs, rec.Mark, rec.StartTicks, unmarked) {
		if !have[pr.PID] {
			out = append(out, pr)
		}
	}
	return out
}

// recordTargets returns the live processes of rec's pid or group.
func recordTargets(rec Record, procs []procInfo, byPID map[int]procInfo) []procInfo {
	leader, exists := byPID[rec.PID]
	if exists && leader.Ticks != rec.StartTicks {
		// The pid was reused. For a group this also proves the group is
		// empty: a pid number is not reused while any process still has it
		// as its group id.
		return nil
	}
	if rec.Escapee {
		if exists && !leader.Zombie {
			return []procInfo{leader}
		}
		return nil
	}
	var out []procInfo
	if exists && !leader.Zombie {
		out = append(out, leader)
	}
	for _, pr := range procs {
		if pr.PGID != rec.PGID || pr.PID == rec.PID || pr.Zombie {
			continue
		}
		// With the leader gone, members hold the group id; every one of
		// them started after the leader did.
		if !exists && pr.Ticks < rec.StartTicks {
			continue
		}
		out = append(out, pr)
	}
	return out
}

// CleanRunDir removes every entry of runDir for which live returns false
// (live may be nil): homes a crashed daemon left without a record. Call it
// after ReapOrphans and before any server starts. It returns how many
// entries it removed.
func CleanRunDir(runDir string, live func(dir string) bool) (int, error) {
	entries, err := os.ReadDir(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cleaning run dir: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(runDir, e.Name())
		if live != nil && live(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("cleaning run dir: %w", err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// ownDir reports an absolute path that is a directory (not a symlink)
// owned by this process's uid: a temporary directory under /tmp is removed
// only while it is still the one pikod made.
func ownDir(dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
