package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// addN stores n autonomous receipts, one clock minute apart, each with its
// own executed action, and returns the receipts.
func addN(t *testing.T, in *instance, n int) []Receipt {
	t.Helper()
	out := make([]Receipt, 0, n)
	for i := range n {
		a, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(fmt.Sprintf(`{"i":%d}`, i)), contracts.Fingerprints{}, contracts.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: "completed", ActionID: a.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.l.Finish(a.ID, contracts.ActionCompleted, "", r.ID, ""); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		in.clk.advance(time.Minute)
	}
	return out
}

func verifyOK(t *testing.T, in *instance) contracts.ReceiptsVerification {
	t.Helper()
	v, err := in.l.VerifyReceipts()
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK {
		t.Fatalf("verification failed: %+v", v.Break)
	}
	return v
}

// TestPruneReceipts: each bound prunes oldest first in batches, leaves a
// checkpoint the chain verifies from, keeps the head, marks the actions,
// and a second run extends the record of pruned ranges.
func TestPruneReceipts(t *testing.T) {
	in := newInstance(t)
	rs := addN(t, in, 50)
	count, bytes, oldest, err := in.l.ReceiptFootprint()
	if err != nil || count != 50 || bytes <= 0 || !oldest.Equal(rs[0].CreatedAt) {
		t.Fatalf("footprint %d receipts %d bytes oldest %v (%v)", count, bytes, oldest, err)
	}

	// By count, in batches of 7: 50 → 20 takes 5 batches.
	rep, err := in.l.PruneReceipts(context.Background(), 0, 20, 0, in.clk.now(), 7, nil)
	if err != nil || rep.Pruned != 30 || rep.Kept != 20 || rep.Batches != 5 {
		t.Fatalf("prune by count: %+v, %v", rep, err)
	}
	v := verifyOK(t, in)
	if len(v.Pruned) != 1 || v.Pruned[0].FromSeq != 1 || v.Pruned[0].ToSeq != 30 || v.Pruned[0].Count != 30 ||
		v.Pruned[0].LastID != rs[29].ID || v.Checked != 20 || v.Actions != 50 {
		t.Fatalf("verification after pruning: %+v", v)
	}
	a, err := in.l.Get(rs[0].ActionID)
	if err != nil || !a.ReceiptPruned {
		t.Errorf("the action of a pruned receipt: %+v %v", a, err)
	}
	if _, err := in.l.Receipt(rs[0].ID); err == nil {
		t.Errorf("a pruned receipt is still readable")
	}

	// By age: receipts are a minute apart; keep the last 10 minutes.
	rep, err = in.l.PruneReceipts(context.Background(), 10*time.Minute+time.Second, 0, 0, in.clk.now(), 0, nil)
	if err != nil || rep.Kept != 10 {
		t.Fatalf("prune by age: %+v, %v", rep, err)
	}
	v = verifyOK(t, in)
	if len(v.Pruned) != 2 || v.Pruned[1].FromSeq != 31 || v.Pruned[1].ToSeq != 40 {
		t.Fatalf("two runs, two checkpoints: %+v", v.Pruned)
	}

	// By bytes: every receipt is about the same size.
	_, bytes, _, _ = in.l.ReceiptFootprint()
	rep, err = in.l.PruneReceipts(context.Background(), 0, 0, bytes/2, in.clk.now(), 0, nil)
	if err != nil || rep.Kept != 5 || rep.KeptBytes > bytes/2 {
		t.Fatalf("prune by bytes: %+v, %v (had %d bytes)", rep, err, bytes)
	}
	verifyOK(t, in)

	// The head always stays.
	if rep, err := in.l.PruneReceipts(context.Background(), 0, 0, 1, in.clk.now(), 0, nil); err != nil || rep.Kept != 1 {
		t.Fatalf("pruning everything: %+v, %v", rep, err)
	}
	v = verifyOK(t, in)
	if v.Head.ReceiptID != rs[49].ID || v.Checked != 1 {
		t.Errorf("after pruning all but the head: %+v", v)
	}
	// New receipts chain on.
	addN(t, in, 3)
	verifyOK(t, in)

	// Reopened, everything holds.
	in.close()
	in.open()
	if v := verifyOK(t, in); len(v.Pruned) != 4 {
		t.Errorf("after reopening: %d checkpoints", len(v.Pruned))
	}
}

