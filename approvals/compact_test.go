package approvals

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"

	bolt "go.etcd.io/bbolt"
)

// snapshot reads every bucket, key, value and bucket sequence of a file.
func snapshot(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket) error
	walk = func(prefix string, b *bolt.Bucket) error {
		out[prefix+"#seq"] = string(rune(b.Sequence()))
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(prefix+"/"+string(k), b.Bucket(k))
			}
			out[prefix+"/"+string(k)] = string(bytes.Clone(v))
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompactFile: after pruning most receipts, compaction shrinks the
// file, keeps every record byte for byte, and the chain still verifies;
// a file without enough free pages is left alone; a partial copy a crash
// left is removed.
func TestCompactFile(t *testing.T) {
	in := newInstance(t)
	addN(t, in, 800)
	if _, err := in.l.PruneReceipts(context.Background(), 0, 10, 0, in.clk.now(), 0, nil); err != nil {
		t.Fatal(err)
	}
	in.close()
	path := in.dbPath()
	before := snapshot(t, path)
	if err := os.WriteFile(path+".compact", []byte("a crash left this"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := CompactFile(path, time.Second, 1<<40, 0.5, false); err != nil || rep.Compacted {
		t.Fatalf("with too few free pages: %+v %v", rep, err)
	}
	if _, err := os.Stat(path + ".compact"); !os.IsNotExist(err) {
		t.Errorf("the partial copy is still there: %v", err)
	}
	rep, err := CompactFile(path, time.Second, 0, 0.1, false)
	if err != nil || !rep.Compacted || rep.After >= rep.Before || rep.Free == 0 {
		t.Fatalf("compaction: %+v %v", rep, err)
	}
	t.Logf("compacted %d -> %d bytes (%d free) in %v", rep.Before, rep.After, rep.Free, rep.Took)
	after := snapshot(t, path)
	if len(after) != len(before) {
		t.Fatalf("%d records after, %d before", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("record %s changed by the compaction", k)
		}
	}
	in.open()
	verifyOK(t, in)
	addN(t, in, 3)
	verifyOK(t, in)
}

// copySnapshot snapshots the open database through a copy of it.
func copySnapshot(t *testing.T, in *instance) map[string]string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := in.db.bolt.View(func(tx *bolt.Tx) error { return tx.CopyFile(cp, 0o600) }); err != nil {
		t.Fatal(err)
	}
	return snapshot(t, cp)
}

// TestCompactOnline: with the database open and 16 writers committing
// receipts and actions meanwhile, Compact shrinks the file, loses none of
// their writes, and the chain verifies; with nothing writing, every
// record is byte-identical across it; the file reopens as it was.
func TestCompactOnline(t *testing.T) {
	in := newInstance(t)
	addN(t, in, 800)
	if _, err := in.l.PruneReceipts(context.Background(), 0, 10, 0, in.clk.now(), 0, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := in.db.Compact(context.Background(), 1<<40, 0.5, false); err != nil || rep.Compacted {
		t.Fatalf("with too few free pages: %+v %v", rep, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var added []string
	stop := make(chan struct{})
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), contracts.Fingerprints{}, contracts.Caller{})
				if err != nil {
					t.Error(err)
					return
				}
				r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: "completed", ActionID: a.ID})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := in.l.Finish(a.ID, contracts.ActionCompleted, "", r.ID, ""); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				added = append(added, r.ID)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // the writers are at it
	rep, err := in.db.Compact(context.Background(), 0, 0, true)
	close(stop)
	wg.Wait()
	if err != nil || !rep.Compacted || rep.After >= rep.Before {
		t.Fatalf("online compaction: %+v %v", rep, err)
	}
	t.Logf("compacted online %d -> %d bytes in %v, calls held %v, %d writes during and after", rep.Before, rep.After, rep.Took, rep.Held, len(added))
	if fi, err := os.Stat(in.dbPath()); err != nil || fi.Size() >= rep.Before {
		t.Errorf("the file at its path is %v bytes (%v), not smaller than the %d before", fi.Size(), err, rep.Before)
	}
	if rep.Held <= 0 || rep.Held >= rep.Took {
		t.Errorf("calls held %v of the %v it took", rep.Held, rep.Took)
	}
	for _, id := range added {
		if _, err := in.l.Receipt(id); err != nil {
			t.Fatalf("a receipt written during the compaction is gone: %v", err)
		}
	}
	if v := verifyOK(t, in); v.Checked != uint64(10+len(added)) {
		t.Errorf("verified %d receipts, want %d", v.Checked, 10+len(added))
	}

	// Quiet: byte for byte.
	before := copySnapshot(t, in)
	if rep, err := in.db.Compact(context.Background(), 0, 0, true); err != nil || !rep.Compacted {
		t.Fatalf("second compaction: %+v %v", rep, err)
	}
	after := copySnapshot(t, in)
	if len(after) != len(before) {
		t.Fatalf("%d records after, %d before", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("record %s changed by the compaction", k)
		}
	}
	in.close()
	in.open()
	verifyOK(t, in)
}
