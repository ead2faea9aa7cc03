package oauth

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
)

// Grant type and token type URIs.
const (
	GrantTypeRefreshToken  = "refresh_token"
	GrantTypeJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeIDJAG         = "urn:ietf:params:oauth:token-type:id-jag"
	TokenTypeIDToken       = "urn:ietf:params:oauth:token-type:id_token"
	ClientAssertionJWT     = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// ClientAuth is how the client authenticates at a token endpoint.
type ClientAuth struct {
	ClientID string
	// Method is client_secret_basic, client_secret_post, private_key_jwt
	// or none.
	Method string
	// Secret is the client secret (basic, post).
	Secret string
	// Key signs the client assertion (private_key_jwt) with Alg.
	Key crypto.Signer
	Alg string
	// Audience is the assertion's aud: the authorization server's issuer.
	Audience string
}

// TokenResponse is a successful token endpoint answer (RFC 6749 section
// 5.1, RFC 8693 section 2.2.1).
type TokenResponse struct {
	AccessToken     string
	TokenType       string
	RefreshToken    string
	Scope           string
	IssuedTokenType string
	// ExpiresIn is the lifetime the server gave, 0 when it gave none.
	ExpiresIn time.Duration
}

// TokenError is an error answer of a token endpoint (RFC 6749 section 5.2)
// or registration endpoint (RFC 7591 section 3.2.2). Description is the
// server's text, cleaned and cut.
type TokenError struct {
	Endpoint    string
	Status      int
	Code        string
	Description string
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("%s answered HTTP %d", e.Endpoint, e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Description != "" {
		msg += " (" + e.Description + ")"
	}
	return msg
}

// Unwrap gives the error a class: an authorization server that refuses is
// a failed precondition (the grant or client is no good); one that fails
// is unavailable.
func (e *TokenError) Unwrap() error {
	if e.Status >= 500 || e.Status == 0 {
		return contracts.ErrUnavailable
	}
	return contracts.ErrFailedPrecondition
}

// Reason is the wire reason.
func (e *TokenError) Reason() string {
	if e.Code == "invalid_grant" {
		return "invalid_grant"
	}
	return "oauth_token_refused"
}

// InvalidGrant reports whether err is a token endpoint's invalid_grant.
func InvalidGrant(err error) bool {
	var te *TokenError
	return errors.As(err, &te) && te.Code == "invalid_grant"
}

// Token types of TokenOptions.TokenType.
const (
	TokenTypeBearer = "Bearer"
	TokenTypeDPoP   = "DPoP"
)

// TokenOptions shape one token request.
type TokenOptions struct {
	// TokenType is the token_type the answer must have: TokenTypeBearer,
	// TokenTypeDPoP, or "" for any (the token exchange, whose answer is an
	// ID-JAG with token_type N_A). DPoP makes it TokenTypeDPoP.
	TokenType string
	// DPoP, when set, puts a proof signed with DPoP.Key on the request
	// (RFC 9449 section 5) with the authorization server's latest nonce.
	DPoP *DPoP
}

// Token posts a token request to endpoint: form plus the client
// authentication, and a DPoP proof when opts.DPoP is set. An answer 400
// use_dpop_nonce with a DPoP-Nonce header (RFC 9449 section 8) is the one
// answer after which the request is sent again, once, with that nonce:
// the authorization server refused it unread. A nonce in any answer is
// kept for the next request.
func (c *Client) Token(ctx context.Context, endpoint string, form url.Values, auth ClientAuth, opts TokenOptions) (*TokenResponse, error) {
	want := opts.TokenType
	var target *url.URL
	if opts.DPoP != nil {
		want = TokenTypeDPoP
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("the token endpoint %s cannot be parsed: %w", safeURL(endpoint), contracts.ErrInvalidArgument)
		}
		target = u
	}
	var (
		status int
		body   []byte
	)
	for attempt := 0; ; attempt++ {
		f := cloneValues(form)
		header := http.Header{}
		now := time.Now()
		if err := auth.apply(f, header, now); err != nil {
			return nil, err
		}
		if opts.DPoP != nil {
			proof, err := opts.DPoP.Key.Proof(http.MethodPost, target, opts.DPoP.Nonce.Get(), "", now)
			if err != nil {
				return nil, err
			}
			header.Set("DPoP", proof)
		}
		header.Set("Content-Type", "application/x-www-form-urlencoded")
		var rh http.Header
		var err error
		status, rh, body, err = c.post(ctx, endpoint, header, f.Encode(), tokenPost)
		if err != nil {
			return nil, err
		}
		if opts.DPoP == nil {
			break
		}
		_, fresh := NonceFrom(rh)
		opts.DPoP.Nonce.NoteFrom(rh)
		if attempt == 0 && fresh && status == http.StatusBadRequest && errorCode(body) == "use_dpop_nonce" {
			continue
		}
		break
	}
	if status < 200 || status > 299 {
		err := errorAnswer(endpoint, status, body)
		if opts.DPoP != nil {
			return nil, fmt.Errorf("%w (DPoP key %s)", err, opts.DPoP.Key.Thumbprint())
		}
		return nil, err
	}
	var raw struct {
		AccessToken     string          `json:"access_token"`
		TokenType       string          `json:"token_type"`
		RefreshToken    string          `json:"refresh_token"`
		Scope           string          `json:"scope"`
		IssuedTokenType string          `json:"issued_token_type"`
		ExpiresIn       json.RawMessage `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
			"the token response of %s is not valid JSON (%s)", safeURL(endpoint), jsonProblem(err))
	}
	if raw.AccessToken == "" {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
			"the token response of %s has no access_token", safeURL(endpoint))
	}
	switch {
	case want == TokenTypeDPoP && !strings.EqualFold(raw.TokenType, TokenTypeDPoP):
		// RFC 9449 section 5: a token issued for a proof is a DPoP token;
		// any other was not bound to pikod's key.
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthDPoPNotBound,
			"the token response of %s has token_type %q, not DPoP: the authorization server did not bind the token to pikod's key %s, which the request proved; pikod does not use it",
			safeURL(endpoint), clip(raw.TokenType, 40), opts.DPoP.Key.Thumbprint()),
			"set oauth.dpop to false to use plain Bearer tokens with this authorization server, or check with its operator")
	case want == TokenTypeBearer && !strings.EqualFold(raw.TokenType, TokenTypeBearer):
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
			"the token response of %s has token_type %q; pikod asked for a Bearer token", safeURL(endpoint), clip(raw.TokenType, 40))
	}
	if strings.ContainsAny(raw.AccessToken, "\x00\r\n") || strings.ContainsAny(raw.RefreshToken, "\x00\r\n") {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
			"the token response of %s holds a token with control characters", safeURL(endpoint))
	}
	out := &TokenResponse{AccessToken: raw.AccessToken, TokenType: raw.TokenType, RefreshToken: raw.RefreshToken,
		Scope: raw.Scope, IssuedTokenType: raw.IssuedTokenType}
	if len(raw.ExpiresIn) > 0 && string(raw.ExpiresIn) != "null" {
		s := strings.Trim(string(raw.ExpiresIn), `"`)
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n < 0 || n > 10*365*24*3600 {
			return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadTokenResponse,
				"the token response of %s has an unusable expires_in", safeURL(endpoint))
		}
		out.ExpiresIn = time.Duration(n * float64(time.Second))
	}
	return out, nil
}

