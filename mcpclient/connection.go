package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/proc"
)

// conn is one live connection.
type conn struct {
	s        *session
	gen      uint64
	client   *client.Client
	raw      *rawRequester
	proc     *proc.Process // stdio only
	protocol string
	// negotiated says how protocol was chosen (see negotiate).
	negotiated string
	info       contracts.ServerInfo
	since      time.Time
	caps       serverCaps
	// hc and auth are the guarded HTTP client (http, sse) and the watch
	// on it that keeps a 401 or 403; set once, during setup.
	hc   *http.Client
	auth *authWatch
	// replaced is set when setup replaced the client (reopen): the old
	// one's loss is not the connection's.
	replaced *atomic.Bool
	// staged is the grant this connection proves before it is committed
	// (a sign-in), or nil; live is set once the connection is the
	// session's (an OAuth refusal then ends it, see noteRefusal).
	staged *stagedGrant
	live   atomic.Bool

	// subs are the connection's resource subscriptions; listen, on a
	// 2026-07-28 connection, its subscriptions/listen stream.
	subs   subscriptions
	listen *listener
	// gets gates and watches the GET listening stream of a legacy
	// Streamable HTTP transport (nil otherwise; see getStream). Set while
	// the transport is built, before anything runs concurrently.
	gets *getStream

	ctx    context.Context // lives as long as the connection
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines serving this connection

	// changed is signalled (never blocking) by listChanged.
	changed chan struct{}
	// pendMu guards pending: the lists announced as changed that no
	// refetch has read yet.
	pendMu  sync.Mutex
	pending listSet
	// pinMu orders publishing a catalog with re-applying pins to it
	// (publish, refreshPins); held across the pin store's reads and writes.
	pinMu sync.Mutex
	// catMu guards catalog and catReady.
	catMu    sync.Mutex
	catalog  *Catalog
	catReady chan struct{} // closed when catalog is current
	// encMu guards encFor and enc: the JSON of extensions.mcp.catalog for
	// the catalog encFor. A published catalog is never changed (a change
	// publishes a new one), so a different pointer invalidates it.
	encMu  sync.Mutex
	encFor *Catalog
	enc    []byte

	closeOnce sync.Once
	lost      atomic.Pointer[string]

	// progress routes notifications/progress to the calls in flight;
	// calls are those calls, for the server requests that belong to them.
	progress progressRoutes
	calls    callSet
	// noise meters what the server sends unasked against its budgets.
	noise *noise
}

// dial makes one connection and, with staged, proves the staged grant
// with it and commits the grant once the connection is up. A server that
// refuses the connection for want of a token gets one first when its
// grant needs no owner (client_credentials, cross_app_access, jwt_bearer).
func (s *session) dial(ctx context.Context, staged *stagedGrant) (*conn, error) {
	c, err := s.dialOnce(ctx, staged)
	if staged == nil && needsToken(err) {
		if noOwnerGrant(grantTypeOf(&s.cfg)) {
			e, eerr := s.sup.oauthEnv(&s.cfg)
			if eerr != nil {
				return nil, eerr
			}
			g, gerr := s.sup.acquireWithoutBrowser(ctx, e, s.sup.auth(s.cfg.ID).latestChallenge())
			if gerr != nil {
				return nil, gerr
			}
			staged = s.sup.auth(s.cfg.ID).stage(g, nil)
			c, err = s.dialOnce(ctx, staged)
		}
	}
	if err != nil || staged == nil {
		return c, err
	}
	if err := staged.commit(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// needsToken reports whether a connect failed for want of a (valid)
// token: a 401, or a 403 with a Bearer challenge, on the first requests.
func needsToken(err error) bool {
	var na *needsAuthError
	if errors.As(err, &na) {
		return true
	}
	ar, ok := asAuthRequired(err)
	return ok && !ar.permanent
}

// connectStaged makes a new connection that proves a staged grant, and on
// success commits the grant and makes the connection the session's (the
// old one, if any, is closed). Until the commit the session keeps its old
// connection and the old grant; ctx ending first cancels the setup.
func (s *session) connectStaged(ctx context.Context, st *stagedGrant) (*conn, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonServerRemoved,
			"server %q was reconfigured or removed while signing in; sign in again", s.cfg.ID)
	}
	if !s.cfg.IsEnabled() {
		s.mu.Unlock()
		return nil, s.errDisabled()
	}
	if s.setup != nil {
		// A plain connect in progress would use the old grant: this one
		// takes its place (its callers are told it was canceled).
		s.setup.cancel()
	}
	setupCtx, cancel := context.WithCancel(s.sup.ctx)
	call := &setupCall{done: make(chan struct{}), cancel: cancel, staged: st}
	s.setup = call
	if s.conn == nil {
		s.state = contracts.StateConnecting
	}
	s.sup.wg.Add(1)
	go func() {
		defer s.sup.wg.Done()
		defer cancel()
		c, err := s.dial(setupCtx, st)
		s.finishSetup(call, c, err)
	}()
	s.mu.Unlock()
	s.stateEvent()
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		s.mu.Lock()
		if s.setup == call {
			s.setup = nil
			if s.conn == nil {
				s.state = contracts.StateIdle
			}
		}
		s.mu.Unlock()
		call.cancel()
		<-call.done
		if call.err == nil {
			return call.conn, nil
		}
		return nil, ctx.Err()
	}
}

