//go:build linux

package daemon

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestHarden(t *testing.T) {
	if err := Harden(); err != nil {
		t.Fatalf("Harden: %v", err)
	}
	if d, err := dumpable(); err != nil || d {
		t.Errorf("after Harden, dumpable = %v, %v; want false", d, err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Cur != 0 || lim.Max != 0 {
		t.Errorf("after Harden, RLIMIT_CORE = %+v, %v; want 0/0", lim, err)
	}
}
