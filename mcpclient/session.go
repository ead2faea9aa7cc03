package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/rs/zerolog"
)

// session is one configured server: its settings (fixed for the session's
// life, but for its roots; changed settings get a new session) and at most
// one live connection.
type session struct {
	sup *Supervisor
	// cfg never changes: the settings the session started with. What
	// decides how the server is started or reached is read from it; the
	// policy pikod applies live (grants, timeouts) and the roots are read
	// from settings().
	cfg contracts.ServerSettings
	// rest is cfg's connection digest: a saved change that keeps it (see
	// Supervisor.Apply) keeps the session and its connection.
	rest string
	// live is the settings in force now: cfg, or what a later Apply that
	// kept the session set (never mutated in place).
	live atomic.Pointer[contracts.ServerSettings]
	log  zerolog.Logger

	// mu guards the fields that follow.
	mu sync.Mutex
	// digest is the digest of the settings in force (cfg's, or with the
	// roots a later Apply set): what approvals bind to.
	digest     string
	state      string
	lastErr    string
	setup      *setupCall    // the connect in progress, shared by its callers
	conn       *conn         // the live connection, nil unless connected
	generation uint64        // of the last successful connect; see Supervisor.nextGeneration
	lastProc   *proc.Process // for pid, exit status and stderr after a failure
	stopped    bool          // the session was removed; it never connects again
	// challenge is the refusal that left the session needs_auth (nil
	// otherwise); see Supervisor.AuthChallenge.
	challenge *AuthChallenge

	// dropped counts, per budget, the messages its connections dropped
	// over budget, for the session's whole life.
	dropped [noiseKinds]atomic.Uint64
	// disconnectedAt is when the last disconnect happened: requests made
	// before it are refused (see WithRequestTime). ended is closed by
	// each disconnect (and replaced): it ends waits for slots.
	disconnectedAt time.Time
	ended          chan struct{}

	// slots bounds the work sent to this server at once (see admit).
	slots chan struct{}

	// held keeps the entries of the skills loaded through this session.
	held heldSkills

	// logs keeps the server's log messages across its connections; a
	// settings change makes a new session, and so a new ring.
	logs *logRing
	// logLevel (guarded by mu) is the level the owner set, "" for none:
	// set again on every legacy connect, carried by every 2026-07-28
	// request.
	logLevel string
}

type setupCall struct {
	done   chan struct{}
	cancel context.CancelFunc
	conn   *conn
	err    error
	// staged is the grant this setup proves and commits (a sign-in), or nil.
	staged *stagedGrant
}

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

func newSession(sup *Supervisor, cfg contracts.ServerSettings) *session {
	s := &session{sup: sup, cfg: cfg, digest: cfg.Digest(), rest: cfg.ConnectionDigest(),
		log:   sup.log.With().Str("server", cfg.ID).Logger(),
		ended: make(chan struct{}), slots: make(chan struct{}, sup.opts.MaxPerServer),
		logs: newLogRing(sup.opts.LogEntries, sup.opts.LogBytes)}
	live := cfg
	s.live.Store(&live)
	s.state = contracts.StateIdle
	if !cfg.IsEnabled() {
		s.state = contracts.StateDisabled
	}
	return s
}

// settings returns the settings in force now (see live). Never modify it.
func (s *session) settings() *contracts.ServerSettings { return s.live.Load() }

