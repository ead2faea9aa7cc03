package approvals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	bolt "go.etcd.io/bbolt"
)

// Compaction: bbolt reuses the pages freed by deletions (pruned receipts,
// evicted sources) but never gives them back to the file system, so the
// file stays at its largest size. CompactFile copies every bucket, key,
// value and bucket sequence into a new file, syncs it and renames it over
// the old one: a crash before the rename leaves the old file untouched
// (and the partial copy, which the next call removes), after it the new
// one. It runs before the database is opened for use (at start), when the
// free pages are worth it.

// freeBytes is the bytes in the free pages of db (bbolt counts the pages
// when it loads the freelist; its FreeAlloc is set by write commits only).
func freeBytes(db *bolt.DB) int64 {
	return int64(db.Stats().FreePageN) * int64(db.Info().PageSize)
}

// CompactReport is what CompactFile found and did.
type CompactReport struct {
	Before, After int64 // file sizes in bytes
	Free          int64 // bytes in free pages before
	Compacted     bool
	Took          time.Duration
	// Held is how long writes (calls with effects, receipts) waited for
	// the switch (DB.Compact); ReadsHeld how long reads did.
	Held, ReadsHeld time.Duration
}

// CompactFile compacts the database at path when its free pages exceed
// both minFree bytes and ratio of its size (force: always). The file must
// not be open elsewhere: the lock is taken with lockTimeout.
func CompactFile(path string, lockTimeout time.Duration, minFree int64, ratio float64, force bool) (CompactReport, error) {
	var rep CompactReport
	tmp := path + ".compact"
	// A copy a crash left behind is never used: the original is whole.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("removing the unfinished compaction %s: %w", tmp, err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return rep, fmt.Errorf("opening database %s: %w", path, ErrLocked)
		}
		return rep, fmt.Errorf("opening database %s: %w", path, err)
	}
	defer func() {
		if src != nil {
			src.Close()
		}
	}()
	_ = src.View(func(tx *bolt.Tx) error {
		rep.Before = tx.Size()
		return nil
	})
	rep.Free = freeBytes(src)
	if !force && (rep.Free < minFree || float64(rep.Free) < ratio*float64(rep.Before)) {
		rep.After = rep.Before
		return rep, nil
	}
	start := time.Now()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return rep, fmt.Errorf("creating %s: %w", tmp, err)
	}
	if err := copyAll(context.Background(), dst, src, 8<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return rep, fmt.Errorf("compacting %s: %w (the database is unchanged)", path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return rep, fmt.Errorf("syncing %s: %w (the database is unchanged)", tmp, err)
	}
	_ = dst.View(func(tx *bolt.Tx) error {
		rep.After = tx.Size()
		return nil
	})
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("closing %s: %w (the database is unchanged)", tmp, err)
	}
	if err := src.Close(); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("closing %s: %w (the database is unchanged)", path, err)
	}
	src = nil
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("replacing %s with its compacted copy: %w (the database is unchanged)", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	rep.Compacted, rep.Took = true, time.Since(start)
	return rep, nil
}

