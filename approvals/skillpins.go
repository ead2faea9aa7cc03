package approvals

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// SkillPin is a skill's last load: the digest of its files (their URIs and
// digests, as the daemon computes it) when the owner loaded it. A skill
// whose files no longer have this digest shows as changed until it is
// loaded again. Key (the daemon's, from the skill's URI) names the pin;
// URI and Name are the server's text, redacted, kept to be shown.
type SkillPin struct {
	Server   string    `json:"server"`
	Key      string    `json:"key"`
	URI      string    `json:"uri"`
	Name     string    `json:"name,omitempty"`
	Digest   string    `json:"digest"`
	LoadedAt time.Time `json:"loadedAt"`
}

// SkillPins returns the pins of one server's skills, by Key.
func (db *DB) SkillPins(server string) (map[string]SkillPin, error) {
	out := map[string]SkillPin{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSkillPins).Bucket([]byte(server))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var p SkillPin
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decoding the skill pin of %s/%q: %w", server, k, err)
			}
			out[string(k)] = p
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the skill pins of %q: %w", server, err)
	}
	return out, nil
}

// PinSkill records a skill's load, replacing the one before, durably.
func (db *DB) PinSkill(p SkillPin) error {
	if p.Server == "" || p.Key == "" || p.Digest == "" {
		return fmt.Errorf("pinning a skill: server, key and digest are required: %w", contracts.ErrInvalidArgument)
	}
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketSkillPins).CreateBucketIfNotExists([]byte(p.Server))
		if err != nil {
			return err
		}
		return b.Put([]byte(p.Key), v)
	})
	if err != nil {
		return fmt.Errorf("saving the pin of skill %q of %q: %w", p.Key, p.Server, err)
	}
	return nil
}

// DeleteSkillPins forgets every skill pin of a server (it was removed).
func (db *DB) DeleteSkillPins(server string) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketSkillPins)
		if root.Bucket([]byte(server)) == nil {
			return nil
		}
		return root.DeleteBucket([]byte(server))
	})
}
