package mcpclient

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/oauth"
)

// oauthEnv is what one OAuth operation of a server needs: its settings,
// its secrets, and a client for OAuth fetches that follows the network
// policy: every request through the guard (https and public addresses;
// plaintext and private addresses only on the MCP server's own host when
// its entry has allowPrivateNetwork), no redirects, bounded bodies, and
// none of the server's configured headers.
type oauthEnv struct {
	cfg    *contracts.ServerSettings
	creds  Credentials
	client *oauth.Client
	// owner is set when the owner asked for this sign-in (pikoctl mcp
	// auth): it may ask again after a refusal.
	owner bool
}

func (s *Supervisor) oauthEnv(cfg *contracts.ServerSettings) (*oauthEnv, error) {
	var creds Credentials
	if s.opts.Credentials != nil {
		var err error
		if creds, err = s.opts.Credentials(cfg); err != nil {
			return nil, err
		}
	}
	if !oauthFor(cfg, creds) {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNotApplicable,
			"server %q does not use OAuth: it is a %s server, or its stored credentials carry a static Authorization header", cfg.ID, cfg.Transport),
			"for OAuth, clear the static header with 'pikoctl mcp secret "+cfg.ID+"'")
	}
	hc, err := netguard.NewClient(netguard.Config{
		URL: cfg.URL, AllowPrivateNetwork: cfg.AllowPrivateNetwork, SameHostAnyPort: true,
		MaxBodyBytes: oauth.MaxDocumentBytes + 1, Resolver: s.opts.Resolver, TLSPin: cfg.TLSPin,
	})
	if err != nil {
		return nil, err
	}
	return &oauthEnv{cfg: cfg, creds: creds, client: &oauth.Client{HTTP: hc, UserAgent: "pikod/" + s.opts.ClientVersion}}, nil
}

func (e *oauthEnv) settings() contracts.OAuthSettings {
	if e.cfg.OAuth == nil {
		return contracts.OAuthSettings{}
	}
	return *e.cfg.OAuth
}

// privateKey parses the stored private key, if any.
func (e *oauthEnv) privateKey() (crypto.Signer, string, error) {
	if e.creds.OAuthPrivateKey == "" {
		return nil, "", nil
	}
	key, alg, err := oauth.ParsePrivateKey(e.creds.OAuthPrivateKey)
	if err != nil {
		return nil, "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadPrivateKey,
			"the stored oauthPrivateKey of %q %v", e.cfg.ID, err),
			"store a PEM private key with 'pikoctl mcp secret "+e.cfg.ID+"'")
	}
	return key, alg, nil
}

// settingsClient is the client authentication of the pre-registered
// client the settings name (clientId), at the authorization server md.
func (e *oauthEnv) settingsClient(md *oauth.ServerMetadata) (oauth.ClientAuth, error) {
	o := e.settings()
	key, alg, err := e.privateKey()
	if err != nil {
		return oauth.ClientAuth{}, err
	}
	method := oauth.ChooseAuthMethod(o.TokenEndpointAuthMethod, e.creds.OAuthClientSecret != "", key != nil, md.TokenEndpointAuthMethodsSupported)
	auth := oauth.ClientAuth{ClientID: o.ClientID, Method: method, Secret: e.creds.OAuthClientSecret, Audience: md.Issuer}
	if method == contracts.AuthMethodPrivateKeyJWT {
		if key == nil {
			return auth, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoPrivateKey,
				"server %q uses private_key_jwt, but no oauthPrivateKey is stored", e.cfg.ID),
				`store it with 'pikoctl mcp secret `+e.cfg.ID+`' as {"oauthPrivateKey":"-----BEGIN PRIVATE KEY-----..."}`)
		}
		if algs := md.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, alg) {
			return auth, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAlg,
				"the stored private key signs with %s, but the authorization server accepts %s", alg, strings.Join(algs, ", "))
		}
		auth.Key, auth.Alg = key, alg
	}
	return auth, nil
}