// Compact compacts the open database with pikod running, when its free
// pages exceed both minFree bytes and ratio of its size (force: always).
// Calls go on while the copy is made from a read transaction and brought
// up to date with what they wrote meanwhile (twice, each time synced);
// then writes are held for the last catch-up (which reads both files) and
// its sync, and every transaction for the switch itself (rep.Held and
// rep.ReadsHeld say how long). The switch syncs the
// copy, closes the old file and renames the copy over it; the copy's open
// handle becomes the database. Until the rename the old file is whole and
// in use; a crash leaves it (and a partial copy the next start removes).
// Every bucket, key, value and bucket sequence is kept byte for byte.
func (db *DB) Compact(ctx context.Context, minFree int64, ratio float64, force bool) (CompactReport, error) {
	var rep CompactReport
	h := db.bolt
	tmp := db.path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("removing the unfinished compaction %s: %w", tmp, err)
	}
	rep.Before, rep.Free = db.Footprint()
	if !force && (rep.Free < minFree || float64(rep.Free) < ratio*float64(rep.Before)) {
		rep.After = rep.Before
		return rep, nil
	}
	start := time.Now()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		return rep, fmt.Errorf("creating %s: %w", tmp, err)
	}
	abandon := func(err error) (CompactReport, error) {
		dst.Close()
		os.Remove(tmp)
		return rep, fmt.Errorf("compacting %s: %w (the database is unchanged)", db.path, err)
	}
	// The copy (committed every 8 MiB: a transaction's pages are held in
	// memory until it commits), then catch-ups with calls running; the
	// copy's pages go to disk meanwhile, so the last sync is of the last
	// changes only.
	h.gate.RLock()
	err = copyAll(ctx, dst, h.b, 8<<20)
	for i := 0; err == nil && i < 2; i++ {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = catchUp(dst, h.b); err == nil {
			err = dst.Sync()
		}
	}
	h.gate.RUnlock()
	if err != nil {
		return abandon(err)
	}
	// The last catch-up holds writes (reads go on), the switch holds all.
	h.writes.Lock()
	defer h.writes.Unlock()
	held := time.Now()
	h.gate.RLock()
	err = catchUp(dst, h.b)
	h.gate.RUnlock()
	if err == nil {
		dst.NoSync = false
		err = dst.Sync()
	}
	if err != nil {
		return abandon(err)
	}
	h.gate.Lock()
	defer h.gate.Unlock()
	readsHeld := time.Now()
	if err := h.b.Close(); err != nil {
		return abandon(fmt.Errorf("closing the old file: %w", err))
	}
	if err := os.Rename(tmp, db.path); err != nil {
		// The old file is still at its place: open it again.
		dst.Close()
		os.Remove(tmp)
		old, oerr := bolt.Open(db.path, 0o600, &bolt.Options{Timeout: time.Second})
		if oerr != nil {
			return rep, fmt.Errorf("replacing %s with its compacted copy: %w; reopening it failed too: %w (restart pikod)", db.path, err, oerr)
		}
		h.b = old
		return rep, fmt.Errorf("replacing %s with its compacted copy: %w (the database is unchanged)", db.path, err)
	}
	h.b = dst
	rep.Held, rep.ReadsHeld = time.Since(held), time.Since(readsHeld)
	if err := syncDir(filepath.Dir(db.path)); err != nil {
		return rep, fmt.Errorf("compacted %s, but syncing its directory failed: %w", db.path, err)
	}
	rep.After, _ = sizeOf(dst)
	rep.Compacted, rep.Took = true, time.Since(start)
	return rep, nil
}

// copyAll copies every bucket, key, value and sequence of src into the
// empty dst (the one copy both compactions make), committing dst every txMax bytes, all within one read
// transaction of src. (bbolt's Compact commits its last transaction after
// its read of src has ended, while that transaction's values still point
// into src's mapped pages: with pikod writing, src may be remapped
// meanwhile, and the commit reads freed memory.)
func copyAll(ctx context.Context, dst, src *bolt.DB, txMax int) error {
	return src.View(func(stx *bolt.Tx) error {
		dtx, err := dst.Begin(true)
		if err != nil {
			return err
		}
		defer func() { _ = dtx.Rollback() }()
		size, keys := 0, 0
		// path names the bucket being copied from the root, so that
		// after a commit the copy goes on in the new transaction.
		var copyBucket func(path [][]byte, s *bolt.Bucket) error
		open := func(path [][]byte) *bolt.Bucket {
			b := dtx.Bucket(path[0])
			for _, k := range path[1:] {
				b = b.Bucket(k)
			}
			return b
		}
		copyBucket = func(path [][]byte, s *bolt.Bucket) error {
			c := s.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if keys++; keys%4096 == 0 && ctx.Err() != nil {
					return ctx.Err() // pikod is stopping: the copy is dropped
				}
				if size += len(k) + len(v); size > txMax {
					if err := dtx.Commit(); err != nil {
						return err
					}
					if dtx, err = dst.Begin(true); err != nil {
						return err
					}
					size = 0
				}
				d := open(path)
				d.FillPercent = 1.0
				if v != nil {
					if err := d.Put(k, v); err != nil {
						return err
					}
					continue
				}
				sub := s.Bucket(k)
				nb, err := d.CreateBucket(k)
				if err != nil {
					return err
				}
				if err := nb.SetSequence(sub.Sequence()); err != nil {
					return err
				}
				if err := copyBucket(append(path[:len(path):len(path)], k), sub); err != nil {
					return err
				}
			}
			return nil
		}
		err = stx.ForEach(func(name []byte, b *bolt.Bucket) error {
			nb, err := dtx.CreateBucket(name)
			if err != nil {
				return err
			}
			if err := nb.SetSequence(b.Sequence()); err != nil {
				return err
			}
			return copyBucket([][]byte{name}, b)
		})
		if err != nil {
			return err
		}
		return dtx.Commit()
	})
}

