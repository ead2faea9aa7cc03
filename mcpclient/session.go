package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// errDisabled is the refusal to connect a server its settings disable.
func (s *session) errDisabled() error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonServerDisabled, "server %q is disabled", s.cfg.ID),
		`set "enabled": true in its settings and configure again`)
}