// grantClient rebuilds the client authentication a stored grant was made
// with, for its renewal.
func (s *Supervisor) grantClient(e *oauthEnv, g *StoredGrant, rec *OAuthRecord) (oauth.ClientAuth, error) {
	auth := oauth.ClientAuth{ClientID: g.ClientID, Method: g.AuthMethod, Audience: g.Issuer}
	switch g.Registration {
	case regSettings:
		auth.Secret = e.creds.OAuthClientSecret
		if g.AuthMethod == contracts.AuthMethodPrivateKeyJWT {
			key, alg, err := e.privateKey()
			if err != nil {
				return auth, err
			}
			auth.Key, auth.Alg = key, alg
		}
	case regDynamic:
		// Only the registration of the grant's own issuer: a client
		// registered elsewhere never goes to this server.
		if rec != nil && rec.Registration != nil && rec.Registration.Issuer == g.Issuer && rec.Registration.ClientID == g.ClientID {
			auth.Secret = rec.Registration.ClientSecret
		}
	}
	return auth, nil
}

// renewGrant gets a new token for g without the owner: a refresh, or a
// new client_credentials or cross-app grant.
func (s *Supervisor) renewGrant(ctx context.Context, cfg *contracts.ServerSettings, g *StoredGrant) (*StoredGrant, error) {
	e, err := s.oauthEnv(cfg)
	if err != nil {
		return nil, err
	}
	if g.RefreshToken == "" {
		d := &oauth.Discovery{Resource: g.Resource, AuthorizationServer: g.Issuer,
			Metadata: oauth.ServerMetadata{Issuer: g.Issuer, TokenEndpoint: g.TokenEndpoint,
				TokenEndpointAuthSigningAlgValuesSupported: g.SigningAlgs}}
		switch g.GrantType {
		case contracts.GrantClientCredentials, contracts.GrantCrossAppAccess, contracts.GrantJWTBearer:
			auth, err := s.grantClient(e, g, nil)
			if err != nil {
				return nil, err
			}
			// The new grant keeps the key (or the Bearer tokens) of the
			// one it replaces: the metadata that chose it is not at hand.
			return s.grantWithoutBrowser(ctx, e, d, g.RequestedScope, &auth, g.DPoP)
		}
		return nil, fmt.Errorf("the grant of %q has no refresh token: %w", cfg.ID, contracts.ErrFailedPrecondition)
	}
	a := s.auth(cfg.ID)
	a.mu.Lock()
	rec := a.rec.clone()
	a.mu.Unlock()
	auth, err := s.grantClient(e, g, rec)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {oauth.GrantTypeRefreshToken}, "refresh_token": {g.RefreshToken}}
	if g.Resource != "" {
		form.Set("resource", g.Resource)
	}
	// A DPoP grant's refresh token is bound to its key too (RFC 9449
	// section 5): the refresh carries a proof with the same key.
	dp, err := a.dpopFor(g.DPoP, g.Issuer)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Token(ctx, g.TokenEndpoint, form, auth, tokenOptions(dp))
	if err != nil {
		return nil, err
	}
	next := *g
	next.AccessToken = resp.AccessToken
	if resp.RefreshToken != "" {
		// Rotation: the old refresh token is spent.
		next.RefreshToken = resp.RefreshToken
	}
	if resp.Scope != "" {
		next.Scope = resp.Scope
	}
	next.ObtainedAt = time.Now()
	next.ExpiresAt = time.Time{}
	if resp.ExpiresIn > 0 {
		next.ExpiresAt = next.ObtainedAt.Add(resp.ExpiresIn)
	}
	return &next, nil
}

// tokenOptions asks for a Bearer token, or a DPoP token with dp's proof.
func tokenOptions(dp *oauth.DPoP) oauth.TokenOptions {
	return oauth.TokenOptions{TokenType: oauth.TokenTypeBearer, DPoP: dp}
}

