package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// What pinned a definition (Pin.By).
const (
	PinnedBySettings  = "settings"
	PinnedByDiscovery = "discovery"
	PinnedByTrust     = "trust"
)

// Pin is the tool definition a grant covers: a readOnlyTools or
// autonomousTools grant holds only while the server's definition of the
// tool has this digest. Definition is the whole definition the digest was
// computed from, kept so a changed one can be shown side by side.
type Pin struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition,omitempty"`
	PinnedAt   time.Time       `json:"pinnedAt"`
	// By is settings, discovery or trust.
	By string `json:"by"`
	// Replaced is the digest this pin replaced (a trust), if any.
	Replaced string `json:"replaced,omitempty"`
}

// PinEdit is one change to the pins: Pin set replaces (or, with IfAbsent,
// only adds) the pin of Server/Tool; Pin nil deletes it. Tool "" with Pin
// nil deletes every pin of Server.
type PinEdit struct {
	Server, Tool string
	Pin          *Pin
	IfAbsent     bool
}

// Pins returns the pins of one server's tools, by tool name.
func (db *DB) Pins(server string) (map[string]Pin, error) {
	out := map[string]Pin{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPins).Bucket([]byte(server))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var p Pin
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decoding the pin of %s/%q: %w", server, k, err)
			}
			out[string(k)] = p
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading the pins of %q: %w", server, err)
	}
	return out, nil
}

// PinnedServers returns the servers that have pins, sorted.
func (db *DB) PinnedServers() ([]string, error) {
	var out []string
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPins).ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing pinned servers: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// EditPins applies edits in order in one durable transaction and returns
// the pins it wrote (an IfAbsent edit whose pin existed writes nothing).
func (db *DB) EditPins(edits []PinEdit) ([]Pin, error) {
	var written []Pin
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		written = written[:0]
		root := tx.Bucket(bucketPins)
		for _, e := range edits {
			if e.Server == "" {
				return fmt.Errorf("editing pins: server is empty: %w", contracts.ErrInvalidArgument)
			}
			if e.Pin == nil {
				if e.Tool == "" {
					if root.Bucket([]byte(e.Server)) != nil {
						if err := root.DeleteBucket([]byte(e.Server)); err != nil {
							return err
						}
					}
					continue
				}
				if b := root.Bucket([]byte(e.Server)); b != nil {
					if err := b.Delete([]byte(e.Tool)); err != nil {
						return err
					}
				}
				continue
			}
			if e.Tool == "" || e.Pin.Digest == "" {
				return fmt.Errorf("pinning a tool of %q: tool and digest are required: %w", e.Server, contracts.ErrInvalidArgument)
			}
			b, err := root.CreateBucketIfNotExists([]byte(e.Server))
			if err != nil {
				return err
			}
			if e.IfAbsent && b.Get([]byte(e.Tool)) != nil {
				continue
			}
			p := *e.Pin
			p.Server, p.Tool = e.Server, e.Tool
			p.Definition = bytes.Clone(p.Definition)
			v, err := json.Marshal(p)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(e.Tool), v); err != nil {
				return err
			}
			written = append(written, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("saving tool pins: %w", err)
	}
	return written, nil
}
