package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
)

// Sentinels for the guarded HTTP client's refusals. Each wraps a contracts
// class, so errors.Is(err, contracts.ErrPermissionDenied) holds for a refused
// address as well as errors.Is(err, ErrBlockedAddress).
var (
	// ErrBlockedAddress: a resolved address is not public and the request is
	// not covered by allowPrivateNetwork.
	ErrBlockedAddress = classError("blocked network address", contracts.ErrPermissionDenied)
	// ErrNotHTTPS: the request's scheme is not https and no exception applies.
	ErrNotHTTPS = classError("https required", contracts.ErrPermissionDenied)
	// ErrRedirect: the server answered with a 3xx; redirects are never
	// followed. The error is a *RedirectError.
	ErrRedirect = classError("redirect refused", contracts.ErrFailedPrecondition)
	// ErrCompressed: the response carries a Content-Encoding other than
	// identity although identity was asked for.
	ErrCompressed = classError("compressed response refused", contracts.ErrFailedPrecondition)
	// ErrBodyTooLarge: a response body (or one server-sent event) exceeds
	// MaxBodyBytes.
	ErrBodyTooLarge = classError("response body too large", contracts.ErrResourceExhausted)
	// ErrPinMismatch: the TLS peer of a pinned origin presented a
	// certificate whose fingerprints are not the pin. The error is a
	// *PinMismatchError.
	ErrPinMismatch = classError("tls pin mismatch", contracts.ErrPermissionDenied)
)

// Default timeouts of the guarded client.
const (
	DefaultDialTimeout           = 10 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
)

// sentinelError is a named refusal that unwraps to its contracts class.
type sentinelError struct {
	msg   string
	class error
}

func classError(msg string, class error) error { return &sentinelError{msg, class} }

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.class }

// guardError is a refusal with its own readable message that unwraps to one
// of the sentinels above (and through it to a contracts class).
type guardError struct {
	msg  string
	kind error
}

func (e *guardError) Error() string { return e.msg }
func (e *guardError) Unwrap() error { return e.kind }

// RedirectError reports a 3xx response. The guarded client never follows a
// redirect; a caller that expects one (an OAuth authorization endpoint
// answering with the redirect URI) reads Location with errors.As.
type RedirectError struct {
	StatusCode int
	// URL is the request that was answered with the redirect.
	URL string
	// Location is the redirect target, resolved against URL; empty when the
	// response had none.
	Location string
}

func (e *RedirectError) Error() string {
	target := "no location"
	if e.Location != "" {
		// The query may carry an authorization code or a token, and error
		// messages end up in logs: name the target without it.
		target = strconv.Quote(withoutQuery(e.Location))
	}
	return fmt.Sprintf("refusing to follow redirect %d %s from %s to %s: configure the final url instead",
		e.StatusCode, http.StatusText(e.StatusCode), withoutQuery(e.URL), target)
}

// Unwrap makes errors.Is(err, ErrRedirect) hold.
func (e *RedirectError) Unwrap() error { return ErrRedirect }

