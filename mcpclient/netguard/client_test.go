package netguard

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/pikod/pikod/contracts"
)

// acceptCounter accepts raw TCP connections, counts and closes them.
type acceptCounter struct {
	ln       net.Listener
	accepted atomic.Int64
	done     chan struct{}
	once     sync.Once
}

func newAcceptCounter(t *testing.T, addr string) *acceptCounter {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	return startCounting(t, ln)
}

func startCounting(t *testing.T, ln net.Listener) *acceptCounter {
	l := &acceptCounter{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(l.stop)
	return l
}

func (l *acceptCounter) port() string {
	_, p, _ := net.SplitHostPort(l.ln.Addr().String())
	return p
}

// stop closes the listener and waits for the accept loop, so accepts()
// afterwards is final.
func (l *acceptCounter) stop() {
	l.once.Do(func() { l.ln.Close() })
	<-l.done
}

func (l *acceptCounter) accepts() int64 {
	l.stop()
	return l.accepted.Load()
}

// guardResolver answers from a table and counts lookups. A host with several
// answers gets them in turn (the last one repeats).
type guardResolver struct {
	mu      sync.Mutex
	answers map[string][]any // each answer: []string of addresses, or an error
	lookups map[string]int
}

func newGuardResolver(answers map[string][]any) *guardResolver {
	return &guardResolver{answers: answers, lookups: map[string]int{}}
}

func (r *guardResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.lookups[host]
	r.lookups[host]++
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if n >= len(seq) {
		n = len(seq) - 1
	}
	switch a := seq[n].(type) {
	case error:
		return nil, a
	case []string:
		out := make([]net.IPAddr, 0, len(a))
		for _, s := range a {
			// net.IP keeps IPv4 in 16 bytes, as the real resolver does.
			out = append(out, net.IPAddr{IP: net.ParseIP(s)})
		}
		return out, nil
	}
	panic("bad answer")
}

func (r *guardResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

func (r *guardResolver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.lookups {
		n += c
	}
	return n
}

// dialCounter records every address the guard dials and checks that it is
// a literal ip:port (the pin).
type dialCounter struct {
	t     *testing.T
	mu    sync.Mutex
	addrs []string
}

func (d *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		d.t.Errorf("dialled %q: not a vetted ip:port", addr)
		return nil, err
	}
	if !ap.Addr().IsLoopback() {
		// Tests stay on loopback even when the guard is broken.
		return nil, fmt.Errorf("test dialer refuses %s", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialCounter) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.addrs)
}

func newGuardTestClient(t *testing.T, cfg Config) *http.Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", cfg.URL, err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func guardGet(c *http.Client, u string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return c.Do(req)
}

