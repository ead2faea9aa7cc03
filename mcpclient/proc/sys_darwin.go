//go:build darwin

package proc

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// procInfo is what pikod needs to know about one process.
type procInfo struct {
	PID, PPID, PGID int
	// Ticks is the start time in microseconds since the epoch on darwin.
	Ticks  uint64
	Zombie bool
}

const darwinZombie = 5 // SZOMB in <sys/proc.h>

func fromKinfo(k *unix.KinfoProc) procInfo {
	st := k.Proc.P_starttime
	return procInfo{
		PID:    int(k.Proc.P_pid),
		PPID:   int(k.Eproc.Ppid),
		PGID:   int(k.Eproc.Pgid),
		Ticks:  uint64(st.Sec)*1_000_000 + uint64(st.Usec),
		Zombie: k.Proc.P_stat == darwinZombie,
	}
}

func readProc(pid int) (procInfo, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid {
		return procInfo{}, false
	}
	return fromKinfo(k), true
}

func listProcs() ([]procInfo, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := make([]procInfo, 0, len(ks))
	for i := range ks {
		out = append(out, fromKinfo(&ks[i]))
	}
	return out, nil
}

// signalVerified signals pid if it still started at ticks. darwin has no
// pidfd, so a pid reused between the check and the kill could be hit; the
// window is a few microseconds and needs a full pid wrap.
func signalVerified(pid int, ticks uint64, sig syscall.Signal) (bool, error) {
	if info, ok := readProc(pid); !ok || info.Ticks != ticks {
		return false, nil
	}
	if err := unix.Kill(pid, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signalling pid %d: %w", pid, err)
	}
	return true, nil
}

// awaitExit reaps the leader through os/exec: darwin has no portable
// wait-without-reaping here, so after the leader exits Stop signals the
// group by a number that could in theory be reused.
func awaitExit(p *Process) string {
	_ = p.cmd.Wait()
	if p.cmd.ProcessState == nil {
		return "wait failed"
	}
	return p.cmd.ProcessState.String()
}

func reapLeader(*Process) {}

// SetSubreaper does nothing on darwin, which has no subreaper: orphans of
// a server go to launchd and only the group kill and escapee records reach
// them.
func SetSubreaper() error { return nil }

// SweepAdopted does nothing on darwin (see SetSubreaper).
func SweepAdopted(known func(pid int) bool, log zerolog.Logger) int { return 0 }

// descriptorDir lists the process's open descriptors.
const descriptorDir = "/dev/fd"

// readEnviron returns pid's initial environment, NUL-separated, from
// kern.procargs2 (readable for processes of pikod's own uid).
func readEnviron(pid int) ([]byte, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	return parseProcArgs2(b)
}
