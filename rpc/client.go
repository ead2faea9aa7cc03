package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pikod/pikod/contracts"
)

// ErrUnreachable marks errors meaning the daemon could not be reached (no
// socket, nobody listening, no permission) or the connection to it was
// lost. Such errors also wrap contracts.ErrUnavailable. pikoctl maps it to
// its "daemon not running" exit status.
var ErrUnreachable = errors.New("daemon unreachable")

// clientWriteTimeout bounds the client's writes, as the server's are.
const clientWriteTimeout = 10 * time.Second

// Client is a connection to pikod. It is safe for concurrent use; calls
// are multiplexed on one connection.
type Client struct {
	path   string
	st     *stream
	jc     *jsonrpc2.Conn
	nextID atomic.Uint64
	notify atomic.Pointer[func(method string, params json.RawMessage)]

	// observers are the notification functions of calls made with
	// CallObserved, by request id; nObservers counts them, so that
	// notifications are looked into only while one is set.
	obsMu      sync.Mutex
	observers  map[uint64]func(method string, params json.RawMessage)
	nObservers atomic.Int32

	// apiOnce guards apiAdvice: checkAPI asks system.hello at most once
	// per connection.
	apiOnce   sync.Once
	apiAdvice string
}

// Dial connects to the daemon's socket at path. A failure wraps both
// ErrUnreachable and contracts.ErrUnavailable and names the path.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connecting to pikod at %s: %w", path, ctx.Err())
		}
		return nil, &unreachableError{path: path, err: err, dial: true}
	}
	// Before a byte is sent (it may be a secret), make sure the daemon
	// answering runs as us: in a shared /tmp another user could have made
	// the socket directory and listen in our place.
	if uc, ok := nc.(*net.UnixConn); ok {
		p, err := peerCred(uc)
		switch {
		case err != nil:
			nc.Close()
			return nil, &unreachableError{path: path, err: fmt.Errorf("checking who listens: %w", err), dial: true}
		case p.UID != os.Getuid():
			nc.Close()
			return nil, contracts.WithHint(fmt.Errorf("refusing to talk to %s: it is served by uid %d, not by you (uid %d): %w: %w",
				path, p.UID, os.Getuid(), ErrUnreachable, contracts.ErrPermissionDenied),
				"another user controls this socket path; set XDG_RUNTIME_DIR, or use --socket with a path in a private directory")
		}
	}
	c := &Client{path: path}
	c.st = newStream(nc, DefaultMaxFrameBytes, clientWriteTimeout, false, zerolog.Nop())
	c.jc = jsonrpc2.NewConn(context.Background(), c.st, handlerFunc(c.handle), jsonrpc2.SetLogger(printfLogger{zerolog.Nop()}))
	return c, nil
}

// OnNotification sets the function that receives the daemon's
// notifications. Set it before the first Call. f runs on the connection's
// reader, in arrival order, before the response that follows them is
// delivered: it must return quickly (hand work to another goroutine), or
// every call on this client stalls.
func (c *Client) OnNotification(f func(method string, params json.RawMessage)) {
	c.notify.Store(&f)
}

func (c *Client) handle(ctx context.Context, jc *jsonrpc2.Conn, r *jsonrpc2.Request) {
	if r.Notif {
		var params json.RawMessage
		if r.Params != nil {
			params = *r.Params
		}
		if c.nObservers.Load() > 0 {
			if f := c.observer(params); f != nil {
				f(r.Method, params)
				return
			}
		}
		if f := c.notify.Load(); f != nil && *f != nil {
			(*f)(r.Method, params)
		}
		return
	}
	// The daemon has no reason to call us; say so rather than leave it
	// waiting.
	_ = jc.ReplyWithError(ctx, r.ID, &jsonrpc2.Error{Code: contracts.CodeMethodNotFound, Message: "method not found: " + r.Method})
}

// Call sends a request and waits for its response, decoding the result
// into result (which may be nil, or a *json.RawMessage for the raw bytes).
//
// An error response is returned as a *contracts.Error, so
// errors.Is(err, contracts.ErrNotFound) and the like work across the
// socket. An unknown method answers -32601 (reason method_not_found),
// which contracts classes as ErrNotFound too. If ctx ends first, Call
// sends $/cancelRequest for the request and returns ctx.Err() at once
// (CallVerdict waits for the daemon's answer instead). A connection lost
// mid-call gives an error wrapping ErrUnreachable and
// contracts.ErrUnavailable.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.call(ctx, 0, method, params, result)
}

// ErrNoVerdict is wrapped by CallVerdict's error when the daemon did not
// answer a cancelled request within the grace period: the client cannot
// tell what became of it.
var ErrNoVerdict = errors.New("no answer from pikod after cancelling")

// CallVerdict is Call for requests whose outcome matters after a
// cancellation (a tool call: was it sent?). If ctx ends first, it sends
// $/cancelRequest and keeps waiting up to grace for the daemon's answer,
// which it returns as Call would (a result, or a *contracts.Error); the
// caller knows it cancelled from ctx.Err(). Without an answer within
// grace, the error wraps ErrNoVerdict and ctx.Err(). A ctx that has
// already ended when CallVerdict is called sends nothing and returns
// ctx.Err().
func (c *Client) CallVerdict(ctx context.Context, grace time.Duration, method string, params, result any) error {
	return c.call(ctx, grace, method, params, result)
}

