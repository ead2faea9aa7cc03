package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// MaxDocumentBytes bounds every metadata document and token response.
const MaxDocumentBytes = 1 << 20

// ResourceMetadata is a protected resource metadata document (RFC 9728).
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	// DPoPSigningAlgValuesSupported and DPoPBoundAccessTokensRequired
	// (RFC 9728 section 2) say which DPoP proofs the resource accepts and
	// whether it takes DPoP-bound tokens only.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported"`
	DPoPBoundAccessTokensRequired bool     `json:"dpop_bound_access_tokens_required"`
}

// ServerMetadata is an authorization server metadata document (RFC 8414,
// or OpenID Connect Discovery's superset), with the fields pikod uses.
type ServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	// DPoPSigningAlgValuesSupported (RFC 9449 section 5.1) lists the
	// proof algorithms of a server that issues DPoP-bound tokens.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported"`
}

// SupportsS256 reports whether the metadata lists PKCE S256.
func (m *ServerMetadata) SupportsS256() bool {
	return contains(m.CodeChallengeMethodsSupported, "S256")
}

// Discovery is what discovery found for one MCP server.
type Discovery struct {
	// ResourceMetadataURL is where the protected resource metadata was
	// read; empty on a fallback.
	ResourceMetadataURL string
	// Protected is that document; nil on a fallback.
	Protected *ResourceMetadata
	// Resource is the RFC 8707 resource: the document's resource, or the
	// server's URL on a fallback.
	Resource string
	// AuthorizationServer is the authorization server chosen: an entry of
	// Protected.AuthorizationServers, or the server's origin on a fallback.
	AuthorizationServer string
	// Metadata is the chosen server's metadata; on the default-endpoints
	// fallback it is made up of /authorize, /token and /register at the
	// origin, with the origin as issuer.
	Metadata ServerMetadata
	// MetadataURL is where Metadata was read; empty for default endpoints.
	MetadataURL string
	// Fallback is "", contracts.FallbackRootMetadata or
	// contracts.FallbackDefaultEndpoints.
	Fallback string
	// ChallengeScope is the scope of the challenge discovery started from.
	ChallengeScope string
}

// Report returns the discovery in its wire form.
func (d *Discovery) Report() *contracts.AuthDiscovery {
	m := d.Metadata
	r := &contracts.AuthDiscovery{
		ResourceMetadataURL: d.ResourceMetadataURL, Resource: d.Resource, ChallengeScope: d.ChallengeScope,
		Issuer: m.Issuer, MetadataURL: d.MetadataURL, Fallback: d.Fallback,
		AuthorizationEndpoint: m.AuthorizationEndpoint, TokenEndpoint: m.TokenEndpoint, RegistrationEndpoint: m.RegistrationEndpoint,
		ScopesSupported: m.ScopesSupported, GrantTypes: m.GrantTypesSupported, CodeChallengeMethods: m.CodeChallengeMethodsSupported,
		TokenEndpointAuthMethods: m.TokenEndpointAuthMethodsSupported, TokenEndpointSigningAlgs: m.TokenEndpointAuthSigningAlgValuesSupported,
		ClientIDMetadataDocuments: m.ClientIDMetadataDocumentSupported, IssParameterSupported: m.AuthorizationResponseIssParameterSupported,
		DynamicRegistrationPossible: m.RegistrationEndpoint != "", DPoPSigningAlgs: m.DPoPSigningAlgValuesSupported,
	}
	if d.Protected != nil {
		r.AuthorizationServers = d.Protected.AuthorizationServers
		r.ResourceScopes = d.Protected.ScopesSupported
		r.ResourceDPoPAlgs = d.Protected.DPoPSigningAlgValuesSupported
		r.DPoPRequired = d.Protected.DPoPBoundAccessTokensRequired
	}
	return r
}

// Client fetches OAuth documents and makes OAuth requests through one
// *http.Client (the guarded client with the OAuth network policy).
type Client struct {
	HTTP *http.Client
	// UserAgent is sent on every request.
	UserAgent string
}

// notFound is a metadata URL that answered, but not with a document.
type notFound struct {
	url    string
	status int
}

func (e *notFound) Error() string {
	return fmt.Sprintf("%s answered HTTP %d", e.url, e.status)
}

