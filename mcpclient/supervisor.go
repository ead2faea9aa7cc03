package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/rs/zerolog"
)

// Options configure a Supervisor.
type Options struct {
	Log zerolog.Logger
	// RunDir holds the disposable homes of stdio servers (STATE/run).
	RunDir string
	// CacheDir holds one persistent cache directory per stdio server
	// (STATE/cache/<id>); "" keeps caches in the disposable homes.
	CacheDir string
	// Records keeps process groups durably so a restarted daemon can reap
	// what a killed one left behind.
	Records proc.Records
	// ClientVersion is reported to servers as pikod's version.
	ClientVersion string
	// DiscoverProbe bounds the 2026-07-28 server/discover probe under
	// "auto" (a 2026-07-28 pin waits the server's timeoutMs). Default 3 s.
	DiscoverProbe time.Duration
	// Limits bound catalog discovery per server.
	Limits CatalogLimits
	// PATH is the search path given to stdio servers. Default: pikod's own
	// PATH (a search path is not a secret).
	PATH string
	// Resolver resolves HTTP hosts; nil uses the system resolver.
	Resolver netguard.Resolver
	// Credentials returns a server's private environment variables (stdio)
	// or headers (http, sse) at connect time, for exactly the settings the
	// session runs with; nil means none. An error
	// fails the connect (a locked vault, credentials for another identity).
	Credentials func(cfg *contracts.ServerSettings) (Credentials, error)
	// Grants keeps each server's OAuth state (the vault); nil keeps it in
	// memory only.
	Grants GrantStore
	// FlowLifetime bounds how long a browser sign-in waits for its
	// callback; default (and at most) FlowLifetime.
	FlowLifetime time.Duration
	// Pins keeps the tool definitions grants cover; nil means grants are
	// not pinned (every granted tool keeps its grant whatever its
	// definition).
	Pins Pins
	// SkillPins keeps what was loaded of each skill; nil means skills show
	// no pin state.
	SkillPins SkillPins
	// Event, when set, receives the events of every session (state
	// changes, catalog replacements, resource updates, log messages): the
	// daemon forwards them to the socket's watchers. It is called from the
	// supervisor's goroutines and must not block; Kind and Server are set,
	// Seq and Time are the daemon's to fill.
	Event func(contracts.EventParams)
	// ServerRequest, when set, answers the elicitation and sampling
	// requests of servers whose settings enable them: it returns the
	// result to send, or a *RequestError (anything else is answered as an
	// internal error). It blocks until the owner decides or ctx ends (the
	// call the request belongs to ended, or the connection did). Without
	// it such requests are refused.
	ServerRequest func(ctx context.Context, r ServerRequest) (json.RawMessage, error)
	// Budgets bound the notifications and log messages each server sends
	// unasked; zero fields take the defaults (see Budgets).
	Budgets Budgets
	// Redact removes known secret values from text; nil removes nothing.
	// Every text from a server or its process (errors, stderr lines,
	// names, schema messages) passes it before anything cuts it to a
	// length, so a cut never leaves a piece of a secret that redaction
	// can no longer recognise.
	Redact func(string) string
	// MaxPerServer bounds the work sent to one server at once (calls,
	// catalog fetches, pings), default 16; MaxInFlight bounds it across
	// servers, default 64. Further work waits in pikod, in order; a
	// disconnect ends the work waiting for that server.
	MaxPerServer int
	MaxInFlight  int
	// LogEntries and LogBytes bound each server's log ring (the log
	// messages it sent, kept across its reconnects); defaults
	// DefaultLogEntries and DefaultLogBytes.
	LogEntries int
	LogBytes   int
}

// Credentials are one server's private values, added after the settings'
// own env or headers (they win on a clash).
type Credentials struct {
	Env     map[string]string
	Headers map[string]string
	// OAuthClientSecret, OAuthPrivateKey (PEM) and OAuthIdentityAssertion
	// are the OAuth secrets the owner entered: a pre-registered client's
	// secret or private_key_jwt key, and the identity provider's assertion
	// for cross-app access. They go to the authorization server (and the
	// identity provider) only, never to the MCP server.
	OAuthClientSecret      string
	OAuthPrivateKey        string
	OAuthIdentityAssertion string
	// OAuthAssertion is the workload's assertion for jwt_bearer (unless
	// the settings name an assertionFile).
	OAuthAssertion string
}

