package approvals

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// Receipt retention: the oldest receipts are pruned in short transactions
// (PruneBatch receipts each) once they are older, more numerous or larger
// than the bounds. Each batch records, in the same transaction, the
// checkpoint the chain continues from: the range of sequence numbers
// pruned, their count, the id and hash of the last one pruned, and when.
// VerifyReceipts starts from the newest checkpoint: the oldest receipt
// kept must record the checkpoint's hash as its predecessor. An action
// whose receipt was pruned says so (receiptPruned), so that an executed
// action without its receipt still shows as a break.

// PruneBatch is how many receipts one pruning transaction removes: short
// enough that the calls committing meanwhile wait for at most one batch.
const PruneBatch = 256

// receiptStats is meta/receipts_stats: the receipts kept and the bytes
// their stored records take, kept up to date with every write.
type receiptStats struct {
	Count uint64 `json:"count"`
	Bytes int64  `json:"bytes"`
}

func readStats(tx *bolt.Tx) (receiptStats, error) {
	var s receiptStats
	v := tx.Bucket(bucketMeta).Get(keyReceiptsStats)
	if v == nil {
		return s, nil
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return receiptStats{}, fmt.Errorf("meta/%s is unreadable: %w", keyReceiptsStats, err)
	}
	return s, nil
}

func writeStats(tx *bolt.Tx, s receiptStats) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyReceiptsStats, v)
}

// addStats counts a receipt of n stored bytes.
func addStats(tx *bolt.Tx, n int) error {
	s, err := readStats(tx)
	if err != nil {
		return err
	}
	s.Count++
	s.Bytes += int64(n)
	return writeStats(tx, s)
}

// Checkpoint is one pruning run's record in receipt_checkpoints/.
type Checkpoint struct {
	// FromSeq..ToSeq is the range pruned; Count how many receipts it held.
	FromSeq uint64 `json:"fromSeq"`
	ToSeq   uint64 `json:"toSeq"`
	Count   uint64 `json:"count"`
	// LastID and LastHash are the last receipt pruned and the SHA-256 of
	// its stored bytes: the oldest receipt kept records it as Prev.
	LastID   string `json:"lastId"`
	LastHash string `json:"lastHash"`
	// OldestAt and NewestAt are the creation times of the first and last
	// receipt pruned; At is when the run pruned them.
	OldestAt time.Time `json:"oldestAt"`
	NewestAt time.Time `json:"newestAt"`
	At       time.Time `json:"at"`
	// Run names the pruning run (batches of one run extend its record).
	Run string `json:"run"`
}

// Info is the checkpoint as the wire shows it.
func (c Checkpoint) Info() contracts.ReceiptCheckpoint {
	return contracts.ReceiptCheckpoint{FromSeq: c.FromSeq, ToSeq: c.ToSeq, Count: c.Count, LastID: c.LastID, LastHash: c.LastHash,
		OldestAt: c.OldestAt.UTC().Format(time.RFC3339), NewestAt: c.NewestAt.UTC().Format(time.RFC3339), At: c.At.UTC().Format(time.RFC3339)}
}

// lastCheckpoint is the newest checkpoint (ok false: nothing was pruned).
func lastCheckpoint(tx *bolt.Tx) (Checkpoint, bool, error) {
	b := tx.Bucket(bucketReceiptCheckpoints)
	if b == nil {
		return Checkpoint{}, false, nil
	}
	k, v := b.Cursor().Last()
	if k == nil {
		return Checkpoint{}, false, nil
	}
	var c Checkpoint
	if err := json.Unmarshal(v, &c); err != nil {
		return Checkpoint{}, false, fmt.Errorf("receipt checkpoint %x is unreadable: %w", k, err)
	}
	return c, true, nil
}

// Checkpoints lists every checkpoint, oldest first.
func (l *Ledger) Checkpoints() ([]Checkpoint, error) {
	var out []Checkpoint
	err := l.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketReceiptCheckpoints)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var c Checkpoint
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("receipt checkpoint %x is unreadable: %w", k, err)
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// PruneReport is what one PruneReceipts did.
type PruneReport struct {
	Pruned  uint64
	Batches int
	// Kept and KeptBytes are the receipts left.
	Kept      uint64
	KeptBytes int64
}

