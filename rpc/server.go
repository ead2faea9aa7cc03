package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pikod/pikod/contracts"
)

// Defaults of Options.
const (
	DefaultMaxConnections    = 256
	DefaultMaxPendingBytes   = 64 << 20
	DefaultConnPendingBytes  = 32 << 20
	DefaultMaxConcurrent     = 256
	DefaultMaxConnConcurrent = 32
	DefaultMaxControl        = 32
	DefaultMaxConnControl    = 8
)

// Options configure a Server. Zero values take the defaults.
type Options struct {
	Log zerolog.Logger
	// MaxConnections bounds the connections served at once; default 256.
	// A connection beyond it gets one error frame (code 1009, reason
	// too_many_connections) and is closed.
	MaxConnections int
	// MaxPendingBytes bounds the memory held for requests read and not
	// yet answered, across all connections; default 64 MiB. A request
	// counts three times its length plus 8 KiB (it is held as read and
	// decoded); a line being read counts as it grows, and a line longer
	// than 64 KiB as the largest request would. When a connection cannot
	// be charged, it is not read further until answers free the budget (its
	// writes block: back-pressure). Besides it, every connection may hold
	// 64 KiB of its own, so a short request is always read.
	MaxPendingBytes int64
	// ConnPendingBytes bounds what one connection may hold of it; default
	// 32 MiB (never less than the largest request costs).
	ConnPendingBytes int64
	// MaxConcurrent bounds the work-lane requests (every method not
	// flagged contracts.Control) handled at once across all connections;
	// default 256. MaxConnConcurrent bounds them per connection; default
	// 32. Further requests wait for a slot, in order.
	MaxConcurrent     int
	MaxConnConcurrent int
	// MaxControl bounds the control-lane requests (contracts.Control
	// methods) handled at once across all connections, default 32;
	// MaxConnControl per connection, default 8. Control requests never
	// wait for a work slot. $/cancelRequest takes no slot at all.
	MaxControl     int
	MaxConnControl int
	// MaxFrameBytes bounds one line in either direction; default 8 MiB.
	MaxFrameBytes int
	// WriteTimeout bounds each write to a connection; a write that times
	// out closes that connection. Default 10s.
	WriteTimeout time.Duration
	// Filter, when set, rewrites every outgoing frame (responses, errors,
	// notifications) just before it is written; the daemon removes known
	// credential values with it, knowing which request (if any) the frame
	// answers. It must keep the frame valid JSON.
	Filter func([]byte, Outgoing) []byte
	// OwnerCheck runs before the handler of every call of a
	// contracts.TerminalOnly method that is not exempt, once the peer has
	// passed the terminal checks (Peer.CheckTerminal against the server's
	// uid); its error is the call's answer and the handler never runs.
	// The daemon checks the owner approval passphrase with it. When nil,
	// every such call is refused: terminal-only methods fail closed.
	OwnerCheck func(ctx context.Context, req *Request) error
	// RequestContext, when set, derives the context every handler runs
	// with from the request's (the daemon adds when it was received).
	RequestContext func(ctx context.Context, req *Request) context.Context
}

// Server dispatches JSON-RPC requests to registered handlers.
//
// A handler's *contracts.Error is sent as is; any other error goes through
// contracts.ToError, except a bare context cancellation or deadline, which
// becomes the canceled or deadline_exceeded class. A panic is recovered,
// logged and answered as an internal error.
//
// Requests run in two lanes with their own slots: the control lane
// (methods flagged contracts.Control: how the owner sees and stops what is
// going on) and the work lane (everything else: calls, catalogs, ...).
// A request takes a slot of its connection, then one of the server, so one
// client cannot take every slot. Requests read before a client shuts down
// its sending side are answered before the connection closes.
type Server struct {
	log          zerolog.Logger
	maxFrame     int
	writeTimeout time.Duration
	filter       func([]byte, Outgoing) []byte
	ownerCheck   func(context.Context, *Request) error
	requestCtx   func(context.Context, *Request) context.Context
	ownerUID     int
	// methods is contracts.MethodTable by name.
	methods map[string]contracts.MethodInfo
	// checkPeer is Peer.CheckTerminal; tests replace it to reach the
	// steps after it.
	checkPeer func(p Peer, ownerUID int) error

	// work and control are the server-wide slots of the two lanes;
	// connWork and connControl size each connection's.
	work, control         chan struct{}
	connWork, connControl int
	// pool is the request budget; connMax what one connection may hold.
	pool     *pool
	connMax  int64
	maxConns int

	// mu guards the fields that follow.
	mu       sync.Mutex
	handlers map[string]Method
	serving  bool
	conns    int // connections being served
	// refused counts connections refused since the last warning about
	// them; lastRefusal is when that warning was logged.
	refused     int
	lastRefusal time.Time

	// testHookQueued, if set, runs when a request has to wait for a slot.
	testHookQueued func()
}