// connect returns the live connection, starting one if there is none.
// Concurrent callers share one setup; each waits under its own ctx.
func (s *session) connect(ctx context.Context) (*conn, error) {
	if err := s.madeBeforeDisconnect(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.conn != nil {
		c := s.conn
		s.mu.Unlock()
		return c, nil
	}
	if s.stopped {
		s.mu.Unlock()
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonServerRemoved,
			"server %q was reconfigured or removed while connecting; try again", s.cfg.ID)
	}
	if !s.cfg.IsEnabled() {
		s.mu.Unlock()
		return nil, s.errDisabled()
	}
	call := s.setup
	if call == nil {
		setupCtx, cancel := context.WithCancel(s.sup.ctx)
		call = &setupCall{done: make(chan struct{}), cancel: cancel}
		s.setup = call
		s.state = contracts.StateConnecting
		s.challenge = nil
		s.sup.wg.Add(1)
		go func() {
			defer s.sup.wg.Done()
			defer cancel()
			c, err := s.dial(setupCtx, nil)
			s.finishSetup(call, c, err)
		}()
		s.mu.Unlock()
		s.stateEvent()
	} else {
		s.mu.Unlock()
	}
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *session) finishSetup(call *setupCall, c *conn, err error) {
	s.mu.Lock()
	canceled := s.stopped || s.setup != call
	if canceled {
		// A disconnect (or a new configuration) ended this setup: whatever
		// it returned, that is the story; a newer setup owns the state.
		err = contracts.Errorf(contracts.ErrCanceled, contracts.ReasonConnectCanceled, "connecting to %q was canceled by a disconnect", s.cfg.ID)
	}
	if err == nil {
		// A connection lost during discovery was not live yet, so lostConn
		// could not fail the session: do it here, under mu, or the session
		// would stay connected to a dead connection.
		if why := c.lost.Load(); why != nil {
			err = errors.New(*why)
		}
	}
	if s.setup == call {
		s.setup = nil
	}
	var replaced *conn
	if err != nil {
		if c != nil {
			defer c.close()
		}
		if !canceled && s.state == contracts.StateConnecting {
			s.state = contracts.StateFailed
			s.lastErr = s.sup.clean(saidOnce(err.Error()), 2000)
			var na *needsAuthError
			if errors.As(err, &na) {
				s.state = contracts.StateNeedsAuth
				s.challenge = &na.challenge
			} else if ar, ok := asAuthRequired(err); ok && !ar.permanent {
				s.state = contracts.StateNeedsAuth
			}
		}
		err = s.connectError(err)
		s.log.Warn().Err(err).Msg("connect failed")
	} else {
		// A sign-in's connection replaces the one that ran with the old
		// grant.
		replaced = s.conn
		// Generations are unique across daemon restarts too, so an action
		// prepared before a restart can never match a later connection.
		s.generation = s.sup.nextGeneration()
		c.gen = s.generation
		s.conn = c
		c.live.Store(true)
		s.state = contracts.StateConnected
		s.lastErr = ""
		s.challenge = nil
		s.log.Info().Str("protocol", c.protocol).Str("server_name", c.info.Name).Uint64("generation", c.gen).
			Int("tools", len(c.currentCatalog().Tools)).Msg("connected")
	}
	if replaced != nil {
		why := "the connection was replaced by one with the new sign-in"
		replaced.lost.CompareAndSwap(nil, &why)
		s.sup.wg.Add(1)
		go func() {
			defer s.sup.wg.Done()
			replaced.close()
		}()
	}
	call.conn, call.err = c, err
	if err != nil {
		call.conn = nil
	}
	s.mu.Unlock()
	// Watchers hear of the outcome before the callers waiting for it do.
	s.stateEvent()
	close(call.done)
}

func (s *session) connectError(err error) error {
	id := s.cfg.ID
	var ce *contracts.Error
	var reasoned interface{ Reason() string }
	if errors.As(err, &ce) || errors.Is(err, contracts.ErrCanceled) || errors.Is(err, contracts.ErrFailedPrecondition) ||
		(errors.As(err, &reasoned) && reasoned.Reason() != "") {
		// Already says what happened and what to do (vault errors, pins).
		return err
	}
	hint := "see 'pikoctl mcp status " + id + "' for the server's stderr; fix the settings or the server, then 'pikoctl mcp connect " + id + "'"
	if s.cfg.Transport != contracts.TransportStdio {
		// A remote server's stderr is not pikod's to show.
		hint = "check that the server at its url is up and reachable from this machine, and the url and headers in the settings " +
			"('pikoctl mcp status " + id + "' shows the last error); then 'pikoctl mcp connect " + id + "'"
	}
	return contracts.WithHint(
		contracts.WithReason(fmt.Errorf("connecting to %q: %s: %w", id, s.sup.clean(saidOnce(err.Error()), 2000), contracts.ErrUnavailable), contracts.ReasonConnectFailed),
		hint)
}

// disconnect stops the live connection or the setup in progress. The
// session returns to idle (or disabled). Requests waiting for this
// server's slots, and every request made before now that has not been sent,
// end with nothing sent; the ones in flight end with the connection.
func (s *session) disconnect() (wasConnected bool) {
	s.mu.Lock()
	s.disconnectedAt = time.Now()
	close(s.ended)
	s.ended = make(chan struct{})
	c := s.conn
	s.conn = nil
	if s.setup != nil {
		s.setup.cancel()
		s.setup = nil
	}
	if s.cfg.IsEnabled() {
		s.state = contracts.StateIdle
	} else {
		s.state = contracts.StateDisabled
	}
	s.lastErr = ""
	s.mu.Unlock()
	if c != nil {
		// Calls in flight say why their connection ended.
		why := "the server was disconnected"
		c.lost.CompareAndSwap(nil, &why)
		c.close()
		s.log.Info().Msg("disconnected")
	}
	s.stateEvent()
	return c != nil
}

// stop ends the session for good (settings changed or removed, shutdown).
func (s *session) stop() bool {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return s.disconnect()
}

