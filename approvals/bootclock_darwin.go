package approvals

import (
	"time"

	"golang.org/x/sys/unix"
)

// bootID is the kernel's identifier of this boot session (kern.boottime
// would not do: macOS moves it when the wall clock is set).
func bootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}

// sinceBoot reads CLOCK_MONOTONIC, which on macOS keeps counting while the
// machine sleeps.
func sinceBoot() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
