package oauth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/pikod/pikod/contracts"
	"golang.org/x/oauth2"
)

// AuthorizationRequest is one authorization-code request with PKCE.
type AuthorizationRequest struct {
	Endpoint    string
	ClientID    string
	RedirectURI string
	Scope       string
	Resource    string
	// State and Verifier are fresh random values (NewAuthorizationRequest).
	State    string
	Verifier string
	// DPoPJKT, when set, is the thumbprint of the DPoP key the code will
	// be exchanged with (RFC 9449 section 10): the code is bound to it.
	DPoPJKT string
}

// NewSecrets returns a fresh state and PKCE code verifier.
func NewSecrets() (state, verifier string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), oauth2.GenerateVerifier(), nil
}

// URL builds the authorization URL: response_type code, client_id,
// redirect_uri, scope (omitted when empty), state, the S256 code challenge
// the RFC 8707 resource and the RFC 9449 dpop_jkt. The endpoint must be http or https: the URL
// is shown to the owner to open, and any other scheme (javascript:,
// file:, a custom handler) is refused.
func (r *AuthorizationRequest) URL() (string, error) {
	if err := checkEndpoint(r.Endpoint); err != nil {
		return "", contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadAuthorizationEndpoint,
			"the authorization endpoint cannot be shown as a link to open: %v", err)
	}
	cfg := oauth2.Config{
		ClientID:    r.ClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: r.Endpoint},
		RedirectURL: r.RedirectURI,
		Scopes:      strings.Fields(r.Scope),
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(r.Verifier)}
	if r.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", r.Resource))
	}
	if r.DPoPJKT != "" {
		opts = append(opts, oauth2.SetAuthURLParam("dpop_jkt", r.DPoPJKT))
	}
	return cfg.AuthCodeURL(r.State, opts...), nil
}

// CallbackResult is what the authorization server sent back to the
// redirect URI.
type CallbackResult struct {
	Code             string
	State            string
	Iss              string
	HasIss           bool
	Error            string
	ErrorDescription string
}

// ReadCallback reads the query of a redirect to the callback.
func ReadCallback(q url.Values) CallbackResult {
	r := CallbackResult{Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description")}
	if vs, ok := q["iss"]; ok && len(vs) > 0 {
		r.Iss, r.HasIss = vs[0], true
	}
	return r
}

// SameState compares states in constant time.
func SameState(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// CheckIssuer applies RFC 9207 section 2.4 as pikod decided: when the
// metadata advertises authorization_response_iss_parameter_supported, iss
// is required; a present iss must equal the recorded issuer exactly (no
// normalization at all); an absent one is accepted otherwise.
func CheckIssuer(r CallbackResult, recorded string, required bool) error {
	switch {
	case r.HasIss && r.Iss != recorded:
		return contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonIssuerMismatch,
			"the authorization response came from issuer %s, not from %s, the server this sign-in was started with: pikod did not use it",
			safeURL(r.Iss), safeURL(recorded)),
			"someone may be mixing up authorization servers; start again with 'pikoctl mcp auth SERVER'")
	case !r.HasIss && required:
		return contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonIssuerMissing,
			"the authorization response has no iss although %s says it always sends one: pikod did not use it", safeURL(recorded)),
			"start again with 'pikoctl mcp auth SERVER'")
	}
	return nil
}

// AuthorizationError is an error the authorization server sent to the
// redirect URI instead of a code.
type AuthorizationError struct {
	Code        string
	Description string
}

func (e *AuthorizationError) Error() string {
	msg := "the authorization server refused: " + e.Code
	if e.Description != "" {
		msg += " (" + e.Description + ")"
	}
	return msg
}

// Unwrap classes the refusal.
func (e *AuthorizationError) Unwrap() error { return contracts.ErrPermissionDenied }

// Reason is the wire reason.
func (e *AuthorizationError) Reason() string { return "oauth_authorization_refused" }

// Refusal returns the error of an authorization response that carries one.
func (r CallbackResult) Refusal() error {
	if r.Error == "" {
		return nil
	}
	code := r.Error
	if !validErrorCode(code) {
		code = "(an unreadable error code)"
	}
	return &AuthorizationError{Code: code, Description: clip(r.ErrorDescription, 200)}
}

// ParseRedirect reads a URL the owner pasted (the redirect the browser
// could not deliver): its scheme, host, port and path must be the
// redirect URI's exactly.
func ParseRedirect(pasted, redirectURI string) (url.Values, error) {
	bad := func(why string) error {
		return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonOAuthBadRedirect, "the pasted URL %s", why),
			fmt.Sprintf("paste the whole address the browser was sent to; it starts with %s?", redirectURI))
	}
	u, err := url.Parse(strings.TrimSpace(pasted))
	if err != nil {
		return nil, bad("is not a URL")
	}
	want, err := url.Parse(redirectURI)
	if err != nil {
		return nil, bad("cannot be checked")
	}
	if u.Scheme != want.Scheme || u.Host != want.Host || u.Path != want.Path {
		return nil, bad("is not this sign-in's redirect URI")
	}
	return u.Query(), nil
}
