package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/oauth"
)

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
