//go:build darwin

package daemon

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Harden keeps the daemon's memory, which holds credentials, out of core
// dumps (RLIMIT_CORE 0) and refuses debugger attachment (PT_DENY_ATTACH).
func Harden() error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return fmt.Errorf("disabling core dumps: %w", err)
	}
	if err := unix.PtraceDenyAttach(); err != nil {
		return fmt.Errorf("denying debugger attachment: %w", err)
	}
	return nil
}
