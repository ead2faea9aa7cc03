package tests

// Server requests: elicitation and sampling wait for the owner, who
// answers at the terminal with pikoctl mcp respond; roots come from the
// settings; capabilities not enabled are refused at once.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// waitPending waits for a pending server request of server and returns it.
func waitPending(t testing.TB, d *daemon, server string) contracts.ServerRequestInfo {
	t.Helper()
	var found contracts.ServerRequestInfo
	var last contracts.RequestsResult
	poll(t, "a pending request of "+server, func() bool {
		d.callInto(t, contracts.MethodMCPRequests, contracts.RequestsParams{Server: server, State: contracts.RequestPending}, &last)
		if len(last.Requests) > 0 {
			found = last.Requests[0]
			return true
		}
		return false
	}, func() string { return fmt.Sprintf("%+v", last) })
	return found
}

// requestState reads one request's state.
func requestState(t testing.TB, d *daemon, id string) contracts.ServerRequestInfo {
	t.Helper()
	var info contracts.ServerRequestInfo
	d.callInto(t, contracts.MethodMCPRequestsRead, contracts.RequestReadParams{RequestID: id}, &info)
	return info
}

// schemaFields lists the properties of a requested schema in order.
func schemaFields(t testing.TB, schema json.RawMessage) []string {
	t.Helper()
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// respondOnPTY answers a request with pikoctl mcp respond on a pty:
// choice (a, d or c; "" expects a refusal before any question), then, for a form, each field from values (empty for
// the others, so their defaults apply); for a sampling the text. It
// returns the terminal's output and the exit status.
func respondOnPTY(t testing.TB, d *daemon, req contracts.ServerRequestInfo, choice string, values map[string]string) (string, int) {
	t.Helper()
	p := ctlTTY(t, d, "mcp", "respond", req.ID)
	if choice == "" {
		// A decided request: pikoctl refuses before asking.
		out, code := p.wait(t)
		return strings.ReplaceAll(out, "\r\n", "\n"), code
	}
	p.waitFor(t, "(a/d/c): ")
	p.typeLine(t, choice)
	if choice == "a" {
		switch {
		case req.Kind == contracts.RequestKindSampling:
			p.waitFor(t, "one line of text): ")
			p.typeLine(t, values["text"])
		case req.Mode == contracts.ElicitForm:
			full := requestState(t, d, req.ID)
			for _, name := range schemaFields(t, full.Schema) {
				p.waitFor(t, "│ "+name+": ")
				p.typeLine(t, values[name])
			}
		}
	}
	out, code := p.wait(t)
	return strings.ReplaceAll(out, "\r\n", "\n"), code
}

// TestInputRequired: a 2026-07-28 tool answering input_required waits for
// the owner; the call's progress says how to answer; once answered the
// same call goes on with the answer and completes. Without elicitation in
// the settings the input is refused and the call fails saying so.
func TestInputRequired(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	modern := func(id string) srv {
		return stdioFixture(id, "--protocol", "modern", "--input-tools").with(
			"protocol", map[string]string{"pin": modernVersion}, "readOnlyTools", []string{"ask", "weird-result"})
	}
	configureMCP(t, d, mcpSettings(t, modern("fx").with("elicitation", true), modern("plain")))

	w := watch(t, d, contracts.WatchParams{Kinds: []string{contracts.EventRequest}})
	call := ctlProgress(t, d, `{}`, "mcp", "call", "fx", "ask")
	req := waitPending(t, d, "fx")
	if req.Kind != contracts.RequestKindElicitation || req.Mode != contracts.ElicitForm || req.Tool != "ask" || !req.InputRequired ||
		req.Message != "what is your name?" {
		t.Fatalf("pending request %+v, want the form elicitation of ask", req)
	}
	call.tty.WaitFor(t, "the server asks: what is your name? — answer with `pikoctl mcp respond "+req.ID+"`", call.done, waitTimeout)
	out, code := respondOnPTY(t, d, req, "a", map[string]string{"name": "Ada"})
	if code != 0 || !strings.Contains(out, "request "+req.ID+": answered") {
		t.Fatalf("respond: exit %d; terminal:\n%s", code, out)
	}
	if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "hello Ada") {
		t.Fatalf("the call exited %d; stdout %q, terminal %q; want it completed with the answer", code, call.stdout.String(), call.tty.String())
	}
	for _, state := range []string{contracts.RequestPending, contracts.RequestAnswered} {
		w.waitFor("a request event "+state, func(ev contracts.EventParams) bool {
			var data contracts.RequestEventData
			return ev.Server == "fx" && json.Unmarshal(ev.Data, &data) == nil && data.ID == req.ID && data.State == state
		})
	}
	for _, ev := range w.all() {
		if strings.Contains(string(ev.Data), "Ada") {
			t.Errorf("a request event carries the answer: %s", ev.Data)
		}
	}

	out, code = respondOnPTY(t, d, req, "", nil)
	if code != 1 || !strings.Contains(out, "is answered and cannot be answered again") {
		t.Errorf("a second answer: exit %d; terminal:\n%s", code, out)
	}

	res := callTool(t, d, "plain", "ask", `{}`)
	if res.Status != contracts.CallFailed || res.Error == nil || res.Error.Reason() != "input_not_given" ||
		!strings.Contains(res.Error.Message, "elicitation: true") {
		t.Errorf("ask without elicitation: %+v (error %+v), want failed, input_not_given naming the setting", res, res.Error)
	}
	res = callTool(t, d, "fx", "weird-result", `{}`)
	if res.Status == contracts.CallCompleted || res.Error == nil || res.Error.Reason() != "invalid_result" {
		t.Errorf("weird-result: %+v (error %+v), want an invalid result, not completed", res, res.Error)
	}
}