// dialOnce makes one connection: transport, handshake in the era the
// settings ask for (see negotiate), the subscription stream of a
// 2026-07-28 connection, the complete catalog.
func (s *session) dialOnce(ctx context.Context, staged *stagedGrant) (*conn, error) {
	mode := s.cfg.ProtocolMode()
	life, cancel := context.WithCancel(s.sup.ctx)
	c := &conn{s: s, ctx: life, cancel: cancel, changed: make(chan struct{}, 1), catReady: make(chan struct{}),
		noise: newNoise(s.sup.opts.Budgets, &s.dropped, s.log), staged: staged}
	c.listen = &listener{c: c}
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()

	// A Streamable HTTP connection that will speak a legacy version is
	// built with the GET listening stream, which carries that era's
	// notifications and server requests; auto starts without it, and
	// negotiate rebuilds the transport if it falls back.
	pin := pinOf(mode)
	listen := mode == contracts.ProtocolLegacy || (pin != "" && !mcp.IsModernProtocol(pin))
	if err := c.open(listen); err != nil {
		return nil, err
	}
	hs, err := c.negotiate(ctx, mode)
	if err != nil {
		return nil, err
	}
	c.protocol, c.negotiated, c.caps = hs.version, hs.how, hs.caps
	if c.gets != nil {
		// The handshake is complete (notifications/initialized sent): the
		// GET stream may open, with the negotiated version.
		c.gets.begin(c.protocol)
	}
	c.info = contracts.ServerInfo{Name: s.sup.clean(hs.info.Name, 200), Version: s.sup.clean(hs.info.Version, 100)}
	c.since = time.Now().UTC()
	s.log.Info().Str("protocol", c.protocol).Str("negotiated", c.negotiated).Msg("protocol negotiated")

	if mcp.IsModernProtocol(c.protocol) {
		// Opened before the first discovery, so that no change made while
		// it runs goes unheard.
		c.startListening(ctx)
	}
	c.publish(discover(ctx, c.fetchPage, s.settings(), c.caps, s.sup.opts.Limits))
	if ch := c.auth.refusal(); ch != nil {
		// The catalog requests were refused: the connection is not
		// authorized after all.
		return nil, s.needsAuth(ch)
	}
	if cat := c.currentCatalog(); !cat.Complete {
		s.log.Warn().Str("problem", cat.Problem).Msg("catalog incomplete")
	}
	c.restoreLogLevel(ctx)
	c.wg.Add(1)
	go c.watch()
	ok = true
	return c, nil
}

