//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// procInfo is what pikod needs to know about one process.
type procInfo struct {
	PID, PPID, PGID int
	// Ticks is the start time: clock ticks since boot on Linux, fixed for
	// the life of a process, so (pid, ticks) names one process for good.
	Ticks  uint64
	Zombie bool
}

// readProc reads /proc/PID/stat; false when the process does not exist.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	return parseStat(pid, b)
}

// parseStat parses a /proc/PID/stat line. The command name (field 2) may
// hold spaces and parentheses, so fields are counted after the last ')'.
func parseStat(pid int, b []byte) (procInfo, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	ticks, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	return procInfo{PID: pid, PPID: ppid, PGID: pgid, Ticks: ticks, Zombie: f[0] == "Z" || f[0] == "X"}, true
}

// listProcs lists every process visible in /proc.
func listProcs() ([]procInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := make([]procInfo, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		if info, ok := readProc(pid); ok {
			out = append(out, info)
		}
	}
	return out, nil
}

// signalVerified signals pid only if it is still the process that started
// at ticks. Through a pidfd opened before the check, the signal cannot land
// on a process that reused the pid after the check. It reports whether the
// signal was sent.
func signalVerified(pid int, ticks uint64, sig syscall.Signal) (bool, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		// Kernels before 5.3: check then kill, with a tiny window.
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
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("opening pidfd for pid %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if info, ok := readProc(pid); !ok || info.Ticks != ticks {
		return false, nil
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signalling pid %d: %w", pid, err)
	}
	return true, nil
}

// awaitExit waits for the leader to exit without reaping it (WNOWAIT): the
// zombie keeps the pid, and so the group id, reserved until Stop reaps it,
// so kill(-pgid) can never reach a group that reused the number.
func awaitExit(p *Process) string {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "wait failed: " + err.Error()
		}
		status := siginfoStatus(&info)
		switch info.Code {
		case cldExited:
			return describeExit(true, int(status), 0, false)
		case cldDumped:
			return describeExit(false, 0, syscall.Signal(status), true)
		default:
			return describeExit(false, 0, syscall.Signal(status), false)
		}
	}
}

// si_code values of SIGCHLD (<signal.h>), missing from x/sys.
const (
	cldExited = 1
	cldDumped = 3
)

// siginfoStatus reads si_status of a SIGCHLD siginfo, which x/sys does not
// expose. The union after signo, errno and code starts at the next pointer
// boundary and holds si_pid, si_uid, si_status.
func siginfoStatus(info *unix.Siginfo) int32 {
	const ptr = unsafe.Sizeof(uintptr(0))
	base := (unsafe.Offsetof(info.Code) + 4 + ptr - 1) &^ (ptr - 1)
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), base+8))
}

// reapLeader reaps the exited leader through os/exec.
func reapLeader(p *Process) { _ = p.cmd.Wait() }

// SetSubreaper makes pikod the subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER): a server's orphans reparent to pikod rather
// than to init, so SweepAdopted can find and kill them.
func SetSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming child subreaper: %w", err)
	}
	return nil
}

// SweepAdopted kills and reaps the orphans adopted by pikod as subreaper:
// its children outside its own process group that known does not claim.
// known must claim every child pikod started on purpose in another group
// (every live Process leader, through Process.Owns), or SweepAdopted would
// kill it and steal its exit status from os/exec. Children in pikod's own
// group are never touched. It returns how many processes it killed.
func SweepAdopted(known func(pid int) bool, log zerolog.Logger) int {
	procs, err := listProcs()
	if err != nil {
		log.Warn().Err(err).Msg("sweeping adopted processes")
		return 0
	}
	self, own := os.Getpid(), unix.Getpgrp()
	var targets []procInfo
	killed := 0
	for _, pr := range procs {
		if pr.PPID != self || pr.PGID == own || isLeader(pr.PID) || (known != nil && known(pr.PID)) {
			continue
		}
		targets = append(targets, pr)
		if pr.Zombie {
			continue
		}
		ok, err := signalVerified(pr.PID, pr.Ticks, syscall.SIGKILL)
		if err != nil {
			log.Warn().Err(err).Int("pid", pr.PID).Msg("killing adopted process")
		}
		if ok {
			killed++
			log.Info().Int("pid", pr.PID).Int("pgid", pr.PGID).Msg("killed adopted orphan process")
		}
	}
	for _, pr := range targets {
		if !reapChild(pr.PID, killWait) {
			log.Warn().Int("pid", pr.PID).Msg("adopted process not reaped")
		}
	}
	return killed
}

// descriptorDir lists the process's open descriptors.
const descriptorDir = "/proc/self/fd"

// readEnviron returns pid's initial environment, NUL-separated; only a
// process of pikod's own uid (or any, for root) can be read.
func readEnviron(pid int) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}