// PruneReceipts removes the oldest receipts while any bound is exceeded:
// older than maxAge (0: no bound) at now, more than maxCount (0: none), or
// more than maxBytes of stored records (0: none). It works in batches of
// batch receipts, one short transaction each (the calls committing
// meanwhile wait for one batch at most), and stops at the first receipt
// within every bound. The newest receipt (the chain's head) is never
// pruned.
func (l *Ledger) PruneReceipts(maxAge time.Duration, maxCount uint64, maxBytes int64, now time.Time, batch int) (PruneReport, error) {
	if batch <= 0 {
		batch = PruneBatch
	}
	if err := l.FlushReceipts(); err != nil {
		return PruneReport{}, err
	}
	run := newID("prune_")
	var rep PruneReport
	for {
		n := 0
		more := false
		err := l.group.update(func(tx *bolt.Tx) error {
			var err error
			n, more, err = pruneBatch(tx, maxAge, maxCount, maxBytes, now, batch, run, &rep)
			return err
		}, nil)
		if err != nil {
			return rep, fmt.Errorf("pruning receipts: %w", err)
		}
		if n > 0 {
			rep.Batches++
			rep.Pruned += uint64(n)
		}
		if !more {
			return rep, nil
		}
	}
}

func pruneBatch(tx *bolt.Tx, maxAge time.Duration, maxCount uint64, maxBytes int64, now time.Time, batch int, run string, rep *PruneReport) (int, bool, error) {
	stats, err := readStats(tx)
	if err != nil {
		return 0, false, err
	}
	head, err := readHead(tx)
	if err != nil {
		return 0, false, err
	}
	cp, haveCP, err := lastCheckpoint(tx)
	if err != nil {
		return 0, false, err
	}
	if !haveCP || cp.Run != run {
		cp = Checkpoint{Run: run, FromSeq: cp.ToSeq + 1, ToSeq: cp.ToSeq}
	}
	rb, bySeq, byTime, actions := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptsBySeq), tx.Bucket(bucketReceiptsByTime), tx.Bucket(bucketActions)
	c := bySeq.Cursor()
	n := 0
	k, idb := c.First()
	for ; k != nil && n < batch; k, idb = c.First() {
		seq := binary.BigEndian.Uint64(k)
		if seq >= head.Seq {
			break // the head stays
		}
		stored := rb.Get(idb)
		if stored == nil {
			return n, false, fmt.Errorf("receipt %s (sequence %d) is missing: verify the chain", idb, seq)
		}
		var r Receipt
		if err := json.Unmarshal(stored, &r); err != nil {
			return n, false, fmt.Errorf("receipt %s is unreadable: %w", idb, err)
		}
		over := (maxCount > 0 && stats.Count > maxCount) || (maxBytes > 0 && stats.Bytes > maxBytes) ||
			(maxAge > 0 && r.CreatedAt.Before(now.Add(-maxAge)))
		if !over {
			break
		}
		if seq != cp.ToSeq+1 {
			return n, false, fmt.Errorf("the oldest receipt is sequence %d, not %d as the checkpoint continues: verify the chain", seq, cp.ToSeq+1)
		}
		id := string(idb)
		if err := rb.Delete(idb); err != nil {
			return n, false, err
		}
		if err := bySeq.Delete(k); err != nil {
			return n, false, err
		}
		if err := byTime.Delete(timeKey(r.CreatedAt, id)); err != nil {
			return n, false, err
		}
		if r.ActionID != "" {
			if v := actions.Get([]byte(r.ActionID)); v != nil {
				rec, err := decodeAction(v)
				if err != nil {
					return n, false, err
				}
				if rec.ReceiptID == id {
					rec.ReceiptPruned = true
					if err := putAction(tx, rec); err != nil {
						return n, false, err
					}
				}
			}
		}
		if cp.Count == 0 {
			cp.OldestAt = r.CreatedAt
		}
		cp.ToSeq, cp.Count, cp.LastID, cp.LastHash, cp.NewestAt, cp.At = seq, cp.Count+1, id, hashOf(stored), r.CreatedAt, now
		stats.Count--
		stats.Bytes -= int64(len(stored))
		n++
	}
	rep.Kept, rep.KeptBytes = stats.Count, stats.Bytes
	if n == 0 {
		return 0, false, nil
	}
	cps := tx.Bucket(bucketReceiptCheckpoints)
	// One record per run, keyed by its first sequence number.
	v, err := json.Marshal(cp)
	if err != nil {
		return n, false, err
	}
	if err := cps.Put(seqKey(cp.FromSeq), v); err != nil {
		return n, false, err
	}
	if err := writeStats(tx, stats); err != nil {
		return n, false, err
	}
	return n, n == batch, nil
}