// grantKey decides whether a new grant from the authorization server d
// found is DPoP-bound, and makes its key pair: nil for Bearer tokens.
// oauth.dpop auto (the default) binds when the authorization server's
// metadata lists dpop_signing_alg_values_supported with an algorithm
// pikod signs with (and the resource's list, when it has one, has it
// too); true insists; false never binds. A resource that takes
// DPoP-bound tokens only (dpop_bound_access_tokens_required) is refused
// what it would refuse.
func (s *Supervisor) grantKey(e *oauthEnv, d *oauth.Discovery) (*StoredDPoPKey, error) {
	mode := e.settings().DPoP.Effective()
	md := &d.Metadata
	var rsAlgs []string
	required := false
	if d.Protected != nil {
		rsAlgs, required = d.Protected.DPoPSigningAlgValuesSupported, d.Protected.DPoPBoundAccessTokensRequired
	}
	id := e.cfg.ID
	if mode == contracts.DPoPOff {
		if required {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDPoPRequired,
				"server %q takes DPoP-bound tokens only (its resource metadata sets dpop_bound_access_tokens_required), and oauth.dpop is false", id),
				`remove oauth.dpop (or set it to "auto"), configure again, then sign in again`)
		}
		return nil, nil
	}
	if len(md.DPoPSigningAlgValuesSupported) == 0 {
		switch {
		case mode == contracts.DPoPOn:
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDPoPUnsupported,
				"oauth.dpop is true, but the authorization server %s of %q lists no dpop_signing_alg_values_supported in its metadata: it issues no DPoP-bound tokens",
				md.Issuer, id),
				`set oauth.dpop to "auto" to use Bearer tokens with it, or ask the server's operator for DPoP`)
		case required:
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDPoPUnsupported,
				"server %q takes DPoP-bound tokens only, but its authorization server %s lists no dpop_signing_alg_values_supported: no token it issues would be accepted",
				id, md.Issuer), "check with the server's operator")
		}
		return nil, nil
	}
	alg := oauth.ChooseDPoPAlg(md.DPoPSigningAlgValuesSupported, rsAlgs)
	if alg == "" {
		if mode == contracts.DPoPAuto && !required {
			s.log.Info().Str("server", id).Str("issuer", md.Issuer).Strs("dpop_algs", md.DPoPSigningAlgValuesSupported).
				Msg("the authorization server signs DPoP with no algorithm pikod has: using Bearer tokens")
			return nil, nil
		}
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAlg,
			"the authorization server %s of %q accepts DPoP proofs signed with %s (the resource with %s); pikod signs them with %s",
			md.Issuer, id, algList(md.DPoPSigningAlgValuesSupported), algList(rsAlgs), strings.Join(oauth.DPoPAlgs, ", ")),
			`set oauth.dpop to false to use Bearer tokens, or ask the server's operator for ES256`)
	}
	k, err := newStoredDPoPKey(alg)
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("server", id).Str("issuer", md.Issuer).Str("alg", alg).Str("dpop_jkt", k.Thumbprint).
		Msg("dpop key pair made for a new grant")
	return k, nil
}

func algList(algs []string) string {
	if len(algs) == 0 {
		return "any algorithm"
	}
	out := make([]string, 0, len(algs))
	for i, a := range algs {
		if i == 8 {
			out = append(out, "…")
			break
		}
		out = append(out, contracts.SafeText(a, contracts.OneLine, 20))
	}
	return strings.Join(out, ", ")
}

// newGrant builds the StoredGrant of a token response.
func newGrant(cfg *contracts.ServerSettings, grantType string, d *oauth.Discovery, auth oauth.ClientAuth, registration, scope string,
	resp *oauth.TokenResponse, key *StoredDPoPKey) *StoredGrant {
	g := &StoredGrant{
		Binding: grantBinding(cfg), GrantType: grantType, Issuer: d.Metadata.Issuer, Resource: d.Resource,
		TokenEndpoint: d.Metadata.TokenEndpoint, ClientID: auth.ClientID, AuthMethod: auth.Method, Registration: registration,
		SigningAlgs: d.Metadata.TokenEndpointAuthSigningAlgValuesSupported,
		AccessToken: resp.AccessToken, RefreshToken: resp.RefreshToken, Scope: resp.Scope, RequestedScope: scope,
		ObtainedAt: time.Now(), DPoP: key,
	}
	if resp.ExpiresIn > 0 {
		g.ExpiresAt = g.ObtainedAt.Add(resp.ExpiresIn)
	}
	return g
}

