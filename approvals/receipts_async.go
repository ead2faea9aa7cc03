package approvals

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
)

// asyncWriter stores queued receipts in the background, many per
// transaction. Losing queued read receipts to a crash loses no decision,
// so they need not be on disk before the caller goes on.
type asyncWriter struct {
	db *groupCommitter
	// sources, when set, has its deferred sources committed with each
	// flush (Ledger.CarryDeferredSources).
	sources atomic.Pointer[SourceStore]
	log     zerolog.Logger
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	// flushMu serialises flushes (the writer's own and FlushReceipts), so
	// that a flush that returns has seen every earlier one commit.
	flushMu sync.Mutex

	// mu guards the fields that follow.
	mu      sync.Mutex
	queue   []Receipt
	pending map[string]Receipt
	closed  bool
	lastErr error
}

func startAsyncWriter(db *groupCommitter, log zerolog.Logger) *asyncWriter {
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
	w.kick()
	return true
}

// kickOpen wakes the writer unless it is closed (then it says false: its
// last flush may be over).
func (w *asyncWriter) kickOpen() bool {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if !closed {
		w.kick()
	}
	return !closed
}

// kick wakes the writer.
func (w *asyncWriter) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
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

// maxLoggedIDs bounds the receipt ids one log line names.
const maxLoggedIDs = 8

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

// flush writes everything queued in one Update, chained in queue order
// after whatever committed before. On failure the receipts go back to the
// front of the queue for the next flush.
func (w *asyncWriter) flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	// The deferred sources of the same reads ride in the same commit.
	var (
		recs   []*sourceRecord
		srcs   []sourceRecord
		after  func()
		source = w.sources.Load()
	)
	if source != nil {
		recs, srcs = source.takeDeferred()
	}
	if len(batch) == 0 && len(srcs) == 0 {
		return nil
	}
	err := w.db.update(func(tx *bolt.Tx) error {
		after = nil
		if len(recs) > 0 {
			a, err := source.commitTx(tx, recs)
			if err != nil {
				return fmt.Errorf("retaining %d results: %w", len(recs), err)
			}
			after = a
		}
		if len(batch) == 0 {
			return nil
		}
		_, err := addReceipts(tx, batch)
		return err
	}, func() {
		if after != nil {
			after()
		}
	})
	if len(srcs) > 0 {
		source.deferredDone(srcs, err)
		if err != nil {
			w.log.Error().Err(err).Int("sources", len(srcs)).
				Msg("retaining the results of read calls failed; those results are not kept")
		}
	}
	if len(batch) == 0 {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.lastErr = fmt.Errorf("storing %d read receipts: %w", len(batch), err)
		ids := make([]string, 0, min(len(batch), maxLoggedIDs))
		for _, r := range batch[:cap(ids)] {
			ids = append(ids, r.ID)
		}
		w.log.Error().Err(err).Int("receipts", len(batch)).Strs("receipt_ids", ids).
			Msg("storing read receipts failed; they stay queued and the next write tries again")
		w.queue = append(batch, w.queue...)
		return w.lastErr
	}
	w.lastErr = nil
	for _, r := range batch {
		delete(w.pending, r.ID)
	}
	return nil
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