func TestGuardRefusesNonPublicWithoutException(t *testing.T) {
	l4 := newAcceptCounter(t, "127.0.0.1:0")
	p4 := l4.port()
	var l6 *acceptCounter
	p6 := p4
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		l6 = startCounting(t, ln)
		p6 = l6.port()
	}
	res := newGuardResolver(map[string][]any{
		"evil.test": {[]string{"127.0.0.1"}},
	})
	tests := []struct {
		name    string
		url     string
		realDNS bool // use net.DefaultResolver
		literal bool // no lookup may happen
		want    error
		msg     string
	}{
		{"http loopback", "http://127.0.0.1:" + p4 + "/mcp", false, true, ErrNotHTTPS, "https"},
		{"localhost", "https://localhost:" + p4 + "/mcp", true, false, ErrBlockedAddress, `(loopback) for host "localhost": set allowPrivateNetwork`},
		{"ipv6 loopback", "https://[::1]:" + p6 + "/", false, true, ErrBlockedAddress, "refusing to connect to ::1 (loopback)"},
		{"rfc1918", "https://10.1.2.3/", false, true, ErrBlockedAddress, "(private)"},
		{"metadata", "https://169.254.169.254/latest/meta-data/", false, true, ErrBlockedAddress, "(link-local)"},
		{"ipv4-mapped", "https://[::ffff:127.0.0.1]:" + p4 + "/", false, true, ErrBlockedAddress, "(ipv4-mapped loopback)"},
		{"nat64", "https://[64:ff9b::7f00:1]:" + p4 + "/", false, true, ErrBlockedAddress, "(nat64 loopback)"},
		{"name resolved to loopback", "https://evil.test:" + p4 + "/mcp", false, false, ErrBlockedAddress,
			`refusing to connect to 127.0.0.1 (loopback) for host "evil.test"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &dialCounter{t: t}
			before := res.total()
			cfg := Config{URL: tt.url, Resolver: res, dial: dc.dial}
			if tt.realDNS {
				cfg.Resolver = nil
			}
			// As the configured origin: refused at construction or request.
			c, err := NewClient(cfg)
			if err == nil {
				t.Cleanup(c.CloseIdleConnections)
				_, err = guardGet(c, tt.url, nil)
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, contracts.ErrPermissionDenied) {
				t.Fatalf("own origin %s: err = %v, want %v (permission denied)", tt.url, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("own origin %s: err = %q, want it to contain %q", tt.url, err, tt.msg)
			}
			// As another origin of a public server: refused the same way.
			other := newGuardTestClient(t, Config{URL: "https://mcp.example.com/mcp", Resolver: cfg.Resolver, dial: dc.dial})
			if _, err := guardGet(other, tt.url, nil); !errors.Is(err, tt.want) {
				t.Fatalf("other origin %s: err = %v, want %v", tt.url, err, tt.want)
			}
			if n := dc.count(); n != 0 {
				t.Errorf("dialled %d times (%v), want 0", n, dc.addrs)
			}
			if tt.literal && res.total() != before {
				t.Errorf("a literal address was looked up")
			}
		})
	}
	if n := l4.accepts(); n != 0 {
		t.Errorf("127.0.0.1 listener accepted %d connections, want 0", n)
	}
	if l6 != nil {
		if n := l6.accepts(); n != 0 {
			t.Errorf("::1 listener accepted %d connections, want 0", n)
		}
	}
}

func TestGuardEveryAddressChecked(t *testing.T) {
	res := newGuardResolver(map[string][]any{
		"mixed.test":    {[]string{"8.8.8.8", "10.0.0.1"}},
		"mixed6.test":   {[]string{"2606:4700:4700::1111", "fd00::1"}},
		"mapped6.test":  {[]string{"::ffff:169.254.169.254"}},
		"loopback.test": {[]string{"1.1.1.1", "::1"}},
	})
	for host, class := range map[string]string{
		"mixed.test": "10.0.0.1 (private)", "mixed6.test": "fd00::1 (unique local)",
		"mapped6.test": "169.254.169.254 (link-local)", "loopback.test": "::1 (loopback)",
	} {
		dc := &dialCounter{t: t}
		c := newGuardTestClient(t, Config{URL: "https://" + host + "/mcp", Resolver: res, dial: dc.dial})
		_, err := guardGet(c, "https://"+host+"/mcp", nil)
		if !errors.Is(err, ErrBlockedAddress) {
			t.Fatalf("%s: err = %v, want ErrBlockedAddress", host, err)
		}
		if !strings.Contains(err.Error(), class) {
			t.Errorf("%s: err = %q, want it to name %q", host, err, class)
		}
		if dc.count() != 0 || res.count(host) != 1 {
			t.Errorf("%s: %d dials, %d lookups; want 0 and 1", host, dc.count(), res.count(host))
		}
	}
}

// TestGuardPlaintextNeverPublic: allowPrivateNetwork lets the origin use
// http only while every address it resolves to is loopback or private; a
// public address (literal, resolved, or one of several) is refused before
// any dial, and https to the same public address is still allowed.
func TestGuardPlaintextNeverPublic(t *testing.T) {
	lan := newAcceptCounter(t, "127.0.0.1:0")
	res := newGuardResolver(map[string][]any{
		"public.test":  {[]string{"93.184.215.14"}},
		"public6.test": {[]string{"2606:4700:4700::1111"}},
		"mixed.test":   {[]string{"127.0.0.1", "8.8.8.8"}},
		"lan.test":     {[]string{"127.0.0.1"}},
		"mapped.test":  {[]string{"::ffff:8.8.4.4"}},
	})
	for _, tt := range []struct {
		url, ip string
	}{
		{"http://1.1.1.1/mcp", "1.1.1.1"},
		{"http://[2606:4700::1111]:8080/mcp", "2606:4700::1111"},
		{"http://public.test/mcp", "93.184.215.14"},
		{"http://public6.test/mcp", "2606:4700:4700::1111"},
		{"http://mixed.test:" + lan.port() + "/mcp", "8.8.8.8"},
		{"http://mapped.test/mcp", "8.8.4.4"}, // the resolver gives IPv4 answers as IPv4
	} {
		dc := &dialCounter{t: t}
		c := newGuardTestClient(t, Config{URL: tt.url, AllowPrivateNetwork: true, Resolver: res, dial: dc.dial})
		_, err := guardGet(c, tt.url, nil)
		if !errors.Is(err, ErrNotHTTPS) || !errors.Is(err, contracts.ErrPermissionDenied) {
			t.Fatalf("%s: err = %v, want ErrNotHTTPS", tt.url, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "refusing plaintext http to "+tt.ip+" (public)") ||
			!strings.Contains(msg, "only to loopback and private addresses") {
			t.Errorf("%s: err = %q, want it to name %s as public and the rule", tt.url, msg, tt.ip)
		}
		if u := (*UnsentError)(nil); !errors.As(err, &u) {
			t.Errorf("%s: the refusal is not marked as not sent: %v", tt.url, err)
		}
		if n := dc.count(); n != 0 {
			t.Errorf("%s: dialled %v, want nothing", tt.url, dc.addrs)
		}
	}
	if n := lan.accepts(); n != 0 {
		t.Errorf("a host with one public address among its answers got %d connections, want 0", n)
	}

	// Loopback and private stay reachable in plaintext, and https to a
	// public address under the same exception is the ordinary case.
	ok := newOriginServer(t, "", false)
	for _, u := range []string{ok.URL + "/mcp", strings.Replace(ok.URL, "127.0.0.1", "lan.test", 1) + "/mcp"} {
		c := newGuardTestClient(t, Config{URL: u, AllowPrivateNetwork: true, Resolver: res, dial: (&dialCounter{t: t}).dial})
		resp, err := guardGet(c, u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		resp.Body.Close()
	}
	dc := &dialCounter{t: t}
	c := newGuardTestClient(t, Config{URL: "https://public.test/mcp", AllowPrivateNetwork: true, Resolver: res, dial: dc.dial})
	if _, err := guardGet(c, "https://public.test/mcp", nil); errors.Is(err, ErrNotHTTPS) || errors.Is(err, ErrBlockedAddress) {
		t.Errorf("https to a public address with allowPrivateNetwork: err = %v, want it dialled", err)
	}
	if dc.count() != 1 || dc.addrs[0] != "93.184.215.14:443" {
		t.Errorf("https to a public address dialled %v, want 93.184.215.14:443", dc.addrs)
	}
}

// originServer serves the paths the allowPrivateNetwork tests need and
// records what each request carried.
type originServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func (s *originServer) last() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return nil
	}
	return s.seen[len(s.seen)-1]
}

func newOriginServer(t *testing.T, redirectTarget string, useTLS bool) *originServer {
	s := &originServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		switch r.URL.Path {
		case "/mcp":
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc"})
			io.WriteString(w, "ok")
		case "/redirect-other":
			http.Redirect(w, r, redirectTarget+"?code=secret", http.StatusTemporaryRedirect)
		case "/redirect-same":
			http.Redirect(w, r, "/mcp", http.StatusFound)
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "compressed")
			zw.Close()
		case "/size":
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Write(bytes.Repeat([]byte("x"), n))
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			events, _ := strconv.Atoi(r.URL.Query().Get("events"))
			size, _ := strconv.Atoi(r.URL.Query().Get("size"))
			for i := 0; i < events; i++ {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", strings.Repeat("y", size))
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	})
	s.Server = httptest.NewUnstartedServer(h)
	if useTLS {
		s.EnableHTTP2 = true
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func TestGuardAllowPrivateNetworkOrigin(t *testing.T) {
	target := newAcceptCounter(t, "127.0.0.1:0")
	targetURL := "http://127.0.0.1:" + target.port() + "/landing"
	srv := newOriginServer(t, targetURL, false)
	dc := &dialCounter{t: t}
	c := newGuardTestClient(t, Config{
		URL:                 srv.URL + "/mcp",
		AllowPrivateNetwork: true,
		Headers:             map[string]string{"X-Api-Key": "configured-key", "x-trace": "configured"},
		MaxBodyBytes:        1024,
		dial:                dc.dial,
	})
	if c.Jar != nil || c.Timeout != 0 {
		t.Fatalf("client has Jar %v, Timeout %v; want none and 0", c.Jar, c.Timeout)
	}

	t.Run("origin works with headers", func(t *testing.T) {
		for i := range 2 {
			resp, err := guardGet(c, srv.URL+"/mcp", map[string]string{"X-Trace": "caller", "X-Caller": "kept"})
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != "ok" {
				t.Fatalf("request %d: body %q, %v", i, body, err)
			}
			h := srv.last()
			for k, want := range map[string]string{
				"X-Api-Key": "configured-key", "X-Trace": "configured", "X-Caller": "kept",
				"Accept-Encoding": "identity", "Cookie": "",
			} {
				if got := strings.Join(h.Values(k), ","); got != want {
					t.Errorf("request %d: header %s = %q, want %q", i, k, got, want)
				}
			}
		}
	})

	t.Run("other loopback origin refused", func(t *testing.T) {
		other := newAcceptCounter(t, "127.0.0.1:0")
		n := dc.count()
		for u, want := range map[string]error{
			"http://127.0.0.1:" + other.port() + "/mcp":  ErrNotHTTPS,
			"https://127.0.0.1:" + other.port() + "/mcp": ErrBlockedAddress,
		} {
			_, err := guardGet(c, u, nil)
			if !errors.Is(err, want) {
				t.Errorf("%s: err = %v, want %v", u, err, want)
			} else if !strings.Contains(err.Error(), "covers only this server's own origin") {
				t.Errorf("%s: err = %q, want the allowPrivateNetwork hint", u, err)
			}
		}
		if dc.count() != n {
			t.Errorf("dialled for another origin: %v", dc.addrs[n:])
		}
		if got := other.accepts(); got != 0 {
			t.Errorf("other origin accepted %d connections, want 0", got)
		}
	})

	t.Run("redirects refused", func(t *testing.T) {
		_, err := guardGet(c, srv.URL+"/redirect-other", nil)
		var re *RedirectError
		if !errors.Is(err, ErrRedirect) || !errors.As(err, &re) || !errors.Is(err, contracts.ErrFailedPrecondition) {
			t.Fatalf("err = %v, want a RedirectError", err)
		}
		if re.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(re.Location, targetURL) {
			t.Errorf("RedirectError = %+v, want 307 to %s", re, targetURL)
		}
		if msg := err.Error(); !strings.Contains(msg, strconv.Quote(targetURL)) || strings.Contains(msg, "secret") {
			t.Errorf("err = %q, want it to name %q without the query", msg, targetURL)
		}
		_, err = guardGet(c, srv.URL+"/redirect-same", nil)
		if !errors.As(err, &re) || re.Location != srv.URL+"/mcp" {
			t.Errorf("same-origin redirect: err = %v, want a RedirectError to %s/mcp", err, srv.URL)
		}
		if got := target.accepts(); got != 0 {
			t.Errorf("redirect target accepted %d connections, want 0", got)
		}
	})

	t.Run("compressed refused", func(t *testing.T) {
		_, err := guardGet(c, srv.URL+"/gzip", nil)
		if !errors.Is(err, ErrCompressed) {
			t.Fatalf("err = %v, want ErrCompressed", err)
		}
		if got := srv.last().Get("Accept-Encoding"); got != "identity" {
			t.Errorf("Accept-Encoding = %q, want identity", got)
		}
	})

	t.Run("body caps", func(t *testing.T) {
		tests := []struct {
			path string
			want error
		}{
			{"/size?n=1024", nil},
			{"/size?n=1025", ErrBodyTooLarge},
			{"/size?n=100000", ErrBodyTooLarge},
			{"/sse?events=200&size=100", nil}, // ~24 KB in events of ~130 bytes
			{"/sse?events=1&size=1002", nil},  // exactly 1024 bytes of event
			{"/sse?events=3&size=1003", ErrBodyTooLarge},
		}
		for _, tt := range tests {
			resp, err := guardGet(c, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatalf("%s: %v", tt.path, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("%s: read err = %v, want %v", tt.path, err, tt.want)
			}
			if tt.want != nil && len(body) > 1024 {
				t.Errorf("%s: read %d bytes past a 1024-byte cap", tt.path, len(body))
			}
			if tt.want != nil && !errors.Is(err, contracts.ErrResourceExhausted) {
				t.Errorf("%s: err %v is not resource exhausted", tt.path, err)
			}
		}
	})
}

func TestGuardTLSHostnamePinned(t *testing.T) {
	srv := newOriginServer(t, "", true)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// The first answer is the only usable one: a second lookup for the same
	// dial (say, by dialling the name) would fail the request.
	res := newGuardResolver(map[string][]any{
		"example.com": {[]string{"127.0.0.1"}, errors.New("second lookup")},
	})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	dc := &dialCounter{t: t}
	origin := fmt.Sprintf("https://example.com:%d/mcp", port)
	c := newGuardTestClient(t, Config{
		URL:                 origin,
		AllowPrivateNetwork: true,
		Resolver:            res,
		TLSConfig:           &tls.Config{RootCAs: pool, ServerName: "wrong.invalid", MinVersion: tls.VersionTLS10},
		dial:                dc.dial,
	})
	for i := range 3 {
		resp, err := guardGet(c, origin, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.TLS == nil || resp.TLS.ServerName != "example.com" || resp.TLS.Version < tls.VersionTLS12 {
			t.Errorf("request %d: TLS state %+v, want ServerName example.com, TLS >= 1.2", i, resp.TLS)
		}
		if resp.ProtoMajor != 2 {
			t.Errorf("request %d: protocol %s, want HTTP/2", i, resp.Proto)
		}
	}
	if dc.count() != 1 || res.count("example.com") != 1 {
		t.Errorf("%d dials (%v), %d lookups; want one of each", dc.count(), dc.addrs, res.count("example.com"))
	}
	if want := "127.0.0.1:" + strconv.Itoa(port); dc.addrs[0] != want {
		t.Errorf("dialled %q, want the vetted %q", dc.addrs[0], want)
	}
	// Without the exception the same server is refused before any dial.
	res2 := newGuardResolver(map[string][]any{"example.com": {[]string{"127.0.0.1"}}})
	strict := newGuardTestClient(t, Config{URL: origin, Resolver: res2, TLSConfig: &tls.Config{RootCAs: pool}, dial: dc.dial})
	if _, err := guardGet(strict, origin, nil); !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("without allowPrivateNetwork: err = %v, want ErrBlockedAddress", err)
	}
	if dc.count() != 1 {
		t.Errorf("strict client dialled: %v", dc.addrs)
	}
}

func TestGuardIgnoresProxyEnvironment(t *testing.T) {
	proxy := newAcceptCounter(t, "127.0.0.1:0")
	proxyURL := "http://127.0.0.1:" + proxy.port()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxyURL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	srv := newOriginServer(t, "", false)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// A name, not a loopback literal: the environment's proxy rules would
	// send it through the proxy.
	u := fmt.Sprintf("http://origin.test:%d/mcp", port)
	c := newGuardTestClient(t, Config{
		URL:                 u,
		AllowPrivateNetwork: true,
		Resolver:            newGuardResolver(map[string][]any{"origin.test": {[]string{"127.0.0.1"}}}),
		dial:                (&dialCounter{t: t}).dial,
	})
	if tr := c.Transport.(*guard).inner; tr.Proxy != nil {
		t.Errorf("transport has a proxy function")
	}
	resp, err := guardGet(c, u, nil)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	resp.Body.Close()
	if n := proxy.accepts(); n != 0 {
		t.Errorf("proxy accepted %d connections, want 0", n)
	}
}

func TestGuardHeaderDecision(t *testing.T) {
	g, err := newGuard(Config{
		URL:     "https://api.example.com/mcp",
		Headers: map[string]string{"X-Api-Key": "configured"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url  string
		same bool
	}{
		{"https://api.example.com/mcp", true},
		{"https://API.Example.com:443/other?x=1", true},
		{"https://api.example.com:8443/mcp", false},
		{"https://evil.example.com/mcp", false},
		{"https://api.example.com.evil.net/mcp", false},
		{"https://example.com/mcp", false},
		{"https://10.0.0.1/mcp", false},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodPost, tt.url, nil)
		req.Header.Set("X-Api-Key", "from-caller")
		u, _ := url.Parse(tt.url)
		if got := g.sameOrigin(u); got != tt.same {
			t.Errorf("sameOrigin(%q) = %v, want %v", tt.url, got, tt.same)
		}
		out, err := g.prepare(req)
		if err != nil {
			t.Fatalf("prepare(%q): %v", tt.url, err)
		}
		want := ""
		if tt.same {
			want = "configured"
		}
		if got := out.Header.Get("X-Api-Key"); got != want {
			t.Errorf("prepare(%q): X-Api-Key = %q, want %q", tt.url, got, want)
		}
		if got := out.Header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("prepare(%q): Accept-Encoding = %q, want identity", tt.url, got)
		}
		if policy, _ := out.Context().Value(dialPolicyKey{}).(dialPolicy); policy.allowPrivate {
			t.Errorf("prepare(%q): private dial allowed without allowPrivateNetwork", tt.url)
		}
		if got := req.Header.Get("X-Api-Key"); got != "from-caller" {
			t.Errorf("prepare(%q) modified the caller's request", tt.url)
		}
	}
	// http is refused even for the origin without the exception, and
	// allowed only for the exact origin with it.
	if _, err := g.prepare(httptest.NewRequest(http.MethodGet, "http://api.example.com/mcp", nil)); !errors.Is(err, ErrNotHTTPS) {
		t.Errorf("http to origin without exception: err = %v, want ErrNotHTTPS", err)
	}
	lan, err := newGuard(Config{URL: "http://192.168.1.5:8080/mcp", AllowPrivateNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		url         string
		ok          bool // prepare accepts it
		privateDial bool // its connection may reach non-public addresses
	}{
		{"http://192.168.1.5:8080/x", true, true},
		{"https://192.168.1.5:8080/x", true, false}, // other scheme: other origin
		{"http://192.168.1.5/x", false, false},
		{"http://192.168.1.6:8080/x", false, false},
		{"https://192.168.1.6:8080/x", true, false},
	} {
		out, err := lan.prepare(httptest.NewRequest(http.MethodGet, tt.url, nil))
		if tt.ok != (err == nil) {
			t.Errorf("lan prepare(%q): err = %v, want ok=%v", tt.url, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrNotHTTPS) {
				t.Errorf("lan prepare(%q): err = %v, want ErrNotHTTPS", tt.url, err)
			}
			continue
		}
		policy, _ := out.Context().Value(dialPolicyKey{}).(dialPolicy)
		if policy.allowPrivate != tt.privateDial {
			t.Errorf("lan prepare(%q): private dial = %v, want %v", tt.url, policy.allowPrivate, tt.privateDial)
		}
		if want := strings.HasPrefix(tt.url, "http:"); policy.plaintext != want {
			t.Errorf("lan prepare(%q): plaintext = %v, want %v", tt.url, policy.plaintext, want)
		}
	}
}

func TestNewClientValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"ok", Config{URL: "https://mcp.example.com/mcp"}, nil},
		{"ok lan http", Config{URL: "http://10.0.0.2:3000/mcp", AllowPrivateNetwork: true}, nil},
		{"http", Config{URL: "http://mcp.example.com/mcp"}, ErrNotHTTPS},
		{"ftp", Config{URL: "ftp://mcp.example.com/"}, ErrNotHTTPS},
		{"no host", Config{URL: "https:///mcp"}, contracts.ErrInvalidArgument},
		{"relative", Config{URL: "/mcp"}, ErrNotHTTPS},
		{"userinfo", Config{URL: "https://user:pw@mcp.example.com/"}, contracts.ErrInvalidArgument},
		{"bad port", Config{URL: "https://mcp.example.com:99999/"}, contracts.ErrInvalidArgument},
		{"unparsable", Config{URL: "https://[::1/"}, contracts.ErrInvalidArgument},
		{"host header", Config{URL: "https://mcp.example.com/", Headers: map[string]string{"host": "x"}}, contracts.ErrInvalidArgument},
		{"negative cap", Config{URL: "https://mcp.example.com/", MaxBodyBytes: -1}, contracts.ErrInvalidArgument},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.cfg)
		if tt.want == nil {
			if err != nil || c == nil {
				t.Errorf("%s: NewClient = %v, want a client", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: NewClient(%q) err = %v, want %v", tt.name, tt.cfg.URL, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: error %q repeats url credentials", tt.name, err)
		}
	}
}

func TestGuardCappedBodyEvents(t *testing.T) {
	const limit = 16
	tests := []struct {
		name, stream string
		wantErr      bool
	}{
		{"lf events under cap", strings.Repeat("data: 123456789\n\n", 10), false},
		{"crlf events under cap", strings.Repeat("data: 12345678\r\n\r\n", 10), false},
		{"cr events under cap", strings.Repeat("data: 123456789\r\r", 10), false},
		{"two lines one event over cap", "data: 1234\ndata: 5678\n\n", true},
		{"one long line", "data: " + strings.Repeat("z", 40) + "\n\n", true},
		{"unterminated stream over cap", strings.Repeat("a", 17), true},
		{"exactly the cap", "data: 123456789\n\ndata: 123456789\n", false},
		{"no blank line between lines", "data: 1\ndata: 2\ndata: 3\n", true},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.stream)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			closed := false
			b := &cappedBody{rc: hookedCloser{r, func() { closed = true }}, limit: limit, sse: true, from: "test"}
			got, err := io.ReadAll(b)
			if tt.wantErr != errors.Is(err, ErrBodyTooLarge) || (!tt.wantErr && err != nil) {
				t.Errorf("%s (one byte %v): err = %v, want too large = %v", tt.name, oneByte, err, tt.wantErr)
			}
			if tt.wantErr && !closed {
				t.Errorf("%s: body not closed at the cap", tt.name)
			}
			if !tt.wantErr && string(got) != tt.stream {
				t.Errorf("%s: read %q, want the whole stream", tt.name, got)
			}
		}
	}
}

type hookedCloser struct {
	io.Reader
	close func()
}

func (r hookedCloser) Close() error { r.close(); return nil }

func TestClassifyAddr(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
		why    string
	}{
		{"8.8.8.8", true, "public"},
		{"1.1.1.1", true, "public"},
		{"93.184.215.14", true, "public"},
		{"2606:4700:4700::1111", true, "public"},
		{"2001:4860:4860::8888", true, "public"},
		{"::ffff:8.8.8.8", true, "public"},
		{"64:ff9b::808:808", true, "public"},
		{"2002:808:808::1", true, "public"},

		{"0.0.0.0", false, "unspecified"},
		{"0.1.2.3", false, "this network"},
		{"10.1.2.3", false, "private"},
		{"172.16.0.1", false, "private"},
		{"172.31.255.255", false, "private"},
		{"192.168.1.1", false, "private"},
		{"100.64.0.1", false, "carrier-grade nat"},
		{"100.127.255.254", false, "carrier-grade nat"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.0.9", false, "loopback"},
		{"169.254.169.254", false, "link-local"},
		{"192.0.0.8", false, "ietf protocol assignments"},
		{"192.0.2.1", false, "documentation"},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"192.88.99.1", false, "6to4 relay anycast"},
		{"198.18.0.1", false, "benchmarking"},
		{"198.19.255.1", false, "benchmarking"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"240.0.0.1", false, "reserved"},
		{"255.255.255.255", false, "broadcast"},

		{"::", false, "unspecified"},
		{"::1", false, "loopback"},
		{"::7f00:1", false, "ipv4-compatible"},
		{"fe80::1", false, "link-local"},
		{"fe80::1%eth0", false, "link-local"},
		{"fec0::1", false, "site-local"},
		{"fc00::1", false, "unique local"},
		{"fd12:3456::1", false, "unique local"},
		{"ff02::1", false, "multicast"},
		{"ff0e::1", false, "multicast"},
		{"100::1", false, "discard"},
		{"2001:db8::1", false, "documentation"},
		{"3fff::1", false, "documentation"},
		{"2001::1", false, "teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "teredo"},
		{"2001:2::1", false, "benchmarking"},
		{"2001:10::1", false, "ietf protocol assignments"},
		{"4000::1", false, "reserved"},
		{"::ffff:127.0.0.1", false, "ipv4-mapped loopback"},
		{"::ffff:10.0.0.1", false, "ipv4-mapped private"},
		{"::ffff:169.254.169.254", false, "ipv4-mapped link-local"},
		{"::ffff:0.0.0.0", false, "ipv4-mapped unspecified"},
		{"64:ff9b::7f00:1", false, "nat64 loopback"},
		{"64:ff9b::a9fe:a9fe", false, "nat64 link-local"},
		{"64:ff9b::c0a8:101", false, "nat64 private"},
		{"64:ff9b:1::808:808", false, "local-use nat64"},
		{"2002:7f00:1::1", false, "6to4 loopback"},
		{"2002:a00:1::1", false, "6to4 private"},
		{"2002:6440:1::", false, "6to4 carrier-grade nat"},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.addr)
		public, why := classifyAddr(ip)
		if public != tt.public || why != tt.why {
			t.Errorf("classifyAddr(%s) = %v, %q; want %v, %q", tt.addr, public, why, tt.public, tt.why)
		}
	}
	if public, _ := classifyAddr(netip.Addr{}); public {
		t.Errorf("classifyAddr(zero) = public")
	}
}
