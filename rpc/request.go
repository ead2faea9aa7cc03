package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/sourcegraph/jsonrpc2"
)

// Request is one call as a handler sees it.
type Request struct {
	Method string
	// ID is the request's JSON-RPC id as JSON, for notifications that refer
	// to it (progress of a call).
	ID json.RawMessage
	// Params is the raw params member; nil when absent.
	Params json.RawMessage
	// Peer is the calling process (zero when the listener was not made
	// by Listen).
	Peer Peer
	// Received is when the request's last byte was read: it may have
	// waited for a slot since. A disconnect ends the calls made before it
	// by this time.
	Received time.Time
	// Notify sends a notification to the connection this request came on.
	// Notifications sent before the handler returns reach the client before
	// the response.
	Notify func(method string, params any) error

	conn *Conn
	// decoded is the params as the method's row decoded them (Decoded).
	decoded any

	// smu guards scope.
	smu   sync.Mutex
	scope any
}

// SetScope keeps v with the request for Options.Filter: the daemon puts
// there how the request's answer is redacted.
func (r *Request) SetScope(v any) {
	r.smu.Lock()
	r.scope = v
	r.smu.Unlock()
}

// Scope is what SetScope kept (nil when nothing).
func (r *Request) Scope() any {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.scope
}

// Outgoing is what Options.Filter knows of a frame it rewrites.
type Outgoing struct {
	// Request is the request the frame answers, or whose handler sent it
	// (Request.Notify); nil for other frames.
	Request *Request
	// Conn is the connection the frame goes to; nil for a frame written
	// before the connection's first request (a refused line).
	Conn *Conn
}

// Conn returns the connection the request came on. Unlike Notify, it
// outlives the request: a handler may keep it to send notifications later.
func (r *Request) Conn() *Conn { return r.conn }

// Caller is who made the request: the peer's pid and executable as the
// kernel reported them, and what its connection declared so far
// (Conn.Declare), bounded.
func (r *Request) Caller() contracts.Caller {
	if r.conn == nil {
		return contracts.Caller{PID: r.Peer.PID, Executable: r.Peer.Exe}.Bounded()
	}
	return r.conn.Caller()
}

// Conn is one client connection, as handlers may keep it beyond a request
// (the daemon's event watchers do). Its identity is the connection's: every
// request on one connection returns the same *Conn.
type Conn struct {
	cs *connState
	jc *jsonrpc2.Conn
}

// Encoded is a handler's result already encoded as compact JSON (as
// json.Marshal gives it, no newline): the server frames it as it is. A
// handler that serves the same large answer often (a catalog) keeps it
// encoded.
type Encoded []byte

// ErrConnClosed is returned by Conn.Notify once the connection has ended.
var ErrConnClosed = errors.New("connection closed")

// Notify writes one notification to the connection. It waits for the
// connection's writes in progress, and its own write is bounded by the
// server's write timeout; a write that fails or times out closes the
// connection (a peer that does not read must not hold a writer). Every
// frame passes the server's Filter, as responses do. After the connection
// has ended it returns an error wrapping ErrConnClosed at once.
func (c *Conn) Notify(method string, params any) error {
	select {
	case <-c.cs.ctx.Done():
		return fmt.Errorf("sending notification %s: %w", method, ErrConnClosed)
	default:
	}
	if err := c.cs.st.notify(method, params, Outgoing{Conn: c}); err != nil {
		if c.cs.ctx.Err() != nil {
			err = ErrConnClosed
		}
		return fmt.Errorf("sending notification %s: %w", method, err)
	}
	return nil
}

// Done is closed when the connection ends: the peer closed it, a write to
// it failed, or the server is shutting down.
func (c *Conn) Done() <-chan struct{} { return c.cs.ctx.Done() }

// Peer returns the process on the other end (zero when the listener was not
// made by Listen).
func (c *Conn) Peer() Peer { return c.cs.peer }

// Declare records what the client says it is (system.hello's client and
// via) for every later request on the connection; it replaces an earlier
// declaration. The text is kept as declared, bounded (see
// contracts.Caller.Bounded), and never trusted.
func (c *Conn) Declare(client contracts.ClientInfo, via string) {
	d := contracts.Caller{Client: client, Via: via}.Bounded()
	c.cs.mu.Lock()
	c.cs.declared = d
	c.cs.mu.Unlock()
}

// Caller is who is on the connection: the peer's pid and executable, and
// its declaration.
func (c *Conn) Caller() contracts.Caller {
	c.cs.mu.Lock()
	d := c.cs.declared
	c.cs.mu.Unlock()
	d.PID, d.Executable = c.cs.peer.PID, c.cs.peer.Exe
	return d.Bounded()
}

// HandlerFunc serves one method. The result is marshalled with
// encoding/json as the response's result; an error becomes the response's
// error (see Server).
type HandlerFunc func(ctx context.Context, req *Request) (result any, err error)
