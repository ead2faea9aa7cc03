//go:build darwin

package rpc

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// peerCredFD reads the peer's credentials with LOCAL_PEERCRED (uid and
// groups) and LOCAL_PEERPID (pid); both are recorded at connect time.
func peerCredFD(fd int) (Peer, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	p := Peer{UID: int(cred.Uid), GID: -1}
	if cred.Ngroups > 0 {
		p.GID = int(cred.Groups[0])
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return Peer{}, err
	}
	p.PID = pid
	return p, nil
}

// peerExe returns the executable of process pid as the kernel recorded it
// at exec (kern.procargs2: a 32-bit argc, then the executable path, NUL
// terminated), or "" when it cannot be read. The path is the one exec was
// given, so it may be relative to the process's directory at the time.
func peerExe(pid int) string {
	if pid <= 0 {
		return ""
	}
	buf, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(buf) <= 4 {
		return ""
	}
	path := buf[4:] // past argc
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	return string(path)
}
