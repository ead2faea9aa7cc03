package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// SettingsRecord is one extension's stored settings.
type SettingsRecord struct {
	Revision  uint64          `json:"revision"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Settings  json.RawMessage `json:"settings"`
}

// Settings returns the stored settings of ext; a zero record (revision 0,
// nil settings) when none were saved.
func (db *DB) Settings(ext string) (SettingsRecord, error) {
	var rec SettingsRecord
	err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSettings).Get([]byte(ext))
		if v == nil {
			return nil
		}
		return json.Unmarshal(v, &rec) // Unmarshal copies out of the page.
	})
	if err != nil {
		return SettingsRecord{}, fmt.Errorf("reading %s settings: %w", ext, err)
	}
	return rec, nil
}

// ErrRevisionMoved is returned by SaveSettings when the stored revision is
// not the one the caller based its change on.
var ErrRevisionMoved = errors.New("settings revision moved")

// SaveSettings stores settings for ext as revision expect+1, in one durable
// transaction, if the stored revision still is expect. It returns the new
// record.
func (db *DB) SaveSettings(ext string, settings []byte, expect uint64) (SettingsRecord, error) {
	rec := SettingsRecord{Revision: expect + 1, UpdatedAt: time.Now().UTC().Truncate(time.Millisecond), Settings: bytes.Clone(settings)}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings)
		var cur SettingsRecord
		if v := b.Get([]byte(ext)); v != nil {
			if err := json.Unmarshal(v, &cur); err != nil {
				return fmt.Errorf("stored %s settings unreadable: %w", ext, err)
			}
		}
		if cur.Revision != expect {
			return fmt.Errorf("saving %s settings: stored revision is %d, not %d: %w: %w",
				ext, cur.Revision, expect, ErrRevisionMoved, contracts.ErrFailedPrecondition)
		}
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(ext), v)
	})
	if err != nil {
		return SettingsRecord{}, err
	}
	return rec, nil
}
