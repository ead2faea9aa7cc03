package approvals

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

func testMigrationPins(t *testing.T) {
	// A database written by schema 6 gains pins/, and pins written after
	// the migration survive a reopen.
	db, path := reopenAtSchema(t, schemaOf(t, "pins")-1, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketPins) })
	def := json.RawMessage(`{"description":"Counts.","name":"count"}`)
	if _, err := db.EditPins([]PinEdit{{Server: "fx", Tool: "count", Pin: &Pin{Digest: "d1", Definition: def, By: PinnedBySettings}}}); err != nil {
		t.Fatalf("EditPins after migration: %v", err)
	}
	db.Close()
	db, err := Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pins, err := db.Pins("fx")
	if err != nil {
		t.Fatal(err)
	}
	p := pins["count"]
	if len(pins) != 1 || p.Digest != "d1" || string(p.Definition) != string(def) || p.Server != "fx" || p.Tool != "count" || p.By != PinnedBySettings {
		t.Fatalf("pins after reopen = %+v", pins)
	}
}

func TestEditPins(t *testing.T) {
	db, _ := openTemp(t)
	pin := func(d string) *Pin { return &Pin{Digest: d, By: PinnedByDiscovery} }
	digests := func(server string) map[string]string {
		t.Helper()
		pins, err := db.Pins(server)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for k, p := range pins {
			out[k] = p.Digest
		}
		return out
	}
	written, err := db.EditPins([]PinEdit{
		{Server: "a", Tool: "t1", Pin: pin("1")},
		{Server: "a", Tool: "t2", Pin: pin("2")},
		{Server: "b", Tool: "t1", Pin: pin("b1")},
	})
	if err != nil || len(written) != 3 {
		t.Fatalf("EditPins = %v, %v", written, err)
	}
	// IfAbsent keeps an existing pin: a re-discovery never moves a pin.
	written, err = db.EditPins([]PinEdit{
		{Server: "a", Tool: "t1", Pin: pin("1x"), IfAbsent: true},
		{Server: "a", Tool: "t3", Pin: pin("3"), IfAbsent: true},
	})
	if err != nil || len(written) != 1 || written[0].Tool != "t3" {
		t.Fatalf("EditPins IfAbsent wrote %+v, %v; want only t3", written, err)
	}
	if got := digests("a"); got["t1"] != "1" || got["t2"] != "2" || got["t3"] != "3" || len(got) != 3 {
		t.Fatalf("pins of a = %v", got)
	}
	// A replace (trust) and a delete (grant removed).
	if _, err := db.EditPins([]PinEdit{{Server: "a", Tool: "t1", Pin: pin("1y")}, {Server: "a", Tool: "t2"}}); err != nil {
		t.Fatal(err)
	}
	if got := digests("a"); got["t1"] != "1y" || len(got) != 2 {
		t.Fatalf("pins of a after replace and delete = %v", got)
	}
	servers, err := db.PinnedServers()
	if err != nil || len(servers) != 2 || servers[0] != "a" || servers[1] != "b" {
		t.Fatalf("PinnedServers = %v, %v", servers, err)
	}
	// Tool "" drops a whole server (removed from the settings).
	if _, err := db.EditPins([]PinEdit{{Server: "b"}, {Server: "never-pinned"}}); err != nil {
		t.Fatal(err)
	}
	if got := digests("b"); len(got) != 0 {
		t.Fatalf("pins of a removed server = %v", got)
	}
	// Bad edits change nothing: the transaction is all or nothing.
	_, err = db.EditPins([]PinEdit{{Server: "a", Tool: "t1"}, {Server: "a", Tool: "t9", Pin: pin("")}})
	if !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Fatalf("EditPins with an empty digest = %v, want ErrInvalidArgument", err)
	}
	if got := digests("a"); got["t1"] != "1y" {
		t.Fatalf("a failed EditPins deleted t1: %v", got)
	}
}
