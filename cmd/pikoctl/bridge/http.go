package bridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// HTTPPath is where the Streamable HTTP endpoint is served.
const HTTPPath = "/mcp"

// LoopbackAddr checks that addr (HOST:PORT) names a loopback address:
// the HTTP mode never listens anywhere else.
func LoopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("--http wants 127.0.0.1:PORT or [::1]:PORT, not %q", addr)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("--http listens on loopback only (127.0.0.1 or ::1), not %q", host)
	}
	return nil
}

// Token returns the bearer token of the HTTP mode: read from file when it
// holds one, else a new random one, written to file (0600) when file is
// set. created says whether it is new.
func Token(file string) (token string, created bool, err error) {
	if file != "" {
		b, err := os.ReadFile(file)
		switch {
		case err == nil:
			t := strings.TrimSpace(string(b))
			if len(t) < 32 {
				return "", false, fmt.Errorf("the token in %s is shorter than 32 characters: remove the file to make a new one", file)
			}
			return t, false, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", false, fmt.Errorf("reading the token file: %w", err)
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false, err
	}
	token = base64.RawURLEncoding.EncodeToString(raw)
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, fmt.Errorf("writing the token file: %w", err)
		}
		_, werr := f.WriteString(token + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", false, fmt.Errorf("writing the token file: %w", werr)
		}
	}
	return token, true, nil
}

// ServeHTTP serves the bridge as a Streamable HTTP endpoint on ln (a
// loopback listener) at HTTPPath until ctx ends. Every request must carry
// "Authorization: Bearer TOKEN"; its Host must name the listener's own
// address (or localhost with its port), and an Origin, when sent, must be
// http://127.0.0.1:PORT, http://[::1]:PORT or http://localhost:PORT: a
// page in a browser on this machine cannot reach the bridge through DNS
// rebinding.
func (b *Bridge) ServeHTTP(ctx context.Context, ln net.Listener, token string) error {
	b.Start()
	defer b.Close()
	mcpHandler := server.NewStreamableHTTPServer(b.srv, server.WithEndpointPath(HTTPPath))
	srv := &http.Server{
		Handler:           guard(ln.Addr().String(), token, mcpHandler),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		_ = mcpHandler.Shutdown(sctx)
		return nil
	case err := <-errc:
		return err
	}
}

// guard refuses requests without the token or from another origin.
func guard(addr, token string, next http.Handler) http.Handler {
	_, port, _ := net.SplitHostPort(addr)
	hosts := map[string]bool{addr: true, "localhost:" + port: true, "127.0.0.1:" + port: true, "[::1]:" + port: true}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[strings.ToLower(r.Host)] {
			http.Error(w, "forbidden: the Host header must name this loopback address", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !hosts[strings.TrimPrefix(strings.ToLower(o), "http://")] {
			http.Error(w, "forbidden: requests from other origins are refused", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pikoctl mcp serve"`)
			http.Error(w, "unauthorized: send the bearer token pikoctl mcp serve printed (or the one in its --token-file)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
