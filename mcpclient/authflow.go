package mcpclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/oauth"
)

// FlowLifetime is how long a browser sign-in waits for its callback.
const FlowLifetime = 10 * time.Minute

// completionTimeout bounds what follows the callback: the code exchange,
// the handshake with the new token and the commit.
const completionTimeout = 2 * time.Minute

// maxStepUps is how many authorization requests an insufficient_scope
// challenge may cause after the first one, before a call goes through:
// three authorization requests in all.
const maxStepUps = 2

// authFlow is one browser sign-in: the loopback callback, the request's
// secrets (state and verifier, with the issuer recorded next to them) and
// what the callback's code is exchanged with.
type authFlow struct {
	id      string
	a       *authState
	sess    *session
	env     *oauthEnv
	epoch   uint64
	expires time.Time
	// life ends when the flow is cancelled, superseded, logged out of, or
	// pikod stops.
	life   context.Context
	cancel context.CancelFunc
	cb     *oauth.Callback
	req    oauth.AuthorizationRequest
	url    string
	disc   *oauth.Discovery
	client oauth.ClientAuth
	source string
	// dpop is the key the code is exchanged with and the grant bound to
	// (RFC 9449), nil for Bearer tokens.
	dpop *StoredDPoPKey
	// from is the flow this one continues at another authorization
	// server (see restartAt), or nil.
	from *authFlow
	// started is the pending result that announced the flow.
	started contracts.AuthResult

	done   chan struct{}
	result contracts.AuthResult
	err    error

	// Guarded by a.mu.
	cancelled bool
	why       string
	committed bool
}

// stagedGrant is a grant that is not the server's yet: a connection proves
// it (the handshake with its token) before commit stores it.
type stagedGrant struct {
	a         *authState
	grant     *StoredGrant
	epoch     uint64
	flow      *authFlow
	committed atomic.Bool
}

func (a *authState) stage(g *StoredGrant, f *authFlow) *stagedGrant {
	st := &stagedGrant{a: a, grant: g, flow: f}
	if f != nil {
		st.epoch = f.epoch
	} else {
		a.mu.Lock()
		st.epoch = a.epoch
		a.mu.Unlock()
	}
	return st
}

// commit makes the staged grant the server's: stored, read back, current.
// It refuses when a logout happened since the grant's flow started, or the
// flow was cancelled.
func (st *stagedGrant) commit() error {
	a := st.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.epoch != st.epoch {
		return contracts.Errorf(contracts.ErrCanceled, contracts.ReasonLoggedOut,
			"server %q was signed out of while this sign-in was finishing; nothing was stored", a.id)
	}
	if f := st.flow; f != nil && f.cancelled {
		return contracts.Errorf(contracts.ErrCanceled, contracts.ReasonOAuthFlowCancelled,
			"the sign-in of %q was %s before its grant was stored; the previous grant is kept", a.id, f.why)
	}
	rec, err := a.recordLocked()
	if err != nil {
		return err
	}
	next := rec.clone()
	next.Grant = st.grant
	if err := a.saveLocked(next); err != nil {
		return fmt.Errorf("storing the new grant of %q: %w", a.id, err)
	}
	st.committed.Store(true)
	if st.flow != nil {
		st.flow.committed = true
	}
	a.challenge, a.futile, a.refused = nil, false, ""
	ev := a.sup.log.Info().Str("server", a.id).Str("grant_type", st.grant.GrantType).Str("issuer", st.grant.Issuer).
		Str("scope", st.grant.Scope).Bool("refreshable", st.grant.renewable()).Str("token_type", st.grant.tokenType())
	if k := st.grant.jkt(); k != "" {
		ev = ev.Str("dpop_jkt", k)
	}
	ev.Msg("oauth grant committed")
	return nil
}

// Auth serves extensions.mcp.auth.
func (s *Supervisor) Auth(ctx context.Context, p contracts.AuthParams) (contracts.AuthResult, error) {
	sess, err := s.session(p.Server)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	switch p.Op {
	case "", contracts.AuthOpStart:
		return s.authStart(ctx, sess)
	case contracts.AuthOpDiscover:
		return s.authDiscover(ctx, sess)
	case contracts.AuthOpWait:
		return s.authWait(ctx, sess, p.FlowID)
	case contracts.AuthOpComplete:
		return s.authComplete(ctx, sess, p)
	}
	return contracts.AuthResult{}, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidParams,
		`unknown op %q: use "start", "discover", "wait" or "complete"`, s.clip(p.Op, 40))
}