// errorCode is the error of an RFC 6749 error answer, or "".
func errorCode(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error
}

// errorAnswer reads an RFC 6749 error answer.
func errorAnswer(endpoint string, status int, body []byte) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &e)
	te := &TokenError{Endpoint: safeURL(endpoint), Status: status}
	if validErrorCode(e.Error) {
		te.Code = e.Error
	}
	if e.Description != "" {
		te.Description = clip(e.Description, 200)
	}
	return te
}

// validErrorCode follows RFC 6749: error codes are %x20-21 / %x23-5B /
// %x5D-7E; pikod keeps only short ones without spaces.
func validErrorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// apply adds the client authentication to a token request.
func (a ClientAuth) apply(form url.Values, header http.Header, now time.Time) error {
	switch a.Method {
	case contracts.AuthMethodClientSecretBasic:
		if a.Secret == "" {
			return errNoSecret(a.Method)
		}
		// RFC 6749 section 2.3.1: both parts form-encoded first.
		cred := url.QueryEscape(a.ClientID) + ":" + url.QueryEscape(a.Secret)
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	case contracts.AuthMethodClientSecretPost:
		if a.Secret == "" {
			return errNoSecret(a.Method)
		}
		form.Set("client_id", a.ClientID)
		form.Set("client_secret", a.Secret)
	case contracts.AuthMethodPrivateKeyJWT:
		if a.Key == nil {
			return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoPrivateKey,
				"private_key_jwt needs the client's private key, and none is stored"),
				`store it with 'pikoctl mcp secret SERVER' as {"oauthPrivateKey":"-----BEGIN PRIVATE KEY-----..."}`)
		}
		assertion, err := ClientAssertion(a.Key, a.Alg, a.ClientID, a.Audience, now)
		if err != nil {
			return err
		}
		form.Set("client_id", a.ClientID)
		form.Set("client_assertion_type", ClientAssertionJWT)
		form.Set("client_assertion", assertion)
	case contracts.AuthMethodNone, "":
		if a.ClientID != "" {
			form.Set("client_id", a.ClientID)
		}
	default:
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAuthMethod,
			"token endpoint authentication %q is not supported", clip(a.Method, 40))
	}
	return nil
}

