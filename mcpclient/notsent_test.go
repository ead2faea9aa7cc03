package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/proc"
)

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
