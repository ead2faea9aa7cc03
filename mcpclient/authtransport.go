package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/oauth"
)

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
