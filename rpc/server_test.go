package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// waitLimit only turns a hang into a failure; no test depends on it for
// ordering.
const waitLimit = 20 * time.Second

// startServer listens on a fresh socket and serves s until the test ends,
// then checks that Serve returned nil.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v, want nil after cancel", err)
		}
	})
	return path
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

type echoParams struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func testServer(opts Options) *Server {
	s := NewServer(opts)
	s.Register("echo", func(_ context.Context, req *Request) (any, error) {
		var p echoParams
		if err := DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		return p, nil
	})
	s.Register("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	s.Register("peer", func(_ context.Context, req *Request) (any, error) { return req.Peer, nil })
	s.Register("notfound", func(context.Context, *Request) (any, error) {
		return nil, fmt.Errorf("looking up thing %q: %w", "x", contracts.ErrNotFound)
	})
	s.Register("wire", func(context.Context, *Request) (any, error) {
		return nil, &contracts.Error{Code: 1008, Message: "needs approval", Data: &contracts.ErrorData{Reason: "approval_required", Hint: "approve it"}}
	})
	s.Register("plain", func(context.Context, *Request) (any, error) { return nil, errors.New("boom") })
	s.Register("panic", func(context.Context, *Request) (any, error) { panic("handler bug") })
	s.Register("unencodable", func(context.Context, *Request) (any, error) { return func() {}, nil })
	return s
}

func TestRoundTrip(t *testing.T) {
	c := dial(t, startServer(t, testServer(Options{})))
	ctx := callCtx(t)

	var got echoParams
	if err := c.Call(ctx, "echo", echoParams{Text: "hi", Count: 3}, &got); err != nil {
		t.Fatalf("Call(echo): %v", err)
	}
	if got != (echoParams{Text: "hi", Count: 3}) {
		t.Errorf("echo = %+v, want the params back", got)
	}

	var raw json.RawMessage
	if err := c.Call(ctx, "echo", map[string]any{"text": "raw"}, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"text":"raw","count":0}` {
		t.Errorf("raw result = %s", raw)
	}

	if err := c.Call(ctx, "nil", nil, &raw); err != nil || string(raw) != "null" {
		t.Errorf("nil result = %s, %v; want null", raw, err)
	}

	// No params at all decode as an empty object.
	if err := c.Call(ctx, "echo", nil, &got); err != nil || got != (echoParams{}) {
		t.Errorf("echo without params = %+v, %v", got, err)
	}
}

func TestErrorsCrossTheSocket(t *testing.T) {
	c := dial(t, startServer(t, testServer(Options{})))
	tests := []struct {
		method  string
		params  any
		code    int
		reason  string
		class   error
		message string
	}{
		// Unknown methods carry the JSON-RPC code; contracts maps that
		// code to ErrNotFound, so errors.Is(err, ErrNotFound) is true.
		{"nope", nil, contracts.CodeMethodNotFound, "method_not_found", contracts.ErrNotFound, "method not found: nope"},
		{"notfound", nil, 1002, "not_found", contracts.ErrNotFound, `looking up thing "x": not found`},
		{"wire", nil, 1008, "approval_required", contracts.ErrApprovalRequired, "needs approval"},
		{"plain", nil, 1014, "internal", contracts.ErrInternal, "internal error: boom"},
		{"panic", nil, 1014, "internal", contracts.ErrInternal, "panicked"},
		{"unencodable", nil, 1014, "internal", contracts.ErrInternal, "encoding result of unencodable"},
		{"echo", map[string]any{"count": "three"}, contracts.CodeInvalidParams, "invalid_params", contracts.ErrInvalidArgument, "invalid params: count: want an integer, got string"},
		{"echo", map[string]any{"bogus": 1}, contracts.CodeInvalidParams, "invalid_params", contracts.ErrInvalidArgument, `invalid params: bogus: unknown field`},
		{"echo", []int{1}, contracts.CodeInvalidParams, "invalid_params", contracts.ErrInvalidArgument, "params must be an object, got array"},
	}
	for _, tt := range tests {
		err := c.Call(callCtx(t), tt.method, tt.params, nil)
		var we *contracts.Error
		if !errors.As(err, &we) {
			t.Errorf("Call(%s) error = %v (%T), want *contracts.Error", tt.method, err, err)
			continue
		}
		if we.Code != tt.code || we.Reason() != tt.reason || !strings.Contains(we.Message, tt.message) {
			t.Errorf("Call(%s) = {%d %q %q}, want {%d %q ~%q}", tt.method, we.Code, we.Message, we.Reason(), tt.code, tt.reason, tt.message)
		}
		if !errors.Is(err, tt.class) {
			t.Errorf("Call(%s): errors.Is(err, %v) = false", tt.method, tt.class)
		}
	}
	// Hints and problems survive the trip.
	err := c.Call(callCtx(t), "wire", nil, nil)
	if we := (*contracts.Error)(nil); !errors.As(err, &we) || we.Data.Hint != "approve it" {
		t.Errorf("hint lost: %v", err)
	}
	err = c.Call(callCtx(t), "echo", map[string]any{"text": 1}, nil)
	if we := (*contracts.Error)(nil); !errors.As(err, &we) || len(we.Data.Problems) != 1 || we.Data.Problems[0].Field != "text" {
		t.Errorf("problems lost: %#v", err)
	}
	// The connection survives all of that, including the panic.
	if err := c.Call(callCtx(t), "nil", nil, nil); err != nil {
		t.Errorf("call after errors: %v", err)
	}
}

func TestDecodeParams(t *testing.T) {
	type inner struct {
		On bool `json:"on"`
	}
	type params struct {
		Name  string   `json:"name"`
		N     int      `json:"n"`
		Tags  []string `json:"tags"`
		Inner inner    `json:"inner"`
	}
	tests := []struct {
		raw     string
		field   string // "" for whole-params problems; "-" for success
		message string
	}{
		{``, "-", ""},
		{`null`, "-", ""},
		{`{}`, "-", ""},
		{`{"name":"a","n":1,"tags":["x"],"inner":{"on":true}}`, "-", ""},
		{`{"n":"1"}`, "n", "want an integer, got string"},
		{`{"n":1.5}`, "n", "want an integer, got number"},
		{`{"name":5}`, "name", "want a string, got number"},
		{`{"tags":"x"}`, "tags", "want an array, got string"},
		{`{"inner":{"on":"yes"}}`, "inner.on", "want a boolean, got string"},
		{`{"inner":{"off":true}}`, "off", "unknown field"},
		{`{"extra":1}`, "extra", "unknown field"},
		{`[1]`, "", "params must be an object, got array"},
		{`"s"`, "", "params must be an object, got string"},
		{`{"name":"a"} {}`, "", "unexpected data"},
	}
	for _, tt := range tests {
		var p params
		err := DecodeParams(json.RawMessage(tt.raw), &p)
		if tt.field == "-" {
			if err != nil {
				t.Errorf("DecodeParams(%s) = %v, want nil", tt.raw, err)
			}
			continue
		}
		var we *contracts.Error
		if !errors.As(err, &we) {
			t.Errorf("DecodeParams(%s) = %v, want *contracts.Error", tt.raw, err)
			continue
		}
		if we.Code != contracts.CodeInvalidParams || we.Reason() != "invalid_params" ||
			!strings.HasPrefix(we.Message, "invalid params: ") || !strings.Contains(we.Message, tt.message) {
			t.Errorf("DecodeParams(%s) = {%d %q %q}, want -32602 invalid_params ~%q", tt.raw, we.Code, we.Message, we.Reason(), tt.message)
		}
		if tt.field != "" && (len(we.Data.Problems) != 1 || we.Data.Problems[0].Field != tt.field || !strings.Contains(we.Message, tt.field)) {
			t.Errorf("DecodeParams(%s) = %q, problems %+v; want field %q named", tt.raw, we.Message, we.Data.Problems, tt.field)
		}
	}
}

// rawConn speaks NDJSON by hand, to send what the Go client never would.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(waitLimit))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, line+"\n"); err != nil {
		c.t.Fatalf("writing %q: %v", line, err)
	}
}

type rawResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (c *rawConn) recv() rawResponse {
	c.t.Helper()
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	var r rawResponse
	if err := json.Unmarshal(line, &r); err != nil {
		c.t.Fatalf("response %q is not JSON: %v", line, err)
	}
	if r.JSONRPC != "2.0" {
		c.t.Errorf("response %q lacks jsonrpc 2.0", line)
	}
	return r
}

func TestRawProtocolErrors(t *testing.T) {
	path := startServer(t, testServer(Options{}))
	c := dialRaw(t, path)
	tests := []struct {
		line   string
		code   int
		id     string
		substr string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"echo"`, contracts.CodeParseError, "null", "parse error"},
		{`not json`, contracts.CodeParseError, "null", "parse error"},
		{`[1,2]`, contracts.CodeInvalidRequest, "null", "batch"},
		{`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, contracts.CodeInvalidRequest, "null", "batch"},
		{`42`, contracts.CodeInvalidRequest, "null", "JSON object"},
		{`"hello"`, contracts.CodeInvalidRequest, "null", "JSON object"},
		{`{"id":7,"method":"echo"}`, contracts.CodeInvalidRequest, "7", `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":8}`, contracts.CodeInvalidRequest, "8", "missing method"},
		{`{"jsonrpc":"2.0","id":9,"method":"nope"}`, contracts.CodeMethodNotFound, "9", "method not found: nope"},
		{`{"jsonrpc":"2.0","id":"s","method":"nope"}`, contracts.CodeMethodNotFound, `"s"`, "method not found: nope"},
	}
	for _, tt := range tests {
		c.send(tt.line)
		r := c.recv()
		if r.Error == nil || r.Error.Code != tt.code || string(r.ID) != tt.id || !strings.Contains(r.Error.Message, tt.substr) {
			t.Errorf("%s -> id %s error %+v, want id %s code %d ~%q", tt.line, r.ID, r.Error, tt.id, tt.code, tt.substr)
		}
		if tt.code == contracts.CodeMethodNotFound && string(r.Error.Data) != `{"reason":"method_not_found"}` {
			t.Errorf("method not found data = %s", r.Error.Data)
		}
	}
	// Blank lines are ignored, and the connection still serves.
	c.send("")
	c.send(`{"jsonrpc":"2.0","id":10,"method":"echo","params":{"text":"ok"}}`)
	if r := c.recv(); r.Error != nil || string(r.ID) != "10" || string(r.Result) != `{"text":"ok","count":0}` {
		t.Errorf("valid request after errors = %+v", r)
	}
	// And so does another connection.
	if err := dial(t, path).Call(callCtx(t), "nil", nil, nil); err != nil {
		t.Errorf("other connection: %v", err)
	}
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	path := startServer(t, testServer(Options{}))
	good := dial(t, path)
	bad := dialRaw(t, path)

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// The server stops reading at the cap and hangs up, so this
		// write may fail part-way; that is the point.
		line := append(bytes.Repeat([]byte("a"), 9<<20), '\n')
		bad.nc.Write(line)
	}()
	// The server may say why before closing; either way the connection
	// must end.
	var err error
	for err == nil {
		_, err = bad.r.ReadBytes('\n')
	}
	if isTimeout(err) {
		t.Fatalf("oversized frame did not close the connection: %v", err)
	}
	<-wrote
	if err := good.Call(callCtx(t), "echo", echoParams{Text: "still here"}, nil); err != nil {
		t.Errorf("other connection after oversized frame: %v", err)
	}
}

