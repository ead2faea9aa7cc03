package mcpclient

import (
	"context"
	"errors"
	"time"

	"github.com/pikod/pikod/contracts"
)

// Defaults of Options.MaxPerServer and Options.MaxInFlight.
const (
	DefaultMaxPerServer = 16
	DefaultMaxInFlight  = 64
)

// Work sent to servers (calls, catalog fetches, pings) takes a slot of its
// server, then one of the supervisor: one hung server can hold at most
// MaxPerServer slots, and waiting for a busy server never holds a slot
// another server could use. A disconnect ends the work waiting for that
// server's slots, and every request made before it (see WithRequestTime)
// that has not reached the server yet; the ones in flight end with the
// connection, uncertain.

type requestTimeKey struct{}

// WithRequestTime returns ctx carrying when the owner's request arrived. A
// disconnect refuses, with nothing sent, every request made before it
// that had not been sent yet: a disconnect is how the owner stops what
// was asked of a server, so the requests still queued in pikod must not
// connect it again.
func WithRequestTime(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, requestTimeKey{}, t)
}

func requestTime(ctx context.Context) time.Time {
	t, _ := ctx.Value(requestTimeKey{}).(time.Time)
	return t
}

// madeBeforeDisconnect refuses a request made before the session's last
// disconnect.
func (s *session) madeBeforeDisconnect(ctx context.Context) error {
	t := requestTime(ctx)
	if t.IsZero() {
		return nil
	}
	s.mu.Lock()
	at := s.disconnectedAt
	s.mu.Unlock()
	if at.IsZero() || !t.Before(at) {
		return nil
	}
	return s.disconnectedErr()
}

func (s *session) disconnectedErr() error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrCanceled, contracts.ReasonDisconnected,
			"server %q was disconnected after this request was made; nothing was sent", s.cfg.ID),
		"make the request again if it is still wanted: it connects the server again")
}

// admit waits for a slot of sess and then one of the supervisor, and
// returns the function that gives both back. It fails when ctx ends, or
// with reason disconnected when the server is disconnected meanwhile (or
// was, after the request was made).
func (s *Supervisor) admit(ctx context.Context, sess *session) (release func(), err error) {
	if err := sess.madeBeforeDisconnect(ctx); err != nil {
		return nil, err
	}
	sess.mu.Lock()
	ended := sess.ended
	sess.mu.Unlock()
	if err := waitSlot(ctx, sess.slots, ended); err != nil {
		return nil, sess.slotErr(err)
	}
	if err := waitSlot(ctx, s.inflight, ended); err != nil {
		<-sess.slots
		return nil, sess.slotErr(err)
	}
	release = func() {
		<-s.inflight
		<-sess.slots
	}
	if err := sess.madeBeforeDisconnect(ctx); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// errEnded says a disconnect ended the wait for a slot.
var errEnded = errors.New("disconnected while waiting for a slot")

func (s *session) slotErr(err error) error {
	if err == errEnded {
		return s.disconnectedErr()
	}
	return err
}

// testHookSlotWait, when set (by tests only), runs when work has to wait
// for a slot.
var testHookSlotWait func()

func waitSlot(ctx context.Context, sem chan struct{}, ended <-chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if testHookSlotWait != nil {
		testHookSlotWait()
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ended:
		return errEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}