func grantTypeOf(cfg *contracts.ServerSettings) string {
	if cfg.OAuth == nil {
		return contracts.GrantAuthorizationCode
	}
	return cfg.OAuth.EffectiveGrantType()
}

// challengeFor returns the server's OAuth environment and its latest
// challenge; without one it makes the tokenless first request (a connect)
// that yields one. A nil challenge means the server accepted pikod as it is.
func (s *Supervisor) challengeFor(ctx context.Context, sess *session) (*oauthEnv, *oauth.Challenge, error) {
	e, err := s.oauthEnv(&sess.cfg)
	if err != nil {
		return nil, nil, err
	}
	a := s.auth(sess.cfg.ID)
	a.mu.Lock()
	ch := a.challenge
	a.mu.Unlock()
	if ch != nil {
		return e, ch, nil
	}
	if _, err := sess.connect(ctx); err != nil && !needsToken(err) {
		return nil, nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return e, a.challenge, nil
}

func (s *Supervisor) authDiscover(ctx context.Context, sess *session) (contracts.AuthResult, error) {
	cfg := &sess.cfg
	e, ch, err := s.challengeFor(ctx, sess)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	d, err := e.client.Discover(ctx, oauth.DiscoverOptions{ServerURL: cfg.URL, Challenge: ch})
	if err != nil {
		return contracts.AuthResult{}, s.oauthError(cfg.ID, "discovering the authorization server", err)
	}
	return contracts.AuthResult{Server: cfg.ID, GrantType: grantTypeOf(cfg), Issuer: d.Metadata.Issuer, Resource: d.Resource,
		Discovery: d.Report()}, nil
}

// oauthError gives an OAuth failure a subject and the server's id.
func (s *Supervisor) oauthError(id, what string, err error) error {
	var reasoned interface{ Reason() string }
	if !errors.As(err, &reasoned) || reasoned.Reason() == "" {
		err = contracts.WithReason(err, contracts.ReasonOAuthFailed)
	}
	return fmt.Errorf("%s for %q: %w", what, id, err)
}

func (s *Supervisor) authStart(ctx context.Context, sess *session) (contracts.AuthResult, error) {
	cfg := &sess.cfg
	e, ch, err := s.challengeFor(ctx, sess)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	grant := grantTypeOf(cfg)
	if grant == contracts.GrantAuthorizationCode {
		return s.startBrowserFlow(ctx, sess, e, ch)
	}
	e.owner = true
	g, err := s.acquireWithoutBrowser(ctx, e, ch)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	a := s.auth(cfg.ID)
	st := a.stage(g, nil)
	if _, err := sess.connectStaged(ctx, st); err != nil {
		return contracts.AuthResult{}, err
	}
	return s.authorized(sess, g), nil
}

// acquireWithoutBrowser discovers the authorization server and runs
// client_credentials or cross-app access.
func (s *Supervisor) acquireWithoutBrowser(ctx context.Context, e *oauthEnv, ch *oauth.Challenge) (*StoredGrant, error) {
	o := e.settings()
	d, err := e.client.Discover(ctx, oauth.DiscoverOptions{ServerURL: e.cfg.URL, Challenge: ch, Issuer: o.Issuer})
	if err != nil {
		return nil, s.oauthError(e.cfg.ID, "discovering the authorization server", err)
	}
	scope := selectScope(e.cfg, d, ch, "", false)
	key, err := s.grantKey(e, d)
	if err != nil {
		return nil, s.oauthError(e.cfg.ID, "signing in", err)
	}
	g, err := s.grantWithoutBrowser(ctx, e, d, scope, nil, key)
	if err != nil {
		return nil, s.oauthError(e.cfg.ID, "signing in", err)
	}
	return g, nil
}

func (s *Supervisor) authorized(sess *session, g *StoredGrant) contracts.AuthResult {
	st := sess.status()
	return contracts.AuthResult{Server: sess.cfg.ID, Status: contracts.AuthAuthorized, GrantType: g.GrantType,
		Issuer: g.Issuer, Resource: g.Resource, Scope: g.info().Scope, Grant: g.info(), State: st.State}
}

func (s *Supervisor) startBrowserFlow(ctx context.Context, sess *session, e *oauthEnv, ch *oauth.Challenge) (contracts.AuthResult, error) {
	cfg := &sess.cfg
	o := e.settings()
	a := s.auth(cfg.ID)
	d, err := e.client.Discover(ctx, oauth.DiscoverOptions{ServerURL: cfg.URL, Challenge: ch, Issuer: o.Issuer})
	if err != nil {
		return contracts.AuthResult{}, s.oauthError(cfg.ID, "discovering the authorization server", err)
	}
	stepUp := ch.InsufficientScope()
	if stepUp {
		a.mu.Lock()
		if cfg.OAuth != nil && cfg.OAuth.Scope != "" && !covers(strings.Fields(cfg.OAuth.Scope), ch.Scope) {
			a.mu.Unlock()
			return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonScopeNotInSettings,
				"server %q asks for scope %s, which oauth.scope does not include; pikod does not widen an explicit scope by itself",
				cfg.ID, strconvQuote(ch.Scope, 200)),
				"add the scope to oauth.scope, configure again, then 'pikoctl mcp auth "+cfg.ID+"'")
		}
		if a.stepUps >= maxStepUps {
			a.mu.Unlock()
			return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonStepUpLimit,
				"server %q still refuses for lack of scope after %d authorization requests; pikod stops asking", cfg.ID, maxStepUps+1),
				"check with the server's operator; 'pikoctl mcp logout "+cfg.ID+"' starts over")
		}
		a.mu.Unlock()
	}
	return s.beginFlow(ctx, sess, e, d, ch, stepUp, nil)
}

