package approvals

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Held outcomes: when the disk is full, the end of a call that was sent
// (its receipt and its action's final state) may not fit in the database.
// The ledger then holds it: in memory, retried until the database takes
// it, and in the reserve file, a file of fixed size pikod writes at start
// while there is room, so that writing an outcome into it needs no new
// space. A pikod that stops (or dies) with outcomes held records them at
// its next start, before it settles what the last run left in flight.
//
// The reserve file has two slots of reserveSlot bytes; each write goes to
// the slot not holding the newest copy, with a generation number and a
// checksum, so a write torn by a crash leaves the previous copy whole.

const (
	// ReserveBytes is the size of the reserve file.
	ReserveBytes = 2 * reserveSlot
	reserveSlot  = 512 << 10
	reserveMagic = "PIKORSV1"
	// heldRetry is how often held outcomes are offered to the database
	// again.
	heldRetry = time.Second
)

// reserveHeader is the start of a slot: magic, generation, payload length
// and CRC-32 (Castagnoli) of the payload.
const reserveHeader = len(reserveMagic) + 8 + 4 + 4

// heldOutcome is one outcome held: the settlement without its source (a
// result that could not be retained is not kept: its receipt says so).
type heldOutcome struct {
	Receipt  Receipt `json:"receipt"`
	ActionID string  `json:"actionId"`
	State    string  `json:"state"`
	Reason   string  `json:"reason,omitempty"`
	NotSent  bool    `json:"notSent,omitempty"`
}

// reserve is the reserve file, open for writing its slots in place.
type reserve struct {
	f   *os.File
	gen uint64
	// slot is the slot holding the newest copy.
	slot int
}

// openReserve opens (creating and filling it to its size while there is
// room) the reserve file at path and returns the outcomes it holds.
func openReserve(path string) (*reserve, []heldOutcome, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the reserve file %s: %w", path, err)
	}
	r := &reserve{f: f, slot: 1}
	var held []heldOutcome
	for slot := range 2 {
		gen, out, ok := r.readSlot(slot)
		if ok && (gen > r.gen || r.gen == 0) {
			r.gen, r.slot, held = gen, slot, out
		}
	}
	if fi, err := f.Stat(); err == nil && fi.Size() < ReserveBytes {
		// Written out, not sparse: the blocks are the file's from now on.
		if _, err := f.WriteAt(make([]byte, ReserveBytes-fi.Size()), fi.Size()); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("filling the reserve file %s to %d bytes: %w", path, ReserveBytes, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("syncing the reserve file %s: %w", path, err)
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("syncing the directory of %s: %w", path, err)
		}
	}
	return r, held, nil
}

func (r *reserve) readSlot(slot int) (uint64, []heldOutcome, bool) {
	hdr := make([]byte, reserveHeader)
	if _, err := r.f.ReadAt(hdr, int64(slot*reserveSlot)); err != nil {
		return 0, nil, false
	}
	if string(hdr[:len(reserveMagic)]) != reserveMagic {
		return 0, nil, false
	}
	rest := hdr[len(reserveMagic):]
	gen, n, sum := binary.BigEndian.Uint64(rest), binary.BigEndian.Uint32(rest[8:]), binary.BigEndian.Uint32(rest[12:])
	if int(n) > reserveSlot-reserveHeader {
		return 0, nil, false
	}
	payload := make([]byte, n)
	if _, err := r.f.ReadAt(payload, int64(slot*reserveSlot+reserveHeader)); err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, false
	}
	if crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return 0, nil, false
	}
	var out []heldOutcome
	if n > 0 && json.Unmarshal(payload, &out) != nil {
		return 0, nil, false
	}
	return gen, out, true
}

// write stores held (possibly none) in the other slot and syncs it. It
// fails when they do not fit in a slot.
func (r *reserve) write(held []heldOutcome) error {
	var payload []byte
	if len(held) > 0 {
		var err error
		if payload, err = json.Marshal(held); err != nil {
			return err
		}
	}
	if len(payload) > reserveSlot-reserveHeader {
		return fmt.Errorf("%d held outcomes take %d bytes, more than the reserve file's %d", len(held), len(payload), reserveSlot-reserveHeader)
	}
	var buf bytes.Buffer
	buf.WriteString(reserveMagic)
	buf.Write(binary.BigEndian.AppendUint64(nil, r.gen+1))
	buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(payload))))
	buf.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli))))
	buf.Write(payload)
	slot := 1 - r.slot
	if _, err := r.f.WriteAt(buf.Bytes(), int64(slot*reserveSlot)); err != nil {
		return err
	}
	if err := r.f.Sync(); err != nil {
		return err
	}
	r.gen, r.slot = r.gen+1, slot
	return nil
}

