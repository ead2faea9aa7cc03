package rpc

import (
	"context"
	"sync"
)

// Memory the server holds for its clients is accounted in bytes: a line
// is charged from its first byte (a line that has not ended yet counts as
// it grows), and the request it becomes stays charged until it has been
// answered. A request costs requestWeight times its length plus
// requestOverhead: pikod holds the bytes as read, and the handler decodes
// them into values of about the same size (a parser's buffer, strings).
// When a charge cannot be met, the connection is simply not read further:
// the client's writes block in the kernel (back-pressure), and nothing is
// buffered beyond the budget.
//
// Each connection owns a small reserve (connReserve) that nobody else can
// take, so a short request (hello, status, a cancel) can always be read;
// beyond it the connection draws from the daemon-wide pool, up to its own
// ceiling. A line that outgrows smallLine takes what the largest request
// costs at once: a line never waits for pool bytes while it holds more
// than smallLine of them, so lines cannot deadlock by each holding part of
// the pool. Whatever else the pool holds belongs to requests being handled,
// which end by themselves, or to small lines (at most connReserve-sized
// each, far less than the pool in all), so some line can always go on.
const (
	// connReserve is what every connection may hold without touching the
	// pool.
	connReserve = 64 << 10
	// smallLine is the most a line in progress holds before it takes the
	// cost of a whole frame.
	smallLine = 64 << 10
	// requestWeight is what a request costs per byte.
	requestWeight = 3
	// requestOverhead is charged per request on top of its bytes: the
	// goroutine, context and bookkeeping of a request waiting for a slot.
	requestOverhead = 8 << 10
)

// requestCharge is the cost of a request of n bytes.
func requestCharge(n int) int64 {
	return requestWeight*int64(n) + requestOverhead
}

// pool is the daemon-wide budget of request bytes.
type pool struct {
	// mu guards the fields that follow.
	mu   sync.Mutex
	free int64
	// wake is closed (and replaced) whenever bytes come back.
	wake chan struct{}
}

func newPool(size int64) *pool {
	return &pool{free: size, wake: make(chan struct{})}
}

// take takes n bytes if they are free; otherwise it returns a channel that
// is closed when bytes come back.
func (p *pool) take(n int64) (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= p.free {
		p.free -= n
		return true, nil
	}
	return false, p.wake
}

func (p *pool) put(n int64) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	p.free += n
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// available returns the bytes not charged to anyone (tests).
func (p *pool) available() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.free
}

// account is one connection's share: its first reserve bytes are its own,
// the rest comes from the pool, and it never holds more than max.
type account struct {
	pool    *pool
	reserve int64
	max     int64

	// mu guards the fields that follow.
	mu    sync.Mutex
	held  int64 // bytes charged to this connection
	drawn int64 // of held, the bytes taken from the pool
	// wake is closed (and replaced) whenever this connection releases.
	wake chan struct{}
}

func newAccount(p *pool, reserve, max int64) *account {
	return &account{pool: p, reserve: reserve, max: max, wake: make(chan struct{})}
}

// charge adds n bytes to the connection, waiting until its own ceiling and
// the pool allow them. It fails only when ctx ends.
func (a *account) charge(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		a.mu.Lock()
		if a.held+n > a.max {
			wait := a.wake
			a.mu.Unlock()
			if testHookChargeWait != nil {
				testHookChargeWait()
			}
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		need := max(0, a.held+n-a.reserve) - a.drawn
		if need <= 0 {
			a.held += n
			a.mu.Unlock()
			return nil
		}
		ok, wait := a.pool.take(need)
		if ok {
			a.held += n
			a.drawn += need
			a.mu.Unlock()
			return nil
		}
		// Our own releases may make the pool unnecessary: wait for either.
		own := a.wake
		a.mu.Unlock()
		if testHookChargeWait != nil {
			testHookChargeWait()
		}
		select {
		case <-wait:
		case <-own:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// testHookChargeWait, when set (by tests only), runs when a charge has to
// wait (for the pool or for the connection's own releases).
var testHookChargeWait func()

// release gives back n bytes charged earlier.
func (a *account) release(n int64) {
	if n <= 0 {
		return
	}
	a.mu.Lock()
	a.held -= n
	if a.held < 0 {
		panic("rpc: released more request bytes than were charged")
	}
	drawn := max(0, a.held-a.reserve)
	give := a.drawn - drawn
	a.drawn = drawn
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
	a.pool.put(give)
}

// charged returns the bytes charged to the connection (tests).
func (a *account) charged() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}
