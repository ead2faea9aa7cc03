package approvals

import (
	"bytes"
	"os"
	"testing"
	"time"

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
	if _, err := in.l.PruneReceipts(0, 10, 0, in.clk.now(), 0, nil); err != nil {
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
