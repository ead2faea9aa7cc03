package approvals

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("database is locked by another process")

// DB is pikod's open database.
type DB struct {
	bolt *handle
	path string
	// group commits the durable writes of calls (ledger, receipts,
	// sources) in shared transactions.
	group *groupCommitter
}

// Open opens (creating if absent) the database at path, waiting at most
// lockTimeout for the file lock, checks every page and applies migrations.
// A locked file yields an error wrapping ErrLocked and
// contracts.ErrAlreadyExists; a damaged file an error wrapping
// contracts.ErrFailedPrecondition that names the file. A damaged file is never
// re-initialised.
func Open(path string, lockTimeout time.Duration) (db *DB, err error) {
	// bbolt panics on some kinds of damage; report those like any other.
	defer func() {
		if r := recover(); r != nil {
			err = corrupt(path, fmt.Errorf("%v", r))
		}
	}()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("opening database %s: %w: %w", path, ErrLocked, contracts.ErrAlreadyExists)
		}
		if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) ||
			errors.Is(err, bolterrors.ErrVersionMismatch) || errors.Is(err, bolterrors.ErrInvalidMapping) {
			return nil, corrupt(path, err)
		}
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	db = &DB{bolt: &handle{b: b}, path: path}
	if err := db.check(); err != nil {
		b.Close()
		return nil, err
	}
	if err := db.migrate(); err != nil {
		b.Close()
		return nil, err
	}
	db.group = startGroupCommitter(db.bolt)
	return db, nil
}

func corrupt(path string, cause error) error {
	return contracts.WithHint(
		fmt.Errorf("database %s is corrupt (check failed: %v); pikod will not touch it: %w", path, cause, contracts.ErrFailedPrecondition),
		"stop here and keep the file; move it aside (or restore a backup) and start pikod again to begin with an empty database")
}

// check runs bbolt's consistency check over every page.
func (db *DB) check() error {
	var problems []string
	err := db.bolt.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			problems = append(problems, cerr.Error())
			if len(problems) >= 5 {
				break
			}
		}
		return nil
	})
	if err != nil {
		return corrupt(db.path, err)
	}
	if len(problems) > 0 {
		return corrupt(db.path, errors.New(fmt.Sprint(problems)))
	}
	return nil
}

func (db *DB) migrate() error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		have := 0
		if meta != nil {
			if v := meta.Get(keySchema); v != nil {
				n, err := strconv.Atoi(string(v))
				if err != nil {
					return corrupt(db.path, fmt.Errorf("meta/schema is %q", v))
				}
				have = n
			}
		} else if k, _ := tx.Cursor().First(); k != nil {
			return corrupt(db.path, fmt.Errorf("not a pikod database (bucket %q without meta)", k))
		}
		if have > len(migrations) {
			return fmt.Errorf("database %s has schema %d, newer than this pikod understands (%d): upgrade pikod: %w",
				db.path, have, len(migrations), contracts.ErrFailedPrecondition)
		}
		for _, m := range migrations[have:] {
			if err := m.apply(tx); err != nil {
				return fmt.Errorf("migrating database %s to schema %d (%s): %w", db.path, m.schema, m.name, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(strconv.Itoa(len(migrations))))
	})
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// Footprint is the file's size and the bytes of its free pages.
func (db *DB) Footprint() (size, free int64) {
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size, db.bolt.free()
}

// Close closes the database.
func (db *DB) Close() error {
	db.group.close()
	return db.bolt.Close()
}

// Meta returns a value of the meta/ bucket ("" when absent).
func (db *DB) Meta(key string) (string, error) {
	var out string
	err := db.bolt.View(func(tx *bolt.Tx) error {
		out = string(tx.Bucket(bucketMeta).Get([]byte(key)))
		return nil
	})
	return out, err
}

// SetMeta stores a value in the meta/ bucket, durably.
func (db *DB) SetMeta(key, value string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), []byte(value))
	})
}

// UpdateMeta stores the values of set and deletes the keys of del in the
// meta/ bucket, in one durable transaction: all or none.
func (db *DB) UpdateMeta(set map[string]string, del ...string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		for k, v := range set {
			if err := b.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		for _, k := range del {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}