// beginFlow starts the browser flow at the authorization server d found:
// checks its endpoints, chooses the scope, the client and (oauth.dpop)
// the DPoP key, listens for the callback and makes the flow the server's
// pending one, replacing any other; from is the flow this one continues
// at another authorization server, or nil.
func (s *Supervisor) beginFlow(ctx context.Context, sess *session, e *oauthEnv, d *oauth.Discovery, ch *oauth.Challenge, stepUp bool,
	from *authFlow) (contracts.AuthResult, error) {
	cfg := &sess.cfg
	o := e.settings()
	a := s.auth(cfg.ID)
	md := &d.Metadata
	if md.AuthorizationEndpoint == "" {
		return contracts.AuthResult{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoAuthorizationEndpoint,
			"the authorization server %s of %q has no authorization_endpoint, so no browser sign-in is possible", md.Issuer, cfg.ID)
	}
	// PKCE S256 is required; only the 2025-03-26 default endpoints (no
	// metadata to say so) are assumed to support it, and S256 is sent.
	if d.Fallback != contracts.FallbackDefaultEndpoints && !md.SupportsS256() {
		return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthPKCEUnsupported,
			"the authorization server %s of %q does not list PKCE S256 in code_challenge_methods_supported; pikod does not sign in without it", md.Issuer, cfg.ID),
			"ask the server's operator to enable PKCE with S256")
	}
	if u, err := url.Parse(md.AuthorizationEndpoint); err == nil && strings.EqualFold(u.Scheme, "http") &&
		!(cfg.AllowPrivateNetwork && contracts.SameHost(md.AuthorizationEndpoint, cfg.URL)) {
		return contracts.AuthResult{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadAuthorizationEndpoint,
			"the authorization endpoint of %q is plain http on another host than the server; pikod shows only https links (http only on the server's own host with allowPrivateNetwork)", cfg.ID)
	}
	key, err := s.grantKey(e, d)
	if err != nil {
		return contracts.AuthResult{}, s.oauthError(cfg.ID, "signing in", err)
	}

	a.mu.Lock()
	prior := ""
	if g, _ := a.grantLocked(cfg); g != nil {
		prior = strings.Join(g.scopeSet(), " ")
	}
	a.mu.Unlock()
	scope := selectScope(cfg, d, ch, prior, true)

	state, verifier, err := oauth.NewSecrets()
	if err != nil {
		return contracts.AuthResult{}, err
	}
	cb, err := oauth.ListenCallback(o.CallbackPort, state)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	ok := false
	defer func() {
		if !ok {
			cb.Close()
		}
	}()
	client, source, err := s.browserClient(ctx, e, d, cb.RedirectURI())
	if err != nil {
		return contracts.AuthResult{}, err
	}
	req := oauth.AuthorizationRequest{Endpoint: md.AuthorizationEndpoint, ClientID: client.ClientID, RedirectURI: cb.RedirectURI(),
		Scope: scope, Resource: d.Resource, State: state, Verifier: verifier, DPoPJKT: key.thumbprint()}
	link, err := req.URL()
	if err != nil {
		return contracts.AuthResult{}, err
	}
	idb := make([]byte, 8)
	_, _ = rand.Read(idb)
	life, cancel := context.WithCancel(s.ctx)
	f := &authFlow{id: "flow-" + hex.EncodeToString(idb), a: a, sess: sess, env: e, expires: time.Now().Add(s.opts.FlowLifetime),
		life: life, cancel: cancel, cb: cb, req: req, url: link, disc: d, client: client, source: source, dpop: key, from: from,
		done: make(chan struct{})}
	f.started = contracts.AuthResult{Server: cfg.ID, Status: contracts.AuthPending, GrantType: contracts.GrantAuthorizationCode, FlowID: f.id,
		AuthorizationURL: link, RedirectURI: cb.RedirectURI(), ExpiresAt: f.expires.UTC().Format(time.RFC3339),
		Issuer: md.Issuer, Resource: d.Resource, Scope: scope}
	if from != nil {
		f.started.PreviousIssuer = from.disc.Metadata.Issuer
	}
	a.mu.Lock()
	if from != nil && (from.cancelled || a.epoch != from.epoch) {
		// Cancelled or logged out of while this continuation was set up.
		a.mu.Unlock()
		cancel()
		return contracts.AuthResult{}, from.endedError()
	}
	if old := a.flow; old != nil && old != from {
		old.cancelled, old.why = true, "replaced by a newer sign-in"
		old.cancel()
	}
	f.epoch = a.epoch
	a.flow = f
	if stepUp {
		a.stepUps++
	}
	a.mu.Unlock()
	ok = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runFlow(f)
	}()
	ev := s.log.Info().Str("server", cfg.ID).Str("flow", f.id).Str("issuer", md.Issuer).Str("scope", scope).Str("client", source).
		Bool("step_up", stepUp)
	if key != nil {
		ev = ev.Str("dpop_jkt", key.Thumbprint)
	}
	if from != nil {
		ev = ev.Str("previous_issuer", from.disc.Metadata.Issuer).Str("continues", from.id)
	}
	ev.Msg("oauth sign-in started")
	return f.started, nil
}