// NewServer returns a server with no methods.
func NewServer(opts Options) *Server {
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	orDefault := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefault(&opts.MaxConnections, DefaultMaxConnections)
	orDefault(&opts.MaxConcurrent, DefaultMaxConcurrent)
	orDefault(&opts.MaxConnConcurrent, DefaultMaxConnConcurrent)
	orDefault(&opts.MaxControl, DefaultMaxControl)
	orDefault(&opts.MaxConnControl, DefaultMaxConnControl)
	if opts.ConnPendingBytes <= 0 {
		opts.ConnPendingBytes = DefaultConnPendingBytes
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	// A connection must be able to hold the largest request, and the pool
	// must be able to give it that much.
	opts.ConnPendingBytes = max(opts.ConnPendingBytes, requestCharge(opts.MaxFrameBytes)+connReserve)
	opts.MaxPendingBytes = max(opts.MaxPendingBytes, opts.ConnPendingBytes)

	methods := make(map[string]contracts.MethodInfo, len(contracts.MethodTable))
	for _, m := range contracts.MethodTable {
		methods[m.Name] = m
	}
	return &Server{
		log:          opts.Log,
		maxFrame:     opts.MaxFrameBytes,
		writeTimeout: opts.WriteTimeout,
		filter:       opts.Filter,
		ownerCheck:   opts.OwnerCheck,
		requestCtx:   opts.RequestContext,
		ownerUID:     os.Getuid(),
		methods:      methods,
		checkPeer:    Peer.CheckTerminal,
		work:         make(chan struct{}, opts.MaxConcurrent),
		control:      make(chan struct{}, opts.MaxControl),
		connWork:     opts.MaxConnConcurrent,
		connControl:  opts.MaxConnControl,
		pool:         newPool(opts.MaxPendingBytes),
		connMax:      opts.ConnPendingBytes,
		maxConns:     opts.MaxConnections,
		handlers:     map[string]Method{},
	}
}

// Register adds the handler for method, which reads its raw params itself
// (see Handle for typed rows). It must be called before Serve;
// registering a method twice or after Serve started panics, as both are
// programming errors.
func (s *Server) Register(method string, h HandlerFunc) {
	s.Handle(method, rawMethod(s.methods[method], h))
}

// Handle adds the row of method (see Method). As for Register, it must be
// called before Serve and once per method. A terminal-only method with an
// exemption needs params with that member: Handle panics otherwise.
func (s *Server) Handle(method string, m Method) {
	m.bindExemption(s.methods[method])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		panic("rpc: Register called after Serve: " + method)
	}
	if _, dup := s.handlers[method]; dup {
		panic("rpc: method registered twice: " + method)
	}
	if method == contracts.MethodCancel || method == "" {
		panic("rpc: cannot register method " + method)
	}
	s.handlers[method] = m
}

// Serve accepts connections on ln until ctx is cancelled, then closes ln,
// cancels every in-flight handler, closes every connection and waits for
// every goroutine it started. It returns nil after cancellation, or the
// error that made Accept fail for good.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	s.serving = true
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// Out of descriptors and the like: wait and retry
				// rather than spin or give up.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil
				}
				continue
			}
			return fmt.Errorf("accepting connections: %w", err)
		}
		backoff = 0
		s.mu.Lock()
		full := s.conns >= s.maxConns
		if !full {
			s.conns++
		}
		s.mu.Unlock()
		if full {
			s.refuse(nc)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				s.mu.Lock()
				s.conns--
				s.mu.Unlock()
			}()
			s.serveConn(ctx, nc)
		}()
	}
}

