package mcpclient

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
)

// maxChallengeBytes bounds the WWW-Authenticate text kept from a refusal.
const maxChallengeBytes = 4096

// AuthChallenge is how an HTTP or SSE server refused pikod for lack of
// authorization on the first request of a connection: the status (401 or
// 403) and its WWW-Authenticate header, which an OAuth sign-in reads (the
// resource_metadata URL, the scope asked for). It is kept on the session
// until the next connect attempt; it is never shown or logged whole.
type AuthChallenge struct {
	Status int
	// WWWAuthenticate is every WWW-Authenticate value of the response,
	// joined with ", " and cut to maxChallengeBytes.
	WWWAuthenticate string
	// Method is the JSON-RPC method (or "GET" for the SSE stream) that
	// was refused.
	Method string
	At     time.Time
}

// authWatch is the RoundTripper a connection's guarded client goes
// through: it remembers the first 401 or 403 answer, which mcp-go turns
// into errors that no longer carry the challenge.
type authWatch struct {
	next http.RoundTripper

	// mu guards seen.
	mu   sync.Mutex
	seen *AuthChallenge
}

func (a *authWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	var status int
	var header []string
	if ar, ok := asAuthRequired(err); ok && ar.status != 0 {
		// The OAuth transport gave up on a 401 or 403 (it renews a
		// refused token once before that).
		status, header = ar.status, ar.header
	} else if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	} else {
		status, header = resp.StatusCode, resp.Header.Values("WWW-Authenticate")
	}
	ch := &AuthChallenge{Status: status, Method: req.Header.Get("Mcp-Method"), At: time.Now().UTC()}
	if ch.Method == "" {
		ch.Method = req.Method
	}
	ch.WWWAuthenticate = boundedChallenge(header)
	a.mu.Lock()
	if a.seen == nil {
		a.seen = ch
	}
	a.mu.Unlock()
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// guard.
func (a *authWatch) CloseIdleConnections() {
	if c, ok := a.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// refusal returns the first 401 or 403 seen, if any.
func (a *authWatch) refusal() *AuthChallenge {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen
}

// boundedChallenge joins the values, keeping whole UTF-8 characters and
// at most maxChallengeBytes bytes.
func boundedChallenge(values []string) string {
	s := strings.Join(values, ", ")
	if len(s) <= maxChallengeBytes {
		return s
	}
	// A cut inside a character leaves invalid bytes: drop them.
	return strings.ToValidUTF8(s[:maxChallengeBytes], "")
}

// needsAuthError ends a connect whose first request the server refused
// with 401 or 403: the session goes needs_auth and keeps the challenge.
type needsAuthError struct {
	err       error
	challenge AuthChallenge
}

func (e *needsAuthError) Error() string { return e.err.Error() }
func (e *needsAuthError) Unwrap() error { return e.err }

func (s *session) needsAuth(ch *AuthChallenge) error {
	what := "HTTP 401 Unauthorized"
	if ch.Status == http.StatusForbidden {
		what = "HTTP 403 Forbidden"
	}
	method := ch.Method
	if method == http.MethodGet {
		method = "the event stream (GET)"
	}
	hint := "sign in with 'pikoctl mcp auth " + s.cfg.ID + "' (OAuth), or give it credentials with 'pikoctl mcp secret " +
		s.cfg.ID + "' (for example an Authorization header), then 'pikoctl mcp connect " + s.cfg.ID + "'"
	return &needsAuthError{challenge: *ch, err: contracts.WithHint(
		contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonNeedsAuth,
			"server %q needs authorization: it answered %s to %s", s.cfg.ID, what, s.sup.clean(method, 100)),
		hint)}
}

// AuthChallenge returns the refusal that left a server needs_auth: its
// status and WWW-Authenticate challenge, for an OAuth sign-in. False when
// the server is not needs_auth.
func (s *Supervisor) AuthChallenge(id string) (AuthChallenge, bool) {
	sess, err := s.session(id)
	if err != nil {
		return AuthChallenge{}, false
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.challenge == nil || sess.state != contracts.StateNeedsAuth {
		return AuthChallenge{}, false
	}
	return *sess.challenge, true
}