func sizeOf(b *bolt.DB) (size int64, err error) {
	err = b.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size, err
}

// catchUp makes dst hold exactly what src holds, in one transaction of
// each: what src gained or changed is written to dst, what it lost is
// deleted from dst, bucket sequences included. Both walk their keys in
// order side by side, so it reads each file once.
func catchUp(dst, src *bolt.DB) error {
	return src.View(func(stx *bolt.Tx) error {
		return dst.Update(func(dtx *bolt.Tx) error {
			return syncLevel(stx.Cursor(), dtx.Cursor(),
				func(k []byte) (*bolt.Bucket, *bolt.Bucket, error) {
					d, err := dtx.CreateBucketIfNotExists(k)
					return stx.Bucket(k), d, err
				},
				func(k, _ []byte) error { return fmt.Errorf("the root holds a value %q, not a bucket", k) },
				dtx.DeleteBucket)
		})
	})
}

// syncLevel brings the keys under dc (one bucket of dst, or its root) to
// those under sc. nested opens the pair of sub-buckets named k (creating
// dst's); put writes a value (at the root, which holds buckets only, an error);
// drop deletes a sub-bucket. Changes are applied after the walk, as bbolt
// cursors do not survive writes to their bucket.
func syncLevel(sc, dc *bolt.Cursor, nested func(k []byte) (*bolt.Bucket, *bolt.Bucket, error),
	put func(k, v []byte) error, drop func(k []byte) error) error {
	type change struct {
		k, v   []byte
		bucket bool // k is (or becomes) a sub-bucket
		del    bool
	}
	var changes []change
	var subs [][]byte
	sk, sv := sc.First()
	dk, dv := dc.First()
	for sk != nil || dk != nil {
		cmp := 0
		switch {
		case sk == nil:
			cmp = 1
		case dk == nil:
			cmp = -1
		default:
			cmp = bytes.Compare(sk, dk)
		}
		switch {
		case cmp < 0: // only in src
			if sv == nil {
				subs = append(subs, sk)
			} else {
				changes = append(changes, change{k: sk, v: sv})
			}
			sk, sv = sc.Next()
		case cmp > 0: // only in dst
			changes = append(changes, change{k: bytes.Clone(dk), bucket: dv == nil, del: true})
			dk, dv = dc.Next()
		default:
			switch {
			case sv == nil && dv == nil:
				subs = append(subs, sk)
			case sv == nil || dv == nil: // a value became a bucket or back
				changes = append(changes, change{k: bytes.Clone(dk), bucket: dv == nil, del: true})
				if sv == nil {
					subs = append(subs, sk)
				} else {
					changes = append(changes, change{k: sk, v: sv})
				}
			case !bytes.Equal(sv, dv):
				changes = append(changes, change{k: sk, v: sv})
			}
			sk, sv = sc.Next()
			dk, dv = dc.Next()
		}
	}
	db := dc.Bucket()
	for _, c := range changes {
		var err error
		switch {
		case c.del && c.bucket:
			err = drop(c.k)
		case c.del:
			err = db.Delete(c.k)
		default:
			err = put(c.k, c.v)
		}
		if err != nil {
			return err
		}
	}
	for _, k := range subs {
		s, d, err := nested(k)
		if err != nil {
			return err
		}
		if d.Sequence() != s.Sequence() {
			if err := d.SetSequence(s.Sequence()); err != nil {
				return err
			}
		}
		if err := syncLevel(s.Cursor(), d.Cursor(),
			func(k []byte) (*bolt.Bucket, *bolt.Bucket, error) {
				dd, err := d.CreateBucketIfNotExists(k)
				return s.Bucket(k), dd, err
			},
			d.Put, d.DeleteBucket); err != nil {
			return err
		}
	}
	return nil
}