// ReceiptFootprint is what the receipts take now.
func (l *Ledger) ReceiptFootprint() (count uint64, bytes int64, oldest time.Time, err error) {
	err = l.db.View(func(tx *bolt.Tx) error {
		s, err := readStats(tx)
		if err != nil {
			return err
		}
		count, bytes = s.Count, s.Bytes
		if k, idb := tx.Bucket(bucketReceiptsBySeq).Cursor().First(); k != nil {
			var r Receipt
			if json.Unmarshal(tx.Bucket(bucketReceipts).Get(idb), &r) == nil {
				oldest = r.CreatedAt
			}
		}
		return nil
	})
	return count, bytes, oldest, err
}

// migrateReceiptCheckpoints creates receipt_checkpoints/ and counts the
// receipts already stored into meta/receipts_stats.
func migrateReceiptCheckpoints(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketReceiptCheckpoints); err != nil {
		return err
	}
	var s receiptStats
	err := tx.Bucket(bucketReceipts).ForEach(func(_, v []byte) error {
		s.Count++
		s.Bytes += int64(len(v))
		return nil
	})
	if err != nil {
		return err
	}
	return writeStats(tx, s)
}

// ExportHeader is the first line of a receipts export: what it holds.
type ExportHeader struct {
	Format     string                     `json:"pikodReceipts"`
	Version    int                        `json:"version"`
	ExportedAt time.Time                  `json:"exportedAt"`
	Head       contracts.ReceiptChainHead `json:"head"`
	Count      uint64                     `json:"count"`
}

// ExportReceipts writes the receipts as JSON lines: the header, one line
// {"checkpoint": ...} per checkpoint, then every receipt kept, oldest
// first, each line exactly its stored bytes (so the chain's hashes can be
// checked from the file alone: contracts.VerifyReceiptExport). It reads in
// short transactions up to the head as it was when the export began.
func (l *Ledger) ExportReceipts(w io.Writer, now time.Time) (ExportHeader, error) {
	if err := l.FlushReceipts(); err != nil {
		return ExportHeader{}, err
	}
	var head chainHead
	var stats receiptStats
	if err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		if head, err = readHead(tx); err != nil {
			return err
		}
		stats, err = readStats(tx)
		return err
	}); err != nil {
		return ExportHeader{}, err
	}
	hdr := ExportHeader{Format: contracts.ReceiptExportFormat, Version: 1, ExportedAt: now.UTC(), Head: head.info(), Count: stats.Count}
	line := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	if err := line(hdr); err != nil {
		return hdr, err
	}
	cps, err := l.Checkpoints()
	if err != nil {
		return hdr, err
	}
	for _, c := range cps {
		if err := line(struct {
			Checkpoint contracts.ReceiptCheckpoint `json:"checkpoint"`
		}{c.Info()}); err != nil {
			return hdr, err
		}
	}
	next := uint64(1)
	if n := len(cps); n > 0 {
		next = cps[n-1].ToSeq + 1
	}
	for next <= head.Seq {
		var chunk [][]byte
		err := l.db.View(func(tx *bolt.Tx) error {
			rb := tx.Bucket(bucketReceipts)
			c := tx.Bucket(bucketReceiptsBySeq).Cursor()
			for k, idb := c.Seek(seqKey(next)); k != nil && len(chunk) < verifyChunk; k, idb = c.Next() {
				seq := binary.BigEndian.Uint64(k)
				if seq > head.Seq {
					break
				}
				v := rb.Get(idb)
				if v == nil {
					return fmt.Errorf("receipt %s (sequence %d) is missing: verify the chain", idb, seq)
				}
				chunk = append(chunk, bytes.Clone(v))
				next = seq + 1
			}
			return nil
		})
		if err != nil {
			return hdr, err
		}
		if len(chunk) == 0 {
			break
		}
		for _, b := range chunk {
			if _, err := w.Write(append(b, '\n')); err != nil {
				return hdr, err
			}
		}
	}
	return hdr, nil
}
