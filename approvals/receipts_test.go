package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// rawChain reads the chain straight from the file, without the code under
// test: the stored bytes at every sequence number, in order, and the head.
type rawReceipt struct {
	seq    uint64
	id     string
	stored []byte
}

func rawChain(t *testing.T, db *DB) ([]rawReceipt, chainHead) {
	t.Helper()
	var (
		out  []rawReceipt
		head chainHead
	)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("receipts_head")); v != nil {
			if err := json.Unmarshal(v, &head); err != nil {
				return err
			}
		}
		rb := tx.Bucket([]byte("receipts"))
		return tx.Bucket([]byte("receipts_by_seq")).ForEach(func(k, v []byte) error {
			out = append(out, rawReceipt{seq: binary.BigEndian.Uint64(k), id: string(v), stored: bytes.Clone(rb.Get(v))})
			return nil
		})
	})
	if err != nil {
		t.Fatalf("reading the chain: %v", err)
	}
	return out, head
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkRawChain checks, independently of VerifyReceipts, that the chain
// holds exactly ids (in any order), numbered 1..n without gaps, each
// receipt recording the hash of the one before, the head naming the last.
func checkRawChain(t *testing.T, db *DB, ids []string) []rawReceipt {
	t.Helper()
	chain, head := rawChain(t, db)
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	prev := ""
	for i, r := range chain {
		var rec struct {
			ID   string `json:"id"`
			Seq  uint64 `json:"seq"`
			Prev string `json:"prev"`
		}
		if err := json.Unmarshal(r.stored, &rec); err != nil {
			t.Fatalf("receipt at %d: %v (%q)", r.seq, err, r.stored)
		}
		if r.seq != uint64(i+1) || rec.Seq != r.seq || rec.ID != r.id {
			t.Fatalf("place %d: index key %d, stored seq %d, id %s (index) / %s (stored)", i+1, r.seq, rec.Seq, r.id, rec.ID)
		}
		if rec.Prev != prev {
			t.Fatalf("receipt %d records prev %q, want %q", r.seq, rec.Prev, prev)
		}
		if !want[r.id] {
			t.Fatalf("receipt %s at %d is unexpected (or twice in the chain)", r.id, r.seq)
		}
		delete(want, r.id)
		prev = sha(r.stored)
	}
	if len(want) > 0 {
		t.Fatalf("%d receipts are not in the chain", len(want))
	}
	if n := uint64(len(chain)); head.Seq != n || n > 0 && (head.Hash != prev || head.ID != chain[n-1].id) {
		t.Fatalf("head %+v, want seq %d hash %s", head, n, prev)
	}
	return chain
}

func mustVerify(t *testing.T, l *Ledger, n uint64) contracts.ReceiptsVerification {
	t.Helper()
	v, err := l.VerifyReceipts()
	if err != nil {
		t.Fatalf("VerifyReceipts: %v", err)
	}
	if !v.OK || v.Break != nil || v.Checked != n || v.Head.Seq != n {
		t.Fatalf("VerifyReceipts = %+v (break %+v), want ok with %d receipts", v, v.Break, n)
	}
	return v
}

func readReceipt(i int) Receipt {
	return Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed", SourceID: fmt.Sprint("src_", i)}
}

func TestReceiptChainConcurrent(t *testing.T) {
	in := newInstance(t)
	const writers, each = 8, 40
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var id string
				// Writers alternate kinds, so sync and async receipts
				// interleave in every commit order.
				if (w+i)%2 == 0 {
					r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: "completed"})
					if err != nil {
						t.Errorf("AddReceipt: %v", err)
						return
					}
					if r.Seq == 0 || len(r.Hash) != 64 {
						t.Errorf("AddReceipt returned seq %d hash %q, want both set", r.Seq, r.Hash)
					}
					id = r.ID
				} else {
					id = in.l.AddReceiptAsync(readReceipt(i)).ID
				}
				if i%10 == 0 {
					if err := in.l.FlushReceipts(); err != nil {
						t.Errorf("FlushReceipts: %v", err)
					}
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	n := uint64(writers * each)
	chain := checkRawChain(t, in.db, ids)
	v := mustVerify(t, in.l, n)
	if v.Head.Hash != sha(chain[n-1].stored) || v.Head.ReceiptID != chain[n-1].id {
		t.Errorf("verification head %+v, want the last receipt %s", v.Head, chain[n-1].id)
	}
	// Reads agree with the stored bytes.
	r, err := in.l.Receipt(chain[4].id)
	if err != nil || r.Seq != 5 || r.Hash != sha(chain[4].stored) || r.Prev != sha(chain[3].stored) {
		t.Errorf("Receipt(%s) = seq %d hash %s prev %s, %v; want 5, the stored bytes' hash and its predecessor's", chain[4].id, r.Seq, r.Hash, r.Prev, err)
	}

	// The chain goes on across a restart, and Close flushes into it.
	late := in.l.AddReceiptAsync(readReceipt(-1))
	in.restart()
	r, err = in.l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "s", Tool: "write", Status: "uncertain"})
	if err != nil || r.Seq != n+2 {
		t.Fatalf("AddReceipt after restart = seq %d, %v; want %d", r.Seq, err, n+2)
	}
	checkRawChain(t, in.db, append(ids, late.ID, r.ID))
	mustVerify(t, in.l, n+2)
}

