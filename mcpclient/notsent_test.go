package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/proc"
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
		c := newGuardTestClient(t, GuardConfig{URL: "http://" + addr + "/mcp", AllowPrivateNetwork: true})
		err := guardPost(c, "http://"+addr+"/mcp")
		if !errors.Is(err, syscall.ECONNREFUSED) || !unsentHTTP(err) {
			t.Fatalf("POST to a closed port: %v (not-sent record %v); want ECONNREFUSED with the record", err, unsentHTTP(err))
		}
	})

	t.Run("name lookup failed", func(t *testing.T) {
		c := newGuardTestClient(t, GuardConfig{URL: "https://mcp.example.test/mcp", Resolver: newGuardResolver(nil)})
		if err := guardPost(c, "https://mcp.example.test/mcp"); err == nil || !unsentHTTP(err) {
			t.Fatalf("POST to a name that does not resolve: %v (not-sent record %v)", err, unsentHTTP(err))
		}
	})

	t.Run("address refused by the guard", func(t *testing.T) {
		ac := newAcceptCounter(t, "127.0.0.1:0")
		u := "https://loop.example.test:" + ac.port() + "/mcp"
		c := newGuardTestClient(t, GuardConfig{URL: u, Resolver: newGuardResolver(map[string][]any{"loop.example.test": {[]string{"127.0.0.1"}}})})
		err := guardPost(c, u)
		if !errors.Is(err, ErrBlockedAddress) || !unsentHTTP(err) || ac.accepts() != 0 {
			t.Fatalf("POST to a refused address: %v (not-sent record %v, %d accepts)", err, unsentHTTP(err), ac.accepts())
		}
	})

	t.Run("TLS handshake failed", func(t *testing.T) {
		var reached atomic.Bool
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
		defer srv.Close()
		// The guard does not trust the test server's certificate.
		c := newGuardTestClient(t, GuardConfig{URL: srv.URL + "/mcp", AllowPrivateNetwork: true})
		err := guardPost(c, srv.URL+"/mcp")
		if err == nil || !unsentHTTP(err) || reached.Load() {
			t.Fatalf("POST over an untrusted TLS handshake: %v (not-sent record %v, handler reached %v)", err, unsentHTTP(err), reached.Load())
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
		c := newGuardTestClient(t, GuardConfig{URL: u, AllowPrivateNetwork: true})
		err = guardPost(c, u)
		got.Wait()
		if err == nil || unsentHTTP(err) {
			t.Fatalf("POST the server read and hung up on: %v (not-sent record %v); want an error without the record", err, unsentHTTP(err))
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
		c := newGuardTestClient(t, GuardConfig{URL: srv.URL + "/mcp", AllowPrivateNetwork: true, dial: dial})
		if err := guardPost(c, srv.URL+"/mcp"); err != nil {
			t.Fatalf("first POST: %v", err)
		}
		dead.Store(true)
		err := guardPost(c, srv.URL+"/mcp")
		if !errors.Is(err, syscall.ECONNREFUSED) || !unsentHTTP(err) {
			t.Fatalf("POST over a dead keep-alive connection: %v (not-sent record %v); want the refused dial with the record", err, unsentHTTP(err))
		}
		if dials.Load() != 2 || wrote.Load() == 0 {
			t.Errorf("%d dials, %d writes refused on the dead connection: the retry path was not taken", dials.Load(), wrote.Load())
		}
	})

	t.Run("only a POST speaks for the request", func(t *testing.T) {
		// A GET that resumes a response stream fails after the POST went
		// out: its record must not make the request "not sent".
		addr := closedPort(t)
		c := newGuardTestClient(t, GuardConfig{URL: "http://" + addr + "/mcp", AllowPrivateNetwork: true})
		_, err := guardGet(c, "http://"+addr+"/mcp", nil)
		if err == nil || unsentHTTP(err) {
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

// TestCallNotSent drives Supervisor.Call into failures before the request
// left: each is marked not sent, a dead transport fails the server with
// the reason, and nothing reached the server.
func TestCallNotSent(t *testing.T) {
	t.Run("stdio pipe closed", func(t *testing.T) {
		h := newHarness(t, CatalogLimits{})
		ctx := ctxT(t)
		callLog := filepath.Join(t.TempDir(), "calls")
		h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--stdin-closer", "--call-log", callLog)})
		if _, err := h.sup.CallTool(ctx, "fx", "close-stdin", json.RawMessage(`{}`)); err != nil {
			t.Fatalf("close-stdin: %v", err)
		}
		_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: mustCanon(t, `{"nonce":"unsent"}`)})
		if !contracts.IsNotSent(err) || errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != "not_sent" {
			t.Fatalf("call after the server closed its stdin: %v (not sent %v, reason %q); want not_sent", err, contracts.IsNotSent(err), reasonOf(err))
		}
		st := h.status("fx")
		if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "could not be sent") || !strings.Contains(st.LastError, "broken pipe") {
			t.Errorf("status after the unsent call: %s, lastError %q; want failed saying why", st.State, st.LastError)
		}
		if b, _ := os.ReadFile(callLog); len(b) != 0 {
			t.Errorf("the server logged %q", b)
		}
	})

	t.Run("http server gone", func(t *testing.T) {
		h := newHarness(t, CatalogLimits{})
		ctx := ctxT(t)
		// Without keep-alive every POST dials afresh: a request on a pooled
		// connection the dead server closed a moment ago could have been
		// written before the client saw the close, and is honestly unknown.
		cmd := exec.Command(h.bin, "--transport", "http", "--listen", "127.0.0.1:0", "--no-keepalive")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
		if err != nil || !ok {
			t.Fatalf("fixture said %q, %v", line, err)
		}
		h.sup.Apply([]contracts.ServerSettings{{ID: "web", Transport: contracts.TransportHTTP, URL: url,
			AllowPrivateNetwork: true, TimeoutMs: 10_000}})
		args := mustCanon(t, `{"text":"hi"}`)
		if _, err := h.sup.Call(ctx, CallRequest{Server: "web", Tool: "echo", Arguments: args}); err != nil {
			t.Fatalf("echo while the server is up: %v", err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, err = h.sup.Call(ctx, CallRequest{Server: "web", Tool: "echo", Arguments: args})
		if !contracts.IsNotSent(err) || !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("echo after the server died: %v (not sent %v); want not sent, unavailable, saying the connection was refused", err, contracts.IsNotSent(err))
		}
		if st := h.status("web"); st.State != contracts.StateFailed || !strings.Contains(st.LastError, "refused") {
			t.Errorf("status: %s, lastError %q; want failed, connection refused", st.State, st.LastError)
		}
	})

	t.Run("canceled before sending", func(t *testing.T) {
		h := newHarness(t, CatalogLimits{})
		ctx := ctxT(t)
		h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
		if _, err := h.sup.Connect(ctx, "fx"); err != nil {
			t.Fatal(err)
		}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, err := h.sup.Call(gone, CallRequest{Server: "fx", Tool: "echo", Arguments: mustCanon(t, `{"text":"x"}`)})
		if !contracts.IsNotSent(err) || !errors.Is(err, contracts.ErrCanceled) || !strings.Contains(err.Error(), "nothing was sent") {
			t.Fatalf("call with a canceled context: %v; want canceled, not sent, saying nothing was sent", err)
		}
		if st := h.status("fx"); st.State != contracts.StateConnected {
			t.Errorf("a call canceled before sending left the server %s, want connected", st.State)
		}
	})
}

// TestStdioRequestNotSent sends a request to a stdio server whose process
// is gone before the write (not sent: the transport is closed, or the pipe
// has no reader) and to one that took the request and died (sent: the
// outcome is unknown).
func TestStdioRequestNotSent(t *testing.T) {
	request := func(t *testing.T, p *proc.Process) error {
		t.Helper()
		c := client.NewClient(transport.NewIO(p.Stdout(), p.Stdin(), nil))
		if err := c.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		r := &rawRequester{client: c, written: p.StdinWritten}
		_, err := r.request(ctxT(t), "tools/call", json.RawMessage(`{"name":"x","arguments":{}}`))
		if err == nil {
			t.Fatal("the request to a dead server succeeded")
		}
		return err
	}

	t.Run("process gone before the write", func(t *testing.T) {
		p := startChild(t, "exit3")
		<-p.Done()
		if err := request(t, p); !notSentRequest(err) {
			t.Errorf("request to an exited process: %v; want not sent", err)
		}
		if p.StdinWritten() != 0 {
			t.Errorf("%d bytes reached a process that was gone", p.StdinWritten())
		}
	})

	t.Run("process died after taking the request", func(t *testing.T) {
		p := startChild(t, "readone")
		if err := request(t, p); notSentRequest(err) {
			t.Errorf("request the process read before dying: %v; want an error that is not \"not sent\"", err)
		}
		if p.StdinWritten() == 0 {
			t.Errorf("the request was not written")
		}
	})
}