// browserClient chooses the client of an authorization-code flow, in the
// spec's order: the pre-registered one of the settings; the client ID
// metadata document when the server supports it; a client registered
// dynamically before with this same issuer; else a new dynamic
// registration, stored at once. A stored registration of another issuer
// is never used: the authorization server changed, so pikod registers
// anew and sends it nothing of the old one.
func (s *Supervisor) browserClient(ctx context.Context, e *oauthEnv, d *oauth.Discovery, redirectURI string) (oauth.ClientAuth, string, error) {
	o := e.settings()
	md := &d.Metadata
	cfg := e.cfg
	switch {
	case o.ClientID != "":
		auth, err := e.settingsClient(md)
		return auth, regSettings, err
	case o.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported:
		return oauth.ClientAuth{ClientID: o.ClientMetadataURL, Method: contracts.AuthMethodNone}, regMetadata, nil
	}
	a := s.auth(cfg.ID)
	a.mu.Lock()
	rec, err := a.recordLocked()
	epoch := a.epoch
	a.mu.Unlock()
	if err != nil {
		return oauth.ClientAuth{}, "", err
	}
	if rec != nil && rec.Registration != nil {
		reg := rec.Registration
		usable := reg.Issuer == md.Issuer && reg.ServerURL == cfg.URL &&
			(reg.SecretExpiresAt == 0 || time.Unix(reg.SecretExpiresAt, 0).After(time.Now().Add(time.Minute)))
		if usable {
			return regClient(reg, md), regDynamic, nil
		}
		s.log.Info().Str("server", cfg.ID).Str("old_issuer", reg.Issuer).Str("issuer", md.Issuer).
			Msg("stored client registration is for another authorization server or endpoint (or expired): registering again")
	}
	if md.RegistrationEndpoint == "" {
		hint := "register a client with the authorization server, then set oauth.clientId and oauth.issuer (" + md.Issuer + ") and store its secret with 'pikoctl mcp secret " + cfg.ID + "'"
		if md.ClientIDMetadataDocumentSupported {
			hint = "set oauth.clientMetadataUrl to your client ID metadata document, or " + hint
		}
		return oauth.ClientAuth{}, "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoRegistration,
			"the authorization server %s of %q offers no dynamic registration, and no client is configured", md.Issuer, cfg.ID), hint)
	}
	r, err := e.client.Register(ctx, md.RegistrationEndpoint, oauth.RegistrationRequest{
		ClientName: "pikod", RedirectURIs: []string{redirectURI},
		GrantTypes:    []string{contracts.GrantAuthorizationCode, oauth.GrantTypeRefreshToken},
		ResponseTypes: []string{"code"}, AuthMethod: contracts.AuthMethodNone, ApplicationType: "native",
		SoftwareID: "pikod", SoftwareVersion: s.opts.ClientVersion,
	})
	if err != nil {
		return oauth.ClientAuth{}, "", s.oauthError(cfg.ID, "registering a client", err)
	}
	reg := &StoredRegistration{Issuer: md.Issuer, ServerURL: cfg.URL, ClientID: r.ClientID, ClientSecret: r.ClientSecret,
		AuthMethod: r.AuthMethod, RegisteredAt: time.Now().UTC(), SecretExpiresAt: r.SecretExpiresAt}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.epoch != epoch {
		return oauth.ClientAuth{}, "", contracts.Errorf(contracts.ErrCanceled, contracts.ReasonLoggedOut, "server %q was signed out of during the registration", cfg.ID)
	}
	cur, err := a.recordLocked()
	if err != nil {
		return oauth.ClientAuth{}, "", err
	}
	next := cur.clone()
	next.Registration = reg
	if err := a.saveLocked(next); err != nil {
		return oauth.ClientAuth{}, "", fmt.Errorf("storing the client registration of %q: %w", cfg.ID, err)
	}
	s.log.Info().Str("server", cfg.ID).Str("issuer", md.Issuer).Str("client_id", r.ClientID).Msg("oauth client registered")
	return regClient(reg, md), regDynamic, nil
}