// tamperChain builds a chain of n receipts (sync and async alternating)
// and returns the ids by sequence number (ids[0] is sequence 1).
func tamperChain(t *testing.T, in *instance, n int) []string {
	t.Helper()
	for i := range n {
		if i%2 == 0 {
			if _, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "s", Tool: "write", Status: "completed",
				ArgumentsDigest: strings.Repeat("ab", 32)}); err != nil {
				t.Fatal(err)
			}
		} else {
			in.l.AddReceiptAsync(readReceipt(i))
			if err := in.l.FlushReceipts(); err != nil {
				t.Fatal(err)
			}
		}
	}
	chain, _ := rawChain(t, in.db)
	if len(chain) != n {
		t.Fatalf("chain has %d receipts, want %d", len(chain), n)
	}
	ids := make([]string, n)
	for i, r := range chain {
		ids[i] = r.id
	}
	mustVerify(t, in.l, uint64(n))
	return ids
}

// editByte changes one byte of the stored receipt id: the first hex digit
// of its argumentsDigest or sourceId, so the JSON stays valid.
func editByte(tx *bolt.Tx, id string) error {
	rb := tx.Bucket(bucketReceipts)
	v := bytes.Clone(rb.Get([]byte(id)))
	i := bytes.Index(v, []byte(`"argumentsDigest":"`)) + len(`"argumentsDigest":"`)
	if i < len(`"argumentsDigest":"`) {
		i = bytes.Index(v, []byte(`"sourceId":"src_`)) + len(`"sourceId":"src_`)
	}
	if v[i] == '9' {
		v[i] = '8'
	} else {
		v[i] = '9'
	}
	return rb.Put([]byte(id), v)
}