// grantWithoutBrowser runs client_credentials, jwt_bearer, or the
// cross-app access exchange (RFC 8693 at the identity provider, then RFC
// 7523 at the authorization server). With key, the token request at the
// authorization server carries a DPoP proof and the grant is bound to it.
func (s *Supervisor) grantWithoutBrowser(ctx context.Context, e *oauthEnv, d *oauth.Discovery, scope string, known *oauth.ClientAuth,
	key *StoredDPoPKey) (*StoredGrant, error) {
	o := e.settings()
	a := s.auth(e.cfg.ID)
	a.mu.Lock()
	refused := a.refused
	a.mu.Unlock()
	if refused != "" && !e.owner {
		// Never asked again on its own: the same request would be refused.
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNeedsAuth,
			"the authorization server refused the %s grant of %q (%s); nothing was sent", o.EffectiveGrantType(), e.cfg.ID, refused),
			"fix what it names, then sign in again with 'pikoctl mcp auth "+e.cfg.ID+"'")
	}
	var auth oauth.ClientAuth
	if known != nil {
		auth = *known
	} else {
		var err error
		if auth, err = e.settingsClient(&d.Metadata); err != nil {
			return nil, err
		}
	}
	grant := o.EffectiveGrantType()
	form := url.Values{}
	switch grant {
	case contracts.GrantClientCredentials:
		form.Set("grant_type", contracts.GrantClientCredentials)
	case contracts.GrantCrossAppAccess:
		jag, err := s.identityGrant(ctx, e, d, scope)
		if err != nil {
			return nil, err
		}
		form.Set("grant_type", oauth.GrantTypeJWTBearer)
		form.Set("assertion", jag)
	case contracts.GrantJWTBearer:
		assertion, err := e.workloadAssertion(time.Now())
		if err != nil {
			return nil, err
		}
		// Exactly as given: no exchange at an identity provider first.
		form.Set("grant_type", oauth.GrantTypeJWTBearer)
		form.Set("assertion", assertion)
	default:
		return nil, fmt.Errorf("grant type %q needs the browser: %w", grant, contracts.ErrFailedPrecondition)
	}
	if scope != "" {
		form.Set("scope", scope)
	}
	if d.Resource != "" {
		form.Set("resource", d.Resource)
	}
	dp, err := a.dpopFor(key, d.Metadata.Issuer)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Token(ctx, d.Metadata.TokenEndpoint, form, auth, tokenOptions(dp))
	var te *oauth.TokenError
	if errors.As(err, &te) {
		switch te.Code {
		case "invalid_grant", "invalid_scope", "unauthorized_client", "invalid_client":
			// Final: not retried, and not answered by another grant type.
			a.mu.Lock()
			a.refused = te.Code
			a.mu.Unlock()
			s.log.Warn().Str("server", e.cfg.ID).Str("grant_type", grant).Str("error", te.Code).
				Msg("the authorization server refused the grant; not asked again until 'pikoctl mcp auth'")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("getting a %s token for %q: %w", grant, e.cfg.ID, err)
	}
	a.mu.Lock()
	a.refused = ""
	a.mu.Unlock()
	return newGrant(e.cfg, grant, d, auth, regSettings, scope, resp, key), nil
}

// maxAssertionBytes bounds an assertion read from a file.
const maxAssertionBytes = 64 << 10

// noOwnerGrant reports whether a grant type gets its token without the
// owner (no browser): pikod asks for one when a server wants it, and again
// when it expires.
func noOwnerGrant(grant string) bool {
	switch grant {
	case contracts.GrantClientCredentials, contracts.GrantCrossAppAccess, contracts.GrantJWTBearer:
		return true
	}
	return false
}

// workloadAssertion is the jwt_bearer assertion: read from the settings'
// assertionFile on each use (a platform may rotate it), else the stored
// oauthAssertion. One that is a JWT whose exp has passed is refused here,
// before anything is sent, asking for a new one.
func (e *oauthEnv) workloadAssertion(now time.Time) (string, error) {
	o := e.settings()
	assertion, from := e.creds.OAuthAssertion, "the stored oauthAssertion"
	renew := `store a new one with 'pikoctl mcp secret ` + e.cfg.ID + `' as {"oauthAssertion":"..."}`
	if o.AssertionFile != "" {
		from, renew = "the assertion in "+o.AssertionFile, "have the platform write a fresh one to "+o.AssertionFile+", then connect again"
		b, err := readBounded(o.AssertionFile, maxAssertionBytes)
		if err != nil {
			return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoAssertion,
				"jwt_bearer for %q reads its assertion from %s: %v", e.cfg.ID, o.AssertionFile, err), renew)
		}
		assertion = strings.TrimSpace(string(b))
		if strings.ContainsAny(assertion, " \t\r\n\x00") {
			return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadAssertion,
				"%s is not one token: it holds spaces or control characters", from), renew)
		}
	}
	if assertion == "" {
		return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoAssertion,
			"jwt_bearer for %q needs the workload's assertion, and %s is empty", e.cfg.ID, from), renew)
	}
	if exp, ok := oauth.JWTExpiry(assertion); ok && !now.Before(exp) {
		return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthAssertionExpired,
			"%s of %q expired at %s; nothing was sent", from, e.cfg.ID, exp.UTC().Format(time.RFC3339)), renew)
	}
	return assertion, nil
}