func withoutQuery(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// Resolver looks host names up. *net.Resolver satisfies it; tests inject
// their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Config configures one server's guarded HTTP client.
type Config struct {
	// URL is the configured endpoint. Its origin (scheme, host, port) is
	// "the origin": the only place headers go and the only place
	// AllowPrivateNetwork applies.
	URL string
	// AllowPrivateNetwork lets requests for exactly the origin reach
	// non-public addresses, and use plaintext http as long as every address
	// the host resolves to is non-public (loopback, private, link-local):
	// http never goes to a public address. Every other origin stays
	// https-only and public-only.
	AllowPrivateNetwork bool
	// SameHostAnyPort widens AllowPrivateNetwork from the origin to every
	// port (and both schemes) of the origin's host: the client of a
	// server's OAuth fetches, whose authorization server may listen on
	// another port of the same host. Headers still go to the origin only.
	SameHostAnyPort bool
	// Headers are set on every request for the origin, replacing a value the
	// caller set for the same name; they are removed from requests for any
	// other origin. Hop-by-hop names, Host, Content-Length and
	// Accept-Encoding are refused.
	Headers map[string]string
	// MaxBodyBytes caps every response body; for text/event-stream responses
	// it caps each event instead of the stream. 0 means
	// contracts.DefaultMaxBytes.
	MaxBodyBytes int64
	// DialTimeout bounds name resolution and each connection attempt;
	// default DefaultDialTimeout.
	DialTimeout time.Duration
	// TLSHandshakeTimeout defaults to DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers only, so a
	// long-lived event stream is not cut once its headers arrived; default
	// DefaultResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration
	// Resolver resolves host names once per connection; nil means
	// net.DefaultResolver.
	Resolver Resolver
	// TLSConfig is cloned; MinVersion is raised to TLS 1.2 and ServerName is
	// cleared so each connection verifies the host it was made for.
	TLSConfig *tls.Config
	// TLSPin ("sha256:HEX", contracts.ParseTLSPin) pins the origin's TLS
	// peer: connections to the origin trust the leaf certificate whose DER
	// or SubjectPublicKeyInfo has that SHA-256, and nothing else (no CA,
	// name or expiry check: the pin is the owner's trust decision, made
	// when pairing). Other origins keep the ordinary verification.
	TLSPin string

	// dial replaces the TCP dialer in tests (to count dials); it only ever
	// receives vetted "ip:port" addresses.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Origin is a URL's (scheme, host, port) in a canonical form.
type Origin struct {
	scheme, host, port string
}

func (o Origin) String() string {
	return o.scheme + "://" + net.JoinHostPort(o.host, o.port)
}

func OriginOf(u *url.URL) Origin {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	}
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return Origin{scheme, host, port}
}

// refusedHeaders may not be configured: the transport owns them.
var refusedHeaders = map[string]bool{
	"Host": true, "Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Accept-Encoding": true,
}

// guard is the RoundTripper of a guarded client: it checks each request
// before the inner transport sees it and each response before the caller
// does; its dialContext vets and pins every connection.
type guard struct {
	origin       Origin
	allowPrivate bool
	anyPort      bool
	headers      http.Header
	maxBody      int64
	dialTimeout  time.Duration
	resolver     Resolver
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
	inner        *http.Transport
	// pinned carries the origin's requests when a TLS pin is set; its
	// connections are pooled apart from inner's, so a connection verified
	// by the pin serves the origin only.
	pinned *http.Transport
}

// NewClient returns the http.Client for one HTTP or SSE server (and
// its OAuth flows): https only, every resolved address public unless
// AllowPrivateNetwork covers the origin, connections pinned to the vetted
// address, no redirects, no proxy, no cookie jar, no compression, bounded
// bodies, and configured headers only for the origin.
//
// Its Timeout is 0: callers bound requests with contexts. Do not pass
// mcp-go's transport.WithHTTPTimeout alongside WithHTTPBasicClient: it sets
// Timeout on the installed client, which would also cut long-lived event
// streams. Give the same client to OAuth (OAuthConfig.HTTPClient), whose
// default client follows redirects.
func NewClient(cfg Config) (*http.Client, error) {
	g, err := newGuard(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport: g,
		// The guard already turns every 3xx into an error; this is the
		// second lock on the same door.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return &RedirectError{StatusCode: req.Response.StatusCode, URL: via[len(via)-1].URL.String(), Location: req.URL.String()}
		},
	}, nil
}

