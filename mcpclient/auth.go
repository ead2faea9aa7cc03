package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/oauth"
)

// OAuthRecord is one server's OAuth state as the vault keeps it: a client
// registered dynamically (bound to the issuer that registered it) and the
// grant (bound to the settings, issuer and resource it was made for).
type OAuthRecord struct {
	Registration *StoredRegistration `json:"registration,omitempty"`
	Grant        *StoredGrant        `json:"grant,omitempty"`
}

// Values returns the secret values of the record, for redaction.
func (r *OAuthRecord) Values() []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Registration != nil && r.Registration.ClientSecret != "" {
		out = append(out, r.Registration.ClientSecret)
	}
	if g := r.Grant; g != nil {
		for _, v := range []string{g.AccessToken, g.RefreshToken} {
			if v != "" {
				out = append(out, v)
			}
		}
		if k := g.DPoP; k != nil {
			out = append(out, oauth.DPoPSecretValues(k.Alg, k.PrivateKey)...)
		}
	}
	return out
}

func (r *OAuthRecord) clone() *OAuthRecord {
	if r == nil {
		return &OAuthRecord{}
	}
	out := &OAuthRecord{}
	if r.Registration != nil {
		reg := *r.Registration
		out.Registration = &reg
	}
	if r.Grant != nil {
		g := *r.Grant
		if g.DPoP != nil {
			k := *g.DPoP
			g.DPoP = &k
		}
		out.Grant = &g
	}
	return out
}

// StoredRegistration is a dynamically registered client.
type StoredRegistration struct {
	// Issuer registered the client; it is used with no other.
	Issuer string `json:"issuer"`
	// ServerURL is the MCP endpoint it was registered for.
	ServerURL       string    `json:"serverUrl"`
	ClientID        string    `json:"clientId"`
	ClientSecret    string    `json:"clientSecret,omitempty"`
	AuthMethod      string    `json:"authMethod,omitempty"`
	RegisteredAt    time.Time `json:"registeredAt"`
	SecretExpiresAt int64     `json:"secretExpiresAt,omitempty"`
}

// Registration sources of a grant's client.
const (
	regSettings = "settings"
	regMetadata = "metadata_document"
	regDynamic  = "dynamic"
)

// StoredGrant is an access token (and maybe a refresh token) with what it
// is bound to and how to renew it.
type StoredGrant struct {
	// Binding is grantBinding of the settings the grant was made under.
	Binding   string `json:"binding"`
	GrantType string `json:"grantType"`
	Issuer    string `json:"issuer"`
	Resource  string `json:"resource"`
	// TokenEndpoint is the issuer's, where refreshes go.
	TokenEndpoint string `json:"tokenEndpoint"`
	ClientID      string `json:"clientId"`
	AuthMethod    string `json:"authMethod"`
	// Registration is regSettings, regMetadata or regDynamic.
	Registration   string    `json:"registration"`
	SigningAlgs    []string  `json:"signingAlgs,omitempty"`
	AccessToken    string    `json:"accessToken"`
	RefreshToken   string    `json:"refreshToken,omitempty"`
	Scope          string    `json:"scope,omitempty"`
	RequestedScope string    `json:"requestedScope,omitempty"`
	ExpiresAt      time.Time `json:"expiresAt,omitzero"`
	ObtainedAt     time.Time `json:"obtainedAt"`
	// DPoP is the key the grant's tokens are bound to (RFC 9449); nil for
	// Bearer tokens. It lives and dies with the grant.
	DPoP *StoredDPoPKey `json:"dpop,omitempty"`
}

// StoredDPoPKey is a grant's proof-of-possession key pair. The private
// half is kept here, in the vault, and in pikod's memory only: it is in
// the redaction set, and logs, errors and status name the key by its
// thumbprint.
type StoredDPoPKey struct {
	Alg string `json:"alg"`
	// PrivateKey is the PKCS#8 DER key, base64url (oauth.DPoPKey's
	// EncodePrivate).
	PrivateKey string `json:"privateKey"`
	// Thumbprint is the RFC 7638 thumbprint of the public half.
	Thumbprint string `json:"jkt"`
}

// String names the key by its thumbprint: a key formatted by mistake
// shows nothing secret.
func (k StoredDPoPKey) String() string { return "DPoP key " + k.Thumbprint }