// Supervisor owns one session per configured server and every goroutine
// and process they start. Close stops them all.
type Supervisor struct {
	opts Options
	log  zerolog.Logger

	ctx    context.Context // ends at Close: every connection lives inside it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// inflight bounds the work sent to servers at once (see admit).
	inflight chan struct{}
	// gen hands out connection generations: seeded from the clock at
	// start so they never repeat across restarts.
	gen atomic.Uint64
	// schemas holds the compiled tool schemas Call validates with.
	schemas *SchemaCache

	// mu guards the fields that follow.
	mu       sync.Mutex
	sessions map[string]*session
	order    []string
	closed   bool
	// auths holds each server's OAuth state, by id; it outlives sessions.
	auths map[string]*authState
	// procs holds every process started and not yet fully stopped,
	// whatever became of its session: the orphan sweep must never take
	// one of them for an orphan.
	procs map[*proc.Process]struct{}
}

// NewSupervisor returns a Supervisor with no servers.
func NewSupervisor(opts Options) *Supervisor {
	if opts.DiscoverProbe <= 0 {
		opts.DiscoverProbe = 3 * time.Second
	}
	if opts.PATH == "" {
		opts.PATH = os.Getenv("PATH")
	}
	if opts.PATH == "" {
		opts.PATH = "/usr/local/bin:/usr/bin:/bin"
	}
	if opts.FlowLifetime <= 0 || opts.FlowLifetime > FlowLifetime {
		opts.FlowLifetime = FlowLifetime
	}
	if opts.MaxPerServer <= 0 {
		opts.MaxPerServer = DefaultMaxPerServer
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{opts: opts, log: opts.Log, ctx: ctx, cancel: cancel, sessions: map[string]*session{}, procs: map[*proc.Process]struct{}{},
		auths:    map[string]*authState{},
		inflight: make(chan struct{}, opts.MaxInFlight)}
	s.schemas = NewSchemaCache(1024)
	s.schemas.redact = opts.Redact
	s.gen.Store(uint64(time.Now().UnixNano()))
	return s
}

func (s *Supervisor) nextGeneration() uint64 { return s.gen.Add(1) }

// emit sends one event to Options.Event, if set. data is encoded as the
// event's Data; it must hold only bounded, safe, redacted text.
func (s *Supervisor) emit(kind, server string, data any) {
	if s.opts.Event == nil {
		return
	}
	ev := contracts.EventParams{Kind: kind, Server: server}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			s.log.Error().Err(err).Str("kind", kind).Msg("encoding an event")
			return
		}
		ev.Data = b
	}
	s.opts.Event(ev)
}

// redact removes known secret values from text (Options.Redact).
func (s *Supervisor) redact(text string) string {
	if s.opts.Redact == nil {
		return text
	}
	return s.opts.Redact(text)
}

// clean makes text from a server or the system fit to show in one line:
// redacted first, then safe for a terminal and cut to max characters.
func (s *Supervisor) clean(text string, max int) string {
	return contracts.SafeText(s.redact(text), contracts.OneLine, max)
}

// clip is text redacted, then cut to max characters, for names quoted
// with %q (which escapes what a terminal must not see).
func (s *Supervisor) clip(text string, max int) string { return clip(s.redact(text), max) }