// open builds the transport and the client on it and starts them. Called
// again (HTTP only, see reopen) it replaces both.
func (c *conn) open(listen bool) error {
	s := c.s
	tr, err := s.transport(c, listen)
	if err != nil {
		return err
	}
	info := mcp.Implementation{Name: "pikod", Version: s.sup.opts.ClientVersion}
	c.client = client.NewClient(tr)
	c.raw = &rawRequester{client: c.client, clientInfo: info, capabilities: clientCapabilities(&s.cfg), logLevel: s.currentLogLevel}
	if c.proc != nil {
		c.raw.written = c.proc.StdinWritten
	}
	c.client.OnNotification(c.onNotification)
	// Start's ctx lives as long as the connection (SDK trap: a short ctx
	// kills the transport).
	if err := c.client.Start(c.ctx); err != nil {
		if ch := c.auth.refusal(); ch != nil {
			return s.needsAuth(ch)
		}
		return fmt.Errorf("starting the %s transport: %w", s.cfg.Transport, c.explain(err))
	}
	// Server requests (roots, elicitation, sampling, ping) are pikod's to
	// answer, not mcp-go's handlers': replaces the client's handler.
	if b, ok := tr.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(c.serveRequest)
	}
	replaced := &atomic.Bool{}
	c.replaced = replaced
	c.client.OnConnectionLost(func(err error) {
		if replaced.Load() {
			return // a transport replaced during setup
		}
		s.lostConn(c, "connection lost: "+err.Error(), contracts.StateFailed)
	})
	return nil
}

// reopen replaces an HTTP connection's transport (during setup only, when
// nothing else uses it): the old one is closed first.
func (c *conn) reopen(listen bool) error {
	c.replaced.Store(true)
	_ = c.client.Close()
	return c.open(listen)
}

// noteRefusal hears the authorization refusals of the connection's
// requests (see authTransport): the server's challenge is kept for the
// next sign-in; a 401 on a live connection (a token that cannot be
// renewed) ends it, since every later request would be refused too (the
// legacy GET stream would ask again every second).
func (c *conn) noteRefusal(ar *authRequired) {
	if ar.status != 0 {
		c.s.sup.auth(c.s.cfg.ID).noteChallenge(ar.challenge)
	}
	if c.live.Load() && !ar.challenge.InsufficientScope() {
		c.s.lostConn(c, ar.Error(), contracts.StateNeedsAuth)
	}
}

// explain turns a transport error into one that says what happened to the
// process, when there is one.
func (c *conn) explain(err error) error {
	if c.proc == nil {
		return err
	}
	select {
	case <-c.proc.Done():
		return fmt.Errorf("%w (the server process exited: %s)", err, c.proc.ExitStatus())
	default:
		return err
	}
}

// watch owns the connection's background work: it ends the connection when
// the process exits, and refetches the lists the server announced as
// changed (listChanged). A refetch waits while the server is over a
// notification budget: one runs once it is back under (or never, when the
// flood ends the connection), however many changes it announced
// meanwhile. A refetch that failed runs again after 2 s, then 4 s, ... at
// most a minute apart, until it succeeds or the connection ends.
func (c *conn) watch() {
	defer c.wg.Done()
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.Done()
	}
	var (
		timer   *time.Timer
		timerCh <-chan time.Time
		retry   listSet // lists whose last refetch failed
		backoff time.Duration
	)
	wakeIn := func(d time.Duration) {
		if timer != nil {
			timer.Stop()
		}
		timer = time.NewTimer(d)
		timerCh = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-exited:
			c.s.lostConn(c, "the server process exited ("+c.proc.ExitStatus()+")", contracts.StateFailed)
			return
		case <-c.changed:
		case <-timerCh:
			timerCh = nil
		}
		if c.ctx.Err() != nil {
			return
		}
		if c.noise.over(time.Now()) {
			if timerCh == nil {
				wakeIn(budgetQuietGap)
			}
			continue
		}
		which := c.takePending() | retry
		if which == 0 {
			continue
		}
		if timerCh != nil {
			// A change arrived while a deferred or failed refetch was
			// waiting: this refetch serves both.
			timer.Stop()
			timerCh = nil
		}
		if retry = c.refetch(which); retry != 0 {
			backoff = min(max(2*backoff, refetchRetryFirst), refetchRetryMax)
			wakeIn(backoff)
		} else {
			backoff = 0
		}
	}
}