// getJSON reads the JSON object at u into v. A non-2xx answer is a
// *notFound (the next candidate may be tried); a transport failure, an
// oversized or unreadable body is an error that ends discovery.
func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("building the request for %s: %v: %w", safeURL(u), err, contracts.ErrInvalidArgument)
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", safeURL(u), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &notFound{url: safeURL(u), status: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", safeURL(u), unwrapURLError(err))
	}
	if len(body) > MaxDocumentBytes {
		return contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonOAuthDocumentTooLarge,
			"%s is larger than %d bytes", safeURL(u), MaxDocumentBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDocument,
			"%s is not a valid JSON metadata document: %v", safeURL(u), jsonProblem(err))
	}
	return nil
}

// DiscoverOptions steer Discover.
type DiscoverOptions struct {
	// ServerURL is the MCP endpoint exactly as configured.
	ServerURL string
	// Challenge is the 401 (or 403) challenge the server answered the
	// tokenless request with, or nil.
	Challenge *Challenge
	// Issuer, when set (a pre-registered client, client_credentials), is
	// the authorization server the settings pin: the protected resource
	// metadata must list it, and without such metadata its own metadata is
	// read instead of taking the 2025-03-26 fallbacks.
	Issuer string
}

// Discover finds the authorization server of an MCP server, in the order
// the MCP authorization spec gives: the protected resource metadata at the
// challenge's resource_metadata URL, else at the path-based then the root
// well-known URL; then the chosen authorization server's metadata (RFC 8414
// with path insertion, then OpenID Connect), whose issuer must be the
// server named. Without any protected resource metadata (a 2025-03-26
// server) it reads the metadata at the root of the server's origin, and
// without that takes /authorize, /token and /register there.
func (c *Client) Discover(ctx context.Context, o DiscoverOptions) (*Discovery, error) {
	server, err := url.Parse(o.ServerURL)
	if err != nil || server.Host == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonOAuthDiscoveryFailed, "the server URL cannot be parsed")
	}
	d := &Discovery{}
	if o.Challenge != nil {
		d.ChallengeScope = o.Challenge.Scope
	}
	prmURLs, explicit, err := resourceMetadataURLs(server, o.Challenge)
	if err != nil {
		return nil, err
	}
	for _, u := range prmURLs {
		var prm ResourceMetadata
		err := c.getJSON(ctx, u, &prm)
		var nf *notFound
		if errors.As(err, &nf) {
			if explicit {
				return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonOAuthDiscoveryFailed,
					"the protected resource metadata the server advertised is not there: %s", nf.Error())
			}
			continue
		}
		if err != nil {
			return nil, discoveryError("reading the protected resource metadata", err)
		}
		d.ResourceMetadataURL = u
		d.Protected = &prm
		break
	}
	if d.Protected == nil {
		if o.Issuer != "" {
			return c.discoverIssuer(ctx, d, o.ServerURL, o.Issuer)
		}
		return c.discoverFallback(ctx, d, server)
	}
	prm := d.Protected
	if err := checkResource(prm.Resource, server); err != nil {
		return nil, err
	}
	d.Resource = prm.Resource
	if len(prm.AuthorizationServers) == 0 {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDiscoveryFailed,
			"the protected resource metadata at %s lists no authorization server", safeURL(d.ResourceMetadataURL))
	}
	as := prm.AuthorizationServers[0]
	if o.Issuer != "" {
		as = ""
		for _, cand := range prm.AuthorizationServers {
			if SameIssuer(cand, o.Issuer) {
				as = cand
				break
			}
		}
		if as == "" {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonIssuerMismatch,
				"the server names the authorization server %s, but the settings pin issuer %s: pikod will not send this client's credentials to another authorization server",
				quoteList(prm.AuthorizationServers, 3), safeURL(o.Issuer)),
				"check with the server's operator; if the change is genuine, register a client there and change oauth.issuer and oauth.clientId")
		}
	}
	md, mdURL, err := c.serverMetadata(ctx, as)
	if err != nil {
		return nil, err
	}
	d.AuthorizationServer, d.Metadata, d.MetadataURL = as, *md, mdURL
	return d, nil
}

// discoverIssuer reads the metadata of the issuer the settings pin, for a
// server that publishes no protected resource metadata.
func (c *Client) discoverIssuer(ctx context.Context, d *Discovery, serverURL, issuer string) (*Discovery, error) {
	md, mdURL, err := c.serverMetadata(ctx, issuer)
	if err != nil {
		return nil, err
	}
	d.Resource = CanonicalResource(serverURL)
	d.AuthorizationServer, d.Metadata, d.MetadataURL = issuer, *md, mdURL
	return d, nil
}

