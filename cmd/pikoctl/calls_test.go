package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// cancelFake is a daemon that answers a call only after the client
// cancelled it: with verdict (a whole response member: `"result":...` or
// `"error":...`), or never when verdict is "".
type cancelFake struct {
	socket  string
	arrived chan struct{}
	cancels chan json.RawMessage
}

func startCancelFake(t *testing.T, verdict string) *cancelFake {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &cancelFake{socket: filepath.Join(dir, "d.sock"), arrived: make(chan struct{}, 1), cancels: make(chan json.RawMessage, 1)}
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		var id json.RawMessage
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				return
			}
			switch {
			case m.Method == contracts.MethodCancel:
				f.cancels <- m.Params
				if verdict != "" {
					c.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,` + verdict + "}\n"))
				}
			case m.ID != nil:
				id = m.ID
				f.arrived <- struct{}{}
			}
		}
	}()
	return f
}

// TestCallCtrlC cancels pikoctl mcp call once the daemon has the request
// and checks what it prints and how it exits for each verdict.
func TestCallCtrlC(t *testing.T) {
	defer func(g time.Duration) { cancelGrace = g }(cancelGrace)
	cancelGrace = 200 * time.Millisecond
	for _, tc := range []struct {
		name    string
		verdict string
		code    int
		stderr  []string
	}{
		{"uncertain", `"result":{"status":"uncertain","server":"fx","tool":"sleep","receiptId":"rcpt_abc","receiptKind":"mcp_read","truncated":false,"error":{"code":1012,"message":"canceled after it was sent"}}`,
			exitUncertain, []string{"cancelled after the call was sent", "rcpt_abc", "check the server"}},
		{"failed, not sent", `"result":{"status":"failed","server":"fx","tool":"sleep","notSent":true,"truncated":false,"receiptId":"rcpt_x"}`,
			exitFailure, []string{"cancelled: nothing was sent"}},
		{"error, not sent", `"error":{"code":1011,"message":"the call was canceled before it was sent; nothing was sent","data":{"reason":"canceled","notSent":true}}`,
			exitFailure, []string{"cancelled: nothing was sent"}},
		{"error without a verdict", `"error":{"code":1011,"message":"extensions.mcp.call was canceled","data":{"reason":"canceled"}}`,
			exitUncertain, []string{"did not say whether it was sent", "pikoctl mcp actions"}},
		{"completed first", `"result":{"status":"completed","server":"fx","tool":"sleep","content":[{"type":"text","text":"slept"}],"truncated":false}`,
			exitOK, []string{"completed before the cancellation"}},
		{"no answer", "", exitUncertain, []string{"no verdict within", "pikoctl mcp actions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startCancelFake(t, tc.verdict)
			ta := newTestApp(t, "", true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-f.arrived:
					cancel()
				case <-time.After(10 * time.Second):
				}
			}()
			code := ta.run(ctx, []string{"--socket", f.socket, "mcp", "call", "fx", "sleep"})
			t.Logf("stdout:\n%s\nstderr:\n%s", ta.out, ta.errOut)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(ta.errOut.String(), s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			if strings.Contains(ta.errOut.String(), "context canceled") {
				t.Errorf("stderr shows a bare context error")
			}
			select {
			case p := <-f.cancels:
				if string(p) != `{"id":1}` {
					t.Errorf("$/cancelRequest params %s, want the call's id", p)
				}
			default:
				t.Errorf("no $/cancelRequest reached the daemon")
			}
		})
	}

	t.Run("cancelled before connecting", func(t *testing.T) {
		ta := newTestApp(t, "", true)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if code := ta.run(ctx, []string{"--socket", missingSocket(t), "mcp", "call", "fx", "sleep"}); code != exitFailure ||
			!strings.Contains(ta.errOut.String(), "cancelled: nothing was sent") {
			t.Errorf("exit %d, stderr %q; want 1 and nothing was sent", code, ta.errOut)
		}
	})
}

// TestCallNotSentOutput checks what a call that could not be sent prints,
// as a result and as an error answer.
func TestCallNotSentOutput(t *testing.T) {
	result := `{"status":"failed","server":"web","tool":"echo","notSent":true,"truncated":false,"receiptId":"rcpt_1","receiptKind":"mcp_read",` +
		`"error":{"code":1006,"message":"tools/call echo on \"web\" could not be sent: connection refused","data":{"reason":"not_sent","notSent":true}}}`
	d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodMCPCall: canned(result),
	})
	ta := newTestApp(t, "", true)
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "call", "web", "echo"); code != exitFailure {
		t.Errorf("exit %d, want 1", code)
	}
	for _, s := range []string{"status: failed (not sent)", "nothing was sent", "connection refused", "rcpt_1"} {
		if !strings.Contains(ta.out.String(), s) {
			t.Errorf("stdout lacks %q", s)
		}
	}
	ta = newTestApp(t, "", true)
	if code := ta.runArgs(t, "--json", "--socket", d.socket, "mcp", "call", "web", "echo"); code != exitFailure || strings.TrimSpace(ta.out.String()) != result {
		t.Errorf("--json: exit %d, stdout %q; want 1 and the result as sent", code, ta.out)
	}

	e := &contracts.Error{Code: 1006, Message: `connecting to "web": connection refused`, Data: &contracts.ErrorData{Reason: "connect_failed", NotSent: true}}
	d = startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){contracts.MethodMCPCall: failing(e)})
	ta = newTestApp(t, "", true)
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "call", "web", "echo"); code != exitFailure || !strings.Contains(ta.errOut.String(), "nothing was sent") {
		t.Errorf("error answer: exit %d, stderr %q; want 1 and nothing was sent", code, ta.errOut)
	}
	ta = newTestApp(t, "", true)
	if code := ta.runArgs(t, "--json", "--socket", d.socket, "mcp", "call", "web", "echo"); code != exitFailure || !strings.Contains(ta.out.String(), `"notSent":true`) {
		t.Errorf("--json error answer: exit %d, stdout %q; want 1 and data.notSent", code, ta.out)
	}
}

// TestActionsNotSent checks the actions list names a failed action that
// was never sent.
func TestActionsNotSent(t *testing.T) {
	d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodMCPActionsList: canned(`{"actions":[{"id":"act_1","state":"failed","server":"web","tool":"count","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","reason":"not sent: refused","advice":"nothing was sent; make the call again","notSent":true},` +
			`{"id":"act_2","state":"failed","server":"web","tool":"count","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}]}`),
	})
	ta := newTestApp(t, "", true)
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "actions"); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(ta.out.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "failed (not sent)") || strings.Contains(lines[2], "not sent") {
		t.Errorf("actions list:\n%s\nwant act_1 failed (not sent) and act_2 plain failed", ta.out)
	}
}