// regClient is the client authentication of a dynamic registration: the
// method registered; else none without a secret, or a secret method the
// server's metadata supports (none when it supports only none).
func regClient(reg *StoredRegistration, md *oauth.ServerMetadata) oauth.ClientAuth {
	auth := oauth.ClientAuth{ClientID: reg.ClientID, Secret: reg.ClientSecret, Method: reg.AuthMethod, Audience: md.Issuer}
	if auth.Method == "" {
		supported := md.TokenEndpointAuthMethodsSupported
		switch {
		case reg.ClientSecret == "":
			auth.Method = contracts.AuthMethodNone
		case len(supported) == 1 && supported[0] == contracts.AuthMethodNone:
			auth.Method = contracts.AuthMethodNone
		default:
			auth.Method = oauth.ChooseAuthMethod("", true, false, supported)
		}
	}
	if auth.Method == contracts.AuthMethodNone {
		auth.Secret = ""
	}
	return auth
}

// runFlow waits for the flow's callback (or its end), checks it, exchanges
// the code, proves the new token with a handshake and commits it.
func (s *Supervisor) runFlow(f *authFlow) {
	timer := time.NewTimer(time.Until(f.expires))
	defer timer.Stop()
	var res oauth.CallbackResult
	select {
	case res = <-f.cb.Results():
	case <-timer.C:
		f.cb.Close()
		f.a.mu.Lock()
		f.cancelled, f.why = true, "expired"
		f.a.mu.Unlock()
		s.finishFlow(f, nil, contracts.WithHint(contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonOAuthFlowExpired,
			"the sign-in of %q expired: no callback within %s", f.a.id, s.opts.FlowLifetime), "start again with 'pikoctl mcp auth "+f.a.id+"'"))
		return
	case <-f.life.Done():
		f.cb.Close()
		s.finishFlow(f, nil, f.endedError())
		return
	}
	// One callback only: stop listening before anything else.
	f.cb.Close()
	md := &f.disc.Metadata
	if err := oauth.CheckIssuer(res, md.Issuer, md.AuthorizationResponseIssParameterSupported); err != nil {
		s.finishFlow(f, nil, err)
		return
	}
	if err := res.Refusal(); err != nil {
		s.finishFlow(f, nil, fmt.Errorf("signing in to %q: %w", f.a.id, err))
		return
	}
	if res.Code == "" {
		s.finishFlow(f, nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoCode,
			"the authorization response for %q carries no code", f.a.id))
		return
	}
	ctx, cancel := context.WithTimeout(f.life, completionTimeout)
	defer cancel()
	form := url.Values{"grant_type": {contracts.GrantAuthorizationCode}, "code": {res.Code},
		"redirect_uri": {f.req.RedirectURI}, "code_verifier": {f.req.Verifier}}
	if f.disc.Resource != "" {
		form.Set("resource", f.disc.Resource)
	}
	dp, err := f.a.dpopFor(f.dpop, md.Issuer)
	if err != nil {
		s.finishFlow(f, nil, err)
		return
	}
	resp, err := f.env.client.Token(ctx, md.TokenEndpoint, form, f.client, tokenOptions(dp))
	if err != nil {
		if f.life.Err() != nil {
			err = f.endedError()
		}
		s.finishFlow(f, nil, s.oauthError(f.a.id, "exchanging the authorization code", err))
		return
	}
	g := newGrant(&f.sess.cfg, contracts.GrantAuthorizationCode, f.disc, f.client, f.source, f.req.Scope, resp, f.dpop)
	st := f.a.stage(g, f)
	if _, err := f.sess.connectStaged(ctx, st); err != nil {
		if f.life.Err() != nil && !st.committed.Load() {
			err = f.endedError()
		} else if !st.committed.Load() && needsToken(err) {
			if next, moved, merr := s.restartAt(ctx, f); moved {
				if merr != nil {
					s.finishFlow(f, nil, merr)
				} else {
					s.finishFlow(f, &next, nil)
				}
				return
			}
		}
		if !st.committed.Load() {
			hint := "the previous grant (if any) is kept; 'pikoctl mcp status " + f.a.id + "' shows why the connection failed"
			if f.dpop != nil && needsToken(err) {
				// The authorization server offered DPoP; the server may not
				// take DPoP-bound tokens.
				hint += "; if the server does not take DPoP-bound tokens (DPoP key " + f.dpop.Thumbprint +
					"), set oauth.dpop to false and sign in again"
			}
			err = contracts.WithHint(fmt.Errorf("the new grant of %q was not stored: %w", f.a.id, err), hint)
		}
		s.finishFlow(f, nil, err)
		return
	}
	r := s.authorized(f.sess, g)
	r.FlowID = f.id
	s.finishFlow(f, &r, nil)
}