// GoString keeps %#v from printing the private key.
func (k StoredDPoPKey) GoString() string { return k.String() }

// newStoredDPoPKey makes a fresh key pair for alg.
func newStoredDPoPKey(alg string) (*StoredDPoPKey, error) {
	k, err := oauth.NewDPoPKey(alg)
	if err != nil {
		return nil, err
	}
	enc, err := k.EncodePrivate()
	if err != nil {
		return nil, err
	}
	return &StoredDPoPKey{Alg: alg, PrivateKey: enc, Thumbprint: k.Thumbprint()}, nil
}

// key reads the stored key; one whose thumbprint is not the stored one is
// refused (the grant's tokens are bound to that thumbprint).
func (k *StoredDPoPKey) key() (*oauth.DPoPKey, error) {
	dk, err := oauth.ParseDPoPKey(k.Alg, k.PrivateKey)
	if err != nil {
		return nil, contracts.WithHint(err, "sign in again to make a new key")
	}
	if dk.Thumbprint() != k.Thumbprint {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey,
			"the stored DPoP key is not the key %s the grant is bound to", k.Thumbprint), "sign in again to make a new key")
	}
	return dk, nil
}

// tokenType is the grant's token type.
func (g *StoredGrant) tokenType() string {
	if g.DPoP != nil {
		return oauth.TokenTypeDPoP
	}
	return oauth.TokenTypeBearer
}

// thumbprint is the key's thumbprint; "" for no key.
func (k *StoredDPoPKey) thumbprint() string {
	if k == nil {
		return ""
	}
	return k.Thumbprint
}

// jkt is the thumbprint of the grant's DPoP key, or "".
func (g *StoredGrant) jkt() string {
	if g.DPoP == nil {
		return ""
	}
	return g.DPoP.Thumbprint
}

// expiryMargin is how long before its expiry a token counts as expired:
// the request it goes on takes time, and clocks drift.
func (g *StoredGrant) expiryMargin() time.Duration {
	if g.ExpiresAt.IsZero() {
		return 0
	}
	life := g.ExpiresAt.Sub(g.ObtainedAt)
	return min(30*time.Second, life/4)
}

// expired reports whether the token is expired (or about to be) at now.
func (g *StoredGrant) expired(now time.Time) bool {
	return !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt.Add(-g.expiryMargin()))
}

// renewable reports whether pikod can get a new token without the owner.
func (g *StoredGrant) renewable() bool {
	return g.RefreshToken != "" || noOwnerGrant(g.GrantType)
}

// scopeSet is the scope the grant holds: what the server said it granted,
// else what was asked for.
func (g *StoredGrant) scopeSet() []string {
	if g.Scope != "" {
		return strings.Fields(g.Scope)
	}
	return strings.Fields(g.RequestedScope)
}