// refuse answers a connection over the limit with one error frame and
// closes it. It runs on the accept loop, so it never waits on the peer:
// the frame fits an empty socket buffer, and whatever the peer already
// sent is discarded first, so closing does not reset the connection
// before the peer reads why.
func (s *Server) refuse(nc net.Conn) {
	defer nc.Close()
	we := contracts.ToError(contracts.WithHint(
		contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonTooManyConnections,
			"too many connections: pikod serves at most %d at once", s.maxConns),
		"close clients that are idle, or wait for one to finish, and connect again"))
	frame, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *int            `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", nil, toJSONRPCError(we)})
	if err == nil {
		_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = nc.Write(append(frame, '\n'))
	}
	discardQueued(nc)

	s.mu.Lock()
	s.refused++
	warn := time.Since(s.lastRefusal) >= 10*time.Second
	n := s.refused
	if warn {
		s.refused, s.lastRefusal = 0, time.Now()
	}
	s.mu.Unlock()
	if warn {
		s.log.Warn().Int("max_connections", s.maxConns).Int("refused", n).Msg("refused connections: too many at once")
	}
}

// connState is the server's view of one connection.
type connState struct {
	peer Peer
	st   *stream
	// ctx is the parent of every handler's context: it ends at shutdown
	// or when the peer goes away.
	ctx context.Context
	// work and control are this connection's slots of the two lanes.
	work, control chan struct{}

	// mu guards the fields that follow.
	mu       sync.Mutex
	closed   bool // no more handler goroutines may start
	inflight map[jsonrpc2.ID]context.CancelFunc
	// idle, when set, is closed once inflight is empty: the reader waits
	// on it after the peer shut down its sending side.
	idle chan struct{}
	wg   sync.WaitGroup // handler goroutines
	// conn is the connection as handlers see it, made at the first
	// request.
	conn *Conn
	// declared is what the client declared itself to be (Conn.Declare);
	// only its Client and Via are set.
	declared contracts.Caller
}

// finish forgets a request that has been answered.
func (cs *connState) finish(id jsonrpc2.ID) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.inflight, id)
	if len(cs.inflight) == 0 && cs.idle != nil {
		close(cs.idle)
		cs.idle = nil
	}
}

func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cs := &connState{
		inflight: map[jsonrpc2.ID]context.CancelFunc{},
		work:     make(chan struct{}, s.connWork),
		control:  make(chan struct{}, s.connControl),
	}
	cs.peer, _ = PeerOf(nc)
	log := s.log.With().Int("peer_pid", cs.peer.PID).Logger()
	log.Debug().Str("peer_exe", cs.peer.Exe).Msg("connection opened")

	st := newStream(nc, s.maxFrame, s.writeTimeout, true, log)
	st.filter = s.filter
	acct := newAccount(s.pool, connReserve, s.connMax)
	st.charge(acct)
	st.onEOF = func() { s.drain(cs, log) }
	cs.st = st
	cs.ctx = ctx
	// The connection itself outlives shutdown's cancellation until every
	// handler has answered: a call cut short by shutdown must still tell
	// its caller that its outcome is uncertain, not vanish with the socket.
	connCtx, connCancel := context.WithCancel(context.Background())
	defer connCancel()
	jc := jsonrpc2.NewConn(connCtx, st, handlerFunc(func(hctx context.Context, jc *jsonrpc2.Conn, r *jsonrpc2.Request) {
		s.dispatch(hctx, jc, cs, r, log)
	}), jsonrpc2.SetLogger(printfLogger{log}))

	// DisconnectNotify fires when the reader stops (the peer closed, or
	// shut down its side and every request it sent has been answered; a
	// broken frame) or a write failed.
	select {
	case <-jc.DisconnectNotify():
	case <-ctx.Done():
	}
	cs.mu.Lock()
	cs.closed = true
	cs.mu.Unlock()
	cancel() // handlers' contexts
	cs.wg.Wait()
	st.cancel() // a reader waiting for budget
	jc.Close()
	<-st.readerDone
	if n := acct.charged(); n != 0 {
		log.Error().Int64("bytes", n).Msg("request budget still charged after the connection closed; released")
		acct.release(n)
	}
	log.Debug().Msg("connection closed")
}

// drain runs on the reader once the peer has shut down its sending side:
// it returns when every request already read has been answered, or the
// peer has closed the connection for good (or a write to it failed), in
// which case the requests left are cancelled as for any closed
// connection.
func (s *Server) drain(cs *connState, log zerolog.Logger) {
	cs.mu.Lock()
	n := len(cs.inflight)
	if n == 0 {
		cs.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	cs.idle = idle
	cs.mu.Unlock()
	log.Debug().Int("requests", n).Msg("peer finished sending; answering its requests before closing")
	gone, stop := watchHangup(cs.st.nc)
	defer stop()
	select {
	case <-idle:
	case <-gone:
		log.Debug().Msg("peer closed the connection; cancelling its requests")
	case <-cs.st.ctx.Done():
	}
}

// dispatch runs on jsonrpc2's read goroutine: it must not block for long.
func (s *Server) dispatch(ctx context.Context, jc *jsonrpc2.Conn, cs *connState, r *jsonrpc2.Request, log zerolog.Logger) {
	// The message exactly as received (see stream.cur); taken first so
	// every path releases its budget.
	f := cs.st.take()
	if f == nil {
		f = &frame{received: time.Now()}
	}
	// idJSON is the id as json.Marshal gives it, for every answer.
	var idJSON json.RawMessage
	if !r.Notif {
		if b, err := json.Marshal(r.ID); err == nil {
			idJSON = b
		}
		if f.id != string(idJSON) {
			// Cannot happen: the stream hands jsonrpc2 the envelope of
			// the very message it keeps.
			log.Error().Msg("dispatch: the message read is not the one dispatched; ignoring its params")
			cs.st.acct.release(f.charge)
			f = &frame{received: time.Now()}
		}
	}
	answered := func() { cs.st.acct.release(f.charge) }
	// Early answers echo the caller's id and method: the filter is told
	// they are the caller's own.
	early := Outgoing{Request: &Request{Method: r.Method, Params: f.params, Peer: cs.peer, ID: idJSON}}
	if r.Method == contracts.MethodCancel {
		cs.cancel(f.params, log)
		if !r.Notif {
			s.reply(ctx, jc, cs.st, r.ID, json.RawMessage("null"), nil, log, early)
		}
		answered()
		return
	}
	if r.Notif {
		log.Debug().Str("method", r.Method).Msg("ignoring notification")
		answered()
		return
	}
	s.mu.Lock()
	m, ok := s.handlers[r.Method]
	s.mu.Unlock()
	if !ok {
		log.Debug().Str("method", r.Method).Stringer("id", r.ID).Int("code", contracts.CodeMethodNotFound).Msg("request")
		s.reply(ctx, jc, cs.st, r.ID, nil, &contracts.Error{
			Code:    contracts.CodeMethodNotFound,
			Message: "method not found: " + r.Method,
			Data:    &contracts.ErrorData{Reason: contracts.ReasonMethodNotFound},
		}, log, early)
		answered()
		return
	}

	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		answered()
		return
	}
	if _, dup := cs.inflight[r.ID]; dup {
		cs.mu.Unlock()
		s.reply(ctx, jc, cs.st, r.ID, nil, &contracts.Error{
			Code:    contracts.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: id %s is already in use by a request in flight", r.ID),
			Data:    &contracts.ErrorData{Reason: contracts.ReasonInvalidRequest},
		}, log, early)
		answered()
		return
	}
	rctx, rcancel := context.WithCancel(cs.ctx)
	cs.inflight[r.ID] = rcancel
	cs.wg.Add(1)
	if cs.conn == nil {
		cs.conn = &Conn{cs: cs, jc: jc}
	}
	conn := cs.conn
	cs.mu.Unlock()

	req := &Request{Method: r.Method, Peer: cs.peer, Params: f.params, Received: f.received, conn: conn, ID: idJSON}
	req.Notify = func(method string, params any) error {
		if rctx.Err() != nil {
			return fmt.Errorf("sending notification %s: %w", method, ErrConnClosed)
		}
		if err := cs.st.notify(method, params, Outgoing{Request: req, Conn: conn}); err != nil {
			return fmt.Errorf("sending notification %s: %w", method, err)
		}
		return nil
	}
	control := s.methods[r.Method].Control()
	go func() {
		defer cs.wg.Done()
		defer rcancel()
		defer cs.finish(r.ID)
		defer answered()
		start := time.Now()
		result, werr := s.run(rctx, cs, m, req, control, log)
		code := 0
		if werr != nil {
			code = werr.Code
		}
		log.Debug().Str("method", r.Method).Stringer("id", r.ID).Dur("duration", time.Since(start)).Int("code", code).Msg("request")
		s.reply(ctx, jc, cs.st, r.ID, result, werr, log, Outgoing{Request: req, Conn: conn})
	}()
}

// run waits for a slot of its lane, calls h and encodes its outcome. The
// slot is released before the reply is written, so a slow reader never
// holds one.
func (s *Server) run(ctx context.Context, cs *connState, m Method, req *Request, control bool, log zerolog.Logger) (json.RawMessage, *contracts.Error) {
	release, err := s.slot(ctx, cs, control)
	if err != nil {
		return nil, s.wireError(req.Method, err, log)
	}
	// The params are decoded here, once: the exemption, the owner check
	// and the handler all read this value.
	params, derr := m.decode(req.Params)
	if derr != nil && !m.strict {
		// A raw row's handler decodes (and answers) for itself; the call
		// is just not exempt.
		params, derr = nil, nil
	}
	req.decoded = params
	var result any
	err = s.admit(ctx, req, m.isExempt(params), derr == nil, log)
	if err == nil {
		if derr != nil {
			err = m.decodeError(derr)
		} else {
			if s.requestCtx != nil {
				ctx = s.requestCtx(ctx, req)
			}
			result, err = s.call(ctx, m, req, params, log)
		}
		if err != nil && m.mapErr != nil {
			err = m.mapErr(err)
		}
	}
	release()
	if err != nil {
		return nil, s.wireError(req.Method, err, log)
	}
	var data []byte
	if enc, ok := result.(Encoded); ok {
		data = enc
	} else if data, err = json.Marshal(result); err != nil {
		return nil, s.wireError(req.Method, fmt.Errorf("encoding result of %s: %w", req.Method, err), log)
	}
	// Leave room for the envelope around the result.
	if len(data) > s.maxFrame-256 {
		return nil, contracts.ToError(contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonResultTooLarge,
			"the result of %s is %d bytes, over the %d-byte frame limit", req.Method, len(data), s.maxFrame))
	}
	return data, nil
}

// slot takes a slot of the connection's lane, then one of the server's:
// waiting for the connection's own never holds a server slot. The control
// lane and the work lane never share slots.
func (s *Server) slot(ctx context.Context, cs *connState, control bool) (release func(), err error) {
	mine, all := cs.work, s.work
	if control {
		mine, all = cs.control, s.control
	}
	if err := s.acquire(ctx, mine); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx, all); err != nil {
		<-mine
		return nil, err
	}
	return func() {
		<-all
		<-mine
	}, nil
}

func (s *Server) acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if s.testHookQueued != nil {
		s.testHookQueued()
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// admit is the one place where terminal-only methods are enforced: a call
// of a contracts.TerminalOnly method that is not exempt reaches its
// handler only if the peer passes every terminal check and then the
// owner check. A call whose params did not decode (decoded false) is
// answered with that error once the terminal checks pass: the owner check
// is not asked for a call that cannot run. Nothing of the params is
// logged.
func (s *Server) admit(ctx context.Context, req *Request, exempt, decoded bool, log zerolog.Logger) (err error) {
	info, ok := s.methods[req.Method]
	if !ok || !info.TerminalOnly() || exempt {
		return nil
	}
	if err := s.checkPeer(req.Peer, s.ownerUID); err != nil {
		var te *TerminalError
		if !errors.As(err, &te) {
			te = uncheckedErr(req.Peer.PID, err)
		}
		log.Warn().Str("method", req.Method).Int("peer_pid", req.Peer.PID).Str("check", te.Check).
			Str("detail", te.Detail).Msg("terminal-only call refused")
		return terminalRefusal(req.Method, te)
	}
	if !decoded {
		return nil
	}
	if s.ownerCheck == nil {
		log.Warn().Str("method", req.Method).Int("peer_pid", req.Peer.PID).Msg("terminal-only call refused: no owner check configured")
		return contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonOwnerCheckUnavailable,
			"%s is terminal-only and this server has no owner check: refused", req.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("method", req.Method).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("owner check panicked")
			err = fmt.Errorf("owner check for %s panicked: %w", req.Method, contracts.ErrInternal)
		}
	}()
	return s.ownerCheck(ctx, req)
}

func (s *Server) call(ctx context.Context, m Method, req *Request, params any, log zerolog.Logger) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("method", req.Method).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("handler panicked")
			result = nil
			err = fmt.Errorf("handler for %s panicked: %w", req.Method, contracts.ErrInternal)
		}
	}()
	return m.serve(ctx, req, params)
}

// wireError maps a handler error to the wire. contracts.ToError is the one
// class-to-code mapping; we only give context errors their class first, as
// a cancelled request is not an internal failure.
func (s *Server) wireError(method string, err error, log zerolog.Logger) *contracts.Error {
	if !hasClass(err) {
		switch {
		case errors.Is(err, context.Canceled):
			err = contracts.Errorf(contracts.ErrCanceled, contracts.ReasonCanceled, "%s was canceled", method)
		case errors.Is(err, context.DeadlineExceeded):
			err = contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonDeadlineExceeded, "%s ran out of time", method)
		}
	}
	we := contracts.ToError(err)
	if errors.Is(we, contracts.ErrInternal) {
		log.Warn().Str("method", method).Str("error", we.Message).Msg("internal error")
	}
	return we
}

func hasClass(err error) bool {
	var we *contracts.Error
	if errors.As(err, &we) {
		return true
	}
	for _, c := range contracts.ErrorCodes {
		if errors.Is(err, c.Class) {
			return true
		}
	}
	return false
}

// reply answers request id. A result (compact JSON, as json.Marshal gives
// it) is framed here and written as it is, not decoded and encoded again.
func (s *Server) reply(ctx context.Context, jc *jsonrpc2.Conn, st *stream, id jsonrpc2.ID, result json.RawMessage, we *contracts.Error, log zerolog.Logger, out ...Outgoing) {
	var o Outgoing
	if len(out) > 0 {
		o = out[0]
	}
	var err error
	if we != nil {
		// As jsonrpc2 would write it, through the filter with o.
		err = st.writeObjectFor(&jsonrpc2.Response{ID: id, Error: toJSONRPCError(we)}, o)
	} else {
		err = st.writeResult(id, result, o)
	}
	if err != nil {
		log.Debug().Err(err).Stringer("id", id).Msg("cannot send response")
	}
}

func toJSONRPCError(we *contracts.Error) *jsonrpc2.Error {
	e := &jsonrpc2.Error{Code: int64(we.Code), Message: we.Message}
	if we.Data != nil {
		e.SetError(we.Data)
	}
	return e
}

// cancel handles $/cancelRequest {"id": ID}: it cancels the context of
// this connection's in-flight request with that id, if any.
func (cs *connState) cancel(params json.RawMessage, log zerolog.Logger) {
	var p struct {
		ID *jsonrpc2.ID `json:"id"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil || p.ID == nil {
		log.Debug().Msg("ignoring malformed $/cancelRequest")
		return
	}
	cs.mu.Lock()
	cancel := cs.inflight[*p.ID]
	cs.mu.Unlock()
	if cancel != nil {
		log.Debug().Stringer("id", *p.ID).Msg("request canceled by client")
		cancel()
	}
}

type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// printfLogger bridges jsonrpc2's Printf logger into zerolog at debug:
// what it reports (protocol errors on close, stray responses) is about one
// peer, not the daemon.
type printfLogger struct{ log zerolog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Debug().Msg(strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// isTemporaryAccept reports accept errors worth retrying: resource
// shortages and connections aborted before we got to them.
func isTemporaryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
