//go:build darwin

package rpc

import "golang.org/x/sys/unix"

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