func (g *StoredGrant) info() *contracts.OAuthGrantInfo {
	in := &contracts.OAuthGrantInfo{GrantType: g.GrantType, Issuer: g.Issuer, Resource: g.Resource, Scope: g.Scope,
		Refreshable: g.renewable(), ClientID: g.ClientID, Registration: g.Registration,
		ObtainedAt: g.ObtainedAt.UTC().Format(time.RFC3339), TokenType: g.tokenType(), DPoPKey: g.jkt()}
	if in.Scope == "" {
		in.Scope = g.RequestedScope
	}
	if !g.ExpiresAt.IsZero() {
		in.ExpiresAt = g.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return in
}

// GrantStore keeps each server's OAuthRecord (the daemon's is the vault).
type GrantStore interface {
	// Load returns the record (nil, nil when there is none).
	Load(server string) (*OAuthRecord, error)
	// Save replaces the record; it returns once the store has it, read
	// back and compared.
	Save(server string, rec *OAuthRecord) error
	// Delete removes the record; removing an absent one is not an error.
	Delete(server string) error
}

// grantBinding is what a grant is bound to: the endpoint, its private
// network exception and the OAuth settings (scope, client, issuer, grant
// type...), but not the callback port, which is no part of the grant.
func grantBinding(cfg *contracts.ServerSettings) string {
	h := sha256.New()
	part := func(v string) { fmt.Fprintf(h, "%d:%s;", len(v), v) }
	part(cfg.Transport)
	part(cfg.URL)
	part(fmt.Sprint(cfg.AllowPrivateNetwork))
	if o := cfg.OAuth; o != nil {
		for _, v := range []string{o.ClientID, o.Issuer, o.EffectiveGrantType(), o.Scope, o.ClientMetadataURL,
			o.TokenEndpointAuthMethod, o.IdPTokenEndpoint, o.IdPClientID} {
			part(v)
		}
		// Only a mode other than the default joins the binding, so the
		// grants made before the setting existed stay bound.
		if m := o.DPoP.Effective(); m != contracts.DPoPAuto {
			part("dpop=" + string(m))
		}
	} else {
		part(contracts.GrantAuthorizationCode)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// oauthFor reports whether OAuth applies to a server: http and sse
// servers, unless its stored credentials give a static Authorization
// header (then that header is the server's credential).
func oauthFor(cfg *contracts.ServerSettings, creds Credentials) bool {
	if cfg.Transport != contracts.TransportHTTP && cfg.Transport != contracts.TransportSSE {
		return false
	}
	for name := range creds.Headers {
		if strings.EqualFold(name, "Authorization") {
			return false
		}
	}
	return true
}

// authState is one server's OAuth state in memory, shared by its sessions
// (a new session after a settings change finds the same state and checks
// the binding).
type authState struct {
	sup *Supervisor
	id  string

	// mu guards the fields that follow. The store is called under it, so
	// a refresh, a commit and a logout never interleave.
	mu sync.Mutex
	// loaded is true once rec reflects the store.
	loaded bool
	rec    *OAuthRecord
	// blocked is set by a logout whose removal could not be confirmed:
	// nothing is read from the store again until a new grant is committed.
	blocked bool
	// epoch counts logouts: a flow or refresh started in an older epoch
	// cannot commit.
	epoch uint64
	// refreshing is the renewal in progress, shared by its callers.
	refreshing *renewal
	// flow is the browser flow waiting for its callback or finishing;
	// last is the one that ended most recently (for op wait).
	flow, last *authFlow
	// challenge is the latest Bearer challenge the server answered with.
	challenge *oauth.Challenge
	// stepUps counts the authorization requests made for an
	// insufficient_scope challenge since a call last went through.
	stepUps int
	// futile is set when the server refused a scope the grant already has:
	// asking again would not help.
	futile bool
	// refused is why the authorization server last refused a grant that
	// needs no owner (invalid_grant, invalid_scope, unauthorized_client,
	// invalid_client): until the owner signs in again or the settings
	// change, pikod does not ask again (see grantWithoutBrowser).
	refused string
	// asNonces holds the latest DPoP nonce of each authorization server
	// (by issuer) this server's grants were asked of.
	asNonces map[string]*oauth.DPoPNonce

	// rsNonce is the latest DPoP nonce the MCP server gave (it has its
	// own mutex): a resource server's nonce never goes to an
	// authorization server, nor the other way round.
	rsNonce oauth.DPoPNonce
}

// asNonce returns the DPoP nonce holder of the authorization server
// issuer.
func (a *authState) asNonce(issuer string) *oauth.DPoPNonce {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.asNonces == nil {
		a.asNonces = map[string]*oauth.DPoPNonce{}
	}
	n, ok := a.asNonces[issuer]
	if !ok {
		n = &oauth.DPoPNonce{}
		a.asNonces[issuer] = n
	}
	return n
}

// dpopFor is what a token request of grant g's key needs: nil for a
// Bearer grant.
func (a *authState) dpopFor(k *StoredDPoPKey, issuer string) (*oauth.DPoP, error) {
	if k == nil {
		return nil, nil
	}
	dk, err := k.key()
	if err != nil {
		return nil, err
	}
	return &oauth.DPoP{Key: dk, Nonce: a.asNonce(issuer)}, nil
}

// renewal is one refresh (or client_credentials re-acquisition) shared by
// every caller that needs it.
type renewal struct {
	done chan struct{}
	cred credential
	err  error
}

// credential is what goes on a request to the MCP server: the access
// token and, for a DPoP-bound grant, the key its proofs are signed with.
type credential struct {
	token string
	dpop  *StoredDPoPKey
}

func (g *StoredGrant) credential() credential {
	return credential{token: g.AccessToken, dpop: g.DPoP}
}

func (s *Supervisor) auth(id string) *authState {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.auths[id]
	if !ok {
		a = &authState{sup: s, id: id}
		s.auths[id] = a
	}
	return a
}

// recordLocked returns the stored record, reading the store once.
func (a *authState) recordLocked() (*OAuthRecord, error) {
	if a.blocked {
		return nil, nil
	}
	if a.loaded {
		return a.rec, nil
	}
	if a.sup.opts.Grants == nil {
		a.loaded = true
		return nil, nil
	}
	rec, err := a.sup.opts.Grants.Load(a.id)
	if err != nil {
		return nil, fmt.Errorf("reading the OAuth grant of %q: %w", a.id, err)
	}
	a.rec, a.loaded = rec, true
	return rec, nil
}

// grantLocked returns the stored grant when it is bound to cfg, else nil.
func (a *authState) grantLocked(cfg *contracts.ServerSettings) (*StoredGrant, error) {
	rec, err := a.recordLocked()
	if err != nil || rec == nil || rec.Grant == nil {
		return nil, err
	}
	if rec.Grant.Binding != grantBinding(cfg) {
		return nil, nil
	}
	return rec.Grant, nil
}

// accessToken returns the credential to send to the server now: none
// when there is no grant (the request goes without one, and the server's
// answer says how to get one), a renewed one when the stored token
// expired.
func (a *authState) accessToken(ctx context.Context, cfg *contracts.ServerSettings) (credential, error) {
	a.mu.Lock()
	g, err := a.grantLocked(cfg)
	if err != nil || g == nil {
		a.mu.Unlock()
		return credential{}, err
	}
	if !g.expired(time.Now()) {
		cred := g.credential()
		a.mu.Unlock()
		return cred, nil
	}
	tok := g.AccessToken
	a.mu.Unlock()
	return a.renew(ctx, cfg, tok)
}

// renew returns a credential whose token is not failed: the current one
// if someone renewed it meanwhile, else the result of one renewal shared
// by every caller (single flight). The renewal runs on the supervisor's
// context, so a caller that gives up does not cancel it for the others.
func (a *authState) renew(ctx context.Context, cfg *contracts.ServerSettings, failed string) (credential, error) {
	a.mu.Lock()
	g, err := a.grantLocked(cfg)
	if err != nil {
		a.mu.Unlock()
		return credential{}, err
	}
	if g == nil {
		a.mu.Unlock()
		return credential{}, a.needsAuth("the grant was removed (logout) or is no longer stored")
	}
	if g.AccessToken != failed && !g.expired(time.Now()) {
		cred := g.credential()
		a.mu.Unlock()
		return cred, nil
	}
	if !g.renewable() {
		a.mu.Unlock()
		return credential{}, a.needsAuth("the access token expired or was refused, and the authorization server gave no refresh token")
	}
	call := a.refreshing
	if call == nil {
		call = &renewal{done: make(chan struct{})}
		a.refreshing = call
		grant, epoch := *g, a.epoch
		a.sup.wg.Add(1)
		go func() {
			defer a.sup.wg.Done()
			a.runRenewal(call, cfg, grant, epoch)
		}()
	}
	a.mu.Unlock()
	select {
	case <-call.done:
		return call.cred, call.err
	case <-ctx.Done():
		return credential{}, ctx.Err()
	}
}

// renewalTimeout bounds one refresh, independent of its callers.
const renewalTimeout = 30 * time.Second

func (a *authState) runRenewal(call *renewal, cfg *contracts.ServerSettings, g StoredGrant, epoch uint64) {
	ctx, cancel := context.WithTimeout(a.sup.ctx, renewalTimeout)
	defer cancel()
	next, err := a.sup.renewGrant(ctx, cfg, &g)
	a.mu.Lock()
	defer func() {
		a.refreshing = nil
		a.mu.Unlock()
		close(call.done)
	}()
	log := a.sup.log.With().Str("server", a.id).Str("grant_type", g.GrantType).Logger()
	if k := g.jkt(); k != "" {
		log = log.With().Str("dpop_jkt", k).Logger()
	}
	if a.epoch != epoch {
		call.err = a.needsAuth("signed out while the token was being renewed")
		return
	}
	if err != nil {
		if oauth.InvalidGrant(err) {
			// The grant is dead (revoked, rotated away, expired): drop the
			// tokens and wait for the owner, never retry.
			rec := a.rec.clone()
			rec.Grant = nil
			if serr := a.saveLocked(rec); serr != nil {
				log.Error().Err(serr).Msg("removing a refused grant")
			}
			log.Warn().Msg("the authorization server refused the refresh token (invalid_grant): sign-in needed")
			call.err = a.needsAuth("the authorization server refused the refresh token (invalid_grant)")
			return
		}
		log.Warn().Err(err).Msg("renewing the access token failed")
		call.err = contracts.WithHint(fmt.Errorf("renewing the access token of %q: %w", a.id, err),
			"nothing was sent to the server; check the authorization server, then ask again")
		return
	}
	rec := a.rec.clone()
	rec.Grant = next
	if err := a.saveLocked(rec); err != nil {
		log.Error().Err(err).Msg("storing the renewed grant")
		call.err = fmt.Errorf("storing the renewed token of %q: %w", a.id, err)
		return
	}
	log.Info().Bool("rotated", next.RefreshToken != g.RefreshToken).Msg("access token renewed")
	call.cred = a.rec.Grant.credential()
}

// saveLocked writes rec, reads it back and makes what was read the
// current record: a token is used only once the store gave it back.
func (a *authState) saveLocked(rec *OAuthRecord) error {
	st := a.sup.opts.Grants
	if st == nil {
		a.rec, a.loaded = rec, true
		return nil
	}
	if err := st.Save(a.id, rec); err != nil {
		// A write that timed out may land later: read again next time.
		a.loaded = false
		return err
	}
	back, err := st.Load(a.id)
	if err != nil {
		a.loaded = false
		return fmt.Errorf("reading the OAuth grant of %q back: %w", a.id, err)
	}
	if !sameRecord(back, rec) {
		a.loaded = false
		return contracts.Errorf(contracts.ErrInternal, contracts.ReasonVaultVerifyFailed, "the vault returned another OAuth grant for %q than was written", a.id)
	}
	a.rec, a.loaded, a.blocked = back, true, false
	return nil
}

func sameRecord(a, b *OAuthRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	ga, gb := a.Grant, b.Grant
	if (ga == nil) != (gb == nil) || (ga != nil && (ga.AccessToken != gb.AccessToken || ga.RefreshToken != gb.RefreshToken ||
		(ga.DPoP == nil) != (gb.DPoP == nil) || (ga.DPoP != nil && *ga.DPoP != *gb.DPoP))) {
		return false
	}
	ra, rb := a.Registration, b.Registration
	return (ra == nil) == (rb == nil) && (ra == nil || (ra.ClientID == rb.ClientID && ra.ClientSecret == rb.ClientSecret))
}

// noteChallenge keeps the latest challenge the server answered with.
func (a *authState) noteChallenge(ch *oauth.Challenge) {
	if ch == nil {
		return
	}
	a.mu.Lock()
	a.challenge = ch
	a.mu.Unlock()
}

// latestChallenge returns the latest challenge, or nil.
func (a *authState) latestChallenge() *oauth.Challenge {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.challenge
}

// callWentThrough resets the step-up count: a call was authorized.
func (a *authState) callWentThrough() {
	a.mu.Lock()
	a.stepUps, a.futile = 0, false
	a.mu.Unlock()
}

// status describes the server's OAuth state for extensions.mcp.status.
func (a *authState) status(cfg *contracts.ServerSettings) *contracts.OAuthStatus {
	st := &contracts.OAuthStatus{GrantType: contracts.GrantAuthorizationCode}
	if cfg.OAuth != nil {
		st.GrantType = cfg.OAuth.EffectiveGrantType()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, err := a.recordLocked()
	switch {
	case err != nil:
		st.Grant = "unknown"
	case rec == nil || rec.Grant == nil:
		st.Grant = "none"
	case rec.Grant.Binding != grantBinding(cfg):
		st.Grant = "stale"
	default:
		st.Grant = "stored"
		st.Info = rec.Grant.info()
	}
	if f := a.flow; f != nil {
		st.Pending = &contracts.OAuthPending{FlowID: f.id, ExpiresAt: f.expires.UTC().Format(time.RFC3339), Scope: f.req.Scope}
	}
	if a.challenge != nil {
		st.RequiredScope = a.challenge.Scope
	}
	return st
}

// needsAuth is the error of a server that needs the owner to sign in.
func (a *authState) needsAuth(why string) error {
	return &authRequired{server: a.id, why: why}
}

// authRequired says a server needs a (new or wider) grant. It is set when
// the server answered 401 (or 403 insufficient_scope) and pikod could not
// fix it by itself, or before sending when no usable token exists.
type authRequired struct {
	server string
	why    string
	// status is the HTTP status the server answered (0 when nothing was
	// sent to it).
	status    int
	challenge *oauth.Challenge
	// header is the response's WWW-Authenticate values, as they came.
	header []string
	// permanent: the server refused a scope the grant already holds.
	permanent bool
}

func (e *authRequired) Error() string {
	msg := fmt.Sprintf("server %q needs authorization: %s", e.server, e.why)
	return msg
}

func (e *authRequired) Unwrap() error { return contracts.ErrFailedPrecondition }

func (e *authRequired) Reason() string {
	switch {
	case e.permanent:
		return "insufficient_scope_permanent"
	case e.challenge.InsufficientScope():
		return "insufficient_scope"
	}
	return "needs_auth"
}

func (e *authRequired) Hint() string {
	switch {
	case e.permanent:
		return "the grant already has the scope the server asks for, so signing in again would not help: check with the server's operator"
	case e.challenge.InsufficientScope():
		return "sign in again with the wider scope: 'pikoctl mcp auth " + e.server + "' (the call was not run)"
	}
	return "sign in with 'pikoctl mcp auth " + e.server + "'"
}

// asAuthRequired finds an authRequired in err's chain.
func asAuthRequired(err error) (*authRequired, bool) {
	var ar *authRequired
	ok := errors.As(err, &ar)
	return ar, ok
}

// authTransport puts the server's access token on every request to the
// MCP server's origin (and on nothing else), and turns a 401 or a 403 with
// a Bearer (or DPoP) challenge into an *authRequired. A DPoP-bound token
// goes as "Authorization: DPoP TOKEN" with a fresh proof for the request
// (RFC 9449 section 7). Two 401s are answered by sending the same request
// again, once each, because the server refused the request unread, so it
// was not run: a DPoP use_dpop_nonce challenge with a DPoP-Nonce (resent
// with the nonce, RFC 9449 section 9), and a refusal of a token that
// looked valid (resent with a renewed token, shared with every concurrent
// caller). Nothing else is ever resent.
type authTransport struct {
	base   http.RoundTripper
	origin netguard.Origin
	cfg    *contracts.ServerSettings
	auth   *authState
	// staged, while set and not committed, is the grant this connection
	// proves before it is committed: its token is used, never renewed.
	staged atomic.Pointer[stagedGrant]
	// onRefusal hears every refusal the transport gives up on.
	onRefusal func(*authRequired)
}

func (t *authTransport) token(ctx context.Context) (credential, bool, error) {
	if st := t.staged.Load(); st != nil && !st.committed.Load() {
		return st.grant.credential(), true, nil
	}
	cred, err := t.auth.accessToken(ctx, t.cfg)
	return cred, false, err
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if netguard.OriginOf(req.URL) != t.origin {
		// Only the MCP server gets its token; mcp-go never sends elsewhere,
		// but a server-chosen SSE endpoint must not change that.
		out := req.Clone(req.Context())
		out.Header.Del("Authorization")
		out.Header.Del("DPoP")
		return t.base.RoundTrip(out)
	}
	cred, staged, err := t.token(req.Context())
	if err != nil {
		closeBody(req)
		if ar, ok := asAuthRequired(err); ok && t.onRefusal != nil {
			t.onRefusal(ar)
		}
		return nil, &netguard.UnsentError{Err: err, Method: req.Method}
	}
	bodyless := req.Body == nil || req.Body == http.NoBody
	again := func() (*http.Request, bool) {
		if bodyless {
			return req.Clone(req.Context()), true
		}
		if req.GetBody == nil {
			return nil, false
		}
		retry := req.Clone(req.Context())
		var err error
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, false
		}
		return retry, true
	}
	resp, err := t.send(req, cred)
	if err != nil {
		return nil, err
	}
	if cred.dpop != nil && oauth.NonceChallenge(resp.StatusCode, resp.Header) {
		// The server wants its nonce in the proof (send kept it): the
		// request was refused unread, so it goes again, once.
		if retry, ok := again(); ok {
			drain(resp)
			if resp, err = t.send(retry, cred); err != nil {
				return nil, err
			}
		}
	}
	if resp.StatusCode == http.StatusUnauthorized && cred.token != "" && !staged && (bodyless || req.GetBody != nil) &&
		!oauth.NonceChallenge(resp.StatusCode, resp.Header) {
		// The token looked valid and was refused: renew once, resend once.
		next, rerr := t.auth.renew(req.Context(), t.cfg, cred.token)
		if rerr == nil && next.token != "" && next.token != cred.token {
			if retry, ok := again(); ok {
				drain(resp)
				if resp, err = t.send(retry, next); err != nil {
					return nil, err
				}
			}
		}
	}
	return t.refusal(resp, cred.token != "")
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// send sends req once with cred: a Bearer token, or a DPoP token with a
// proof signed now for this method and URL, carrying the server's latest
// nonce and the token's hash. The nonce of the answer is kept.
func (t *authTransport) send(req *http.Request, cred credential) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Del("DPoP")
	switch {
	case cred.token == "":
		out.Header.Del("Authorization")
	case cred.dpop != nil:
		k, err := cred.dpop.key()
		var proof string
		if err == nil {
			proof, err = k.Proof(out.Method, out.URL, t.auth.rsNonce.Get(), cred.token, time.Now())
		}
		if err != nil {
			closeBody(req)
			return nil, &netguard.UnsentError{Err: fmt.Errorf("making the DPoP proof for a request to %q: %w", t.cfg.ID, err), Method: req.Method}
		}
		out.Header.Set("Authorization", "DPoP "+cred.token)
		out.Header.Set("DPoP", proof)
	default:
		out.Header.Set("Authorization", "Bearer "+cred.token)
	}
	resp, err := t.base.RoundTrip(out)
	if err == nil && cred.dpop != nil {
		t.auth.rsNonce.NoteFrom(resp.Header)
	}
	return resp, err
}

// refusal turns a 401, or a 403 that carries a Bearer (or DPoP)
// challenge, into an error that says the server did not run the request.
func (t *authTransport) refusal(resp *http.Response, hadToken bool) (*http.Response, error) {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	ch, bearer := oauth.ServerChallenge(resp.Header)
	if resp.StatusCode == http.StatusForbidden && !bearer {
		return resp, nil
	}
	drain(resp)
	if ch == nil {
		ch = &oauth.Challenge{}
	}
	ar := &authRequired{server: t.cfg.ID, status: resp.StatusCode, challenge: ch, header: resp.Header.Values("WWW-Authenticate")}
	switch {
	case resp.StatusCode == http.StatusForbidden && ch.InsufficientScope():
		ar.why = "the server refused the request for lack of scope (HTTP 403 insufficient_scope"
		if ch.Scope != "" {
			ar.why += ", it asks for " + strconvQuote(ch.Scope, 200)
		}
		ar.why += "); it was not run"
	case resp.StatusCode == http.StatusForbidden:
		ar.why = "the server refused the token (HTTP 403); the request was not run"
	case hadToken && oauth.NonceChallenge(resp.StatusCode, resp.Header):
		ar.why = "the server asked for a new DPoP nonce again after pikod sent the one it gave (HTTP 401 use_dpop_nonce); the request was not run"
	case hadToken:
		ar.why = "the server refused the access token (HTTP 401); the request was not run"
	default:
		ar.why = "the server requires OAuth (HTTP 401)"
	}
	if t.onRefusal != nil {
		t.onRefusal(ar)
	}
	return nil, ar
}

func drain(resp *http.Response) {
	buf := make([]byte, 4096)
	for range 16 {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
}

func strconvQuote(s string, n int) string {
	return fmt.Sprintf("%q", contracts.SafeText(s, contracts.OneLine, n))
}

// CloseIdleConnections reaches the guard's transport.
func (t *authTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