// discoverFallback applies the 2025-03-26 rules: the authorization server
// is the MCP server's origin; its metadata is at the root well-known URL
// (whatever issuer it declares: the server's own origin vouches for it),
// and without metadata the default endpoints are used.
func (c *Client) discoverFallback(ctx context.Context, d *Discovery, server *url.URL) (*Discovery, error) {
	origin := server.Scheme + "://" + server.Host
	d.Resource = CanonicalResource(server.String())
	d.AuthorizationServer = origin
	mdURL := origin + "/.well-known/oauth-authorization-server"
	var md ServerMetadata
	err := c.getJSON(ctx, mdURL, &md)
	var nf *notFound
	switch {
	case err == nil:
		if err := checkMetadata(&md, mdURL, ""); err != nil {
			return nil, err
		}
		d.Metadata, d.MetadataURL, d.Fallback = md, mdURL, contracts.FallbackRootMetadata
		return d, nil
	case !errors.As(err, &nf):
		return nil, discoveryError("reading the authorization server metadata", err)
	}
	d.Metadata = ServerMetadata{
		Issuer:                origin,
		AuthorizationEndpoint: origin + "/authorize",
		TokenEndpoint:         origin + "/token",
		RegistrationEndpoint:  origin + "/register",
	}
	d.Fallback = contracts.FallbackDefaultEndpoints
	return d, nil
}

// serverMetadata reads the metadata of the authorization server whose
// issuer identifier is issuer, from the well-known URLs in the spec's
// order, and checks that the document names that issuer.
func (c *Client) serverMetadata(ctx context.Context, issuer string) (*ServerMetadata, string, error) {
	urls, err := ServerMetadataURLs(issuer)
	if err != nil {
		return nil, "", err
	}
	var tried []string
	for _, u := range urls {
		var md ServerMetadata
		err := c.getJSON(ctx, u, &md)
		var nf *notFound
		if errors.As(err, &nf) {
			tried = append(tried, nf.Error())
			continue
		}
		if err != nil {
			return nil, "", discoveryError("reading the authorization server metadata", err)
		}
		if err := checkMetadata(&md, u, issuer); err != nil {
			return nil, "", err
		}
		return &md, u, nil
	}
	return nil, "", contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonOAuthDiscoveryFailed,
		"no authorization server metadata for %s: %s", safeURL(issuer), strings.Join(tried, "; "))
}

// checkMetadata checks a metadata document: its issuer is the one expected
// (when expected is set; RFC 8414 section 3.3, a trailing slash aside), and
// its endpoints are absolute http or https URLs.
func checkMetadata(md *ServerMetadata, from, expected string) error {
	if md.Issuer == "" {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDocument, "the metadata at %s has no issuer", safeURL(from))
	}
	if expected != "" && !SameIssuer(md.Issuer, expected) {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonIssuerMismatch,
			"the metadata at %s names issuer %s, not %s: pikod does not use it", safeURL(from), safeURL(md.Issuer), safeURL(expected))
	}
	for _, e := range []struct{ name, v string }{
		{"issuer", md.Issuer},
		{"authorization_endpoint", md.AuthorizationEndpoint},
		{"token_endpoint", md.TokenEndpoint},
		{"registration_endpoint", md.RegistrationEndpoint},
	} {
		if e.v == "" {
			continue
		}
		if err := checkEndpoint(e.v); err != nil {
			return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDocument,
				"the metadata at %s has an unusable %s: %v", safeURL(from), e.name, err)
		}
	}
	if md.TokenEndpoint == "" {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDocument, "the metadata at %s has no token_endpoint", safeURL(from))
	}
	return nil
}

// CheckEndpoint reports why raw is not an absolute http or https URL
// without credentials or fragment, or nil.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "http":
	default:
		return fmt.Errorf("scheme %q is not http or https", clip(u.Scheme, 20))
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	if u.User != nil {
		return errors.New("credentials in the URL")
	}
	if u.Fragment != "" {
		return errors.New("a fragment")
	}
	return nil
}

