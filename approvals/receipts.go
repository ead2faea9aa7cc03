package approvals

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
)

// Receipt records one executed call: its kind (mcp_approved,
// mcp_autonomous, mcp_read), what was called (the arguments by digest
// only), how it ended and where its original result is retained.
type Receipt struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Server and Tool name the call; Tool is the original tool name.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// ArgumentsDigest is the action digest of the call.
	ArgumentsDigest string `json:"argumentsDigest,omitempty"`
	// ActionID is the ledger action the call belongs to.
	ActionID string `json:"actionId,omitempty"`
	// Status is completed, failed or uncertain.
	Status string `json:"status"`
	// SourceID names the retained original result, if any.
	SourceID string `json:"sourceId,omitempty"`
	// Error says why a failed or uncertain call ended so; never a secret.
	Error string `json:"error,omitempty"`
	// NotSent marks a failed call that provably never reached the server.
	NotSent   bool      `json:"notSent,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func (l *Ledger) fillReceipt(r *Receipt) error {
	if r.Kind == "" || r.Server == "" || r.Tool == "" {
		return fmt.Errorf("recording a receipt: kind, server and tool are required (got %q, %q, %q): %w",
			r.Kind, r.Server, r.Tool, contracts.ErrInvalidArgument)
	}
	if r.ID == "" {
		r.ID = newID("rcpt_")
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = l.stamp()
	}
	return nil
}

func putReceipts(tx *bolt.Tx, rs []Receipt) error {
	b := tx.Bucket(bucketReceipts)
	for _, r := range rs {
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(r.ID), v); err != nil {
			return err
		}
	}
	return nil
}

// AddReceipt stores r durably (one Update) and returns it with its id and
// time filled in. Approved and autonomous calls use it: their receipt is on
// disk before the caller learns the result.
func (l *Ledger) AddReceipt(r Receipt) (Receipt, error) {
	if err := l.fillReceipt(&r); err != nil {
		return Receipt{}, err
	}
	err := l.db.Update(func(tx *bolt.Tx) error { return putReceipts(tx, []Receipt{r}) })
	if err != nil {
		return Receipt{}, fmt.Errorf("recording receipt for %s/%s: %w", r.Server, r.Tool, err)
	}
	return r, nil
}

// AddReceiptAsync assigns r its id and time now and stores it through a
// background writer that groups receipts into few transactions. It is for
// read receipts, where no side effect waits on the write; Receipt finds it
// at once, and Close flushes whatever is still queued. An invalid receipt
// is logged and dropped.
func (l *Ledger) AddReceiptAsync(r Receipt) Receipt {
	if err := l.fillReceipt(&r); err != nil {
		l.log.Error().Err(err).Msg("dropping receipt")
		return r
	}
	if !l.async.enqueue(r) {
		// Closed: write it ourselves rather than lose it.
		if _, err := l.AddReceipt(r); err != nil {
			l.log.Error().Err(err).Str("receipt", r.ID).Msg("receipt after close not stored")
		}
	}
	return r
}

// Receipt returns the receipt id, including one still queued by
// AddReceiptAsync.
func (l *Ledger) Receipt(id string) (Receipt, error) {
	if r, ok := l.async.pendingReceipt(id); ok {
		return r, nil
	}
	var (
		r     Receipt
		found bool
	)
	err := l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReceipts).Get([]byte(id))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &r)
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("reading receipt %s: %w", id, err)
	}
	if !found {
		// It may have been written between the two looks.
		if r, ok := l.async.pendingReceipt(id); ok {
			return r, nil
		}
		return Receipt{}, contracts.Errorf(contracts.ErrNotFound, "receipt_not_found", "no receipt %q", id)
	}
	return r, nil
}

// asyncWriter stores queued receipts in the background, many per
// transaction. Losing queued read receipts to a crash loses no decision,
// so they need not be on disk before the caller goes on.
type asyncWriter struct {
	db   *bolt.DB
	log  zerolog.Logger
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	// mu guards the fields that follow.
	mu      sync.Mutex
	queue   []Receipt
	pending map[string]Receipt
	closed  bool
	lastErr error
}

func startAsyncWriter(db *bolt.DB, log zerolog.Logger) *asyncWriter {
	w := &asyncWriter{
		db: db, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		pending: map[string]Receipt{},
	}
	go w.run()
	return w
}

func (w *asyncWriter) enqueue(r Receipt) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, r)
	w.pending[r.ID] = r
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

func (w *asyncWriter) pendingReceipt(id string) (Receipt, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.pending[id]
	return r, ok
}

func (w *asyncWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			if !linger(w.stop) {
				w.flush()
				return
			}
			w.flush()
		case <-w.stop:
			w.flush()
			return
		}
	}
}

// asyncLinger is how long a background writer waits, once woken, for more
// work to join the same transaction. One commit costs far more than one
// record, so at a steady trickle of reads this turns a commit per call into
// one per few milliseconds.
const asyncLinger = 10 * time.Millisecond

// linger waits asyncLinger, or until stop closes (returning false).
func linger(stop <-chan struct{}) bool {
	t := time.NewTimer(asyncLinger)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// flush writes everything queued in one Update. On failure the receipts
// go back to the front of the queue for the next flush.
func (w *asyncWriter) flush() {
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := w.db.Update(func(tx *bolt.Tx) error { return putReceipts(tx, batch) })
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.lastErr = fmt.Errorf("storing %d read receipts: %w", len(batch), err)
		w.log.Error().Err(err).Int("receipts", len(batch)).Msg("storing read receipts failed; will retry")
		w.queue = append(batch, w.queue...)
		return
	}
	w.lastErr = nil
	for _, r := range batch {
		delete(w.pending, r.ID)
	}
}

// close stops accepting, flushes and waits for the writer; it reports a
// final flush that failed.
func (w *asyncWriter) close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}
