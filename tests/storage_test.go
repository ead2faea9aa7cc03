package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testdisk"
)

// TestStorageFull: on a full disk an effectful call whose dispatch cannot
// be recorded is refused with storage_full before anything is sent, one
// whose outcome cannot be recorded is uncertain saying why, reads of what
// is stored keep working, and once space is freed everything goes on
// without a restart.
func TestStorageFull(t *testing.T) {
	disk := testdisk.Small(t, "8m")
	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t, withStateDir(filepath.Join(disk, "state")))
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog).with("tools", []string{"count", "echo", "tool-0001", "notify-list-changed"},
		"autonomousTools", []string{"count"})))
	connectServer(t, d, "fx")
	if res := callTool(t, d, "fx", "count", `{"nonce":"before"}`); res.Status != contracts.CallCompleted {
		t.Fatalf("a call before the disk is full: %+v", res)
	}
	filler := testdisk.Fill(t, disk)

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