func newGuard(cfg Config) (*guard, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// The url.Error would repeat the whole url; keep only what is wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("parsing server url: %v: %w", err, contracts.ErrInvalidArgument)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("checking server url: scheme %q is not supported, use https: %w", u.Scheme, ErrNotHTTPS)
	case u.Hostname() == "":
		return nil, fmt.Errorf("checking server url: no host: %w", contracts.ErrInvalidArgument)
	case u.User != nil:
		return nil, fmt.Errorf("checking server url: credentials in the url are not allowed, use the server's secret headers: %w", contracts.ErrInvalidArgument)
	case u.Scheme == "http" && !cfg.AllowPrivateNetwork:
		return nil, fmt.Errorf("checking server url: url must use https (set allowPrivateNetwork for a LAN or loopback endpoint): %w", ErrNotHTTPS)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("checking server url: port %q is out of range: %w", p, contracts.ErrInvalidArgument)
		}
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("checking body limit: %d is negative: %w", cfg.MaxBodyBytes, contracts.ErrInvalidArgument)
	}
	g := &guard{
		origin:       OriginOf(u),
		allowPrivate: cfg.AllowPrivateNetwork,
		anyPort:      cfg.SameHostAnyPort,
		headers:      make(http.Header, len(cfg.Headers)),
		maxBody:      cfg.MaxBodyBytes,
		dialTimeout:  orDefault(cfg.DialTimeout, DefaultDialTimeout),
		resolver:     cfg.Resolver,
		dial:         cfg.dial,
	}
	for k, v := range cfg.Headers {
		ck := http.CanonicalHeaderKey(k)
		if refusedHeaders[ck] {
			return nil, fmt.Errorf("checking headers: %q is managed by the client and cannot be configured: %w", k, contracts.ErrInvalidArgument)
		}
		g.headers.Set(ck, v)
	}
	if g.maxBody == 0 {
		g.maxBody = contracts.DefaultMaxBytes
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dial == nil {
		d := &net.Dialer{Timeout: g.dialTimeout, KeepAlive: 30 * time.Second}
		g.dial = d.DialContext
	}
	var tc *tls.Config
	if cfg.TLSConfig != nil {
		tc = cfg.TLSConfig.Clone()
	} else {
		tc = &tls.Config{}
	}
	tc.ServerName = ""
	if tc.MinVersion < tls.VersionTLS12 {
		tc.MinVersion = tls.VersionTLS12
	}
	g.inner = &http.Transport{
		Proxy:                 nil, // never from the environment
		DialContext:           g.dialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   orDefault(cfg.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout),
		ResponseHeaderTimeout: orDefault(cfg.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          8,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if cfg.TLSPin != "" {
		want, err := contracts.ParseTLSPin(cfg.TLSPin)
		if err != nil {
			return nil, fmt.Errorf("checking tlsPin: %v: %w", err, contracts.ErrInvalidArgument)
		}
		if g.origin.scheme != "https" {
			return nil, fmt.Errorf("checking tlsPin: it applies only to an https url: %w", contracts.ErrInvalidArgument)
		}
		pc := tc.Clone()
		// The pin replaces the chain and name checks: the peer is the one
		// whose certificate (or key) the owner paired with, or none.
		pc.InsecureSkipVerify = true
		pc.VerifyConnection = pinVerifier(want, g.origin.String())
		g.pinned = g.inner.Clone()
		g.pinned.TLSClientConfig = pc
	}
	return g, nil
}

// PinMismatchError reports a TLS peer that does not match the pin.
type PinMismatchError struct {
	// Origin is the pinned origin.
	Origin string
	// Expected is the pin; Certificate and Key the presented leaf's
	// fingerprints (of its DER and of its public key), "" when the peer
	// presented no certificate.
	Expected, Certificate, Key string
}

func (e *PinMismatchError) Error() string {
	if e.Certificate == "" {
		return fmt.Sprintf("refusing the TLS peer of %s: it presented no certificate, the pin (tlsPin) is %s", e.Origin, e.Expected)
	}
	return fmt.Sprintf("refusing the TLS peer of %s: it presented certificate %s (public key %s), the pin (tlsPin) is %s; "+
		"if the peer was set up again, pair again (pikoctl mcp browser-remote -)", e.Origin, e.Certificate, e.Key, e.Expected)
}

// Unwrap makes errors.Is(err, ErrPinMismatch) hold.
func (e *PinMismatchError) Unwrap() error { return ErrPinMismatch }

// pinVerifier returns a tls.Config.VerifyConnection that accepts the peer
// whose leaf certificate's DER or SubjectPublicKeyInfo hashes to want.
func pinVerifier(want [32]byte, origin string) func(tls.ConnectionState) error {
	expected := contracts.FormatTLSPin(want)
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &PinMismatchError{Origin: origin, Expected: expected}
		}
		leaf := cs.PeerCertificates[0]
		certPin, keyPin := contracts.TLSPinsOf(leaf.Raw, leaf.RawSubjectPublicKeyInfo)
		if certPin == expected || keyPin == expected {
			return nil
		}
		return &PinMismatchError{Origin: origin, Expected: expected, Certificate: certPin, Key: keyPin}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// dialPolicyKey carries, in a request's context, its dialPolicy. The
// transport keeps context values for the dial, and pools connections by
// (scheme, host:port), so a connection dialled under the exception only ever
// serves requests for the same origin and scheme.
type dialPolicyKey struct{}

// dialPolicy is what a request's connection may reach.
type dialPolicy struct {
	// allowPrivate: non-public addresses too (allowPrivateNetwork, origin).
	allowPrivate bool
	// plaintext: the request is http, so no address may be public.
	plaintext bool
}

// sameOrigin reports whether u is the configured origin: the header and
// allowPrivateNetwork decision.
func (g *guard) sameOrigin(u *url.URL) bool {
	return OriginOf(u) == g.origin
}

// prepare checks req and returns the clone the inner transport sends:
// configured headers for the origin (and stripped for any other origin),
// Accept-Encoding: identity, and the dial policy in its context.
func (g *guard) prepare(req *http.Request) (*http.Request, error) {
	if req.URL == nil {
		return nil, fmt.Errorf("sending request: no url: %w", contracts.ErrInvalidArgument)
	}
	same := g.sameOrigin(req.URL)
	allowPrivate := (same || (g.anyPort && OriginOf(req.URL).host == g.origin.host)) && g.allowPrivate
	switch strings.ToLower(req.URL.Scheme) {
	case "https":
	case "http":
		if !allowPrivate {
			hint := "set allowPrivateNetwork for this server to use http on its own origin"
			switch {
			case g.allowPrivate && g.anyPort:
				hint = "allowPrivateNetwork covers only this server's own host " + g.origin.host
			case g.allowPrivate:
				hint = "allowPrivateNetwork covers only this server's own origin " + g.origin.String()
			}
			return nil, &guardError{fmt.Sprintf("refusing %s: only https is allowed (%s)", withoutQuery(req.URL.String()), hint), ErrNotHTTPS}
		}
	default:
		return nil, &guardError{fmt.Sprintf("refusing %s: scheme %q is not allowed, only https", withoutQuery(req.URL.String()), req.URL.Scheme), ErrNotHTTPS}
	}
	policy := dialPolicy{allowPrivate: allowPrivate, plaintext: strings.EqualFold(req.URL.Scheme, "http")}
	out := req.Clone(context.WithValue(req.Context(), dialPolicyKey{}, policy))
	for k, v := range g.headers {
		if same {
			out.Header[k] = append([]string(nil), v...)
		} else {
			out.Header.Del(k)
		}
	}
	out.Header.Set("Accept-Encoding", "identity")
	return out, nil
}

// RoundTrip implements http.RoundTripper. A failure that provably happened
// before any byte of the request left pikod (a refused address, a failed
// name lookup, a refused connection, a failed TLS handshake) carries an
// UnsentError; see sendTrace for the proof.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	out, err := g.prepare(req)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &UnsentError{Err: err, Method: req.Method}
	}
	st := &sendTrace{replayable: replayable(out)}
	out = out.WithContext(context.WithValue(httptrace.WithClientTrace(out.Context(), st.clientTrace()), sendTraceKey{}, st))
	inner := g.inner
	if g.pinned != nil && g.sameOrigin(req.URL) {
		inner = g.pinned
	}
	resp, err := inner.RoundTrip(out)
	if err != nil {
		if st.nothingSent() {
			return nil, &UnsentError{Err: err, Method: req.Method}
		}
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		resp.Body.Close()
		re := &RedirectError{StatusCode: resp.StatusCode, URL: req.URL.String()}
		if loc, err := resp.Location(); err == nil {
			re.Location = loc.String()
		}
		return nil, re
	}
	for _, ce := range resp.Header.Values("Content-Encoding") {
		for _, enc := range strings.Split(ce, ",") {
			if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
				resp.Body.Close()
				return nil, &guardError{fmt.Sprintf("refusing response from %s: it is compressed (%s) although identity was requested",
					withoutQuery(req.URL.String()), enc), ErrCompressed}
			}
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &cappedBody{
		rc:    resp.Body,
		limit: g.maxBody,
		sse:   mt == "text/event-stream",
		from:  withoutQuery(req.URL.String()),
	}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// inner transport.
func (g *guard) CloseIdleConnections() {
	g.inner.CloseIdleConnections()
	if g.pinned != nil {
		g.pinned.CloseIdleConnections()
	}
}

// dialContext resolves host once, refuses the connection if any address is
// not public (unless the request's policy allows it) or, for plaintext http,
// if any address is public, and dials the vetted addresses themselves so no
// second lookup can answer differently.
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %q: %v: %w", addr, err, contracts.ErrInvalidArgument)
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dialing %q: bad port: %w", addr, contracts.ErrInvalidArgument)
	}
	policy, _ := ctx.Value(dialPolicyKey{}).(dialPolicy)

	ips, err := g.resolve(ctx, host)
	if err != nil {
		setupFailed(ctx)
		return nil, err
	}
	for _, ip := range ips {
		public, why := classifyAddr(ip)
		switch {
		case !public && !policy.allowPrivate:
			hint := "set allowPrivateNetwork for this server to allow its own origin"
			switch {
			case g.allowPrivate && g.anyPort:
				hint = "allowPrivateNetwork covers only this server's own host " + g.origin.host
			case g.allowPrivate:
				hint = "allowPrivateNetwork covers only this server's own origin " + g.origin.String()
			}
			setupFailed(ctx)
			return nil, &guardError{fmt.Sprintf("refusing to connect to %s (%s) for host %q: %s", ip, why, host, hint), ErrBlockedAddress}
		case public && policy.plaintext:
			// prepare lets http through only under allowPrivateNetwork,
			// which is for LAN and loopback endpoints: in plaintext on
			// the internet, anyone on the path reads and rewrites it.
			setupFailed(ctx)
			return nil, &guardError{fmt.Sprintf("refusing plaintext http to %s (public) for host %q: allowPrivateNetwork allows http only to loopback and private addresses; use https for a public endpoint", ip, host), ErrNotHTTPS}
		}
	}
	var errs []error
	for _, ip := range ips {
		target := netip.AddrPortFrom(ip.Unmap(), uint16(portNum)).String()
		conn, err := g.dial(ctx, network, target)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	setupFailed(ctx)
	return nil, fmt.Errorf("connecting to host %q: %w", host, errors.Join(errs...))
}

// sendTrace follows one request through http.Transport, to prove that no
// byte of it left pikod when the request fails.
//
// A request's bytes are written only to a connection the transport hands
// it (GotConn, for HTTP/1 and HTTP/2 alike), so a request that got no
// connection sent nothing. A request that got one may still have sent
// nothing: the transport retries a request on a new connection when a
// reused HTTP/1 connection turned out dead before anything was written
// (for a POST, that is the only reason it retries: it never replays a
// request that is not idempotent once written). So a failure also proves
// nothing was sent when every connection the request got was a reused
// HTTP/1 one, the request is not replayable, and the last thing that
// happened was a failed attempt to set up a new connection (our dialer or
// the TLS handshake). HTTP/2 may retry after the request was written, so
// any HTTP/2 connection makes the failure unproven.
type sendTrace struct {
	replayable bool

	// mu guards the fields that follow (the transport calls the hooks
	// from its own goroutines).
	mu sync.Mutex
	// conns counts the connections handed to the request.
	conns int
	// maySent is set once a connection that may have carried a byte of
	// the request was handed to it.
	maySent bool
	// setupFailed is set when an attempt to set up a connection failed
	// after the last connection was handed over.
	setupFailed bool
}

// sendTraceKey carries a request's *sendTrace to the dialer.
type sendTraceKey struct{}

func (st *sendTrace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			st.mu.Lock()
			defer st.mu.Unlock()
			st.conns++
			st.setupFailed = false
			if !info.Reused || st.replayable || isHTTP2(info.Conn) {
				st.maySent = true
			}
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				st.markSetupFailed()
			}
		},
	}
}

