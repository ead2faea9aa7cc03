//go:build linux

package proc

import (
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMarkInheritedCloseOnExec opens a descriptor without close-on-exec,
// as a parent of pikod would leave one, and checks that it is marked and
// reported, and that a second pass finds nothing left to mark.
func TestMarkInheritedCloseOnExec(t *testing.T) {
	fd, err := unix.Open(filepath.Join(t.TempDir(), "inherited"), unix.O_CREAT|unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatalf("descriptor %d is close-on-exec before the test: the test proves nothing", fd)
	}
	marked, err := MarkInheritedCloseOnExec()
	if err != nil {
		t.Fatalf("MarkInheritedCloseOnExec: %v", err)
	}
	if !slices.Contains(marked, fd) {
		t.Errorf("marked %v, want it to include %d", marked, fd)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d flags %#x, %v after marking; want FD_CLOEXEC", fd, flags, err)
	}
	if again, err := MarkInheritedCloseOnExec(); err != nil || len(again) != 0 {
		t.Errorf("second pass marked %v, %v; want nothing", again, err)
	}
	for _, std := range []int{0, 1, 2} {
		if slices.Contains(marked, std) {
			t.Errorf("standard descriptor %d was marked", std)
		}
	}
}
