package approvals

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommitter runs the database's durable writes in groups: the writes
// that arrive while a transaction is committing wait for it, then share the
// next transaction and with it one fsync, the way a database batches its
// write-ahead log. Nothing waits for company: a write that arrives while
// nothing is committing or queued commits at once, in its caller's
// goroutine (no hand-off to the committer and back, which on an idle
// machine costs a thread wake-up each way); the ones queued meanwhile go to
// the committer's goroutine. Every write still returns only after the
// transaction that holds it is on disk.
//
// A write's function may run more than once (a transaction it shared is
// rolled back when another write in it fails, and run again without that
// one), so it must only read and write through tx and set results that a
// later run overwrites. Its after function runs once, after the commit
// that holds it, in whichever goroutine committed it. One transaction at a
// time ever commits (busy), each after the last one's release, so what
// the write functions share needs no lock of its own.
type groupCommitter struct {
	db   *handle
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	// solo serialises the writes made after close, each alone.
	solo sync.Mutex

	// mu guards the fields that follow; idle is signalled when busy
	// clears.
	mu     sync.Mutex
	idle   *sync.Cond
	queue  []*commitReq
	closed bool
	// busy says a transaction is being committed (by a caller inline or
	// by the committer): a write that finds it set queues.
	busy bool
}

type commitReq struct {
	fn    func(tx *bolt.Tx) error
	after func()
	err   error
	done  chan struct{}
}

func startGroupCommitter(db *handle) *groupCommitter {
	g := &groupCommitter{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	g.idle = sync.NewCond(&g.mu)
	go g.run()
	return g
}

// update runs fn in a durable transaction, shared with the writes that
// queued with it, and returns once that transaction is on disk (or failed:
// then nothing of fn is stored). after, when not nil, runs once the commit
// succeeded, before update returns.
func (g *groupCommitter) update(fn func(tx *bolt.Tx) error, after func()) error {
	r := &commitReq{fn: fn, after: after, done: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		// Closed: alone, in the caller's goroutine.
		g.solo.Lock()
		g.commit([]*commitReq{r})
		g.solo.Unlock()
		return r.err
	}
	if !g.busy && len(g.queue) == 0 {
		// Nothing committing, nothing waiting: commit here.
		g.busy = true
		g.mu.Unlock()
		// Released even if the commit panics up the caller's stack.
		defer g.release()
		g.commit([]*commitReq{r})
		return r.err
	}
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	g.kick()
	<-r.done
	return r.err
}

// release clears busy after a commit and hands what queued meanwhile to
// the committer.
func (g *groupCommitter) release() {
	g.mu.Lock()
	g.busy = false
	queued := len(g.queue) > 0
	g.idle.Broadcast()
	g.mu.Unlock()
	if queued {
		g.kick()
	}
}

func (g *groupCommitter) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *groupCommitter) run() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
			g.drain()
		case <-g.stop:
			g.drain()
			return
		}
	}
}

// drain commits what is queued, a group at a time, until nothing is. A
// commit made inline meanwhile is waited for: it is the one every queued
// write waited behind.
func (g *groupCommitter) drain() {
	for {
		g.mu.Lock()
		for g.busy {
			g.idle.Wait()
		}
		batch := g.queue
		g.queue = nil
		if len(batch) == 0 {
			g.mu.Unlock()
			return
		}
		g.busy = true
		g.mu.Unlock()
		g.commit(batch)
		g.release()
	}
}

// commit stores batch in one transaction. A write that fails gets its own
// error and is left out; the others run again in a fresh transaction, since
// bbolt cannot roll back one write of a transaction alone.
func (g *groupCommitter) commit(batch []*commitReq) {
	for len(batch) > 0 {
		failed := -1
		var ferr error
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, r := range batch {
				if err := runWrite(r.fn, tx); err != nil {
					failed, ferr = i, err
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, r := range batch {
				r.err = err
				if err == nil && r.after != nil {
					r.after()
				}
				close(r.done)
			}
			return
		}
		r := batch[failed]
		r.err = ferr
		close(r.done)
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}

// runWrite runs fn, turning a panic into that write's error so one bad
// write cannot take the others (or the daemon) down with it.
func runWrite(fn func(tx *bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("a database write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// close commits what is queued and stops the committer; later writes
// commit alone.
func (g *groupCommitter) close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.stop)
	<-g.done
	// A write queued between the last drain and closed being set.
	g.solo.Lock()
	g.drain()
	g.solo.Unlock()
}
