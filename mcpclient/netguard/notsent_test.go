package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// guardPost POSTs a small JSON body, as mcp-go sends every JSON-RPC
// request, through c and wraps the error as mcp-go does.
func guardPost(c *http.Client, u string) error {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("failed to send request: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestGuardNotSent checks which failures of the guarded client carry the
// record that no byte of the request left: those before any connection
// carried it, and only those.
func TestGuardNotSent(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		addr := closedPort(t)
		c := newGuardTestClient(t, Config{URL: "http://" + addr + "/mcp", AllowPrivateNetwork: true})
		err := guardPost(c, "http://"+addr+"/mcp")
		if !errors.Is(err, syscall.ECONNREFUSED) || !PostNotSent(err) {
			t.Fatalf("POST to a closed port: %v (not-sent record %v); want ECONNREFUSED with the record", err, PostNotSent(err))
		}
	})

	t.Run("name lookup failed", func(t *testing.T) {
		c := newGuardTestClient(t, Config{URL: "https://mcp.example.test/mcp", Resolver: newGuardResolver(nil)})
		if err := guardPost(c, "https://mcp.example.test/mcp"); err == nil || !PostNotSent(err) {
			t.Fatalf("POST to a name that does not resolve: %v (not-sent record %v)", err, PostNotSent(err))
		}
	})

	t.Run("address refused by the guard", func(t *testing.T) {
		ac := newAcceptCounter(t, "127.0.0.1:0")
		u := "https://loop.example.test:" + ac.port() + "/mcp"
		c := newGuardTestClient(t, Config{URL: u, Resolver: newGuardResolver(map[string][]any{"loop.example.test": {[]string{"127.0.0.1"}}})})
		err := guardPost(c, u)
		if !errors.Is(err, ErrBlockedAddress) || !PostNotSent(err) || ac.accepts() != 0 {
			t.Fatalf("POST to a refused address: %v (not-sent record %v, %d accepts)", err, PostNotSent(err), ac.accepts())
		}
	})

	t.Run("TLS handshake failed", func(t *testing.T) {
		var reached atomic.Bool
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
		defer srv.Close()
		// The guard does not trust the test server's certificate.
		c := newGuardTestClient(t, Config{URL: srv.URL + "/mcp", AllowPrivateNetwork: true})
		err := guardPost(c, srv.URL+"/mcp")
		if err == nil || !PostNotSent(err) || reached.Load() {
			t.Fatalf("POST over an untrusted TLS handshake: %v (not-sent record %v, handler reached %v)", err, PostNotSent(err), reached.Load())
		}
	})

	t.Run("connection closed after the request was read", func(t *testing.T) {
		// The server reads the whole request, then hangs up without an
		// answer: the request was sent, its outcome is unknown.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var got sync.WaitGroup
		got.Add(1)
		go func() {
			defer got.Done()
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
			}
		}()
		u := "http://" + ln.Addr().String() + "/mcp"
		c := newGuardTestClient(t, Config{URL: u, AllowPrivateNetwork: true})
		err = guardPost(c, u)
		got.Wait()
		if err == nil || PostNotSent(err) {
			t.Fatalf("POST the server read and hung up on: %v (not-sent record %v); want an error without the record", err, PostNotSent(err))
		}
	})

	t.Run("dead keep-alive connection, then a refused dial", func(t *testing.T) {
		// The transport finds the reused connection dead before writing a
		// byte, retries on a new one, and that dial is refused: the
		// failure the caller sees is the dial's, and nothing was sent.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		defer srv.Close()
		var (
			dials atomic.Int32
			dead  atomic.Bool
			wrote atomic.Int32
		)
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) > 1 {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &dyingConn{Conn: conn, dead: &dead, wrote: &wrote}, nil
		}
		c := newGuardTestClient(t, Config{URL: srv.URL + "/mcp", AllowPrivateNetwork: true, dial: dial})
		if err := guardPost(c, srv.URL+"/mcp"); err != nil {
			t.Fatalf("first POST: %v", err)
		}
		dead.Store(true)
		err := guardPost(c, srv.URL+"/mcp")
		if !errors.Is(err, syscall.ECONNREFUSED) || !PostNotSent(err) {
			t.Fatalf("POST over a dead keep-alive connection: %v (not-sent record %v); want the refused dial with the record", err, PostNotSent(err))
		}
		if dials.Load() != 2 || wrote.Load() == 0 {
			t.Errorf("%d dials, %d writes refused on the dead connection: the retry path was not taken", dials.Load(), wrote.Load())
		}
	})

	t.Run("only a POST speaks for the request", func(t *testing.T) {
		// A GET that resumes a response stream fails after the POST went
		// out: its record must not make the request "not sent".
		addr := closedPort(t)
		c := newGuardTestClient(t, Config{URL: "http://" + addr + "/mcp", AllowPrivateNetwork: true})
		_, err := guardGet(c, "http://"+addr+"/mcp", nil)
		if err == nil || PostNotSent(err) {
			t.Fatalf("GET to a closed port: %v; want an error that does not speak for a request", err)
		}
	})
}

// dyingConn is a connection that, once dead is set, refuses every write
// without writing a byte, as a connection reset by the peer does.
type dyingConn struct {
	net.Conn
	dead  *atomic.Bool
	wrote *atomic.Int32
}

func (c *dyingConn) Write(b []byte) (int, error) {
	if c.dead.Load() {
		c.wrote.Add(1)
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(b)
}