func TestOversizedResultBecomesAnError(t *testing.T) {
	s := NewServer(Options{MaxFrameBytes: 4096})
	s.Register("big", func(context.Context, *Request) (any, error) { return strings.Repeat("x", 8192), nil })
	c := dial(t, startServer(t, s))
	err := c.Call(callCtx(t), "big", nil, nil)
	if !errors.Is(err, contracts.ErrResourceExhausted) {
		t.Errorf("Call(big) = %v, want ErrResourceExhausted", err)
	}
}

func TestCancellation(t *testing.T) {
	entered := make(chan struct{}, 1)
	ended := make(chan error, 1)
	s := NewServer(Options{})
	s.Register("block", func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	s.Register("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	path := startServer(t, s)

	t.Run("client ctx sends $/cancelRequest", func(t *testing.T) {
		c := dial(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- c.Call(ctx, "block", nil, nil) }()
		<-entered
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Call = %v, want context.Canceled", err)
		}
		if err := waitFor(t, ended, "the handler to be cancelled"); !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx error = %v", err)
		}
		// The connection is still good.
		if err := c.Call(callCtx(t), "nil", nil, nil); err != nil {
			t.Errorf("call after cancel: %v", err)
		}
	})

	t.Run("closing the connection cancels", func(t *testing.T) {
		c := dial(t, path)
		errc := make(chan error, 1)
		go func() { errc <- c.Call(context.Background(), "block", nil, nil) }()
		<-entered
		c.Close()
		if err := <-errc; !errors.Is(err, contracts.ErrUnavailable) || !errors.Is(err, ErrUnreachable) {
			t.Errorf("Call on closed client = %v, want ErrUnavailable and ErrUnreachable", err)
		}
		waitFor(t, ended, "the handler to be cancelled by the closed connection")
	})

}

