package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// blocker is a handler that holds its slot until released (or its request
// is cancelled), and says which happened.
type blocker struct {
	entered chan string // the request's id, as it starts
	release chan struct{}
	ended   chan error // nil when released, ctx.Err() when cancelled
}

func newBlocker(n int) *blocker {
	return &blocker{entered: make(chan string, n+8), release: make(chan struct{}), ended: make(chan error, n+8)}
}

func (b *blocker) handle(ctx context.Context, req *Request) (any, error) {
	b.entered <- string(req.ID)
	select {
	case <-b.release:
		b.ended <- nil
		return "released", nil
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return nil, ctx.Err()
	}
}

// TestControlLaneNeverWaitsForWork: with every work slot taken and more
// work queued, control methods and $/cancelRequest are served at once.
func TestControlLaneNeverWaitsForWork(t *testing.T) {
	const slots = 2
	b := newBlocker(slots + 1)
	queued := make(chan struct{}, 8)
	s := NewServer(Options{MaxConcurrent: slots})
	s.testHookQueued = func() { queued <- struct{}{} }
	s.Register("block", b.handle)
	s.Register(contracts.MethodHello, func(context.Context, *Request) (any, error) { return "hello", nil })
	s.Register(contracts.MethodMCPStatus, func(context.Context, *Request) (any, error) { return "status", nil })
	path := startServer(t, s)

	work := dial(t, path)
	errs := make(chan error, slots+1)
	for range slots + 1 {
		go func() { errs <- work.Call(context.Background(), "block", nil, nil) }()
	}
	for range slots {
		waitFor(t, b.entered, "a work handler to start")
	}
	waitFor(t, queued, "the third work request to queue")

	// Control methods, on the busy connection and on another one.
	for _, c := range []*Client{work, dial(t, path)} {
		for _, m := range []string{contracts.MethodHello, contracts.MethodMCPStatus} {
			var got string
			if err := c.Call(callCtx(t), m, nil, &got); err != nil || got == "" {
				t.Errorf("%s while the work lane is full: %q, %v", m, got, err)
			}
		}
	}
	// A queued request can be cancelled while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() { cancelled <- work.Call(ctx, "block", nil, nil) }()
	waitFor(t, queued, "a fourth work request to queue")
	cancel()
	if err := waitFor(t, cancelled, "the cancelled request"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled queued request = %v", err)
	}
	close(b.release)
	for range slots + 1 {
		if err := waitFor(t, errs, "the work requests"); err != nil {
			t.Errorf("work request: %v", err)
		}
	}
}

// TestConnectionSlots: one connection holds at most MaxConnConcurrent
// work slots, so another client's work runs while it has more queued.
func TestConnectionSlots(t *testing.T) {
	b := newBlocker(4)
	queued := make(chan struct{}, 8)
	s := NewServer(Options{MaxConcurrent: 3, MaxConnConcurrent: 2})
	s.testHookQueued = func() { queued <- struct{}{} }
	s.Register("block", b.handle)
	s.Register("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	path := startServer(t, s)

	greedy := dial(t, path)
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- greedy.Call(context.Background(), "block", nil, nil) }()
	}
	waitFor(t, b.entered, "a handler")
	waitFor(t, b.entered, "a second handler")
	waitFor(t, queued, "the greedy client's third request to queue")
	if err := dial(t, path).Call(callCtx(t), "nil", nil, nil); err != nil {
		t.Errorf("another client's work while one client holds its limit: %v", err)
	}
	close(b.release)
	for range 3 {
		if err := waitFor(t, errs, "the greedy requests"); err != nil {
			t.Error(err)
		}
	}
}

