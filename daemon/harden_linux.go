//go:build linux

package daemon

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Harden keeps the daemon's memory, which holds credentials, out of core
// dumps and away from ptrace by other processes of the same user: it sets
// RLIMIT_CORE to 0 and PR_SET_DUMPABLE to 0 (which also makes /proc/PID/mem
// and friends root-only). Root can still read it.
func Harden() error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return fmt.Errorf("disabling core dumps: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("disabling ptrace and dumps (PR_SET_DUMPABLE): %w", err)
	}
	return nil
}

// dumpable reports PR_GET_DUMPABLE, for tests.
func dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}