// clip cuts s to at most n characters, marking a cut with "…". Call it
// only on text that was redacted, that cannot hold a secret, or that a
// caller sent and gets back in the answer to that request.
func clip(s string, n int) string {
	i := 0
	for count := 0; i < len(s); count++ {
		if count == n {
			return s[:i] + "…"
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s
}

// Applied is what Supervisor.Apply did to the servers it kept or stopped.
type Applied struct {
	// Disconnected lists the servers stopped with a live connection.
	Disconnected []string
	// Live lists the servers whose change applied to their live
	// connection: the same process or endpoint, nothing restarted.
	Live []string
}

// Apply replaces the configured servers. Unchanged servers keep their
// connections, and so do servers whose change touches only pikod's own
// policy (tools, readOnlyTools, autonomousTools, timeoutMs) or their roots
// (they had some and still have, see session.keeps): the catalog is
// re-granted at once (and a catalog event says so), roots/list answers the
// new roots and the server is sent notifications/roots/list_changed, and
// a prepared action stays approvable while its approval digest holds.
// Servers otherwise changed, or removed, are stopped. Nothing new
// connects.
func (s *Supervisor) Apply(servers []contracts.ServerSettings) Applied {
	s.mu.Lock()
	next := map[string]*session{}
	order := make([]string, 0, len(servers))
	var stop []*session
	var kept []liveChange
	for _, cfg := range servers {
		order = append(order, cfg.ID)
		if old, ok := s.sessions[cfg.ID]; ok {
			old.mu.Lock()
			same := old.digest == cfg.Digest()
			old.mu.Unlock()
			if same {
				next[cfg.ID] = old
				continue
			}
			if old.keeps(&cfg) {
				next[cfg.ID] = old
				kept = append(kept, old.retarget(&cfg))
				continue
			}
		}
		next[cfg.ID] = newSession(s, cfg)
	}
	for id, old := range s.sessions {
		if next[id] != old {
			stop = append(stop, old)
			if a, ok := s.auths[id]; ok {
				// The challenge and the step-up count were about the old
				// settings; the grant stays, and its binding decides.
				a.mu.Lock()
				a.challenge, a.stepUps, a.futile, a.refused = nil, 0, false, ""
				a.mu.Unlock()
			}
		}
	}
	s.sessions, s.order = next, order
	s.mu.Unlock()
	var out Applied
	for _, ch := range kept {
		if ch.conn == nil {
			continue
		}
		out.Live = append(out.Live, ch.conn.s.cfg.ID)
		if ch.grants {
			ch.conn.regrant()
		}
	}
	// Stopped in parallel: each may take its full stop sequence (seconds).
	was := make([]bool, len(stop))
	var wg sync.WaitGroup
	for _, ch := range kept {
		if ch.conn != nil && ch.roots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch.conn.rootsChanged()
			}()
		}
	}
	for i, old := range stop {
		wg.Add(1)
		go func() {
			defer wg.Done()
			was[i] = old.stop()
		}()
	}
	wg.Wait()
	for i, old := range stop {
		if was[i] {
			out.Disconnected = append(out.Disconnected, old.cfg.ID)
		}
	}
	return out
}

// ConnectEnabled starts connecting every enabled server in the background,
// in parallel. Failures are recorded in status; nothing is retried.
func (s *Supervisor) ConnectEnabled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.order {
		sess := s.sessions[id]
		if !sess.cfg.IsEnabled() {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_, _ = sess.connect(s.ctx)
		}()
	}
}

func (s *Supervisor) session(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonShuttingDown, "pikod is shutting down")
	}
	sess, ok := s.sessions[id]
	if !ok {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", id),
			"list the configured servers with 'pikoctl mcp status'")
	}
	return sess, nil
}

// Connect connects one server (sharing a connect already in progress) and
// returns its status. A failed server is tried again: this is an owner
// request.
func (s *Supervisor) Connect(ctx context.Context, id string) (contracts.ServerStatus, error) {
	sess, err := s.session(id)
	if err != nil {
		return contracts.ServerStatus{}, err
	}
	if _, err := sess.connect(ctx); err != nil {
		return sess.status(), err
	}
	return sess.status(), nil
}

// Disconnect stops one server's connection (and its process group). The
// work in flight to it ends uncertain; the work waiting for it, and every
// request made before the disconnect (WithRequestTime) that was not sent,
// ends with nothing sent.
func (s *Supervisor) Disconnect(_ context.Context, id string) (bool, error) {
	sess, err := s.session(id)
	if err != nil {
		return false, err
	}
	was := sess.disconnect()
	s.sweep()
	return was, nil
}