// TestCallVerdict cancels calls made with CallVerdict: the handler's
// answer to the cancellation comes back (a result or an error); without
// one within the grace period the error says there was no verdict.
func TestCallVerdict(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	s := NewServer(Options{})
	s.Register("verdict", func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return map[string]string{"status": "uncertain"}, nil
	})
	s.Register("refuse", func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, contracts.MarkNotSent(contracts.Errorf(contracts.ErrCanceled, "canceled", "canceled before it was sent"))
	})
	s.Register("mute", func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-release
		return nil, nil
	})
	path := startServer(t, s)
	c := dial(t, path)

	call := func(method string, grace time.Duration, out any) error {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- c.CallVerdict(ctx, grace, method, nil, out) }()
		waitFor(t, entered, "the handler to start")
		cancel()
		return waitFor(t, errc, "CallVerdict to return")
	}

	var res map[string]string
	if err := call("verdict", waitLimit, &res); err != nil || res["status"] != "uncertain" {
		t.Errorf("cancelled call answered with a result: %v, %v; want the result", res, err)
	}
	err := call("refuse", waitLimit, nil)
	var we *contracts.Error
	if !errors.As(err, &we) || !errors.Is(err, contracts.ErrCanceled) || !contracts.IsNotSent(err) {
		t.Errorf("cancelled call answered with an error: %v; want that error, not sent", err)
	}
	err = call("mute", 50*time.Millisecond, nil)
	if !errors.Is(err, ErrNoVerdict) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call without an answer: %v; want ErrNoVerdict and context.Canceled", err)
	}
	close(release)
	// The late answer is dropped; the connection still works.
	if err := c.Call(callCtx(t), "nil-less", nil, nil); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("call after a lost verdict: %v, want method not found", err)
	}
	// Plain Call still returns at once.
	if err := call("verdict", 0, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("CallVerdict with no grace = %v, want context.Canceled", err)
	}
}

