package approvals

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// migrationTests holds one test per migration, by name. Each starts from a
// database of the schema before its migration (reopenAtSchema), holding
// what that schema could hold, and checks what the migration must give.
// TestMigrations fails for a migration without an entry here.
var migrationTests = map[string]func(t *testing.T){
	"initial":             testMigrationInitial,
	"processes":           testMigrationProcesses,
	"ledger":              testMigrationLedger,
	"sources":             testMigrationSources,
	"source-data":         testMigrationSourceData,
	"receipt-chain":       testMigrationReceiptChain,
	"pins":                testMigrationPins,
	"tasks":               testMigrationTasks,
	"receipt-checkpoints": testMigrationReceiptCheckpoints,
	"skill-pins":          testMigrationSkillPins,
}

func TestMigrations(t *testing.T) {
	seen := map[string]bool{}
	for i, m := range migrations {
		if m.schema != i+1 {
			t.Errorf("migration %q is at position %d but says schema %d: migrations are append-only, in order", m.name, i, m.schema)
		}
		if m.name == "" || m.apply == nil {
			t.Errorf("migration %d has no name or no function", m.schema)
			continue
		}
		if seen[m.name] {
			t.Errorf("two migrations are named %q", m.name)
		}
		seen[m.name] = true
		test, ok := migrationTests[m.name]
		if !ok {
			t.Errorf("migration %d %q has no test: add one to migrationTests", m.schema, m.name)
			continue
		}
		t.Run(m.name, test)
	}
	for name := range migrationTests {
		if !seen[name] {
			t.Errorf("migrationTests has %q, which is no migration", name)
		}
	}
}

// schemaOf returns the schema version the migration called name brings a
// database to.
func schemaOf(t *testing.T, name string) int {
	t.Helper()
	for _, m := range migrations {
		if m.name == name {
			return m.schema
		}
	}
	t.Fatalf("no migration %q", name)
	return 0
}

// TestSchemaDocumented keeps doc.go's tree and migrations list in step
// with schema.go.
func TestSchemaDocumented(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range [][]byte{
		bucketMeta, bucketSettings, bucketProcesses, bucketActions, bucketActionsByTime, bucketReceipts,
		bucketReceiptsBySeq, bucketReceiptsByTime, bucketPins, bucketSkillPins, bucketSources, bucketReceiptCheckpoints,
		bucketSourceMeta, bucketSourceOrder, bucketSourceData,
	} {
		if !strings.Contains(doc, "── "+string(name)+"/") {
			t.Errorf("doc.go's tree does not show bucket %s/", name)
		}
	}
	for _, key := range []string{string(keySchema), string(keyCreated), string(keyReceiptsHead), string(keyReceiptsStats), MetaVaultBackend, MetaVaultChoice, MetaVaultMigration, MetaVaultUnnamed} {
		if !strings.Contains(doc, "── "+key+" ") {
			t.Errorf("doc.go's tree does not show meta/%s", key)
		}
	}
	_, list, ok := strings.Cut(doc, "Migrations, applied in order")
	if !ok {
		t.Fatal("doc.go has no migrations list")
	}
	var numbers []int
	for _, m := range regexp.MustCompile(`(?m)^//\s+(\d+)\. `).FindAllStringSubmatch(list, -1) {
		n, _ := strconv.Atoi(m[1])
		numbers = append(numbers, n)
	}
	if len(numbers) != len(migrations) {
		t.Fatalf("doc.go lists %d migrations, schema.go has %d", len(numbers), len(migrations))
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Errorf("doc.go's migration %d is numbered %d", i+1, n)
		}
	}
}

func testMigrationSourceData(t *testing.T) {
	// A database of the schema before inline data holds file-backed
	// sources; after the migration they still read, and small results go
	// inline.
	db, path := openTemp(t)
	dir := filepath.Join(t.TempDir(), "sources")
	s, err := OpenSourceStore(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.inlineMax = -1
	old, err := s.Put("srv", "tool", []byte("kept in a file"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSources).DeleteBucket(bucketSourceData); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(strconv.Itoa(schemaOf(t, "source-data")-1)))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	s, err = OpenSourceStore(db, dir, 0, nil)
	if err != nil {
		t.Fatalf("OpenSourceStore after migration: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if w, err := s.Read(old.ID, 0, 0); err != nil || w.Text != "kept in a file" {
		t.Errorf("reading a file-backed source after the migration = %+v, %v", w, err)
	}
	small, err := s.Put("srv", "tool", []byte("inline"))
	if err != nil {
		t.Fatalf("Put after migration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, small.ID)); !os.IsNotExist(err) {
		t.Errorf("a small source after the migration has a file (%v); want it inline", err)
	}
	if w, err := s.Read(small.ID, 0, 0); err != nil || w.Text != "inline" {
		t.Errorf("reading an inline source = %+v, %v", w, err)
	}
}