// lostConn marks c dead: the session fails with why, unless c is no longer
// the live connection (a disconnect got there first).
func (s *session) lostConn(c *conn, why string, state string) {
	if !c.lost.CompareAndSwap(nil, &why) {
		return
	}
	s.mu.Lock()
	current := s.conn == c
	if current {
		s.conn = nil
		s.state = state
		s.lastErr = s.sup.clean(why, 2000)
	}
	// close waits for this connection's goroutines, one of which may be
	// the caller: never wait on ourselves. The goroutine is counted before
	// mu is released: a disconnect or Close that finds the connection gone
	// must also find it counted, or Close's Wait could race this Add.
	s.sup.wg.Add(1)
	s.mu.Unlock()
	if current {
		s.log.Warn().Str("reason", why).Msg("connection lost")
		s.stateEvent()
	}
	go func() {
		defer s.sup.wg.Done()
		c.close()
	}()
}

// stateEvent tells the watchers the session's state as it is now. Call it
// without mu held, after a change.
func (s *session) stateEvent() {
	s.mu.Lock()
	ev := contracts.StateEventData{State: s.state, LastError: s.lastErr}
	s.mu.Unlock()
	s.sup.emit(contracts.EventState, s.cfg.ID, ev)
}

// status describes the session now.
func (s *session) status() contracts.ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := contracts.ServerStatus{ID: s.cfg.ID, Enabled: s.cfg.IsEnabled(), Transport: s.cfg.Transport,
		State: s.state, LastError: s.lastErr}
	lp := s.lastProc
	if c := s.conn; c != nil {
		st.ProtocolVersion = c.protocol
		st.Negotiated = c.negotiated
		info := c.info
		st.ServerInfo = &info
		st.ConnectedSince = c.since.Format(time.RFC3339)
		st.Generation = c.gen
		cat := c.currentCatalog()
		st.ToolCount, st.ResourceCount, st.TemplateCount, st.PromptCount =
			len(cat.Tools), len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts)
		st.CatalogComplete = cat.Complete
		st.CatalogProblem = cat.Problem
		st.ChangedTools = changedTools(cat)
		if len(cat.Excluded) > 0 {
			var names []string
			for i, e := range cat.Excluded {
				if i == 10 {
					names = append(names, "…")
					break
				}
				names = append(names, strconv.Quote(s.sup.clip(e.Name, 80)))
			}
			st.Notes = append(st.Notes, fmt.Sprintf("%d tool(s) left out of the catalog for invalid x-mcp-header annotations: %s (see 'pikoctl mcp catalog %s')",
				len(cat.Excluded), strings.Join(names, ", "), s.cfg.ID))
		}
		st.Subscriptions = c.subs.list()
		if n := c.listen.note(); n != "" {
			st.Notes = append(st.Notes, n)
		}
		if c.gets != nil {
			st.ListenStream = c.gets.status()
			if n := c.gets.note(); n != "" {
				st.Notes = append(st.Notes, n)
			}
		}
	}
	if n, l := s.dropped[noiseNotification].Load(), s.dropped[noiseLog].Load(); n+l > 0 {
		st.Dropped = &contracts.DroppedCounts{Notifications: n, LogMessages: l}
	}
	if lp != nil {
		// Redacted line by line as it arrived; made safe to show here.
		st.StderrTail = contracts.SafeText(lp.StderrTail(), contracts.Lines, 0)
		if s.conn != nil {
			st.PID, st.PGID = lp.PID(), lp.PGID()
		} else if es := lp.ExitStatus(); es != "" {
			st.ExitStatus = es
		}
	}
	return st
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

// errDisabled is the refusal to connect a server its settings disable.
func (s *session) errDisabled() error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonServerDisabled, "server %q is disabled", s.cfg.ID),
		`set "enabled": true in its settings and configure again`)
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

func pinOf(mode string) string {
	if mode == contracts.ProtocolLegacy || mode == contracts.ProtocolAuto {
		return ""
	}
	return mode
}