func (st *sendTrace) markSetupFailed() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.setupFailed = true
}

// nothingSent reports, after the request failed, whether it provably
// never left pikod.
func (st *sendTrace) nothingSent() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conns == 0 || (!st.maySent && st.setupFailed)
}

// setupFailed tells the request whose dial ctx is (the transport keeps the
// request's context values for its dials) that setting up a connection
// failed.
func setupFailed(ctx context.Context) {
	if st, ok := ctx.Value(sendTraceKey{}).(*sendTrace); ok {
		st.markSetupFailed()
	}
}

func isHTTP2(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// replayable mirrors http.Request's rule for requests the transport may
// send again after they were written.
func replayable(r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return false
	}
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return len(r.Header.Values("Idempotency-Key")) > 0 || len(r.Header.Values("X-Idempotency-Key")) > 0
}

// resolve returns host's addresses: a literal as is, a name from exactly one
// lookup bounded by the dial timeout.
func (g *guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.dialTimeout)
	defer cancel()
	addrs, err := g.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolving host %q: %w", host, err)
	}
	ips := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			return nil, fmt.Errorf("resolving host %q: invalid address %v: %w", host, a.IP, contracts.ErrUnavailable)
		}
		if a.IP.To4() != nil {
			// net.IP stores IPv4 answers in 16 bytes; they are IPv4.
			ip = ip.Unmap()
		}
		ips = append(ips, ip.WithZone(a.Zone))
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolving host %q: no addresses: %w", host, contracts.ErrUnavailable)
	}
	return ips, nil
}