// CallObserved is CallVerdict whose notifications (the daemon's progress
// and events that carry this request's id as "requestId") go to observe
// instead of the OnNotification function. observe runs on the
// connection's reader, as OnNotification does: it must return quickly.
func (c *Client) CallObserved(ctx context.Context, grace time.Duration, method string, params, result any, observe func(method string, params json.RawMessage)) error {
	return c.callID(ctx, grace, c.nextID.Add(1), method, params, result, observe)
}

// observer returns the observer of the call whose id params names.
func (c *Client) observer(params json.RawMessage) func(string, json.RawMessage) {
	var p struct {
		RequestID *uint64 `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return nil
	}
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	return c.observers[*p.RequestID]
}

func (c *Client) call(ctx context.Context, grace time.Duration, method string, params, result any) error {
	return c.callID(ctx, grace, c.nextID.Add(1), method, params, result, nil)
}

func (c *Client) callID(ctx context.Context, grace time.Duration, num uint64, method string, params, result any, observe func(string, json.RawMessage)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if observe != nil {
		c.obsMu.Lock()
		if c.observers == nil {
			c.observers = map[uint64]func(string, json.RawMessage){}
		}
		c.observers[num] = observe
		c.obsMu.Unlock()
		c.nObservers.Add(1)
		defer func() {
			c.obsMu.Lock()
			delete(c.observers, num)
			c.obsMu.Unlock()
			c.nObservers.Add(-1)
		}()
	}
	id := jsonrpc2.ID{Num: num}
	key := strconv.FormatUint(id.Num, 10)
	c.st.expect(key)
	defer c.st.forget(key)
	w, err := c.jc.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		if errors.Is(err, contracts.ErrResourceExhausted) {
			return fmt.Errorf("sending %s: %w", method, err)
		}
		return c.lost(method, err)
	}
	var raw json.RawMessage
	err = w.Wait(ctx, &raw)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Best effort: the daemon stops the work; without a grace, its
		// late reply is dropped by jsonrpc2.
		_ = c.jc.Notify(context.Background(), contracts.MethodCancel, map[string]any{"id": id})
		if grace <= 0 {
			return ctx.Err()
		}
		wctx, cancel := context.WithTimeout(context.Background(), grace)
		err = w.Wait(wctx, &raw)
		cancel()
		if err != nil && wctx.Err() != nil && errors.Is(err, wctx.Err()) {
			return fmt.Errorf("%s: cancelled, and %w within %s: %w", method, ErrNoVerdict, grace, ctx.Err())
		}
	}
	if err != nil {
		var je *jsonrpc2.Error
		if errors.As(err, &je) {
			return c.checkAPI(ctx, method, fromJSONRPCError(je))
		}
		return c.lost(method, err)
	}
	if kept, ok := c.st.takeResult(key); ok {
		raw = kept
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("decoding result of %s: %w", method, err)
	}
	return nil
}

func (c *Client) lost(method string, err error) error {
	// The daemon may have said why it closed the connection (too many
	// connections) before our write failed: give the reader a moment to
	// see it.
	select {
	case <-c.st.readerDone:
	case <-time.After(time.Second):
	}
	if we := c.st.peerErr.Load(); we != nil {
		return we
	}
	return &unreachableError{path: c.path, err: fmt.Errorf("connection lost during %s: %w", method, err)}
}

// Done is closed when the connection has ended: the daemon closed it (it
// stopped, or refused the connection), or Close was called. A client that
// only receives notifications (extensions.mcp.watch) waits on it.
func (c *Client) Done() <-chan struct{} { return c.st.readerDone }

// Close closes the connection and waits for its reader to stop. Calls in
// flight fail with an ErrUnreachable error.
func (c *Client) Close() error {
	err := c.jc.Close()
	<-c.st.readerDone
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return nil
	}
	return err
}

// fromJSONRPCError turns a wire error back into a *contracts.Error. Data
// that does not decode as ErrorData is dropped rather than failing the
// call: the code and message still say what went wrong.
func fromJSONRPCError(je *jsonrpc2.Error) *contracts.Error {
	we := &contracts.Error{Code: int(je.Code), Message: je.Message}
	if je.Data != nil {
		var d contracts.ErrorData
		if json.Unmarshal(*je.Data, &d) == nil {
			we.Data = &d
		}
	}
	return we
}

// unreachableError is a failure to reach the daemon or a lost connection.
type unreachableError struct {
	path string
	err  error
	dial bool
}

func (e *unreachableError) Error() string {
	if e.dial {
		return fmt.Sprintf("cannot reach pikod at socket %s: %v (is pikod running for this --instance?)", e.path, e.err)
	}
	return fmt.Sprintf("pikod at socket %s: %v", e.path, e.err)
}

func (e *unreachableError) Unwrap() []error {
	if !e.dial {
		return []error{ErrConnectionLost, ErrUnreachable, contracts.ErrUnavailable, e.err}
	}
	return []error{ErrUnreachable, contracts.ErrUnavailable, e.err}
}

// ErrConnectionLost marks a connection that ended while a call was out:
// the daemon may have acted on the request.
var ErrConnectionLost = errors.New("connection lost while a request was out")
