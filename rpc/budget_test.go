package rpc

import (
	"context"
	"errors"
	"testing"
)

// TestAccountCharges walks one connection's account through its reserve,
// the pool, its ceiling and its releases.
func TestAccountCharges(t *testing.T) {
	p := newPool(1000)
	a := newAccount(p, 100, 600)
	b := newAccount(p, 100, 2000)
	ctx := context.Background()

	must := func(a *account, n int64) {
		t.Helper()
		if err := a.charge(ctx, n); err != nil {
			t.Fatalf("charge(%d): %v", n, err)
		}
	}
	// The reserve comes first and costs the pool nothing.
	must(a, 80)
	if got := p.available(); got != 1000 {
		t.Errorf("pool after charging within the reserve = %d, want 1000", got)
	}
	// Beyond it, the pool pays.
	must(a, 220)
	if got := p.available(); got != 800 {
		t.Errorf("pool after charging 300 with a reserve of 100 = %d, want 800", got)
	}
	// The ceiling (600) holds whatever the pool has: this waits.
	ended, cancel := context.WithCancel(ctx)
	waiting := make(chan struct{})
	testHookChargeWait = func() { close(waiting); testHookChargeWait = nil }
	errc := make(chan error, 1)
	go func() { errc <- a.charge(ended, 400) }()
	<-waiting
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("charge past the connection's ceiling = %v, want to wait until ctx ends", err)
	}
	if got := a.charged(); got != 300 {
		t.Errorf("a failed charge left %d charged, want 300", got)
	}

	// Another connection drains the pool; a's next charge waits for it.
	must(b, 900) // 100 of reserve, 800 from the pool
	if got := p.available(); got != 0 {
		t.Fatalf("pool = %d, want 0", got)
	}
	waiting = make(chan struct{})
	testHookChargeWait = func() { close(waiting); testHookChargeWait = nil }
	go func() { errc <- a.charge(ctx, 50) }()
	<-waiting
	b.release(500)
	if err := <-errc; err != nil {
		t.Fatalf("charge after another connection released: %v", err)
	}

	// A connection's own release within its reserve also unblocks it.
	c := newAccount(newPool(0), 100, 1000)
	must(c, 90)
	waiting = make(chan struct{})
	testHookChargeWait = func() { close(waiting); testHookChargeWait = nil }
	go func() { errc <- c.charge(ctx, 50) }() // needs 40 from an empty pool
	<-waiting
	c.release(40)
	if err := <-errc; err != nil {
		t.Fatalf("charge after the connection's own release: %v", err)
	}

	// Everything given back, the pool is whole again.
	a.release(a.charged())
	b.release(b.charged())
	if got := p.available(); got != 1000 {
		t.Errorf("pool after every release = %d, want 1000", got)
	}
}