// cappedBody limits a response body to limit bytes, or, for an event
// stream, each event (the bytes between blank lines) to limit bytes. Past
// the cap it closes the body and every Read returns ErrBodyTooLarge.
type cappedBody struct {
	rc    io.ReadCloser
	limit int64
	sse   bool
	from  string

	// Read state; Read is not called concurrently (io.Reader contract).
	n        int64 // bytes counted against limit
	lineData bool  // the current line has content (sse)
	prevCR   bool  // the last byte was '\r' (sse; CRLF is one line end)
	err      error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.sse {
		remaining := b.limit - b.n
		if int64(len(p)) > remaining+1 {
			p = p[:remaining+1]
		}
		n, err := b.rc.Read(p)
		if int64(n) > remaining {
			return int(remaining), b.fail("body")
		}
		b.n += int64(n)
		return n, err
	}
	n, err := b.rc.Read(p)
	for i := 0; i < n; i++ {
		switch c := p[i]; {
		case c == '\n' && b.prevCR:
			b.prevCR = false
			continue
		case c == '\r' || c == '\n':
			b.prevCR = c == '\r'
			if !b.lineData {
				b.n = 0 // a blank line ends the event
				continue
			}
			b.lineData = false
		default:
			b.prevCR = false
			b.lineData = true
		}
		b.n++
		if b.n > b.limit {
			return i, b.fail("event")
		}
	}
	return n, err
}