// identityGrant exchanges the owner's identity assertion at the identity
// provider for an identity assertion authorization grant (ID-JAG) for the
// authorization server d.Metadata.Issuer and the resource d.Resource.
func (s *Supervisor) identityGrant(ctx context.Context, e *oauthEnv, d *oauth.Discovery, scope string) (string, error) {
	o := e.settings()
	if e.creds.OAuthIdentityAssertion == "" {
		return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoIdentityAssertion,
			"cross_app_access for %q needs the identity assertion from the identity provider, and none is stored", e.cfg.ID),
			`store it with 'pikoctl mcp secret `+e.cfg.ID+`' as {"oauthIdentityAssertion":"..."} (with the other OAuth secrets)`)
	}
	form := url.Values{
		"grant_type":           {oauth.GrantTypeTokenExchange},
		"requested_token_type": {oauth.TokenTypeIDJAG},
		"audience":             {d.Metadata.Issuer},
		"subject_token":        {e.creds.OAuthIdentityAssertion},
		"subject_token_type":   {oauth.TokenTypeIDToken},
	}
	if d.Resource != "" {
		form.Set("resource", d.Resource)
	}
	if scope != "" {
		form.Set("scope", scope)
	}
	auth := oauth.ClientAuth{ClientID: o.IdPClientID, Method: contracts.AuthMethodNone}
	resp, err := e.client.Token(ctx, o.IdPTokenEndpoint, form, auth, oauth.TokenOptions{})
	if err != nil {
		return "", fmt.Errorf("exchanging the identity assertion at the identity provider: %w", err)
	}
	if resp.IssuedTokenType != oauth.TokenTypeIDJAG {
		return "", contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
			"the identity provider issued %q instead of an identity assertion authorization grant", contracts.SafeText(resp.IssuedTokenType, contracts.OneLine, 80))
	}
	return resp.AccessToken, nil
}

// selectScope applies the MCP scope selection strategy: the settings'
// scope; else the challenge's; else the protected resource's
// scopes_supported; else none. offline_access is added for the
// authorization-code flow when the authorization server lists it (and
// scopes were chosen from the server, not the settings). For a step-up
// (insufficient_scope) the challenged scope joins what was asked before.
func selectScope(cfg *contracts.ServerSettings, d *oauth.Discovery, ch *oauth.Challenge, prior string, browser bool) string {
	var scopes []string
	explicit := cfg.OAuth != nil && cfg.OAuth.Scope != ""
	switch {
	case explicit:
		scopes = strings.Fields(cfg.OAuth.Scope)
	case ch != nil && ch.Scope != "":
		scopes = strings.Fields(ch.Scope)
		if ch.InsufficientScope() {
			scopes = union(strings.Fields(prior), scopes)
		}
	case d.Protected != nil && len(d.Protected.ScopesSupported) > 0:
		scopes = slices.Clone(d.Protected.ScopesSupported)
	}
	if browser && !explicit && len(scopes) > 0 && slices.Contains(d.Metadata.ScopesSupported, "offline_access") {
		scopes = union(scopes, []string{"offline_access"})
	}
	return strings.Join(scopes, " ")
}

// union is a then the members of b not in a, in order, without repeats.
func union(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, list := range [][]string{a, b} {
		for _, v := range list {
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// covers reports whether have holds every scope of want.
func covers(have []string, want string) bool {
	for _, w := range strings.Fields(want) {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// readBounded reads a whole file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}