// TestHalfCloseAnswersBeforeClosing: a client that shuts down its sending
// side gets every answer, and then the end of the connection; a full
// close still cancels what is left.
func TestHalfCloseAnswersBeforeClosing(t *testing.T) {
	b := newBlocker(2)
	s := NewServer(Options{})
	s.Register("block", b.handle)
	s.Register("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	path := startServer(t, s)

	t.Run("half close", func(t *testing.T) {
		c := dialRaw(t, path)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"nil"}`)
		if err := c.nc.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if r := c.recv(); string(r.ID) != "2" || r.Error != nil {
			t.Fatalf("first answer = %+v, want request 2's", r)
		}
		waitFor(t, b.entered, "the blocking handler")
		b.release <- struct{}{}
		if err := waitFor(t, b.ended, "the blocking handler to end"); err != nil {
			t.Errorf("the handler ended with %v after the client shut down its side; want it left to finish", err)
		}
		if r := c.recv(); string(r.ID) != "1" || string(r.Result) != `"released"` {
			t.Errorf("second answer = %+v, want request 1's result", r)
		}
		if _, err := c.r.ReadBytes('\n'); err != io.EOF {
			t.Errorf("after the last answer: %v, want EOF", err)
		}
	})

	t.Run("full close after half close", func(t *testing.T) {
		c := dialRaw(t, path)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
		waitFor(t, b.entered, "the blocking handler")
		if err := c.nc.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		c.nc.Close()
		if err := waitFor(t, b.ended, "the handler to be cancelled"); !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v after the client closed, want context.Canceled", err)
		}
	})
}

// TestResponseShapedFramesDoNotLeakParams: a client's response-shaped
// frames (result or error, with an id and params) get no answer, and their
// params never reach a later request with the same id.
func TestResponseShapedFramesDoNotLeakParams(t *testing.T) {
	s := NewServer(Options{})
	s.Register("raw", func(_ context.Context, req *Request) (any, error) { return string(req.Params), nil })
	c := dialRaw(t, startServer(t, s))
	c.send(`{"jsonrpc":"2.0","id":7,"result":{},"params":{"leak":"from a result"}}`)
	c.send(`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"},"params":{"leak":"from an error"}}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"raw"}`)
	c.send(`{"jsonrpc":"2.0","method":"raw","params":{"leak":"from a notification"}}`)
	c.send(`{"jsonrpc":"2.0","id":8,"method":"raw"}`)
	// Handlers run concurrently: the answers may come in either order.
	got := map[string]rawResponse{}
	for range 2 {
		r := c.recv()
		got[string(r.ID)] = r
	}
	for _, id := range []string{"7", "8"} {
		r, ok := got[id]
		if !ok || r.Error != nil || string(r.Result) != `""` {
			t.Errorf("request %s without params answered %v: result %s error %+v; want empty params (nothing from other frames)", id, ok, r.Result, r.Error)
		}
	}
}

// TestConnectionLimit: past MaxConnections a client is told why and
// closed; once a client leaves, a new one is served.
func TestConnectionLimit(t *testing.T) {
	s := testServer(Options{MaxConnections: 2})
	path := startServer(t, s)
	first, second := dial(t, path), dial(t, path)
	for _, c := range []*Client{first, second} {
		if err := c.Call(callCtx(t), "nil", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	third := dial(t, path)
	err := third.Call(callCtx(t), "nil", nil, nil)
	var we *contracts.Error
	if !errors.As(err, &we) || !errors.Is(err, contracts.ErrResourceExhausted) || we.Reason() != "too_many_connections" ||
		!strings.Contains(we.Message, "at most 2") {
		t.Errorf("call on a connection over the limit = %v, want too_many_connections naming the limit", err)
	}
	first.Close()
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Call(callCtx(t), "nil", nil, nil)
		c.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new client served after one left: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBudgetBackPressure: pipelined large requests are read only as far as
// the budget allows; the rest wait in the client's socket until answers
// free it, and then every one is answered. A short request from another
// client is read meanwhile.
func TestBudgetBackPressure(t *testing.T) {
	const frameMax, size = 128 << 10, 100 << 10
	b := newBlocker(8)
	s := NewServer(Options{MaxFrameBytes: frameMax, MaxPendingBytes: 1 << 20, ConnPendingBytes: 1 << 20})
	s.Register("block", b.handle)
	s.Register(contracts.MethodHello, func(context.Context, *Request) (any, error) { return "hello", nil })
	path := startServer(t, s)
	total := s.pool.available()

	chargeWait := make(chan struct{}, 16)
	testHookChargeWait = func() { chargeWait <- struct{}{} }
	defer func() { testHookChargeWait = nil }()

	c := dialRaw(t, path)
	const n = 6
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			pad := strings.Repeat("x", size)
			if _, err := fmt.Fprintf(c.nc, `{"jsonrpc":"2.0","id":%d,"method":"block","params":{"pad":"%s"}}`+"\n", i+1, pad); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	// Each request costs 3 × 100 KiB + 8 KiB; a line past 64 KiB holds
	// the cost of a whole frame (3 × 128 KiB + 8 KiB) while it is read.
	// With a ceiling of 1 MiB per connection, three requests fit and the
	// fourth line waits.
	waitFor(t, chargeWait, "the reader to wait for budget")
	entered := 0
	for len(b.entered) > 0 || entered < 3 {
		waitFor(t, b.entered, "a handler")
		entered++
	}
	if entered != 3 {
		t.Errorf("%d requests read while the budget allows 3", entered)
	}
	if err := dial(t, path).Call(callCtx(t), contracts.MethodHello, nil, nil); err != nil {
		t.Errorf("hello from another client while the first waits for budget: %v", err)
	}
	close(b.release)
	for i := range n {
		if r := c.recv(); r.Error != nil || string(r.Result) != `"released"` {
			t.Errorf("answer %d = %+v", i+1, r)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	c.nc.Close()
	deadline := time.Now().Add(waitLimit)
	for s.pool.available() != total {
		if time.Now().After(deadline) {
			t.Fatalf("pool = %d after every request was answered and the client left, want %d", s.pool.available(), total)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPartialLinesAreCharged: an unterminated line counts against the
// budget while it is read: past 64 KiB it holds what the largest request
// costs. A line that stalls is given up, with an error frame, and its
// budget comes back.
func TestPartialLinesAreCharged(t *testing.T) {
	old := lineIdleTimeout
	lineIdleTimeout = 300 * time.Millisecond
	defer func() { lineIdleTimeout = old }()
	const frameMax = 256 << 10
	s := NewServer(Options{MaxFrameBytes: frameMax})
	path := startServer(t, s)
	total := s.pool.available()

	c := dialRaw(t, path)
	// The reader takes the line in 64 KiB pieces: send more than two.
	if _, err := io.WriteString(c.nc, `{"jsonrpc":"2.0","id":1,"method":"x","params":"`+strings.Repeat("y", 150<<10)); err != nil {
		t.Fatal(err)
	}
	want := total - (requestCharge(frameMax) - connReserve)
	deadline := time.Now().Add(waitLimit)
	for s.pool.available() != want {
		if time.Now().After(deadline) {
			t.Fatalf("pool = %d while a 150 KiB line is being read, want %d", s.pool.available(), want)
		}
		time.Sleep(time.Millisecond)
	}
	// Then it stalls: the server says why and hangs up.
	line, err := c.r.ReadBytes('\n')
	var resp rawResponse
	if err != nil || json.Unmarshal(line, &resp) != nil || resp.Error == nil || !strings.Contains(resp.Error.Message, "long line") {
		t.Errorf("stalled line: got %q, %v; want an error frame about the stalled line", line, err)
	}
	if _, err := c.r.ReadBytes('\n'); err != io.EOF {
		t.Errorf("after the error frame: %v, want EOF", err)
	}
	deadline = time.Now().Add(waitLimit)
	for s.pool.available() != total {
		if time.Now().After(deadline) {
			t.Fatalf("pool = %d after the connection closed, want %d", s.pool.available(), total)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBudgetNeverLeaks sends every kind of frame and checks that the
// budget is whole again once they are answered.
func TestBudgetNeverLeaks(t *testing.T) {
	s := testServer(Options{})
	path := startServer(t, s)
	total := s.pool.available()
	c := dialRaw(t, path)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"nope"}`,
		`{"jsonrpc":"2.0","method":"echo"}`,
		`{"jsonrpc":"2.0","id":3,"result":1}`,
		`not json`,
		`   `,
		`{"jsonrpc":"2.0","id":4,"method":"$/cancelRequest","params":{"id":99}}`,
		`{"jsonrpc":"2.0","id":5,"method":"panic"}`,
	} {
		c.send(line)
	}
	// Answered: echo, nope, not json, the cancel request, panic.
	for range 5 {
		c.recv()
	}
	deadline := time.Now().Add(waitLimit)
	for s.pool.available() != total {
		if time.Now().After(deadline) {
			t.Fatalf("pool = %d with nothing left to answer, want %d", s.pool.available(), total)
		}
		time.Sleep(time.Millisecond)
	}
}
