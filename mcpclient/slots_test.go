//go:build linux

package mcpclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestSupervisorSlots: a server takes at most MaxPerServer slots, so
// another server still gets its calls through while the first is saturated;
// a disconnect ends the calls in flight to it (not completed), the ones
// waiting for its slots and the ones made before it (nothing sent), and a
// request made after it connects again.
func TestSupervisorSlots(t *testing.T) {
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.MaxPerServer, o.MaxInFlight = 2, 3
	})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("slow"), h.stdio("other")})

	type result struct {
		out *CallOutcome
		err error
	}
	const running = 2
	results := make(chan result, running+1)
	started := make(chan struct{}, running+1)
	before := time.Now()
	for range running + 1 {
		go func() {
			first := true
			out, err := h.sup.Call(ctx, CallRequest{Server: "slow", Tool: "sleep", Arguments: mustCanon(t, `{"ms":30000}`),
				Progress: func(contracts.ProgressParams) {
					if first {
						first = false
						started <- struct{}{}
					}
				}})
			results <- result{out, err}
		}()
	}
	// Two calls reach the server; the third waits for a slot of it.
	for range running {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the sleeping calls never reported progress")
		}
	}
	sess, err := h.sup.session("slow")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sess.slots); n != running {
		t.Errorf("%d slots of the slow server taken, want %d", n, running)
	}
	// The other server is not held up by the slow one: one supervisor
	// slot is left for it.
	if _, err := h.sup.Call(ctx, CallRequest{Server: "other", Tool: "echo", Arguments: mustCanon(t, `{"text":"through"}`)}); err != nil {
		t.Fatalf("call to another server while the first is saturated: %v", err)
	}
	select {
	case <-started:
		t.Fatal("a third call reached the slow server past its limit of two")
	default:
	}

	if _, err := h.sup.Disconnect(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	ended, waiting := 0, 0
	for range running + 1 {
		r := <-results
		switch {
		case r.err != nil && contracts.IsNotSent(r.err) && reasonOf(r.err) == "disconnected":
			waiting++
		case r.err != nil && (errors.Is(r.err, contracts.ErrOutcomeUnknown) || errors.Is(r.err, contracts.ErrUpstream)):
			ended++
		default:
			t.Errorf("call to the disconnected server ended with %+v, %v", r.out, r.err)
		}
	}
	if ended != running || waiting != 1 {
		t.Errorf("%d calls ended in flight and %d waiting, want %d and 1", ended, waiting, running)
	}

	// A request made before the disconnect is refused without connecting;
	// one made after connects the server again.
	old := WithRequestTime(ctx, before)
	_, err = h.sup.Call(old, CallRequest{Server: "slow", Tool: "echo", Arguments: mustCanon(t, `{"text":"old"}`)})
	if !contracts.IsNotSent(err) || reasonOf(err) != "disconnected" {
		t.Errorf("call made before the disconnect: %v (reason %q), want not sent, disconnected", err, reasonOf(err))
	}
	if _, err := h.sup.Catalog(old, "slow"); reasonOf(err) != "disconnected" {
		t.Errorf("catalog asked before the disconnect: %v, want reason disconnected", err)
	}
	if st := h.status("slow"); st.State != contracts.StateIdle {
		t.Errorf("the old requests connected the server: %+v", st)
	}
	if _, err := h.sup.Call(WithRequestTime(ctx, time.Now()), CallRequest{Server: "slow", Tool: "echo", Arguments: mustCanon(t, `{"text":"new"}`)}); err != nil {
		t.Errorf("call made after the disconnect: %v", err)
	}
	if n := len(h.sup.inflight); n != 0 {
		t.Errorf("%d supervisor slots still taken after every call ended", n)
	}
}

// TestSupervisorSlotWaitEndsWithCtx: a call waiting for a slot gives up
// when its caller does, with nothing sent.
func TestSupervisorSlotWaitEndsWithCtx(t *testing.T) {
	h := newHarness(t, CatalogLimits{}, func(o *Options) { o.MaxPerServer = 1 })
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
	started := make(chan struct{}, 1)
	done := make(chan error, 1)
	holdCtx, release := context.WithCancel(ctx)
	defer release()
	go func() {
		_, err := h.sup.Call(holdCtx, CallRequest{Server: "fx", Tool: "sleep", Arguments: mustCanon(t, `{"ms":30000}`),
			Progress: func(contracts.ProgressParams) {
				select {
				case started <- struct{}{}:
				default:
				}
			}})
		done <- err
	}()
	<-started
	// Give up once the second call is waiting for the slot.
	waitCtx, cancel := context.WithCancel(ctx)
	testHookSlotWait = cancel
	defer func() { testHookSlotWait = nil }()
	_, err := h.sup.Call(waitCtx, CallRequest{Server: "fx", Tool: "echo", Arguments: mustCanon(t, `{"text":"x"}`)})
	if !contracts.IsNotSent(err) || !errors.Is(err, contracts.ErrCanceled) {
		t.Errorf("call whose caller gave up waiting for a slot: %v, want canceled, not sent", err)
	}
	release()
	<-done
}