// Ping makes one round trip to a connected server (connecting it first).
func (s *Supervisor) Ping(ctx context.Context, id string) (contracts.PingResult, error) {
	sess, err := s.session(id)
	if err != nil {
		return contracts.PingResult{}, err
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return contracts.PingResult{}, err
	}
	defer release()
	c, err := sess.connect(ctx)
	if err != nil {
		return contracts.PingResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(sess.settings().Timeout())*time.Millisecond)
	defer cancel()
	start := time.Now()
	if mcp.IsModernProtocol(c.protocol) {
		// ping is gone from 2026-07-28 (mcp-go's Ping sends nothing there);
		// server/discover is the cheapest real round trip.
		_, err = c.raw.request(ctx, string(mcp.MethodServerDiscover), nil)
	} else {
		_, err = c.raw.request(ctx, string(mcp.MethodPing), nil)
	}
	if err != nil {
		return contracts.PingResult{}, s.requestError(ctx, sess, c, "ping", err)
	}
	return contracts.PingResult{Server: id, ProtocolVersion: c.protocol, RoundTripMs: time.Since(start).Milliseconds()}, nil
}

// Catalog returns one server's catalog, connecting it first.
func (s *Supervisor) Catalog(ctx context.Context, id string) (contracts.CatalogResult, error) {
	_, cat, release, err := s.connectedCatalog(ctx, id)
	if err != nil {
		return contracts.CatalogResult{}, err
	}
	defer release()
	return catalogResult(id, cat), nil
}

// CatalogJSON is Catalog encoded as JSON (json.Marshal of the
// contracts.CatalogResult). A catalog is encoded once, when it is
// published, and the encoding is kept with the connection until its
// catalog changes, so a request for a large catalog costs a write, not an
// encoding.
func (s *Supervisor) CatalogJSON(ctx context.Context, id string) ([]byte, error) {
	c, cat, release, err := s.connectedCatalog(ctx, id)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.encodeCatalog(cat)
}

