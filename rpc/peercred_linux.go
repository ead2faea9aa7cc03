//go:build linux

package rpc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerCredFD reads the peer's credentials with SO_PEERCRED. The kernel
// records them at connect time, so they describe the process that
// connected, not whoever holds the descriptor later.
func peerCredFD(fd int) (Peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	return Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)}, nil
}

// peerExe returns the executable of process pid as /proc/PID/exe names
// it now, or "" when it cannot be read (the process is gone, or not ours
// to inspect). A deleted executable reads with " (deleted)" appended.
func peerExe(pid int) string {
	if pid <= 0 {
		return ""
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return exe
}
