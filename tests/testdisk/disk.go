// Package testdisk gives tests a small filesystem of their own to fill:
// a tmpfs with a size limit, mounted by the test and unmounted after it.
// Mounting needs root (CI runs as root); elsewhere the test is skipped,
// saying why.
package testdisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size ("8m", "4m") on a new directory and
// unmounts it when the test ends.
func Small(t testing.TB, size string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("a full disk needs a small filesystem of the test's own: mounting a tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %s tmpfs on %s: %v\n%s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file until the filesystem at dir is full and returns its
// path: removing it frees the space again.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !strings.Contains(err.Error(), "no space") {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// The last bytes, a page at a time.
	for {
		if _, err := f.Write(buf[:4096]); err != nil {
			break
		}
	}
	var st syscall.Statfs_t
	_ = syscall.Statfs(dir, &st)
	t.Logf("filled %s: %d bytes free", dir, st.Bavail*uint64(st.Bsize))
	return path
}
