package approvals

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func testMigrationSkillPins(t *testing.T) {
	// A database written by schema 8 gains skill_pins/, and a pin written
	// after the migration survives a reopen.
	db, path := reopenAtSchema(t, schemaOf(t, "skill-pins")-1, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSkillPins) })
	at := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	if err := db.PinSkill(SkillPin{Server: "sk", Key: "k1", URI: "skill://a/SKILL.md", Name: "a", Digest: "d1", LoadedAt: at}); err != nil {
		t.Fatalf("PinSkill after migration: %v", err)
	}
	db.Close()
	db, err := Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pins, err := db.SkillPins("sk")
	if err != nil {
		t.Fatal(err)
	}
	if p := pins["k1"]; len(pins) != 1 || p.Digest != "d1" || p.Name != "a" || !p.LoadedAt.Equal(at) {
		t.Fatalf("skill pins after reopen = %+v", pins)
	}
}

func TestSkillPins(t *testing.T) {
	db, _ := openTemp(t)
	if err := db.PinSkill(SkillPin{Server: "sk", Key: "k1", Digest: "d1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PinSkill(SkillPin{Server: "sk", Key: "k1", Digest: "d2"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PinSkill(SkillPin{Server: "sk", Key: "k1"}); err == nil {
		t.Error("PinSkill without a digest succeeded")
	}
	if pins, err := db.SkillPins("sk"); err != nil || len(pins) != 1 || pins["k1"].Digest != "d2" {
		t.Errorf("SkillPins = %+v, %v; want the second load's digest", pins, err)
	}
	if pins, err := db.SkillPins("other"); err != nil || len(pins) != 0 {
		t.Errorf("SkillPins(other) = %+v, %v; want none", pins, err)
	}
	if err := db.DeleteSkillPins("sk"); err != nil {
		t.Fatal(err)
	}
	if pins, err := db.SkillPins("sk"); err != nil || len(pins) != 0 {
		t.Errorf("SkillPins after DeleteSkillPins = %+v, %v", pins, err)
	}
}
