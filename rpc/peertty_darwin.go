//go:build darwin

package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
)

// CheckTerminal checks that the peer is a person at the terminal of
// ownerUID, the way terminal-only methods need it, and returns a
// *TerminalError naming the first check that failed:
//
//  1. the process has a controlling terminal (kinfo_proc e_tdev from the
//     kern.proc.pid sysctl is not NODEV);
//  2. its fd 0 is that terminal: proc_pidfdinfo(PROC_PIDFDVNODEINFO) on
//     fd 0 describes a character device whose rdev is e_tdev (a pipe or
//     socket is not a vnode and fails the call);
//  3. the terminal device belongs to ownerUID (the vnode's owner);
//  4. the process is in the terminal's foreground process group
//     (e_tpgid == e_pgid).
//
// A check that cannot be made fails as TerminalUnchecked.
func (p Peer) CheckTerminal(ownerUID int) error {
	if p.PID <= 0 {
		return uncheckedErr(p.PID, errors.New("the caller's pid is unknown"))
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", p.PID)
	if err != nil {
		return uncheckedErr(p.PID, fmt.Errorf("kern.proc.pid: %w", err))
	}
	if k.Proc.P_pid != int32(p.PID) {
		return uncheckedErr(p.PID, errors.New("kern.proc.pid: no such process"))
	}
	tdev := k.Eproc.Tdev
	if tdev == -1 || k.Proc.P_flag&pControlT == 0 {
		return terminalErr(contracts.TerminalNone, "pid %d has no controlling terminal", p.PID)
	}
	vi, err := fdVnodeInfo(p.PID, 0)
	switch {
	case errors.Is(err, unix.EBADF):
		// No fd 0, or fd 0 is a pipe or a socket (not a vnode).
		return terminalErr(contracts.TerminalStdin, "the stdin of pid %d is not its controlling terminal", p.PID)
	case err != nil:
		return uncheckedErr(p.PID, err)
	}
	if vi.mode&unix.S_IFMT != unix.S_IFCHR || vi.rdev != uint32(tdev) {
		return terminalErr(contracts.TerminalStdin, "the stdin of pid %d is not its controlling terminal", p.PID)
	}
	if int(vi.uid) != ownerUID {
		return terminalErr(contracts.TerminalOwner, "the terminal of pid %d (device %#x) belongs to uid %d, not to the owner (uid %d)",
			p.PID, uint32(tdev), vi.uid, ownerUID)
	}
	if k.Eproc.Tpgid != k.Eproc.Pgid {
		return terminalErr(contracts.TerminalBackground, "pid %d (process group %d) is not in its terminal's foreground process group (%d)",
			p.PID, k.Eproc.Pgid, k.Eproc.Tpgid)
	}
	return nil
}

// pControlT is P_CONTROLT of <sys/proc.h>: the process has a controlling
// terminal.
const pControlT = 0x00000002

// libproc constants of <sys/proc_info.h>.
const (
	procInfoCallPIDFDInfo = 3   // PROC_INFO_CALL_PIDFDINFO
	procPIDFDVnodeInfo    = 1   // PROC_PIDFDVNODEINFO
	vnodeFDInfoSize       = 176 // sizeof(struct vnode_fdinfo)
	// Offsets into struct vnode_fdinfo: a 24-byte proc_fileinfo, then
	// vnode_info whose vinfo_stat starts with vst_dev (u32), vst_mode
	// (u16), vst_nlink (u16), vst_ino (u64), vst_uid (u32), ... vst_rdev
	// (u32) at offset 116 of vinfo_stat.
	offMode = 24 + 4
	offUID  = 24 + 16
	offRdev = 24 + 116
)

type vnodeInfo struct {
	mode uint16
	uid  uint32
	rdev uint32
}

// fdVnodeInfo is proc_pidfdinfo(pid, fd, PROC_PIDFDVNODEINFO), made with
// the proc_info system call directly (no cgo). The kernel answers only
// for processes of the caller's uid (or root).
func fdVnodeInfo(pid, fd int) (vnodeInfo, error) {
	var buf [vnodeFDInfoSize]byte
	n, _, errno := unix.Syscall6(unix.SYS_PROC_INFO, procInfoCallPIDFDInfo, uintptr(pid), procPIDFDVnodeInfo,
		uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if errno != 0 {
		return vnodeInfo{}, fmt.Errorf("proc_pidfdinfo(%d, %d): %w", pid, fd, errno)
	}
	if int(n) != len(buf) {
		return vnodeInfo{}, fmt.Errorf("proc_pidfdinfo(%d, %d): %d bytes, want %d", pid, fd, n, len(buf))
	}
	return vnodeInfo{
		mode: binary.LittleEndian.Uint16(buf[offMode:]),
		uid:  binary.LittleEndian.Uint32(buf[offUID:]),
		rdev: binary.LittleEndian.Uint32(buf[offRdev:]),
	}, nil
}