// transport builds the mcp-go transport for the server's settings. For
// http and sse the guarded client is built once per connection and kept
// on c, so a rebuilt transport reuses it (and its connections).
func (s *session) transport(c *conn, listen bool) (transport.Interface, error) {
	var creds Credentials
	if s.sup.opts.Credentials != nil && (s.cfg.Transport == contracts.TransportStdio || c.hc == nil) {
		var err error
		if creds, err = s.sup.opts.Credentials(&s.cfg); err != nil {
			return nil, err
		}
	}
	switch s.cfg.Transport {
	case contracts.TransportStdio:
		env := map[string]string{}
		for k, v := range s.cfg.Env {
			env[k] = v
		}
		for k, v := range creds.Env {
			env[k] = v
		}
		p, err := proc.Start(proc.Spec{
			ServerID: s.cfg.ID, Command: s.cfg.Command, Args: s.cfg.Args, Cwd: s.cfg.Cwd, Env: env,
			MaxLineBytes: s.cfg.MessageLimit(), RunDir: s.sup.opts.RunDir, PATH: s.sup.opts.PATH,
			CacheDir: s.sup.cacheDir(s.cfg.ID), Redact: s.sup.opts.Redact, ShortTempDir: s.cfg.Browser != nil,
		}, s.sup.opts.Records, s.log)
		if err != nil {
			return nil, err
		}
		c.proc = p
		s.sup.trackProc(p, true)
		s.mu.Lock()
		s.lastProc = p
		s.mu.Unlock()
		stdout := &watchedReader{r: p.Stdout(), onErr: func(err error) { c.stdoutEnded(err) }}
		tr := transport.NewIO(stdout, p.Stdin(), nil)
		transport.WithCommandLogger(sdkLogger(s.log, s.sup.clean))(tr)
		return tr, nil
	case contracts.TransportHTTP, contracts.TransportSSE:
		if c.hc == nil {
			headers := map[string]string{}
			for k, v := range s.cfg.Headers {
				headers[k] = v
			}
			for k, v := range creds.Headers {
				headers[k] = v
			}
			hc, err := NewGuardedClient(GuardConfig{
				URL: s.cfg.URL, AllowPrivateNetwork: s.cfg.AllowPrivateNetwork, Headers: headers,
				MaxBodyBytes: int64(s.cfg.MessageLimit()), Resolver: s.sup.opts.Resolver,
			})
			if err != nil {
				return nil, err
			}
			if oauthFor(&s.cfg, creds) {
				// The server's OAuth token on every request to its origin;
				// a refused token renewed once (see authTransport).
				u, err := url.Parse(s.cfg.URL)
				if err != nil {
					return nil, fmt.Errorf("parsing server url: %w", contracts.ErrInvalidArgument)
				}
				at := &authTransport{base: hc.Transport, origin: originOf(u), cfg: &s.cfg, auth: s.sup.auth(s.cfg.ID), onRefusal: c.noteRefusal}
				if c.staged != nil {
					at.staged.Store(c.staged)
				}
				hc.Transport = at
			}
			// 401 and 403 become errors in mcp-go that lose the
			// challenge: the watch keeps it.
			c.auth = &authWatch{next: hc.Transport}
			hc.Transport = c.auth
			c.hc = hc
		}
		if s.cfg.Transport == contracts.TransportSSE {
			// Never WithHTTPTimeout-style client timeouts: contexts bound
			// every request, and the SSE stream must stay open.
			// Server requests arrive on the event stream; mcp-go drops
			// them, so sseTap takes them out and answers them.
			tapped := *c.hc
			tapped.Transport = &sseTap{next: c.hc.Transport, c: c}
			return transport.NewSSE(s.cfg.URL, transport.WithHTTPClient(&tapped), transport.WithSSELogger(sdkLogger(s.log, s.sup.clean)),
				transport.WithEndpointTimeout(time.Duration(s.settings().Timeout())*time.Millisecond))
		}
		tapped := *c.hc
		next := c.hc.Transport
		c.gets = nil
		if listen {
			// mcp-go's listener sends the GETs; getStream holds them until
			// the handshake completed and backs refusals off.
			c.gets = newGetStream(next, c.ctx.Done(), s.log, s.sup.clean)
			next = c.gets
		}
		tapped.Transport = &sseTap{next: next, c: c}
		opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&tapped),
			transport.WithHTTPLogger(sdkLogger(s.log, s.sup.clean))}
		if listen {
			//lint:ignore SA1019 the legacy era (what this connection speaks) delivers list_changed and server requests on this GET stream.
			opts = append(opts, transport.WithContinuousListening())
		}
		return transport.NewStreamableHTTP(s.cfg.URL, opts...)
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Transport)
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

// watchedReader reports the first read error (EOF included) of the
// server's stdout: that is the end of the connection.
type watchedReader struct {
	r     interface{ Read([]byte) (int, error) }
	once  sync.Once
	onErr func(error)
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil {
		w.once.Do(func() { w.onErr(err) })
	}
	return n, err
}

// stdoutEnded runs when the server's stdout ends or breaks a limit.
func (c *conn) stdoutEnded(err error) {
	why := "the server closed its stdout"
	if errors.Is(err, proc.ErrMessageTooLarge) {
		why = err.Error()
	} else if c.proc != nil {
		// Give the exit status a moment to arrive so the message says it.
		select {
		case <-c.proc.Done():
			why = "the server process exited (" + c.proc.ExitStatus() + ")"
		case <-time.After(time.Second):
		}
	}
	c.s.lostConn(c, why, contracts.StateFailed)
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