func TestCallWithCancelledContextSendsNothing(t *testing.T) {
	// A bare listener stands in for the daemon so the test sees exactly
	// what the client writes.
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := dial(t, path)
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ctx, "first", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, want context.Canceled", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Call(callCtx(t), "second", nil, nil) }()

	srv.SetDeadline(time.Now().Add(waitLimit))
	line, err := bufio.NewReader(srv).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(line, &req); err != nil || req.Method != "second" {
		t.Fatalf("first frame on the wire = %s, want the second call", line)
	}
	fmt.Fprintf(srv, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
	if err := <-errc; err != nil {
		t.Errorf("second Call = %v", err)
	}
}

func TestNotificationsArriveInOrderBeforeTheResponse(t *testing.T) {
	s := NewServer(Options{})
	s.Register("progress", func(_ context.Context, req *Request) (any, error) {
		for i := range 5 {
			if err := req.Notify("test.progress", map[string]int{"n": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	c := dial(t, startServer(t, s))
	var mu sync.Mutex
	var got []string
	c.OnNotification(func(method string, params json.RawMessage) {
		mu.Lock()
		got = append(got, method+" "+string(params))
		mu.Unlock()
	})
	var result string
	if err := c.Call(callCtx(t), "progress", nil, &result); err != nil || result != "done" {
		t.Fatalf("Call = %q, %v", result, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{}
	for i := range 5 {
		want = append(want, fmt.Sprintf(`test.progress {"n":%d}`, i))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notifications =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBoundedConcurrency(t *testing.T) {
	const limit, calls = 2, 6
	var running, peak atomic.Int32
	entered := make(chan struct{}, calls)
	queued := make(chan struct{}, calls)
	release := make(chan struct{})
	s := NewServer(Options{MaxConcurrent: limit})
	s.testHookQueued = func() { queued <- struct{}{} }
	s.Register("slot", func(ctx context.Context, _ *Request) (any, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done(): // the test failed and is shutting down
		}
		running.Add(-1)
		return nil, nil
	})
	c := dial(t, startServer(t, s))

	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.Call(callCtx(t), "slot", nil, nil)
		}()
	}
	// Wait until every request is either running or waiting for a slot.
	for range limit {
		waitFor(t, entered, "a handler to start")
	}
	for range calls - limit {
		waitFor(t, queued, "a request to queue for a slot")
	}
	if got := running.Load(); got != limit {
		t.Errorf("%d handlers running with every request dispatched, want %d", got, limit)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Call: %v", err)
		}
	}
	if got := peak.Load(); got != limit {
		t.Errorf("peak concurrency = %d, want %d", got, limit)
	}
}

func TestStuckReaderDoesNotBlockOthers(t *testing.T) {
	// One slot: while the flood handler is stuck writing to a client that
	// never reads, nobody else can run. Only the write deadline frees it.
	floodErr := make(chan error, 1)
	entered := make(chan struct{})
	s := NewServer(Options{MaxConcurrent: 1, WriteTimeout: 100 * time.Millisecond})
	s.Register("flood", func(_ context.Context, req *Request) (any, error) {
		close(entered)
		chunk := strings.Repeat("z", 64<<10)
		for {
			if err := req.Notify("test.flood", chunk); err != nil {
				floodErr <- err
				return nil, err
			}
		}
	})
	s.Register("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	path := startServer(t, s)

	stuck := dialRaw(t, path)
	stuck.send(`{"jsonrpc":"2.0","id":1,"method":"flood"}`)
	<-entered

	if err := dial(t, path).Call(callCtx(t), "nil", nil, nil); err != nil {
		t.Fatalf("call while another client is stuck: %v", err)
	}
	if err := <-floodErr; err == nil {
		t.Error("flood handler's Notify never failed")
	}
}

func TestPeerCredentials(t *testing.T) {
	c := dial(t, startServer(t, testServer(Options{})))
	var p Peer
	if err := c.Call(callCtx(t), "peer", nil, &p); err != nil {
		t.Fatal(err)
	}
	if p.UID != os.Getuid() || p.GID != os.Getgid() || p.PID != os.Getpid() {
		t.Errorf("peer = %+v, want uid %d gid %d pid %d", p, os.Getuid(), os.Getgid(), os.Getpid())
	}
}

func TestDialFailures(t *testing.T) {
	dir := shortDir(t)
	stale := filepath.Join(dir, "stale.sock")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	tests := []struct{ name, path string }{
		{"no socket file", filepath.Join(dir, "missing.sock")},
		{"connection refused", stale},
		{"not a socket", dir},
	}
	for _, tt := range tests {
		c, err := Dial(context.Background(), tt.path)
		if err == nil {
			c.Close()
			t.Errorf("%s: Dial succeeded", tt.name)
			continue
		}
		if !errors.Is(err, ErrUnreachable) || !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s: Dial error = %v, want ErrUnreachable and ErrUnavailable naming %s", tt.name, err, tt.path)
		}
	}
}

func TestServerGoneMidCall(t *testing.T) {
	s := NewServer(Options{})
	entered := make(chan struct{})
	s.Register("block", func(ctx context.Context, _ *Request) (any, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	path, stop := serveUntilStopped(t, s)

	c := dial(t, path)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "block", nil, nil) }()
	<-entered
	if err := stop(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	// Shutdown ends the handler's context, and its answer still reaches
	// the caller before the connection closes: a call cut short is
	// reported, never lost with the socket.
	if err := <-errc; !errors.Is(err, contracts.ErrCanceled) {
		t.Errorf("Call during shutdown = %v, want the handler's canceled answer", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after Serve: %v", err)
	}
}

func TestServeShutdownLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := testServer(Options{})
	entered := make(chan struct{})
	s.Register("block", func(ctx context.Context, _ *Request) (any, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	path, stop := serveUntilStopped(t, s)

	idle, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Call(callCtx(t), "nil", nil, nil); err != nil {
		t.Fatal(err)
	}
	busy, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- busy.Call(context.Background(), "block", nil, nil) }()
	<-entered

	if err := stop(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	<-errc
	idle.Close()
	busy.Close()
}

func TestLogsNeverCarryParams(t *testing.T) {
	var buf testsupport.Buffer
	s := testServer(Options{Log: zerolog.New(&buf).Level(zerolog.DebugLevel)})
	c := dial(t, startServer(t, s))
	const canary = "canary-7f3e2a"
	if err := c.Call(callCtx(t), "echo", echoParams{Text: canary}, nil); err != nil {
		t.Fatal(err)
	}
	c.Call(callCtx(t), "echo", map[string]any{"bogus": canary}, nil)
	c.Call(callCtx(t), "nope", map[string]any{"x": canary}, nil)
	out := buf.String()
	if !strings.Contains(out, `"method":"echo"`) {
		t.Errorf("request not logged: %s", out)
	}
	if strings.Contains(out, canary) {
		t.Errorf("log contains params: %s", out)
	}
}

// waitFor receives from ch, failing the test (instead of hanging it) if
// nothing arrives within waitLimit.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestServerFilterRewritesEveryFrame(t *testing.T) {
	secret := "canary-" + strconv.Itoa(os.Getpid())
	var mu sync.Mutex
	methods := map[string]int{} // frames by the method of the request they answer
	srv := NewServer(Options{Filter: func(b []byte, out Outgoing) []byte {
		if out.Request != nil && out.Conn != nil {
			mu.Lock()
			methods[out.Request.Method]++
			mu.Unlock()
		}
		return bytes.ReplaceAll(b, []byte(secret), []byte("[REDACTED]"))
	}})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		// echo.secret: its notification and its answer; fail.secret: its error.
		if methods["echo.secret"] < 2 || methods["fail.secret"] < 1 {
			t.Errorf("the filter was told the request of %v frames, want echo.secret's note and answer and fail.secret's error", methods)
		}
	})
	srv.Register("echo.secret", func(_ context.Context, req *Request) (any, error) {
		if err := req.Notify("note", map[string]string{"v": secret}); err != nil {
			return nil, err
		}
		return map[string]string{"v": secret}, nil
	})
	srv.Register("fail.secret", func(context.Context, *Request) (any, error) {
		return nil, fmt.Errorf("upstream said %s: %w", secret, contracts.ErrUpstream)
	})
	c := dial(t, startServer(t, srv))
	var notes []string
	c.OnNotification(func(_ string, p json.RawMessage) { notes = append(notes, string(p)) })
	var res json.RawMessage
	if err := c.Call(t.Context(), "echo.secret", nil, &res); err != nil {
		t.Fatal(err)
	}
	err := c.Call(t.Context(), "fail.secret", nil, nil)
	for _, s := range append(notes, string(res), fmt.Sprint(err)) {
		if strings.Contains(s, secret) {
			t.Errorf("frame part %q holds the secret", s)
		}
		if !strings.Contains(s, "[REDACTED]") {
			t.Errorf("frame part %q was not filtered", s)
		}
	}
}

// TestParamsReachHandlersVerbatim: jsonrpc2 re-encodes params through a
// map; handlers must see them exactly as sent, so duplicate keys and
// invalid text can be refused instead of silently collapsed or replaced.
func TestParamsReachHandlersVerbatim(t *testing.T) {
	srv := NewServer(Options{})
	got := make(chan string, 4)
	srv.Register("raw", func(_ context.Context, req *Request) (any, error) {
		got <- string(req.Params)
		return nil, nil
	})
	conn, err := net.Dial("unix", startServer(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i, params := range []string{
		`{"arguments":{"a":1,"a":2}}`,
		`{"s":"\ud800","b":"x\u00e9"}`,
		`{ "spaced" :  [1, 2.50, 1e400] }`,
	} {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","method":"raw","params":%s}`+"\n", i, params)
		if _, err := conn.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if p := <-got; p != params {
			t.Errorf("handler saw params %s, want exactly %s", p, params)
		}
	}
}

// serveUntilStopped serves s on a fresh socket; stop cancels Serve and
// returns what it returned.
func serveUntilStopped(t *testing.T, s *Server) (path string, stop func() error) {
	t.Helper()
	path = filepath.Join(shortDir(t), "p.sock")
	ln, err := Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	return path, func() error {
		cancel()
		return <-served
	}
}