func errNoSecret(method string) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthNoClientSecret,
		"%s needs the client secret, and none is stored", method),
		`store it with 'pikoctl mcp secret SERVER' as {"oauthClientSecret":"..."}`)
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// ChooseAuthMethod picks the token endpoint authentication of a client
// that has (or has not) a secret and a key: an explicit method wins; then
// private_key_jwt when a key is there; with a secret, basic unless the
// metadata lists only post (RFC 8414's default list is basic); else none.
func ChooseAuthMethod(explicit string, haveSecret, haveKey bool, supported []string) string {
	if explicit != "" {
		return explicit
	}
	if haveKey && (len(supported) == 0 || contains(supported, contracts.AuthMethodPrivateKeyJWT)) {
		return contracts.AuthMethodPrivateKeyJWT
	}
	if haveSecret {
		if len(supported) > 0 && !contains(supported, contracts.AuthMethodClientSecretBasic) && contains(supported, contracts.AuthMethodClientSecretPost) {
			return contracts.AuthMethodClientSecretPost
		}
		return contracts.AuthMethodClientSecretBasic
	}
	return contracts.AuthMethodNone
}

// Registration is a client the authorization server registered
// dynamically (RFC 7591).
type Registration struct {
	ClientID     string
	ClientSecret string
	// AuthMethod is the token_endpoint_auth_method the server registered.
	AuthMethod string
	// SecretExpiresAt is client_secret_expires_at (0: never).
	SecretExpiresAt int64
}

// postWords name a POST in its errors: the request ("token request"),
// sending it ("token request to"), and its answer ("token response").
type postWords struct{ request, sending, answer string }

var (
	tokenPost        = postWords{"token request", "token request to", "token response"}
	registrationPost = postWords{"registration request", "registering a client at", "registration answer"}
)

// post sends body to endpoint with header (and Accept, User-Agent) and
// returns the answer's status, header and body, at most MaxDocumentBytes:
// a transport failure or a larger answer is an error.
func (c *Client) post(ctx context.Context, endpoint string, header http.Header, body string, w postWords) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("building the %s for %s: %v: %w", w.request, safeURL(endpoint), err, contracts.ErrInvalidArgument)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, nil, withClass(fmt.Errorf("%s %s: %w", w.sending, safeURL(endpoint), unwrapURLError(err)), contracts.ErrUnavailable)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return 0, nil, nil, withClass(fmt.Errorf("reading the %s of %s: %w", w.answer, safeURL(endpoint), unwrapURLError(err)), contracts.ErrUnavailable)
	}
	if len(b) > MaxDocumentBytes {
		return 0, nil, nil, contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonOAuthDocumentTooLarge,
			"the %s of %s is larger than %d bytes", w.answer, safeURL(endpoint), MaxDocumentBytes)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// RegistrationRequest is what pikod asks to register.
type RegistrationRequest struct {
	ClientName   string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
	GrantTypes   []string `json:"grant_types"`
	// ResponseTypes is ["code"].
	ResponseTypes   []string `json:"response_types"`
	AuthMethod      string   `json:"token_endpoint_auth_method"`
	ApplicationType string   `json:"application_type"`
	Scope           string   `json:"scope,omitempty"`
	SoftwareID      string   `json:"software_id,omitempty"`
	SoftwareVersion string   `json:"software_version,omitempty"`
}

// Register registers a client at endpoint.
func (c *Client) Register(ctx context.Context, endpoint string, r RegistrationRequest) (*Registration, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	status, _, b, err := c.post(ctx, endpoint, http.Header{"Content-Type": {"application/json"}}, string(body), registrationPost)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		te, _ := errorAnswer(endpoint, status, b).(*TokenError)
		return nil, contracts.WithReason(fmt.Errorf("registering a client: %w", te), contracts.ReasonOAuthRegistrationRefused)
	}
	var out struct {
		ClientID        string `json:"client_id"`
		ClientSecret    string `json:"client_secret"`
		AuthMethod      string `json:"token_endpoint_auth_method"`
		SecretExpiresAt int64  `json:"client_secret_expires_at"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthRegistrationRefused,
			"the registration answer of %s is not valid JSON (%s)", safeURL(endpoint), jsonProblem(err))
	}
	if out.ClientID == "" || !printableASCII(out.ClientID) || len(out.ClientID) > 1024 {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthRegistrationRefused,
			"the registration answer of %s has no usable client_id", safeURL(endpoint))
	}
	return &Registration{ClientID: out.ClientID, ClientSecret: out.ClientSecret, AuthMethod: out.AuthMethod,
		SecretExpiresAt: out.SecretExpiresAt}, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