// TestPruneTamper: the verification catches a checkpoint edited or
// removed, a deleted receipt of an executed action, a receipt whose action
// is gone.
func TestPruneTamper(t *testing.T) {
	edit := func(t *testing.T, in *instance, fn func(tx *bolt.Tx) error) contracts.ReceiptsVerification {
		t.Helper()
		if err := in.db.bolt.Update(fn); err != nil {
			t.Fatal(err)
		}
		v, err := in.l.VerifyReceipts()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	setup := func(t *testing.T) (*instance, []Receipt) {
		in := newInstance(t)
		rs := addN(t, in, 12)
		if _, err := in.l.PruneReceipts(context.Background(), 0, 6, 0, in.clk.now(), 4, nil); err != nil {
			t.Fatal(err)
		}
		verifyOK(t, in)
		return in, rs
	}
	t.Run("checkpoint hash edited", func(t *testing.T) {
		in, _ := setup(t)
		v := edit(t, in, func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketReceiptCheckpoints)
			k, val := b.Cursor().Last()
			var c Checkpoint
			_ = json.Unmarshal(val, &c)
			c.LastHash = sha([]byte("forged"))
			nv, _ := json.Marshal(c)
			return b.Put(k, nv)
		})
		if v.OK || v.Break.Problem != contracts.ChainCheckpointGap {
			t.Errorf("an edited checkpoint: %+v", v.Break)
		}
	})
	t.Run("checkpoint removed", func(t *testing.T) {
		in, _ := setup(t)
		v := edit(t, in, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketReceiptCheckpoints) })
		if v.OK {
			t.Errorf("a chain whose checkpoint was removed verified")
		}
	})
	t.Run("receipt of an effect deleted with its chain place", func(t *testing.T) {
		in, rs := setup(t)
		// Remove the oldest kept receipt and rebuild a checkpoint over it,
		// as a forger would: the action still names it.
		v := edit(t, in, func(tx *bolt.Tx) error {
			r := rs[6]
			stored := tx.Bucket(bucketReceipts).Get([]byte(r.ID))
			if err := tx.Bucket(bucketReceipts).Delete([]byte(r.ID)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketReceiptsBySeq).Delete(seqKey(r.Seq)); err != nil {
				return err
			}
			b := tx.Bucket(bucketReceiptCheckpoints)
			k, val := b.Cursor().Last()
			var c Checkpoint
			_ = json.Unmarshal(val, &c)
			c.ToSeq, c.Count, c.LastID, c.LastHash = r.Seq, c.Count+1, r.ID, hashOf(stored)
			nv, _ := json.Marshal(c)
			return b.Put(k, nv)
		})
		if v.OK || v.Break.Problem != contracts.ChainEffectWithoutReceipt {
			t.Errorf("an executed action without its receipt: %+v", v.Break)
		}
	})
	t.Run("action of a receipt deleted", func(t *testing.T) {
		in, rs := setup(t)
		v := edit(t, in, func(tx *bolt.Tx) error { return tx.Bucket(bucketActions).Delete([]byte(rs[8].ActionID)) })
		if v.OK || v.Break.Problem != contracts.ChainReceiptWithoutAction || v.Break.ReceiptID != rs[8].ID {
			t.Errorf("a receipt without its action: %+v", v.Break)
		}
	})
}

// TestPruneWhileCalling: pruning in batches while 32 writers add receipts
// loses none of theirs and leaves a chain that verifies.
func TestPruneWhileCalling(t *testing.T) {
	in := newInstance(t)
	addN(t, in, 300)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var added []string
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: fmt.Sprint("w", w, "-", i), Status: "completed"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				added = append(added, r.ID)
				mu.Unlock()
			}
		}()
	}
	// The 300 are a minute apart, ending now; the new ones are made now.
	rep, err := in.l.PruneReceipts(context.Background(), 100*time.Minute, 0, 0, in.clk.now(), 16, nil)
	wg.Wait()
	if err != nil || rep.Pruned < 190 {
		t.Fatalf("prune under load: %+v %v", rep, err)
	}
	for _, id := range added {
		if _, err := in.l.Receipt(id); err != nil {
			t.Fatalf("a receipt added during the prune is gone: %v", err)
		}
	}
	verifyOK(t, in)
}

func testMigrationReceiptCheckpoints(t *testing.T) {
	// A database written by schema 8 with receipts gains the checkpoint
	// bucket and counted stats.
	in := newInstance(t)
	addN(t, in, 5)
	_, want, _, _ := in.l.ReceiptFootprint()
	in.close()
	db, err := Open(in.dbPath(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketReceiptCheckpoints); err != nil {
			return err
		}
		if err := tx.Bucket(bucketMeta).Delete(keyReceiptsStats); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(fmt.Sprint(schemaOf(t, "receipt-checkpoints")-1)))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	in.open()
	count, bytes, _, err := in.l.ReceiptFootprint()
	if err != nil || count != 5 || bytes != want {
		t.Fatalf("after the migration: %d receipts, %d bytes (want 5, %d): %v", count, bytes, want, err)
	}
	if _, err := in.l.PruneReceipts(context.Background(), 0, 2, 0, in.clk.now(), 0, nil); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, in)
}

// TestExportReceipts: an export after pruning verifies from the file
// alone; an edited receipt, a removed checkpoint or a changed header does
// not.
func TestExportReceipts(t *testing.T) {
	in := newInstance(t)
	addN(t, in, 20)
	if _, err := in.l.PruneReceipts(context.Background(), 0, 8, 0, in.clk.now(), 5, nil); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	hdr, err := in.l.ExportReceipts(&buf, in.clk.now())
	if err != nil || hdr.Count != 8 || hdr.Head.Seq != 20 {
		t.Fatalf("export: %+v %v", hdr, err)
	}
	check := func(text string) contracts.ReceiptsVerification {
		t.Helper()
		v, err := contracts.VerifyReceiptExport(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := check(buf.String()); !v.OK || v.Checked != 8 || len(v.Pruned) != 1 || v.Pruned[0].ToSeq != 12 {
		t.Fatalf("the export verifies as %+v", v)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	edit := func(i int, from, to string) string {
		out := append([]string(nil), lines...)
		out[i] = strings.Replace(out[i], from, to, 1)
		return strings.Join(out, "\n") + "\n"
	}
	if v := check(edit(4, `"status":"completed"`, `"status":"failed"`)); v.OK || v.Break.Problem != contracts.ChainContentMismatch {
		t.Errorf("an edited receipt: %+v", v.Break)
	}
	if v := check(strings.Join(append(lines[:1:1], lines[2:]...), "\n") + "\n"); v.OK {
		t.Errorf("the checkpoint removed: %+v", v.Break)
	}
	if v := check(strings.Join(lines[:len(lines)-1], "\n") + "\n"); v.OK || v.Break.Problem != contracts.ChainSequenceMissing {
		t.Errorf("the newest receipt removed: %+v", v.Break)
	}
	if _, err := contracts.VerifyReceiptExport(strings.NewReader("{}\n")); err == nil {
		t.Errorf("a file that is no export was read as one")
	}
}
