//go:build linux

package rpc

import "golang.org/x/sys/unix"

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
