//go:build darwin

package rpc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HasTerminal reports whether the peer process has a controlling
// terminal, from the kern.proc.pid sysctl (e_tdev is NODEV without one).
func (p Peer) HasTerminal() (bool, error) {
	if p.PID <= 0 {
		return false, fmt.Errorf("checking the caller's terminal: the caller's pid is unknown")
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", p.PID)
	if err != nil {
		return false, fmt.Errorf("checking the caller's terminal: %w", err)
	}
	return k.Eproc.Tdev != -1, nil
}