// onNotification runs on the transport's reader: it only counts, records
// and signals, never blocks. Only what the budgets admit goes any further
// (progress routing, the log ring). Past a budget a notification is
// dropped; a dropped list_changed still leaves its refetch pending (watch
// runs it once the server is back under budget), so no change is lost. A
// server over budget for too long is disconnected from here.
func (c *conn) onNotification(n mcp.JSONRPCNotification) {
	now := time.Now()
	ok, trip := c.noise.admit(noiseOf(n.Method), notificationSize(n), now)
	if trip != "" {
		c.s.lostConn(c, trip+" (pikod does not reconnect by itself: fix the server, then 'pikoctl mcp connect "+c.s.cfg.ID+"')", contracts.StateFailed)
		return
	}
	// A notification of a subscription stream that has ended, or was never
	// pikod's, is dropped (see listener.accepts).
	if !c.listen.accepts(n) {
		return
	}
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged), string(mcp.MethodNotificationResourcesListChanged),
		string(mcp.MethodNotificationPromptsListChanged):
		c.listChanged(n.Method, ok, now)
	case string(mcp.MethodNotificationProgress):
		if ok {
			c.progress.route(n.Params, c.s.sup.clean)
		}
	case string(mcp.MethodNotificationMessage):
		if ok {
			c.s.logMessage(n)
		}
	case mcp.MethodNotificationResourceUpdated:
		if ok {
			c.resourceUpdated(n.Params)
		}
	case mcp.MethodNotificationSubscriptionsAcknowledged:
		// Never dropped: a reopened stream waits for it.
		c.listen.acknowledged(n.Params)
	case string(mcp.MethodNotificationCancelled):
		// On stdio a server ends a subscription stream this way.
		c.listen.endedByServer(n.Params)
	case methodTaskStatus:
		if note, valid := c.s.sup.taskStatusNote(c.s.cfg.ID, n.Params); ok && valid {
			c.s.sup.emit(contracts.EventTask, c.s.cfg.ID, contracts.TaskInfo{TaskID: note.Task.TaskID, Status: note.Task.Status,
				StatusMessage: note.Task.StatusMessage, LastUpdatedAt: note.Task.LastUpdatedAt})
		}
	}
}

func (c *conn) fetchPage(ctx context.Context, method, cursor string) (json.RawMessage, error) {
	var params json.RawMessage
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.s.settings().Timeout())*time.Millisecond)
	defer cancel()
	return c.raw.request(ctx, method, params)
}

// setCatalog makes cat the current catalog. Catalog requests waiting for
// a refetch go on with it, unless another change was announced meanwhile:
// then they wait for the refetch of that one too (not while the server is
// over budget, which defers it).
func (c *conn) setCatalog(cat *Catalog) {
	cat.buildIndex()
	// Encoded before it is published, so the first catalog request is
	// served from the encoding too.
	_, _ = c.encodeCatalog(cat)
	c.catMu.Lock()
	c.catalog = cat
	c.catMu.Unlock()
	c.markReady()
}

// encodeCatalog returns the JSON of extensions.mcp.catalog for cat, which
// must be published (or about to be) and never changed after: it is kept
// until a different catalog is encoded.
func (c *conn) encodeCatalog(cat *Catalog) ([]byte, error) {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.encFor != cat {
		enc, err := json.Marshal(catalogResult(c.s.cfg.ID, cat))
		if err != nil {
			return nil, fmt.Errorf("encoding the catalog of %q: %w", c.s.cfg.ID, err)
		}
		c.encFor, c.enc = cat, enc
	}
	return c.enc, nil
}

func (c *conn) invalidateCatalog() {
	c.catMu.Lock()
	defer c.catMu.Unlock()
	select {
	case <-c.catReady:
		c.catReady = make(chan struct{})
	default:
	}
}

// currentCatalog returns the last discovered catalog, never nil.
func (c *conn) currentCatalog() *Catalog {
	c.catMu.Lock()
	defer c.catMu.Unlock()
	if c.catalog == nil {
		return &Catalog{}
	}
	return c.catalog
}

// freshCatalog waits for a re-discovery in progress, then returns the
// catalog.
func (c *conn) freshCatalog(ctx context.Context) (*Catalog, error) {
	c.catMu.Lock()
	ready := c.catReady
	c.catMu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonConnectionLost, "the connection to %q ended while its catalog was being re-discovered", c.s.cfg.ID)
	}
	return c.currentCatalog(), nil
}

// close ends the connection: the process group for stdio (close stdin,
// wait, SIGTERM, wait, SIGKILL), the transport, and every goroutine of
// the connection.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.closeBrowser()
		c.cancel()
		if c.proc != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			if err := c.proc.Stop(ctx); err != nil {
				c.s.log.Warn().Err(err).Msg("stopping the server process")
			}
			cancel()
			c.s.sup.trackProc(c.proc, false)
		}
		if c.client != nil {
			_ = c.client.Close()
		}
		c.wg.Wait()
	})
}