func TestReceiptChainTampering(t *testing.T) {
	const n = 8
	for _, tc := range []struct {
		name    string
		tamper  func(tx *bolt.Tx, ids []string) error
		seq     uint64
		id      func(ids []string) string // the receipt named; nil: none
		problem string
	}{
		{
			name: "delete one",
			tamper: func(tx *bolt.Tx, ids []string) error {
				return errors.Join(tx.Bucket(bucketReceipts).Delete([]byte(ids[3])), tx.Bucket(bucketReceiptsBySeq).Delete(seqKey(4)))
			},
			seq: 4, problem: contracts.ChainSequenceMissing,
		},
		{
			name: "delete one, leaving its index entry",
			tamper: func(tx *bolt.Tx, ids []string) error {
				return tx.Bucket(bucketReceipts).Delete([]byte(ids[3]))
			},
			seq: 4, id: func(ids []string) string { return ids[3] }, problem: contracts.ChainReceiptMissing,
		},
		{
			name: "delete the first",
			tamper: func(tx *bolt.Tx, ids []string) error {
				return errors.Join(tx.Bucket(bucketReceipts).Delete([]byte(ids[0])), tx.Bucket(bucketReceiptsBySeq).Delete(seqKey(1)))
			},
			seq: 1, problem: contracts.ChainSequenceMissing,
		},
		{
			name: "delete the newest",
			tamper: func(tx *bolt.Tx, ids []string) error {
				return errors.Join(tx.Bucket(bucketReceipts).Delete([]byte(ids[n-1])), tx.Bucket(bucketReceiptsBySeq).Delete(seqKey(n)))
			},
			seq: n, id: func(ids []string) string { return ids[n-1] }, problem: contracts.ChainSequenceMissing,
		},
		{
			name: "reorder two in the index",
			tamper: func(tx *bolt.Tx, ids []string) error {
				b := tx.Bucket(bucketReceiptsBySeq)
				return errors.Join(b.Put(seqKey(3), []byte(ids[5])), b.Put(seqKey(6), []byte(ids[2])))
			},
			seq: 3, id: func(ids []string) string { return ids[5] }, problem: contracts.ChainOutOfOrder,
		},
		{
			name: "reorder two by swapping their contents",
			tamper: func(tx *bolt.Tx, ids []string) error {
				rb := tx.Bucket(bucketReceipts)
				a, b := bytes.Clone(rb.Get([]byte(ids[2]))), bytes.Clone(rb.Get([]byte(ids[5])))
				return errors.Join(rb.Put([]byte(ids[2]), b), rb.Put([]byte(ids[5]), a))
			},
			seq: 3, id: func(ids []string) string { return ids[2] }, problem: contracts.ChainOutOfOrder,
		},
		{
			name:   "edit one byte",
			tamper: func(tx *bolt.Tx, ids []string) error { return editByte(tx, ids[4]) },
			seq:    5, id: func(ids []string) string { return ids[4] }, problem: contracts.ChainContentMismatch,
		},
		{
			name:   "edit one byte of the first",
			tamper: func(tx *bolt.Tx, ids []string) error { return editByte(tx, ids[0]) },
			seq:    1, id: func(ids []string) string { return ids[0] }, problem: contracts.ChainContentMismatch,
		},
		{
			name:   "edit one byte of the newest",
			tamper: func(tx *bolt.Tx, ids []string) error { return editByte(tx, ids[n-1]) },
			seq:    n, id: func(ids []string) string { return ids[n-1] }, problem: contracts.ChainHeadMismatch,
		},
		{
			name: "break the JSON of one",
			tamper: func(tx *bolt.Tx, ids []string) error {
				rb := tx.Bucket(bucketReceipts)
				v := bytes.Clone(rb.Get([]byte(ids[4])))
				return rb.Put([]byte(ids[4]), v[:len(v)-1])
			},
			seq: 5, id: func(ids []string) string { return ids[4] }, problem: contracts.ChainUnreadable,
		},
		{
			name: "insert one outside the chain",
			tamper: func(tx *bolt.Tx, ids []string) error {
				v, _ := json.Marshal(Receipt{ID: "rcpt_forged", Seq: 4, Kind: contracts.ReceiptRead, Server: "s", Tool: "t", Status: "completed"})
				return tx.Bucket(bucketReceipts).Put([]byte("rcpt_forged"), v)
			},
			seq: 4, id: func([]string) string { return "rcpt_forged" }, problem: contracts.ChainNotInChain,
		},
		{
			name: "roll the head back",
			tamper: func(tx *bolt.Tx, ids []string) error {
				chain, _ := json.Marshal(chainHead{Seq: n - 1, ID: ids[n-2]})
				return tx.Bucket(bucketMeta).Put(keyReceiptsHead, chain)
			},
			seq: n, id: func(ids []string) string { return ids[n-1] }, problem: contracts.ChainHeadMismatch,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstance(t)
			ids := tamperChain(t, in, n)
			if err := in.db.bolt.Update(func(tx *bolt.Tx) error { return tc.tamper(tx, ids) }); err != nil {
				t.Fatal(err)
			}
			v, err := in.l.VerifyReceipts()
			if err != nil {
				t.Fatalf("VerifyReceipts: %v", err)
			}
			if v.OK || v.Break == nil {
				t.Fatalf("VerifyReceipts after tampering = %+v, want a break", v)
			}
			b := v.Break
			wantID := ""
			if tc.id != nil {
				wantID = tc.id(ids)
			}
			if b.Seq != tc.seq || b.ReceiptID != wantID || b.Problem != tc.problem {
				t.Errorf("break = seq %d receipt %q problem %s, want seq %d receipt %q problem %s\nmessage: %s",
					b.Seq, b.ReceiptID, b.Problem, tc.seq, wantID, tc.problem, b.Message)
			}
			if wantID != "" && !strings.Contains(b.Message, wantID) {
				t.Errorf("break message %q does not name receipt %s", b.Message, wantID)
			}
			if tc.problem != contracts.ChainNotInChain && v.Checked != tc.seq-1 {
				t.Errorf("checked %d receipts, want the %d before the break", v.Checked, tc.seq-1)
			}
			if !strings.Contains(b.Message, strconv.FormatUint(tc.seq, 10)) {
				t.Errorf("break message %q does not name sequence %d", b.Message, tc.seq)
			}
		})
	}
}

