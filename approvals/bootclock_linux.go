package approvals

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// bootID is the kernel's random identifier of this boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sinceBoot reads CLOCK_BOOTTIME: monotonic, counting suspend.
func sinceBoot() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