// resourceMetadataURLs lists where to look for the protected resource
// metadata: the challenge's URL alone when it has one (explicit), else the
// path-based well-known URL (when the endpoint has a path) and the root one.
func resourceMetadataURLs(server *url.URL, ch *Challenge) ([]string, bool, error) {
	if ch != nil && ch.ResourceMetadata != "" {
		if err := checkEndpoint(ch.ResourceMetadata); err != nil {
			return nil, false, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDiscoveryFailed,
				"the server advertised an unusable resource_metadata URL: %v", err)
		}
		return []string{ch.ResourceMetadata}, true, nil
	}
	origin := server.Scheme + "://" + server.Host
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		out = append(out, origin+"/.well-known/oauth-protected-resource"+p)
	}
	out = append(out, origin+"/.well-known/oauth-protected-resource")
	return out, false, nil
}

// ServerMetadataURLs lists the metadata URLs of an issuer in the MCP
// spec's order: with a path, RFC 8414 path insertion, OpenID Connect path
// insertion, OpenID Connect path appending; without, RFC 8414 then OpenID
// Connect at the root.
func ServerMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDiscoveryFailed,
			"the authorization server %s is not an absolute http(s) URL", safeURL(issuer))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDiscoveryFailed,
			"the authorization server %s has a query or fragment, which an issuer cannot have", safeURL(issuer))
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}, nil
}

// checkResource checks that the protected resource metadata is about the
// server pikod talks to: same origin, and the resource's path is the
// endpoint's path or a parent of it at a segment boundary.
func checkResource(resource string, server *url.URL) error {
	mismatch := func(why string) error {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonResourceMismatch,
			"the protected resource metadata is for %s, not for this server (%s): %s; pikod will not ask for a token for it",
			safeURL(resource), safeURL(server.String()), why),
			"the server's metadata is wrong or was tampered with; check the url in the settings and tell the server's operator")
	}
	if resource == "" {
		return mismatch("it names no resource")
	}
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" {
		return mismatch("the resource is not an absolute URL")
	}
	if r.Fragment != "" {
		return mismatch("the resource has a fragment")
	}
	if !strings.EqualFold(r.Scheme, server.Scheme) || canonicalHost(r) != canonicalHost(server) {
		return mismatch("another origin")
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(server.EscapedPath(), "/")
	if rp != "" && rp != sp && !strings.HasPrefix(sp, rp+"/") {
		return mismatch("another path")
	}
	return nil
}

// canonicalHost is host:port, lower case, with the scheme's default port.
func canonicalHost(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return host + ":" + port
}

// CanonicalResource is the RFC 8707 resource of an MCP endpoint that has
// no protected resource metadata: the URL without fragment, with a lower
// case scheme and host, and without a trailing slash.
func CanonicalResource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Fragment, u.RawFragment = "", ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	s := u.String()
	if strings.HasSuffix(s, "/") && u.RawQuery == "" {
		s = strings.TrimSuffix(s, "/")
	}
	return s
}

// SameIssuer compares issuer identifiers exactly, except that one trailing
// slash is ignored (a common spelling difference between a resource's
// metadata and the issuer's own).
func SameIssuer(a, b string) bool {
	return a == b || strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

func discoveryError(what string, err error) error {
	var reasoned interface{ Reason() string }
	if errors.As(err, &reasoned) && reasoned.Reason() != "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	return contracts.WithReason(fmt.Errorf("%s: %w", what, withClass(err, contracts.ErrUnavailable)), contracts.ReasonOAuthDiscoveryFailed)
}

// withClass wraps err in class unless it already has a contracts class.
func withClass(err error, class error) error {
	for _, c := range contracts.ErrorCodes {
		if errors.Is(err, c.Class) {
			return err
		}
	}
	return fmt.Errorf("%w (%w)", err, class)
}

// unwrapURLError drops the *url.Error layer, whose message repeats the
// whole URL (query included).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s must be %s", te.Field, te.Type)
	}
	return "invalid JSON"
}

// safeURL renders a URL for a message: without query, fragment or user
// info (an authorization server may put anything there), cut to 200
// characters.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment, u.RawFragment, u.User = "", "", "", nil
	return clip(u.String(), 200)
}

func quoteList(items []string, n int) string {
	var parts []string
	for i, it := range items {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, safeURL(it))
	}
	return strings.Join(parts, ", ")
}

func clip(s string, n int) string { return contracts.SafeText(s, contracts.OneLine, n) }

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