// restartAt answers the server's refusal of a new grant (401 while it was
// being proven) when the server now names another authorization server
// than the one the flow signed in at: discovery starts over from the
// refusal's challenge and a new flow begins there, within the same
// sign-in (its client registered anew, nothing of the old client sent to
// the new server). The new grant was never committed, so the previous one
// stays until the new flow's grant is proven. moved is false when the
// authorization server is the same (or discovery fails): the refusal
// stands. Each sign-in moves once at most.
func (s *Supervisor) restartAt(ctx context.Context, f *authFlow) (res contracts.AuthResult, moved bool, err error) {
	if f.from != nil {
		return res, false, nil
	}
	cfg := &f.sess.cfg
	ch := f.a.latestChallenge()
	d, derr := f.env.client.Discover(ctx, oauth.DiscoverOptions{ServerURL: cfg.URL, Challenge: ch, Issuer: f.env.settings().Issuer})
	if derr != nil {
		var reasoned interface{ Reason() string }
		if errors.As(derr, &reasoned) && reasoned.Reason() == contracts.ReasonIssuerMismatch {
			// The settings pin the old issuer: say so, rather than 401.
			return res, true, s.oauthError(cfg.ID, "the new grant was refused, and discovering the authorization server again", derr)
		}
		s.log.Warn().Str("server", cfg.ID).Str("flow", f.id).Err(derr).Msg("the new grant was refused; discovering the authorization server again failed")
		return res, false, nil
	}
	old := f.disc.Metadata.Issuer
	if oauth.SameIssuer(d.Metadata.Issuer, old) {
		return res, false, nil
	}
	s.log.Info().Str("server", cfg.ID).Str("flow", f.id).Str("previous_issuer", old).Str("issuer", d.Metadata.Issuer).
		Msg("the server refused the new grant and now names another authorization server: the sign-in continues there")
	res, err = s.beginFlow(ctx, f.sess, f.env, d, ch, false, f)
	if err != nil {
		return res, true, contracts.WithHint(fmt.Errorf("server %q moved from the authorization server %s to %s, and the sign-in there could not start: %w",
			cfg.ID, old, d.Metadata.Issuer, err), "the previous grant (if any) is kept; fix what the message names, then 'pikoctl mcp auth "+cfg.ID+"'")
	}
	return res, true, nil
}

