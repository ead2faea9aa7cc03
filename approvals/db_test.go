package approvals

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pikod.db")
	db, err := Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func testMigrationInitial(t *testing.T) {
	db, _ := openTemp(t)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			t.Fatal("meta bucket missing")
		}
		if got, want := string(meta.Get(keySchema)), strconv.Itoa(SchemaVersion); got != want {
			t.Errorf("meta/schema = %q, want %q", got, want)
		}
		if _, err := time.Parse(time.RFC3339, string(meta.Get(keyCreated))); err != nil {
			t.Errorf("meta/created = %q: %v", meta.Get(keyCreated), err)
		}
		if tx.Bucket(bucketSettings) == nil {
			t.Error("settings bucket missing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	db, path := openTemp(t)
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(path, 100*time.Millisecond)
	if !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Fatalf("Open with schema 99 = %v, want ErrFailedPrecondition", err)
	}
}

func TestOpenLocked(t *testing.T) {
	_, path := openTemp(t)
	_, err := Open(path, 50*time.Millisecond)
	if !errors.Is(err, ErrLocked) || !errors.Is(err, contracts.ErrAlreadyExists) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestOpenCorruptLeavesFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pikod.db")
	junk := bytes.Repeat([]byte("not a database "), 4096)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, 100*time.Millisecond)
	if !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Fatalf("Open(junk) = %v, want ErrFailedPrecondition", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Errorf("error %q does not name %s", err, path)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, junk) {
		t.Error("Open modified a corrupt file")
	}
}

func TestSaveSettingsCompareAndSwap(t *testing.T) {
	db, _ := openTemp(t)
	rec, err := db.Settings("mcp")
	if err != nil || rec.Revision != 0 || rec.Settings != nil {
		t.Fatalf("Settings before save = %+v, %v; want zero record", rec, err)
	}
	if _, err := db.SaveSettings("mcp", []byte(`{"servers":[]}`), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveSettings("mcp", []byte(`{"servers":[1]}`), 0); !errors.Is(err, ErrRevisionMoved) {
		t.Fatalf("stale save = %v, want ErrRevisionMoved", err)
	}
	rec, err = db.Settings("mcp")
	if err != nil || rec.Revision != 1 || string(rec.Settings) != `{"servers":[]}` {
		t.Fatalf("after stale save: %+v, %v; want revision 1 unchanged", rec, err)
	}
}

func testMigrationProcesses(t *testing.T) {
	// A database written by schema 1 gains the processes bucket.
	db, _ := reopenAtSchema(t, schemaOf(t, "processes")-1, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketProcesses) })
	if err := db.PutProcess(42, []byte(`{"pid":42}`)); err != nil {
		t.Fatalf("PutProcess after migration: %v", err)
	}
	recs, err := db.ListProcesses()
	if err != nil || len(recs) != 1 || string(recs[0]) != `{"pid":42}` {
		t.Fatalf("ListProcesses = %q, %v", recs, err)
	}
	if err := db.DeleteProcess(42); err != nil {
		t.Fatal(err)
	}
	if recs, _ := db.ListProcesses(); len(recs) != 0 {
		t.Fatalf("after DeleteProcess: %q", recs)
	}
}

// reopenAtSchema turns a fresh database into one written by schema n: undo
// removes what later migrations added. Reopening must migrate it forward.
func reopenAtSchema(t *testing.T, n int, undo func(tx *bolt.Tx) error) (*DB, string) {
	t.Helper()
	db, path := openTemp(t)
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := undo(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(strconv.Itoa(n)))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err := Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("reopening a schema %d database: %v", n, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}