func (b *cappedBody) fail(what string) error {
	b.err = &guardError{fmt.Sprintf("reading response from %s: %s exceeds the %d-byte limit (raise maxBytes for this server)",
		b.from, what, b.limit), ErrBodyTooLarge}
	b.rc.Close()
	return b.err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// UnsentError is the guarded HTTP client's record that one request
// provably never left pikod: it was handed to no connection that could
// have carried a byte of it (the stdin writer keeps its own record, see
// proc.NothingWritten). It is a fact about one write or one HTTP request,
// not yet about a JSON-RPC request: mcpclient decides whether it is the
// request's own, and only then is the failure reported
// with contracts.MarkNotSent.
type UnsentError struct {
	Err error
	// Method is the HTTP method of the request that was not sent.
	Method string
}

func (e *UnsentError) Error() string { return e.Err.Error() }
func (e *UnsentError) Unwrap() error { return e.Err }

// PostNotSent reports whether err carries the record that a POST never
// left pikod. Only a POST carries a JSON-RPC request in both MCP HTTP
// transports (mcp-go makes exactly one per request; a GET that resumes
// the response stream comes after the POST went out), so only a POST's
// record speaks for a request.
func PostNotSent(err error) bool {
	var u *UnsentError
	return errors.As(err, &u) && u.Method == http.MethodPost
}