// endedError says why a flow's life ended early.
func (f *authFlow) endedError() error {
	f.a.mu.Lock()
	why := f.why
	f.a.mu.Unlock()
	reason := contracts.ReasonOAuthFlowCancelled
	switch why {
	case "":
		why = "ended because pikod is stopping"
	case whyLogout:
		reason = contracts.ReasonLoggedOut
	}
	return contracts.Errorf(contracts.ErrCanceled, reason, "the sign-in of %q was %s; nothing was stored", f.a.id, why)
}

const whyLogout = "ended by a logout"

func (s *Supervisor) finishFlow(f *authFlow, res *contracts.AuthResult, err error) {
	a := f.a
	a.mu.Lock()
	if res != nil {
		f.result = *res
	}
	f.err = err
	if a.flow == f {
		a.flow = nil
	}
	a.last = f
	a.mu.Unlock()
	f.cancel()
	switch {
	case err != nil:
		s.log.Warn().Str("server", a.id).Str("flow", f.id).Err(err).Msg("oauth sign-in ended without a grant")
	case res != nil && res.Status == contracts.AuthPending:
		s.log.Info().Str("server", a.id).Str("flow", f.id).Str("next_flow", res.FlowID).Msg("oauth sign-in continues at another authorization server")
	default:
		s.log.Info().Str("server", a.id).Str("flow", f.id).Msg("oauth sign-in completed")
	}
	close(f.done)
}

// findFlow returns the flow with id (pending, or the last one that
// ended); with id empty, the pending flow, else the last one.
func (a *authState) findFlow(id string) *authFlow {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range []*authFlow{a.flow, a.last} {
		if f != nil && (id == "" || f.id == id) {
			return f
		}
	}
	return nil
}

func (s *Supervisor) authWait(ctx context.Context, sess *session, id string) (contracts.AuthResult, error) {
	a := s.auth(sess.cfg.ID)
	f := a.findFlow(id)
	if f == nil {
		return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonOAuthNoFlow,
			"no sign-in of %q is pending", sess.cfg.ID), "start one with 'pikoctl mcp auth "+sess.cfg.ID+"'")
	}
	if id == "" && f.from != nil {
		select {
		case <-f.done:
		default:
			// A sign-in that continues at another authorization server:
			// whoever waits without naming it may not have seen its link.
			return f.started, nil
		}
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return contracts.AuthResult{}, ctx.Err()
	}
	if f.err != nil {
		return contracts.AuthResult{}, f.err
	}
	return f.result, nil
}