// TestReceiptChainLong checks a chain longer than one verification
// transaction, with the break across a transaction boundary.
func TestReceiptChainLong(t *testing.T) {
	in := newInstance(t)
	const n = 2*verifyChunk + 300
	for i := range n {
		in.l.AddReceiptAsync(readReceipt(i))
	}
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, in.l, n)
	chain, _ := rawChain(t, in.db)
	// Receipt verifyChunk is the last of the first transaction; its
	// successor, which records its hash, is read in the next one.
	target := chain[verifyChunk-1]
	if err := in.db.bolt.Update(func(tx *bolt.Tx) error { return editByte(tx, target.id) }); err != nil {
		t.Fatal(err)
	}
	v, err := in.l.VerifyReceipts()
	if err != nil || v.Break == nil || v.Break.Seq != verifyChunk || v.Break.ReceiptID != target.id || v.Break.Problem != contracts.ChainContentMismatch {
		t.Fatalf("VerifyReceipts = %+v (break %+v), %v; want content_mismatch at %d (%s)", v, v.Break, err, verifyChunk, target.id)
	}
	if v.Checked != verifyChunk-1 {
		t.Errorf("checked %d receipts before the break, want %d", v.Checked, verifyChunk-1)
	}
}

func TestListReceipts(t *testing.T) {
	in := newInstance(t)
	var all []Receipt
	for i := range 12 {
		server := []string{"a", "b", "c"}[i%3]
		if i%2 == 0 {
			r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: server, Tool: "t", Status: "completed"})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		} else {
			all = append(all, in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: server, Tool: "t", Status: "completed"}))
		}
		in.clk.advance(time.Minute)
	}
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []Receipt) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	newestFirst := func(keep func(i int, r Receipt) bool, limit int) []string {
		var out []string
		for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
			if keep(i, all[i]) {
				out = append(out, all[i].ID)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    ReceiptQuery
		want []string
	}{
		{"all", ReceiptQuery{}, newestFirst(func(int, Receipt) bool { return true }, 100)},
		{"limit", ReceiptQuery{Limit: 5}, newestFirst(func(int, Receipt) bool { return true }, 5)},
		{"server", ReceiptQuery{Server: "b"}, newestFirst(func(_ int, r Receipt) bool { return r.Server == "b" }, 100)},
		{"unknown server", ReceiptQuery{Server: "zz"}, nil},
		{"since, inclusive", ReceiptQuery{Since: all[7].CreatedAt}, newestFirst(func(i int, _ Receipt) bool { return i >= 7 }, 100)},
		{"since and server", ReceiptQuery{Since: all[4].CreatedAt.Add(time.Second), Server: "a"},
			newestFirst(func(i int, r Receipt) bool { return i > 4 && r.Server == "a" }, 100)},
		{"since in the future", ReceiptQuery{Since: in.clk.now().Add(time.Hour)}, nil},
		{"since before 1970", ReceiptQuery{Since: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), Limit: 3}, newestFirst(func(int, Receipt) bool { return true }, 3)},
		{"since after 2262", ReceiptQuery{Since: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, head, err := in.l.ListReceipts(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Errorf("ListReceipts(%+v) = %v, want %v", tc.q, ids(got), tc.want)
			}
			if head.Seq != uint64(len(all)) || len(head.Hash) != 64 {
				t.Errorf("head = %+v, want seq %d", head, len(all))
			}
			for _, r := range got {
				if r.Seq == 0 || len(r.Hash) != 64 || r.Info().Hash != r.Hash || r.Info().Seq != r.Seq {
					t.Errorf("listed receipt %s has seq %d hash %q", r.ID, r.Seq, r.Hash)
				}
			}
		})
	}
}