// held is the ledger's outcomes waiting for room in the database.
type held struct {
	// mu guards the fields that follow.
	mu      sync.Mutex
	res     *reserve // nil: no reserve file (memory only)
	pending []heldOutcome
	// persisted is how many of pending the reserve file holds.
	persisted int

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// WithReserve makes the ledger keep outcomes it must hold (Hold) in the
// reserve file at path too, and record those a previous run left there
// when it opens.
func WithReserve(path string) LedgerOption {
	return func(l *Ledger) { l.reservePath = path }
}

// openHeld opens the reserve file (when the ledger has one) and records
// the outcomes it holds, before recovery settles what is left in flight.
func (l *Ledger) openHeld() error {
	l.held = &held{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if l.reservePath == "" {
		return nil
	}
	res, left, err := openReserve(l.reservePath)
	if err != nil {
		// No room for it (or no file): outcomes are held in memory only.
		l.log.Warn().Err(err).Msg("no reserve file: an outcome that cannot be recorded on a full disk is held in memory only")
		return nil
	}
	l.held.res = res
	if len(left) == 0 {
		return nil
	}
	for _, h := range left {
		if err := l.db.Update(func(tx *bolt.Tx) error { return l.recordHeld(tx, h) }); err != nil {
			res.f.Close()
			return fmt.Errorf("recording the outcomes the last run held in %s: %w", l.reservePath, err)
		}
		l.log.Warn().Str("action", h.ActionID).Str("receipt", h.Receipt.ID).Str("state", h.State).
			Msg("recorded an outcome the last run held on a full disk")
	}
	if err := res.write(nil); err != nil {
		return fmt.Errorf("clearing the reserve file %s: %w", l.reservePath, err)
	}
	return nil
}

// recordHeld writes one held outcome in tx, unless it is stored already
// (its receipt is).
func (l *Ledger) recordHeld(tx *bolt.Tx, h heldOutcome) error {
	if tx.Bucket(bucketReceipts).Get([]byte(h.Receipt.ID)) != nil {
		return nil
	}
	if _, err := addReceipts(tx, []Receipt{h.Receipt}); err != nil {
		return err
	}
	if h.ActionID == "" {
		return nil
	}
	finish, err := l.finishTx(h.ActionID, h.State, h.Reason, h.Receipt.ID, "", h.NotSent)
	if err != nil {
		return err
	}
	if _, err := finish(tx); err != nil {
		// Settled otherwise meanwhile: the receipt is recorded anyway.
		l.log.Warn().Err(err).Str("action", h.ActionID).Msg("a held outcome's action was no longer in flight")
	}
	return nil
}

// Hold keeps the end of a call that the database could not take (the
// disk is full): its receipt and its action's end, without the retained
// result (s.Source must be nil). It is written to the reserve file when
// there is one and recorded as soon as the database takes it again, or at
// the next start. It returns the receipt as it will be stored and whether
// the reserve file holds it (false: memory only, lost if pikod dies
// first, when the action is settled as uncertain at start).
func (l *Ledger) Hold(s Settlement) (Receipt, bool, error) {
	if s.Source != nil {
		return Receipt{}, false, fmt.Errorf("holding an outcome: its result cannot be held (discard it)")
	}
	r := s.Receipt
	if err := l.fillReceipt(&r); err != nil {
		return Receipt{}, false, err
	}
	h := heldOutcome{Receipt: r, ActionID: s.ActionID, State: s.State, Reason: s.Reason, NotSent: s.NotSent}
	l.held.mu.Lock()
	l.held.pending = append(l.held.pending, h)
	saved := false
	if l.held.res != nil {
		if err := l.held.res.write(l.held.pending); err != nil {
			l.log.Error().Err(err).Str("action", s.ActionID).Msg("the reserve file cannot take a held outcome: it is held in memory only")
		} else {
			l.held.persisted, saved = len(l.held.pending), true
		}
	}
	l.held.mu.Unlock()
	l.log.Warn().Str("action", s.ActionID).Str("receipt", r.ID).Bool("in_reserve", saved).
		Msg("the disk is full: the call's outcome is held until the database can take it")
	select {
	case l.held.kick <- struct{}{}:
	default:
	}
	return r, saved, nil
}

// HeldOutcomes is how many outcomes wait for room in the database.
func (l *Ledger) HeldOutcomes() int {
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
	return len(l.held.pending)
}

// runHeld offers the held outcomes to the database every heldRetry while
// there are any, until Close.
func (l *Ledger) runHeld() {
	defer close(l.held.done)
	t := time.NewTicker(heldRetry)
	defer t.Stop()
	for {
		select {
		case <-l.held.stop:
			return
		case <-t.C:
		case <-l.held.kick:
			continue // just held: the disk has no room yet
		}
		l.flushHeld()
	}
}

// flushHeld records the held outcomes, oldest first, until one does not
// fit; the reserve file then holds what is left.
func (l *Ledger) flushHeld() {
	l.held.mu.Lock()
	defer l.held.mu.Unlock()
	if len(l.held.pending) == 0 {
		return
	}
	n := 0
	for _, h := range l.held.pending {
		if err := l.group.update(func(tx *bolt.Tx) error { return l.recordHeld(tx, h) }, nil); err != nil {
			if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
				l.log.Error().Err(err).Str("action", h.ActionID).Msg("recording a held outcome")
			}
			break
		}
		l.log.Info().Str("action", h.ActionID).Str("receipt", h.Receipt.ID).Msg("recorded a held outcome: the disk had room again")
		n++
	}
	if n == 0 {
		return
	}
	l.held.pending = append(l.held.pending[:0:0], l.held.pending[n:]...)
	if l.held.res != nil {
		if err := l.held.res.write(l.held.pending); err != nil {
			l.log.Error().Err(err).Msg("rewriting the reserve file")
		} else {
			l.held.persisted = len(l.held.pending)
		}
	}
}

// closeHeld stops the retries after one last try; what is still held
// stays in the reserve file for the next start.
func (l *Ledger) closeHeld() error {
	close(l.held.stop)
	<-l.held.done
	l.flushHeld()
	if l.held.res == nil {
		return nil
	}
	return l.held.res.f.Close()
}