// TestInputRequiredUnanswered: nobody answers before the request's limit:
// the request expires and the call ends failed with that reason.
func TestInputRequiredUnanswered(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, withPikodArgs("--request-limit", "2s"))
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--protocol", "modern", "--input-tools").with(
		"protocol", map[string]string{"pin": modernVersion}, "readOnlyTools", []string{"ask"}, "elicitation", true)))
	res := callTool(t, d, "fx", "ask", `{}`)
	if res.Status != contracts.CallFailed || res.Error == nil || res.Error.Reason() != "input_not_given" ||
		!strings.Contains(res.Error.Message, "expired") {
		t.Fatalf("ask unanswered: %+v (error %+v), want failed, input_not_given, expired", res, res.Error)
	}
	var list contracts.RequestsResult
	d.callInto(t, contracts.MethodMCPRequests, contracts.RequestsParams{Server: "fx"}, &list)
	if len(list.Requests) != 1 || list.Requests[0].State != contracts.RequestExpired {
		t.Errorf("requests after the call: %+v, want one expired", list.Requests)
	}
}

// TestRequestsEverything: server-everything's roots, elicitation and
// sampling tools end to end, over stdio, Streamable HTTP and legacy SSE, a pty
// answering; decline, cancel, expiry with the call, a second answer.
func TestRequestsEverything(t *testing.T) {
	dir := interopDir(t)
	everything := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	httpSrv := startEverythingHTTP(t, everything, "streamableHttp")
	sseSrv := startEverythingHTTP(t, everything, "sse")
	root := t.TempDir()
	rootURI := "file://" + root
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	enabled := func(s srv) srv {
		return s.with("elicitation", true, "sampling", true, "roots", []map[string]string{{"uri": rootURI, "name": "project"}},
			"readOnlyTools", []string{"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request", "trigger-url-elicitation"})
	}
	servers := []srv{
		// A short timeoutMs: the owner's time must not count against it.
		enabled(srv{"id": "ev-stdio", "transport": "stdio", "command": everything, "args": []string{"stdio"}, "timeoutMs": 8000}),
		enabled(srv{"id": "ev-http", "transport": "http", "url": httpSrv.url("/mcp"), "allowPrivateNetwork": true}),
		enabled(srv{"id": "ev-sse", "transport": "sse", "url": sseSrv.url("/sse"), "allowPrivateNetwork": true}),
		{"id": "ev-plain", "transport": "stdio", "command": everything, "args": []string{"stdio"}},
	}
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, servers...))

	for _, id := range []string{"ev-stdio", "ev-http", "ev-sse"} {
		t.Run(id, func(t *testing.T) {
			res := callTool(t, d, id, "get-roots-list", `{}`)
			if res.Status != contracts.CallCompleted || !strings.Contains(string(res.Content), rootURI) || !strings.Contains(string(res.Content), "project") {
				t.Errorf("get-roots-list: %+v, want the configured root", res)
			}

			// Elicitation, answered: name typed, the rest defaults.
			call := ctlProgress(t, d, `{}`, "mcp", "call", id, "trigger-elicitation-request")
			req := waitPending(t, d, id)
			call.tty.WaitFor(t, "answer with `pikoctl mcp respond "+req.ID+"`", call.done, waitTimeout)
			if id == "ev-stdio" {
				// Longer than the server's timeoutMs: the call waits for the
				// owner, not for its timeout.
				time.Sleep(9 * time.Second)
			}
			out, code := respondOnPTY(t, d, req, "a", map[string]string{"name": "Ada Lovelace"})
			if code != 0 {
				t.Fatalf("respond: exit %d; terminal:\n%s", code, out)
			}
			if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "Name: Ada Lovelace") ||
				!strings.Contains(call.stdout.String(), "Favorite Integer: 42") {
				t.Fatalf("elicitation call: exit %d, stdout %q; want the answer with the defaults", code, call.stdout.String())
			}
			out, code = respondOnPTY(t, d, req, "", nil)
			if code != 1 || !strings.Contains(out, "cannot be answered again") {
				t.Errorf("a second answer: exit %d; terminal:\n%s", code, out)
			}

			// Declined, then cancelled.
			for _, tc := range []struct{ choice, want, state string }{
				{"d", "User declined", contracts.RequestDeclined},
				{"c", "User cancelled", contracts.RequestCancelled},
			} {
				call := ctlProgress(t, d, `{}`, "mcp", "call", id, "trigger-elicitation-request")
				req := waitPending(t, d, id)
				if out, code := respondOnPTY(t, d, req, tc.choice, nil); code != 0 {
					t.Fatalf("respond %s: exit %d; terminal:\n%s", tc.choice, code, out)
				}
				if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), tc.want) {
					t.Errorf("elicitation %s: exit %d, stdout %q", tc.choice, code, call.stdout.String())
				}
				if st := requestState(t, d, req.ID).State; st != tc.state {
					t.Errorf("request after %s is %s, want %s", tc.choice, st, tc.state)
				}
			}

			// Sampling, answered with text the owner types.
			call = ctlProgress(t, d, `{"prompt":"say hi","maxTokens":50}`, "mcp", "call", id, "trigger-sampling-request")
			req = waitPending(t, d, id)
			if req.Kind != contracts.RequestKindSampling || !strings.Contains(req.Message, "say hi") || req.MaxTokens != 50 {
				t.Errorf("sampling request %+v", req)
			}
			if out, code := respondOnPTY(t, d, req, "a", map[string]string{"text": "hi from the owner"}); code != 0 {
				t.Fatalf("respond: exit %d; terminal:\n%s", code, out)
			}
			if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "hi from the owner") {
				t.Errorf("sampling call: exit %d, stdout %q", code, call.stdout.String())
			}

			if id == "ev-stdio" {
				// A local tool proposes; the owner sends the proposal.
				call = ctlProgress(t, d, `{"prompt":"say hi","maxTokens":50}`, "mcp", "call", id, "trigger-sampling-request")
				req = waitPending(t, d, id)
				d.call(t, contracts.MethodMCPRequestsPropose, contracts.ProposeParams{RequestID: req.ID, Text: "proposed by a tool"})
				if call.exited() {
					t.Fatalf("the call ended on a proposal alone: stdout %q", call.stdout.String())
				}
				p := ctlTTY(t, d, "mcp", "respond", req.ID)
				p.waitFor(t, "(a/d/c): ")
				p.typeLine(t, "a")
				p.waitFor(t, "as it is? (y/N): ")
				p.typeLine(t, "y")
				if out, code := p.wait(t); code != 0 || !strings.Contains(out, "proposed by a tool") {
					t.Fatalf("respond with the proposal: exit %d; terminal:\n%s", code, out)
				}
				if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "proposed by a tool") {
					t.Errorf("sampling call with the proposal: exit %d, stdout %q", code, call.stdout.String())
				}
				// A url elicitation: the URL and its domain are shown, never
				// opened; accepting sends no content.
				call = ctlProgress(t, d, `{"url":"https://login.example.com/verify?x=1","message":"verify here"}`, "mcp", "call", id, "trigger-url-elicitation")
				req = waitPending(t, d, id)
				if req.Mode != contracts.ElicitURL || req.Domain != "login.example.com" || req.URL != "https://login.example.com/verify?x=1" {
					t.Errorf("url elicitation %+v, want the url and its domain", req)
				}
				out, code := respondOnPTY(t, d, req, "a", nil)
				if code != 0 || !strings.Contains(out, "domain:    login.example.com") || !strings.Contains(out, "pikod never opens it") {
					t.Errorf("respond to the url elicitation: exit %d; terminal:\n%s", code, out)
				}
				if code := call.wait(t); code != 0 || !strings.Contains(call.stdout.String(), "User completed the URL elicitation flow") {
					t.Errorf("url elicitation call: exit %d, stdout %q", code, call.stdout.String())
				}

				// Out of bounds: refused at once, never queued.
				res := callTool(t, d, id, "trigger-sampling-request", `{"prompt":"long","maxTokens":20000}`)
				if !strings.Contains(string(res.Content)+fmt.Sprint(res.Error), "maxTokens must be 1 to 16384") {
					t.Errorf("maxTokens 20000: %+v (error %+v), want the bound named", res, res.Error)
				}
			}

			// Expiry with the call: the call is interrupted while the
			// owner is asked; the request expires and cannot be answered.
			call = ctlProgress(t, d, `{}`, "mcp", "call", id, "trigger-elicitation-request")
			req = waitPending(t, d, id)
			if err := call.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			call.wait(t)
			poll(t, "the request to expire", func() bool { return requestState(t, d, req.ID).State == contracts.RequestExpired },
				func() string { return fmt.Sprintf("%+v", requestState(t, d, req.ID)) })
			if out, code := respondOnPTY(t, d, req, "", nil); code != 1 || !strings.Contains(out, "is expired") {
				t.Errorf("answering an expired request: exit %d; terminal:\n%s", code, out)
			}
		})
	}

	t.Run("not enabled", func(t *testing.T) {
		// Nothing declared: server-everything offers none of its
		// conditional tools.
		var cat contracts.CatalogResult
		d.callInto(t, contracts.MethodMCPCatalog, contracts.ServerParams{Server: "ev-plain"}, &cat)
		for _, tool := range cat.Tools {
			if strings.HasPrefix(tool.Name, "trigger-sampling") || strings.HasPrefix(tool.Name, "trigger-elicitation") || tool.Name == "get-roots-list" {
				t.Errorf("ev-plain offers %s although pikod declared nothing", tool.Name)
			}
		}
	})
}

// TestUndeclaredRefused: a legacy server that sends an elicitation pikod
// did not declare is refused at once with "method not found"; nothing is
// queued.
func TestUndeclaredRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--input-tools").with("readOnlyTools", []string{"ask"})))
	res := callTool(t, d, "fx", "ask", `{}`)
	if res.Status == contracts.CallCompleted && !res.IsError {
		t.Errorf("ask without elicitation: %+v, want the tool to fail", res)
	}
	if !strings.Contains(string(res.Content)+fmt.Sprint(res.Error), "did not declare elicitation") {
		t.Errorf("ask without elicitation: %+v (error %+v), want pikod's refusal passed on", res, res.Error)
	}
	var list contracts.RequestsResult
	d.callInto(t, contracts.MethodMCPRequests, contracts.RequestsParams{}, &list)
	if len(list.Requests) != 0 {
		t.Errorf("requests: %+v, want none queued", list.Requests)
	}
}
