package approvals

import (
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
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
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