func (s *Supervisor) authComplete(ctx context.Context, sess *session, p contracts.AuthParams) (contracts.AuthResult, error) {
	a := s.auth(sess.cfg.ID)
	f := a.findFlow(p.FlowID)
	if f == nil {
		return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonOAuthNoFlow,
			"no sign-in of %q is pending", sess.cfg.ID), "start one with 'pikoctl mcp auth "+sess.cfg.ID+"'")
	}
	select {
	case <-f.done:
		return contracts.AuthResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthFlowEnded,
			"the sign-in of %q this address belongs to has already ended", sess.cfg.ID), "start again with 'pikoctl mcp auth "+sess.cfg.ID+"'")
	default:
	}
	q, err := oauth.ParseRedirect(p.RedirectURL, f.req.RedirectURI)
	if err != nil {
		return contracts.AuthResult{}, err
	}
	if err := f.cb.Offer(oauth.ReadCallback(q)); err != nil {
		return contracts.AuthResult{}, err
	}
	return s.authWait(ctx, sess, f.id)
}

// AuthCancel serves extensions.mcp.auth.cancel: the pending sign-in ends
// and, unless its grant was already committed, the previous grant stays.
func (s *Supervisor) AuthCancel(id string) (contracts.AuthCancelResult, error) {
	if _, err := s.session(id); err != nil {
		return contracts.AuthCancelResult{}, err
	}
	a := s.auth(id)
	a.mu.Lock()
	f := a.flow
	res := contracts.AuthCancelResult{Server: id}
	switch {
	case f == nil:
		res.Message = "no sign-in was pending"
	case f.committed:
		res.Message = "the sign-in had already stored its grant, which cancelling cannot undo ('pikoctl mcp logout " + id + "' removes it)"
	default:
		f.cancelled, f.why = true, "cancelled"
		f.cancel()
		res.Cancelled = true
		res.Message = "the sign-in was cancelled; the previous grant (if any) is kept"
	}
	a.mu.Unlock()
	if res.Cancelled {
		s.log.Info().Str("server", id).Str("flow", f.id).Msg("oauth sign-in cancelled")
	}
	return res, nil
}

// Logout serves extensions.mcp.logout: the server's OAuth state leaves the
// vault (confirmed by reading it back), the cached token is dropped before
// that (no request after this gets it), a pending sign-in ends and can no
// longer commit, and the connection closes.
func (s *Supervisor) Logout(_ context.Context, id string) (contracts.LogoutResult, error) {
	sess, err := s.session(id)
	if err != nil {
		return contracts.LogoutResult{}, err
	}
	a := s.auth(id)
	res := contracts.LogoutResult{Server: id}
	a.mu.Lock()
	_, _ = a.recordLocked() // a flow started from what is stored ends with it
	a.epoch++
	if f := a.flow; f != nil {
		f.cancelled, f.why = true, whyLogout
		f.cancel()
		res.CancelledFlow = true
	}
	a.rec, a.loaded, a.blocked = nil, true, true
	a.challenge, a.stepUps, a.futile = nil, 0, false
	var derr error
	if st := s.opts.Grants; st != nil {
		if err := st.Delete(id); err != nil {
			derr = err
		} else if back, err := st.Load(id); err != nil {
			derr = err
		} else if back != nil {
			derr = contracts.Errorf(contracts.ErrInternal, contracts.ReasonVaultVerifyFailed, "the vault still holds the OAuth state of %q after deleting it", id)
		} else {
			a.blocked = false
		}
	} else {
		a.blocked = false
	}
	a.mu.Unlock()
	res.Removed = derr == nil
	res.WasConnected = sess.disconnect()
	if derr != nil {
		s.log.Error().Str("server", id).Err(derr).Msg("logout could not confirm the removal")
		return res, contracts.WithHint(fmt.Errorf("signing %q out: the OAuth state could not be confirmed removed from the vault: %w", id, derr),
			"pikod no longer uses it until it restarts; run 'pikoctl mcp logout "+id+"' again")
	}
	s.log.Info().Str("server", id).Bool("cancelled_flow", res.CancelledFlow).Msg("oauth state removed (logout)")
	return res, nil
}
