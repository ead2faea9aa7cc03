package approvals

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// handle is the open bbolt file behind a gate, so that a compaction can
// replace the file while pikod runs (DB.Compact): every transaction holds
// the gate shared for its length; the switch to the compacted copy holds
// it alone, so calls wait only for that moment. Transactions must not
// nest (bbolt forbids it as well: a read transaction open in the goroutine
// of a write one can deadlock its remap).
//
// Writes also hold writes, shared, before the gate: a compaction's last
// catch-up holds writes alone while reads go on, and only the switch
// itself holds both (always in that order, so they cannot deadlock).
type handle struct {
	writes sync.RWMutex
	gate   sync.RWMutex
	b      *bolt.DB
}

// View runs fn in a read-only transaction.
func (h *handle) View(fn func(*bolt.Tx) error) error {
	h.gate.RLock()
	defer h.gate.RUnlock()
	return h.b.View(fn)
}

// Update runs fn in a read-write transaction, on disk when it returns.
func (h *handle) Update(fn func(*bolt.Tx) error) error {
	h.writes.RLock()
	defer h.writes.RUnlock()
	h.gate.RLock()
	defer h.gate.RUnlock()
	return h.b.Update(func(tx *bolt.Tx) error {
		fillAppendOrdered(tx)
		return fn(tx)
	})
}

// free is the bytes in the file's free pages.
func (h *handle) free() int64 {
	h.gate.RLock()
	defer h.gate.RUnlock()
	return freeBytes(h.b)
}

// Close closes the file.
func (h *handle) Close() error {
	h.writes.Lock()
	defer h.writes.Unlock()
	h.gate.Lock()
	defer h.gate.Unlock()
	return h.b.Close()
}
