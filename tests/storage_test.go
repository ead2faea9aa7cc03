package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// smallDisk mounts a tmpfs of size bytes (root only) and unmounts it at
// cleanup.
func smallDisk(t *testing.T, size string) string {
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

// fill writes a file until the filesystem at dir is full; removing it
// frees the space again.
func fill(t *testing.T, dir string) string {
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
	var st syscall.Statfs_t
	_ = syscall.Statfs(dir, &st)
	t.Logf("filled %s: %d bytes free", dir, st.Bavail*uint64(st.Bsize))
	return path
}

// TestStorageFull: on a full disk an effectful call whose dispatch cannot
// be recorded is refused with storage_full before anything is sent, one
// whose outcome cannot be recorded is uncertain saying why, reads of what
// is stored keep working, and once space is freed everything goes on
// without a restart.
func TestStorageFull(t *testing.T) {
	disk := smallDisk(t, "8m")
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t, withStateDir(filepath.Join(disk, "state")))
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog).with("tools", []string{"count", "echo", "tool-0001", "notify-list-changed"},
		"autonomousTools", []string{"count"})))
	connectServer(t, d, "fx")
	if res := callTool(t, d, "fx", "count", `{"nonce":"before"}`); res.Status != contracts.CallCompleted {
		t.Fatalf("a call before the disk is full: %+v", res)
	}
	filler := fill(t, disk)

	// A call whose dispatch record needs room the disk no longer has
	// (large arguments) is refused before anything is sent.
	big := "full-" + strings.Repeat("n", 600<<10)
	e := d.callErr(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "count", Arguments: []byte(`{"nonce":"` + big + `"}`)})
	if e.Reason() != "storage_full" || !strings.Contains(e.Message, "before anything was sent") || !strings.Contains(e.Message, "free") {
		t.Errorf("an autonomous call on a full disk: %+v", e)
	}
	wantNonce(t, callLog, big, 0)
	// One whose dispatch fits in pages the file already has goes out; if
	// its result cannot be recorded then, it is uncertain, saying why.
	if res := callTool(t, d, "fx", "count", `{"nonce":"small"}`); res.Status != contracts.CallCompleted &&
		(res.Status != contracts.CallUncertain || res.Error == nil || res.Error.Reason() != "storage_full") {
		t.Errorf("a small call on a full disk: %+v", res)
	}
	// What is stored can still be read.
	if list := receiptsJSON(t, d); len(list.Receipts) == 0 {
		t.Errorf("no receipts readable on a full disk")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, d, "fx", "count", `{"nonce":"after"}`); res.Status != contracts.CallCompleted {
		t.Fatalf("a call once space is back: %+v", res)
	}
	wantNonce(t, callLog, "after", 1)
	verifyChain(t, d, true)
}
