package approvals

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention of sources: beyond the cap on their bytes (enforced as each
// source is committed, oldest evicted first), a live source older than
// the sources' age bound is evicted by EvictOlder, and a source whose
// receipt retention pruned goes entirely (dropTx), tombstone included, so
// that the metadata of evicted sources does not grow for good.

// SetCap changes the cap on the bytes of live sources; the next commit (or
// EvictOlder) applies it. A cap of 0 or less means DefaultSourceCapBytes.
func (s *SourceStore) SetCap(capBytes int64) {
	if capBytes <= 0 {
		capBytes = DefaultSourceCapBytes
	}
	s.cap.Store(capBytes)
}

// evictTx turns live source old into a tombstone in tx: its inline text
// is deleted and its metadata says when it was evicted. The caller drops
// its eviction-order key and, after the commit, its file.
func (s *SourceStore) evictTx(meta, data *bolt.Bucket, old sourceRecord) error {
	if old.Inline {
		if err := data.Delete([]byte(old.ID)); err != nil {
			return err
		}
	}
	old.Evicted, old.EvictedAt, old.Index = true, s.now().UTC(), nil
	return putSource(meta, old)
}

// baseTotal is the live bytes as of tx: the running total of the group's
// earlier writes in tx, or the committed total. Only a group
// commit calls it, one at a time (see commitTx).
func (s *SourceStore) baseTotal(tx *bolt.Tx) int64 {
	if s.txOf == tx {
		return s.txTotal
	}
	return s.UsedBytes()
}

// settleTx records the total after tx's changes and returns what to do
// once tx is on disk: publish the total and remove the files of sources
// that are no longer live.
func (s *SourceStore) settleTx(tx *bolt.Tx, total int64, gone []string) func() {
	s.txOf, s.txTotal = tx, total
	return func() {
		s.mu.Lock()
		s.total = total
		s.mu.Unlock()
		// A file left by a crash here is removed at the next open.
		for _, id := range gone {
			_ = os.Remove(filepath.Join(s.dir, id))
		}
	}
}

// dropTx removes sources ids entirely in tx (their receipts were pruned):
// text, file (after the commit) and metadata. Unknown ids are skipped. It
// runs inside a group commit, like commitTx.
func (s *SourceStore) dropTx(tx *bolt.Tx, ids []string) (after func(), _ error) {
	b := tx.Bucket(bucketSources)
	meta, order, data := b.Bucket(bucketSourceMeta), b.Bucket(bucketSourceOrder), b.Bucket(bucketSourceData)
	total := s.baseTotal(tx)
	var gone []string
	for _, id := range ids {
		if meta.Get([]byte(id)) == nil {
			continue
		}
		rec, err := getSource(meta, []byte(id))
		if err != nil {
			return nil, err
		}
		if !rec.Evicted {
			if rec.Inline {
				if err := data.Delete([]byte(id)); err != nil {
					return nil, err
				}
			}
			if err := order.Delete(seqKey(rec.Seq)); err != nil {
				return nil, err
			}
			total -= rec.Bytes
			if !rec.Inline {
				gone = append(gone, id)
			}
		}
		if err := meta.Delete([]byte(id)); err != nil {
			return nil, err
		}
	}
	return s.settleTx(tx, total, gone), nil
}

// EvictOlder evicts, oldest first, the live sources created before
// now-maxAge (0: no age bound) and those beyond the cap, in batches of
// batch (PruneBatch if 0), one short transaction each. Evicted sources
// keep a tombstone until their receipt is pruned. It returns how many it
// evicted.
func (s *SourceStore) EvictOlder(ctx context.Context, maxAge time.Duration, now time.Time, batch int) (int, error) {
	if batch <= 0 {
		batch = PruneBatch
	}
	evicted := 0
	for {
		if err := ctx.Err(); err != nil {
			return evicted, err
		}
		n := 0
		var after func()
		err := s.db.group.update(func(tx *bolt.Tx) error {
			n, after = 0, nil
			b := tx.Bucket(bucketSources)
			meta, order, data := b.Bucket(bucketSourceMeta), b.Bucket(bucketSourceOrder), b.Bucket(bucketSourceData)
			total := s.baseTotal(tx)
			var drop [][]byte
			var gone []string
			c := order.Cursor()
			for k, v := c.First(); k != nil && len(drop) < batch; k, v = c.Next() {
				old, err := getSource(meta, v)
				if err != nil {
					return err
				}
				if total <= s.Cap() && (maxAge <= 0 || !old.CreatedAt.Before(now.Add(-maxAge))) {
					break
				}
				if err := s.evictTx(meta, data, old); err != nil {
					return err
				}
				total -= old.Bytes
				if !old.Inline {
					gone = append(gone, old.ID)
				}
				drop = append(drop, append([]byte(nil), k...))
			}
			for _, k := range drop {
				if err := order.Delete(k); err != nil {
					return err
				}
			}
			n = len(drop)
			after = s.settleTx(tx, total, gone)
			return nil
		}, func() {
			if after != nil {
				after()
			}
		})
		if err != nil {
			return evicted, fmt.Errorf("evicting old sources: %w", err)
		}
		evicted += n
		if n < batch {
			return evicted, nil
		}
	}
}
