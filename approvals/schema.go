package approvals

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The schema of pikod.db: every bucket and fixed key, the schema version
// and the ordered list of migrations that build it. doc.go draws the same
// layout as a tree; schema_test.go checks that the two agree and that every
// migration has a test of its own.

// Top-level buckets.
var (
	bucketMeta           = []byte("meta")
	bucketSettings       = []byte("settings")
	bucketProcesses      = []byte("processes")
	bucketActions        = []byte("actions")
	bucketActionsByTime  = []byte("actions_by_time")
	bucketReceipts       = []byte("receipts")
	bucketReceiptsBySeq  = []byte("receipts_by_seq")
	bucketReceiptsByTime = []byte("receipts_by_time")
	bucketPins           = []byte("pins")
	bucketSources        = []byte("sources")
	bucketTasks          = []byte("tasks")
	// bucketReceiptCheckpoints holds the checkpoints of pruned receipts.
	bucketReceiptCheckpoints = []byte("receipt_checkpoints")
	bucketSkillPins          = []byte("skill_pins")
)

// Buckets nested in sources/.
var (
	bucketSourceMeta  = []byte("meta")
	bucketSourceOrder = []byte("live")
	bucketSourceData  = []byte("data")
)

// appendFill is the fill of the pages a split leaves behind in the buckets
// whose keys grow with time (ids that begin with their creation time,
// sequence numbers): new keys always land in the last page, so a split at
// bbolt's default half would leave every page half empty for good. Kept
// under 1 so an in-place update of a recent record (an action's end) has
// room.
const appendFill = 0.9

// appendOrdered are the buckets (top-level, then nested in sources/) whose
// keys grow with time.
var (
	appendOrdered = [][]byte{bucketActions, bucketActionsByTime, bucketReceipts, bucketReceiptsBySeq,
		bucketReceiptsByTime, bucketReceiptCheckpoints}
	appendOrderedSources = [][]byte{bucketSourceMeta, bucketSourceOrder, bucketSourceData}
)

// fillAppendOrdered sets appendFill on the append-ordered buckets of a
// write transaction (bbolt keeps FillPercent per transaction, on the
// bucket values it caches for it).
func fillAppendOrdered(tx *bolt.Tx) {
	for _, name := range appendOrdered {
		if b := tx.Bucket(name); b != nil {
			b.FillPercent = appendFill
		}
	}
	if src := tx.Bucket(bucketSources); src != nil {
		for _, name := range appendOrderedSources {
			if b := src.Bucket(name); b != nil {
				b.FillPercent = appendFill
			}
		}
	}
}

// Keys of meta/.
var (
	// keySchema holds the decimal schema version: how many migrations
	// have been applied.
	keySchema = []byte("schema")
	// keyCreated holds the RFC 3339 time the file was initialised.
	keyCreated = []byte("created")
	// keyReceiptsHead records the newest receipt of the chain.
	keyReceiptsHead = []byte("receipts_head")
	// keyReceiptsStats counts the receipts kept and their stored bytes.
	keyReceiptsStats = []byte("receipts_stats")
)

// MetaVaultBackend is the meta/ key (DB.Meta, DB.SetMeta) under which the
// daemon keeps the vault backend in use (the first start's, or the one
// 'pikoctl vault migrate' moved to), so later starts with "auto" use the
// same one.
const MetaVaultBackend = "vault_backend"

// MetaVaultChoice is the meta/ key of how MetaVaultBackend was chosen
// (the daemon's JSON), MetaVaultMigration that of a vault migration not
// finished yet (vault.Migration JSON), and MetaVaultUnnamed that of the
// item keys the last migration moved without knowing their names (a JSON
// list), which a keyring cannot list for the next one.
const (
	MetaVaultChoice    = "vault_choice"
	MetaVaultMigration = "vault_migration"
	MetaVaultUnnamed   = "vault_unnamed"
)

// migration brings the database from schema-1 to schema. Its name is what
// errors and the migration tests call it.
type migration struct {
	schema int
	name   string
	apply  func(tx *bolt.Tx) error
}

// migrations are applied in order at Open, each at most once, all in one
// Update; migrations[i] brings the schema from i to i+1. Append only:
// never reorder, rename or remove one, and give each new one a test in
// schema_test.go's migrationTests.
var migrations = []migration{
	{1, "initial", migrateInitial},
	{2, "processes", migrateProcesses},
	{3, "ledger", migrateLedger},
	{4, "sources", migrateSources},
	{5, "source-data", migrateSourceData},
	{6, "receipt-chain", migrateReceiptChain},
	{7, "pins", migratePins},
	{8, "tasks", migrateTasks},
	{9, "receipt-checkpoints", migrateReceiptCheckpoints},
	{10, "skill-pins", migrateSkillPins},
}

// SchemaVersion is the layout version this build writes.
var SchemaVersion = len(migrations)

// migrateInitial creates meta/ (with created) and settings/.
func migrateInitial(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if meta.Get(keyCreated) == nil {
		if err := meta.Put(keyCreated, []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
			return err
		}
	}
	_, err = tx.CreateBucketIfNotExists(bucketSettings)
	return err
}

// migrateProcesses creates processes/: durable process records, so a
// restarted daemon reaps the groups a killed one left.
func migrateProcesses(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketProcesses)
	return err
}

// migrateLedger creates the ledger's buckets.
func migrateLedger(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketActions, bucketActionsByTime, bucketReceipts} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// migrateSources creates sources/ with meta/ and live/.
func migrateSources(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bucketSources)
	if err != nil {
		return err
	}
	if _, err := b.CreateBucketIfNotExists(bucketSourceMeta); err != nil {
		return err
	}
	_, err = b.CreateBucketIfNotExists(bucketSourceOrder)
	return err
}

// migrateSourceData adds sources/data/ for sources kept inline.
func migrateSourceData(tx *bolt.Tx) error {
	_, err := tx.Bucket(bucketSources).CreateBucketIfNotExists(bucketSourceData)
	return err
}

// migrateReceiptChain adds receipts_by_seq/, receipts_by_time/ and
// meta/receipts_head, and chains the receipts stored so far in creation
// order (ties by id).
func migrateReceiptChain(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketReceiptsBySeq, bucketReceiptsByTime} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	rb, byTime := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptsByTime)
	decode := func(k, v []byte) (Receipt, error) {
		var r Receipt
		if err := json.Unmarshal(v, &r); err != nil {
			return Receipt{}, fmt.Errorf("chaining the stored receipts: receipt %q is unreadable: %w", k, err)
		}
		r.ID = string(k)
		return r, nil
	}
	err := rb.ForEach(func(k, v []byte) error {
		r, err := decode(k, v)
		if err != nil {
			return err
		}
		return byTime.Put(timeKey(r.CreatedAt, r.ID), nil)
	})
	if err != nil {
		return err
	}
	// Walking the time index gives creation order without holding the
	// receipts in memory; chainReceipt writes other buckets only.
	c := byTime.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		id := k[8:]
		r, err := decode(id, rb.Get(id))
		if err != nil {
			return err
		}
		if _, err := chainReceipt(tx, r); err != nil {
			return err
		}
	}
	return nil
}

// migratePins creates pins/: the tool definitions grants cover.
func migratePins(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketPins)
	return err
}

// migrateTasks creates tasks/: the tasks pikod created (legacy tasks
// utility) and the status updates it saw.
func migrateTasks(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketTasks)
	return err
}

// migrateSkillPins creates skill_pins/: the digests of the skills the
// owner loaded.
func migrateSkillPins(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketSkillPins)
	return err
}