func testMigrationReceiptChain(t *testing.T) {
	// A database of the schema before the chain holds unchained receipts,
	// stored under random ids in an order unrelated to their times.
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	offsets := []int{5, 1, 9, 3, 3, 0, 7}
	old := make([]string, len(offsets))
	db, path := reopenAtSchema(t, schemaOf(t, "receipt-chain")-1, func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketReceiptsBySeq, bucketReceiptsByTime} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketMeta).Delete(keyReceiptsHead); err != nil {
			return err
		}
		for i, off := range offsets {
			old[i] = newID("rcpt_")
			v := fmt.Sprintf(`{"id":%q,"kind":"mcp_read","server":"s%d","tool":"t","status":"completed","createdAt":%q}`,
				old[i], i, base.Add(time.Duration(off)*time.Second).Format(time.RFC3339Nano))
			if err := tx.Bucket(bucketReceipts).Put([]byte(old[i]), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	chain := checkRawChain(t, db, old)
	for i := 1; i < len(chain); i++ {
		var a, b Receipt
		if err := errors.Join(json.Unmarshal(chain[i-1].stored, &a), json.Unmarshal(chain[i].stored, &b)); err != nil {
			t.Fatal(err)
		}
		if b.CreatedAt.Before(a.CreatedAt) || b.CreatedAt.Equal(a.CreatedAt) && b.ID < a.ID {
			t.Errorf("receipt %d (%s, %v) is chained after %d (%s, %v): want creation order, then id", b.Seq, b.ID, b.CreatedAt, a.Seq, a.ID, a.CreatedAt)
		}
		if b.Server == "" || b.Kind != contracts.ReceiptRead {
			t.Errorf("the migration lost fields of receipt %s: %+v", b.ID, b)
		}
	}
	l, err := OpenLedger(db, path+".tombstones", func() time.Time { return base.Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustVerify(t, l, uint64(len(old)))
	r, err := l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "s", Tool: "t", Status: "completed"})
	if err != nil || r.Seq != uint64(len(old)+1) || r.Prev != sha(chain[len(chain)-1].stored) {
		t.Fatalf("AddReceipt after the migration = seq %d prev %s, %v; want %d after the migrated chain", r.Seq, r.Prev, err, len(old)+1)
	}
	mustVerify(t, l, uint64(len(old)+1))
	listed, _, err := l.ListReceipts(ReceiptQuery{Since: base.Add(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	// The new receipt (now) and the migrated ones at +9, +7 and +5 s.
	if len(listed) != 4 || listed[0].ID != r.ID || listed[1].ID != old[2] || listed[2].ID != old[6] || listed[3].ID != old[0] {
		t.Errorf("listing since +5s after the migration: %v", listed)
	}
}

// TestReceiptPagesFull: receipts, whose keys grow with time, fill their
// pages instead of leaving each split page half empty, so the file holds
// about what the records take; and a batch of async receipts chains like
// receipts stored one by one.
func TestReceiptPagesFull(t *testing.T) {
	in := newInstance(t)
	const n = 6000
	for i := range n {
		in.l.AddReceiptAsync(readReceipt(i))
		if i%500 == 499 {
			if err := in.l.FlushReceipts(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, in.l, n)
	err := in.db.bolt.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketReceipts, bucketReceiptsBySeq, bucketReceiptsByTime} {
			st := tx.Bucket(name).Stats()
			pages := st.LeafPageN + st.LeafOverflowN
			if pages < 4 {
				t.Fatalf("%s: only %d leaf pages for %d receipts", name, pages, n)
			}
			fill := float64(st.LeafInuse) / float64(pages*tx.DB().Info().PageSize)
			if fill < 0.8 {
				t.Errorf("%s: leaf pages %.0f %% full (%d pages, %d bytes in use), want at least 80 %%", name, fill*100, pages, st.LeafInuse)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A read's deferred result rides with its receipt: once the receipt
// writer has flushed, the source is committed too (its own writer never
// woke), readable, and stays after a reopen.
func TestDeferredSourcesRideWithReceipts(t *testing.T) {
	in := newInstance(t)
	s, err := OpenSourceStore(in.db, filepath.Join(in.dir, "sources"), 0, in.clk.now)
	if err != nil {
		t.Fatal(err)
	}
	in.l.CarryDeferredSources(s)
	const n = 50
	ids := make([]string, 0, n)
	for i := range n {
		meta, err := s.PutDeferred("s", "read", fmt.Appendf(nil, `{"content":[{"type":"text","text":"result %d"}]}`, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, meta.ID)
		r := readReceipt(i)
		r.SourceID = meta.ID
		in.l.AddReceiptAsync(r)
	}
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	if len(s.kick) != 0 {
		t.Error("the store's own writer was woken; the sources should ride with the receipts")
	}
	s.pmu.Lock()
	pending := len(s.pending)
	s.pmu.Unlock()
	if pending != 0 {
		t.Errorf("%d sources still wait for a commit after the receipts' flush", pending)
	}
	err = in.db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketSources).Bucket(bucketSourceMeta)
		for _, id := range ids {
			if meta.Get([]byte(id)) == nil {
				t.Errorf("source %s is not committed", id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, in.l, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	in.close()
	in.open()
	s, err = OpenSourceStore(in.db, filepath.Join(in.dir, "sources"), 0, in.clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Read(ids[n-1], 0, 100)
	if err != nil || !strings.Contains(got.Text, fmt.Sprintf("result %d", n-1)) {
		t.Errorf("the last source after a reopen: %+v, %v", got, err)
	}
}