// connectedCatalog connects server id and returns its current catalog,
// holding one of its slots until release.
func (s *Supervisor) connectedCatalog(ctx context.Context, id string) (*conn, *Catalog, func(), error) {
	sess, err := s.session(id)
	if err != nil {
		return nil, nil, nil, err
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := sess.connect(ctx)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	cat, err := c.freshCatalog(ctx)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return c, cat, release, nil
}

func catalogResult(id string, cat *Catalog) contracts.CatalogResult {
	return contracts.CatalogResult{
		Server: id, Tools: cat.Tools, Resources: cat.Resources, ResourceTemplates: cat.ResourceTemplates,
		Prompts: cat.Prompts, Skills: cat.Skills, Complete: cat.Complete, Problem: cat.Problem, Excluded: cat.Excluded,
		DiscoveredAt: cat.DiscoveredAt.Format(time.RFC3339Nano),
	}
}

// requestError classifies a failed request. Once a request may have reached
// the server, only the server's own error answer is a definite failure:
// anything else leaves the outcome unknown. ctx is the request's: when it
// ended (the caller cancelled, or the deadline passed), that is why the
// request ended, whatever the transport made of it (mcp-go's HTTP client
// can answer a cancelled request with "unexpected nil response").
func (s *Supervisor) requestError(ctx context.Context, sess *session, c *conn, what string, err error) error {
	return s.requestErrorRedacted(ctx, sess, c, what, err, nil)
}

// requestErrorRedacted is requestError whose server error message is
// redacted with redact (nil: Options.Redact).
func (s *Supervisor) requestErrorRedacted(ctx context.Context, sess *session, c *conn, what string, err error, redact func(string) string) error {
	if ar, ok := asAuthRequired(err); ok {
		return s.authRefused(sess, what, ar, notSentRequest(err))
	}
	if u, ok := isUpstream(err); ok {
		msg := s.clean(u.Message, 1000)
		if redact != nil {
			msg = contracts.SafeText(redact(u.Message), contracts.OneLine, 1000)
		}
		return &upstreamErr{what: what, code: u.Code, message: msg}
	}
	if errors.Is(err, transport.ErrSessionTerminated) {
		// The server answered 404 for the session: it did not run the
		// request. The next request re-initialises; this one is never
		// replayed.
		sess.lostConn(c, "the server ended the session (HTTP 404); the next request starts a new one", contracts.StateIdle)
		return contracts.WithHint(
			contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonSessionExpired,
				"%s on %q was refused: the server no longer knows this session (HTTP 404), so it did not run it", what, sess.cfg.ID),
			"ask again: the next request starts a new session (pikod does not resend it by itself)")
	}
	if why := c.lost.Load(); why != nil {
		err = fmt.Errorf("%w: %s", err, *why)
	}
	if notSentRequest(err) {
		return s.unsentError(sess, c, what, err)
	}
	if ended := ctx.Err(); ended != nil && !errors.Is(err, ended) {
		err = fmt.Errorf("%w (%w)", err, ended)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return contracts.WithReason(fmt.Errorf("%s on %q was canceled after it was sent; the server may have acted on it: %w",
			what, sess.cfg.ID, contracts.ErrOutcomeUnknown), contracts.ReasonCanceledOutcomeUnknown)
	case errors.Is(err, context.DeadlineExceeded):
		return contracts.WithReason(fmt.Errorf("%s on %q got no answer within timeoutMs (%d ms); the outcome is unknown and pikod will not retry it: %w",
			what, sess.cfg.ID, sess.settings().Timeout(), contracts.ErrOutcomeUnknown), contracts.ReasonTimeoutOutcomeUnknown)
	}
	return contracts.WithHint(
		contracts.WithReason(fmt.Errorf("%s on %q failed after it was sent (%s); the outcome is unknown and pikod will not retry it: %w",
			what, sess.cfg.ID, s.clean(err.Error(), 1000), contracts.ErrOutcomeUnknown), contracts.ReasonConnectionLostOutcomeUnknown),
		"check the server for the effect before asking again; 'pikoctl mcp status "+sess.cfg.ID+"' shows why the connection ended")
}

// authRefused reports a request the server refused for want of
// authorization (it did not run it), or that pikod did not send because
// no usable token exists. An insufficient_scope refusal whose scope the
// grant already holds is permanent: signing in again would not help.
func (s *Supervisor) authRefused(sess *session, what string, ar *authRequired, unsent bool) error {
	if ar.challenge.InsufficientScope() && ar.challenge.Scope != "" {
		a := s.auth(sess.cfg.ID)
		a.mu.Lock()
		if g, _ := a.grantLocked(&sess.cfg); g != nil && covers(g.scopeSet(), ar.challenge.Scope) {
			ar.permanent = true
			a.futile = true
		}
		a.mu.Unlock()
	}
	err := fmt.Errorf("%s on %q was refused: %w", what, sess.cfg.ID, ar)
	if unsent {
		return contracts.MarkNotSent(err)
	}
	return err
}

// unsentError reports a request that provably never left pikod. A
// transport that could not take it (a refused or failed connection, a
// closed pipe) is dead: the session fails with the reason, and the next
// request connects again. A request the caller gave up on before it went
// out leaves the connection as it is.
func (s *Supervisor) unsentError(sess *session, c *conn, what string, err error) error {
	id := sess.cfg.ID
	switch {
	case errors.Is(err, context.Canceled):
		return contracts.MarkNotSent(contracts.Errorf(contracts.ErrCanceled, contracts.ReasonCanceled,
			"%s on %q was canceled before it was sent; nothing was sent", what, id))
	case errors.Is(err, context.DeadlineExceeded):
		why := fmt.Sprintf("%s could not be sent within timeoutMs (%d ms)", what, sess.settings().Timeout())
		sess.lostConn(c, why+"; the connection was closed", contracts.StateFailed)
		return contracts.MarkNotSent(contracts.WithHint(contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonNotSent,
			"%s on %q: %s; nothing was sent", what, id, why),
			"'pikoctl mcp status "+id+"' shows why; the call had no effect and can be made again once the server is back"))
	}
	detail := c.explain(err).Error()
	for {
		// mcp-go says this once per layer.
		rest, ok := strings.CutPrefix(detail, "failed to send request: ")
		if !ok {
			break
		}
		detail = rest
	}
	detail = s.clean(detail, 1000)
	sess.lostConn(c, fmt.Sprintf("%s could not be sent (%s); the connection was closed", what, detail), contracts.StateFailed)
	return contracts.MarkNotSent(contracts.WithHint(contracts.WithReason(
		fmt.Errorf("%s on %q could not be sent: %s; nothing reached the server: %w", what, id, detail, contracts.ErrUnavailable),
		contracts.ReasonNotSent),
		"the server is now failed ('pikoctl mcp status "+id+"' shows why); the call had no effect and can be made again once the server is back"))
}

