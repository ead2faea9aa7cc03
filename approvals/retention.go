package approvals

import (
	"bytes"
	"context"
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
//
// A pruned receipt takes with it what only it vouched for: the retained
// source it names (from sources, when not nil: its text and its
// metadata, so nothing of an unverifiable result stays) and an action
// slimmed by PruneActions.
func (l *Ledger) PruneReceipts(ctx context.Context, maxAge time.Duration, maxCount uint64, maxBytes int64, now time.Time, batch int, sources *SourceStore) (PruneReport, error) {
	if batch <= 0 {
		batch = PruneBatch
	}
	if err := l.FlushReceipts(); err != nil {
		return PruneReport{}, err
	}
	run := newID("prune_")
	var rep PruneReport
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		n := 0
		more := false
		var after func()
		err := l.group.update(func(tx *bolt.Tx) error {
			var err error
			var srcs []string
			after = nil
			n, more, srcs, err = pruneBatch(tx, maxAge, maxCount, maxBytes, now, batch, run, &rep)
			if err != nil || sources == nil || len(srcs) == 0 {
				return err
			}
			after, err = sources.dropTx(tx, srcs)
			return err
		}, func() {
			if after != nil {
				after()
			}
		})
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

// pruneBatch prunes one batch in tx; it returns how many receipts it
// pruned, whether more may be due, and the sources the pruned receipts
// named.
func pruneBatch(tx *bolt.Tx, maxAge time.Duration, maxCount uint64, maxBytes int64, now time.Time, batch int, run string, rep *PruneReport) (int, bool, []string, error) {
	stats, err := readStats(tx)
	if err != nil {
		return 0, false, nil, err
	}
	head, err := readHead(tx)
	if err != nil {
		return 0, false, nil, err
	}
	cp, haveCP, err := lastCheckpoint(tx)
	if err != nil {
		return 0, false, nil, err
	}
	if !haveCP || cp.Run != run {
		cp = Checkpoint{Run: run, FromSeq: cp.ToSeq + 1, ToSeq: cp.ToSeq}
	}
	rb, bySeq, byTime, actions := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptsBySeq), tx.Bucket(bucketReceiptsByTime), tx.Bucket(bucketActions)
	c := bySeq.Cursor()
	n := 0
	var srcs []string
	k, idb := c.First()
	for ; k != nil && n < batch; k, idb = c.First() {
		seq := binary.BigEndian.Uint64(k)
		if seq >= head.Seq {
			break // the head stays
		}
		stored := rb.Get(idb)
		if stored == nil {
			return n, false, nil, fmt.Errorf("receipt %s (sequence %d) is missing: verify the chain", idb, seq)
		}
		var r Receipt
		if err := json.Unmarshal(stored, &r); err != nil {
			return n, false, nil, fmt.Errorf("receipt %s is unreadable: %w", idb, err)
		}
		over := (maxCount > 0 && stats.Count > maxCount) || (maxBytes > 0 && stats.Bytes > maxBytes) ||
			(maxAge > 0 && r.CreatedAt.Before(now.Add(-maxAge)))
		if !over {
			break
		}
		if seq != cp.ToSeq+1 {
			return n, false, nil, fmt.Errorf("the oldest receipt is sequence %d, not %d as the checkpoint continues: verify the chain", seq, cp.ToSeq+1)
		}
		id := string(idb)
		if err := rb.Delete(idb); err != nil {
			return n, false, nil, err
		}
		if err := bySeq.Delete(k); err != nil {
			return n, false, nil, err
		}
		if err := byTime.Delete(timeKey(r.CreatedAt, id)); err != nil {
			return n, false, nil, err
		}
		if r.ActionID != "" {
			if v := actions.Get([]byte(r.ActionID)); v != nil {
				rec, err := decodeAction(v)
				if err != nil {
					return n, false, nil, err
				}
				switch {
				case rec.ReceiptID != id:
				case rec.ArgumentsPruned:
					// Slimmed for this receipt alone: it goes with it.
					if err := actions.Delete([]byte(rec.ID)); err != nil {
						return n, false, nil, err
					}
				default:
					rec.ReceiptPruned = true
					if err := putAction(tx, rec); err != nil {
						return n, false, nil, err
					}
				}
			}
		}
		if r.SourceID != "" {
			srcs = append(srcs, r.SourceID)
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
		return 0, false, nil, nil
	}
	cps := tx.Bucket(bucketReceiptCheckpoints)
	// One record per run, keyed by its first sequence number.
	v, err := json.Marshal(cp)
	if err != nil {
		return n, false, nil, err
	}
	if err := cps.Put(seqKey(cp.FromSeq), v); err != nil {
		return n, false, nil, err
	}
	if err := writeStats(tx, stats); err != nil {
		return n, false, nil, err
	}
	return n, n == batch, srcs, nil
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

// ActionPruneReport is what one PruneActions did.
type ActionPruneReport struct {
	// Removed actions are gone from the database (their receipts were
	// pruned already, or they never had one); Slimmed ones lost their
	// arguments and tool description and stay for their receipt.
	Removed, Slimmed int
	Batches          int
}

// endedState tells the states retention may prune: the action ended and
// nothing more will happen to it. Prepared, approved, dispatched and
// uncertain actions are never pruned.
func endedState(s string) bool {
	switch s {
	case contracts.ActionCompleted, contracts.ActionFailed, contracts.ActionRejected, contracts.ActionExpired, contracts.ActionStale:
		return true
	}
	return false
}

// PruneActions applies the ended actions' age bound: an action that ended
// (completed, failed, rejected, expired or stale) before now-maxAge leaves
// the list of actions. If its receipt is still kept, the record stays,
// slimmed to what the receipt's cross-check needs (state, digest,
// fingerprints, receipt), and goes when the receipt is pruned; otherwise
// the record is removed. Decided and dispatched ids stay in the tombstone
// file for good, so a pruned id can never be approved again. It works
// oldest first in batches of batch actions (PruneBatch if 0), one short
// transaction each.
func (l *Ledger) PruneActions(ctx context.Context, maxAge time.Duration, now time.Time, batch int) (ActionPruneReport, error) {
	var rep ActionPruneReport
	if maxAge <= 0 {
		return rep, nil
	}
	if batch <= 0 {
		batch = PruneBatch
	}
	cutoff := now.Add(-maxAge)
	// Actions are indexed by creation time; one that ended before the
	// cutoff was created before it too, so the scan stops at the cutoff.
	// scanMax bounds the keys one transaction looks at (the actions kept
	// for the age bound, still open, are skipped, not counted).
	scanMax := batch * 16
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		var (
			next             []byte
			done             bool
			removed, slimmed int
		)
		err := l.group.update(func(tx *bolt.Tx) error {
			next, done, removed, slimmed = nil, false, 0, 0
			actions, index := tx.Bucket(bucketActions), tx.Bucket(bucketActionsByTime)
			c := index.Cursor()
			k, _ := c.First()
			if after != nil {
				if k, _ = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			var drop [][]byte
			var recs []*actionRecord
			for scanned := 0; ; k, _ = c.Next() {
				if k == nil {
					done = true
					break
				}
				if len(drop) == batch || scanned == scanMax {
					break
				}
				scanned++
				next = bytes.Clone(k)
				if len(k) <= 8 {
					continue
				}
				if int64(binary.BigEndian.Uint64(k[:8])) >= cutoff.UnixNano() {
					done = true
					break
				}
				v := actions.Get(k[8:])
				if v == nil {
					drop, recs = append(drop, bytes.Clone(k)), append(recs, nil)
					continue
				}
				rec, err := decodeAction(v)
				if err != nil {
					return err
				}
				if !endedState(rec.State) || !rec.UpdatedAt.Before(cutoff) {
					continue
				}
				drop, recs = append(drop, bytes.Clone(k)), append(recs, rec)
			}
			for i, k := range drop {
				if err := index.Delete(k); err != nil {
					return err
				}
				rec := recs[i]
				switch {
				case rec == nil:
				case rec.ReceiptID != "" && !rec.ReceiptPruned:
					rec.Arguments, rec.ToolDescription, rec.ArgumentsPruned = nil, "", true
					if err := putAction(tx, rec); err != nil {
						return err
					}
					slimmed++
				default:
					if err := actions.Delete([]byte(rec.ID)); err != nil {
						return err
					}
					removed++
				}
			}
			return nil
		}, nil)
		if err != nil {
			return rep, fmt.Errorf("pruning ended actions: %w", err)
		}
		if removed+slimmed > 0 {
			rep.Batches++
			rep.Removed += removed
			rep.Slimmed += slimmed
		}
		if done || next == nil {
			return rep, nil
		}
		after = next
	}
}