// upstreamErr is the server's own error answer, kept apart from ours;
// message is already redacted and cleaned.
type upstreamErr struct {
	what    string
	code    int
	message string
}

func (e *upstreamErr) Error() string {
	return fmt.Sprintf("%s: the server answered error %d: %s", e.what, e.code, e.message)
}
func (e *upstreamErr) Unwrap() error { return contracts.ErrUpstream }

// Upstream returns the server's error for the wire's data.upstream.
func (e *upstreamErr) Upstream() *contracts.UpstreamError {
	return &contracts.UpstreamError{Code: e.code, Message: e.message}
}

// Status returns every server's status in settings order, or one server's.
func (s *Supervisor) Status(id string) ([]contracts.ServerStatus, error) {
	if id != "" {
		sess, err := s.session(id)
		if err != nil {
			return nil, err
		}
		return []contracts.ServerStatus{s.withOAuth(sess, sess.status())}, nil
	}
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.order))
	for _, id := range s.order {
		sessions = append(sessions, s.sessions[id])
	}
	s.mu.Unlock()
	out := make([]contracts.ServerStatus, 0, len(sessions))
	for _, sess := range sessions {
		out = append(out, s.withOAuth(sess, sess.status()))
	}
	return out, nil
}

// withOAuth adds the server's OAuth state to its status, for the servers
// OAuth applies to.
func (s *Supervisor) withOAuth(sess *session, st contracts.ServerStatus) contracts.ServerStatus {
	cfg := &sess.cfg
	if cfg.Transport != contracts.TransportHTTP && cfg.Transport != contracts.TransportSSE {
		return st
	}
	if s.opts.Credentials != nil {
		creds, err := s.opts.Credentials(cfg)
		if err == nil && !oauthFor(cfg, creds) {
			return st
		}
	}
	st.OAuth = s.auth(cfg.ID).status(cfg)
	return st
}

// Generation returns the connection generation of a server (0 when not
// connected); prepared actions bind to it.
func (s *Supervisor) Generation(id string) uint64 {
	sess, err := s.session(id)
	if err != nil {
		return 0
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.conn == nil {
		return 0
	}
	return sess.conn.gen
}

// sweep ends orphans that were adopted by pikod (descendants that escaped a
// server's process group and lost their parent).
func (s *Supervisor) sweep() {
	proc.SweepAdopted(s.isLiveLeader, s.log)
}

func (s *Supervisor) isLiveLeader(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.procs {
		if p.Owns(pid) {
			return true
		}
	}
	return false
}

func (s *Supervisor) trackProc(p *proc.Process, live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if live {
		s.procs[p] = struct{}{}
	} else {
		delete(s.procs, p)
	}
}

// Close stops every server and waits for every goroutine the supervisor
// started. It is safe to call more than once.
func (s *Supervisor) Close() {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess.stop()
		}()
	}
	wg.Wait()
	s.cancel()
	s.wg.Wait()
	s.sweep()
}

// cacheDir is server id's persistent cache directory, or "" when the
// supervisor keeps none. Validated ids are safe file names.
func (s *Supervisor) cacheDir(id string) string {
	if s.opts.CacheDir == "" {
		return ""
	}
	return filepath.Join(s.opts.CacheDir, id)
}
