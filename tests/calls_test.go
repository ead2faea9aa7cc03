package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// Call suites: extensions.mcp.call against the stdio fixture, through the
// Go client and the compiled pikoctl. What reached the server is read from
// the fixture itself (the count tool returns how many tool calls it has
// received).

// callsServer is the fixture entry of the call suites: echo, count, big
// and bad-output are read tools, add and sleep autonomous, tool-0001 needs
// approval; env and crash are not selected. maxBytes allows a 19 MB
// result.
func callsServer(id, callLog string) srv {
	return stdioFixture(id, "--bad-output", "--call-log", callLog).with(
		"tools", []string{"echo", "count", "big", "bad-output", "add", "sleep", "tool-0001"},
		"readOnlyTools", []string{"echo", "count", "big", "bad-output"},
		"autonomousTools", []string{"add", "sleep"},
		"maxBytes", contracts.MaxMaxBytes,
		// The 19 MB result takes seconds to produce under -race on a busy
		// machine; these tests are about results and grants, not timeouts.
		"timeoutMs", 60000)
}

// callsDaemon starts a daemon with callsServer "fx" connected.
func callsDaemon(t testing.TB) *daemon {
	t.Helper()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, callsServer("fx", filepath.Join(t.TempDir(), "calls.log"))))
	connectServer(t, d, "fx")
	return d
}

// served returns how many tool calls the fixture has received, counting
// the count call that asks.
func served(t testing.TB, d *daemon) int {
	t.Helper()
	res := callTool(t, d, "fx", "count", `{"nonce":"served"}`)
	var sc struct {
		Calls int `json:"calls"`
	}
	if res.Status != contracts.CallCompleted || json.Unmarshal(res.StructuredContent, &sc) != nil || sc.Calls < 1 {
		t.Fatalf("count: %+v", res)
	}
	return sc.Calls
}

// readSource reads a retained result whole, in windows of length
// characters, checking that the windows line up. It speaks the wire
// directly: a 19 MB result goes through encoding/json once, not four
// times (the race detector makes every pass slow).
func readSource(t testing.TB, d *daemon, id string, length int64) (text string, windows int) {
	t.Helper()
	nc, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 1<<20)
	var b strings.Builder
	var offset int64
	for {
		windows++
		res := readWindow(t, nc, r, windows, id, offset, length)
		n := int64(utf8.RuneCountInString(res.Text))
		b.WriteString(res.Text)
		offset += n
		if res.EOF {
			if offset != res.Total {
				t.Fatalf("source.read reached eof at %d of %d characters", offset, res.Total)
			}
			return b.String(), windows
		}
		if n == 0 {
			t.Fatalf("source.read at %d of %d returned nothing without eof", offset, res.Total)
		}
	}
}

// readWindow makes one source.read request on a raw connection.
func readWindow(t testing.TB, nc net.Conn, r *bufio.Reader, reqID int, id string, offset, length int64) contracts.SourceReadResult {
	t.Helper()
	req := mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": reqID, "method": contracts.MethodSourceRead,
		"params": contracts.SourceReadParams{SourceID: id, Offset: offset, Length: length}})
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := nc.Write(append(req, '\n')); err != nil {
		t.Fatalf("source.read: %v", err)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("source.read at %d: %v", offset, err)
	}
	var resp struct {
		ID     int                         `json:"id"`
		Result *contracts.SourceReadResult `json:"result"`
		Error  *contracts.Error            `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != reqID || resp.Result == nil {
		t.Fatalf("source.read at %d answered %.300s (%v)", offset, line, err)
	}
	if resp.Result.Offset != offset || resp.Result.SourceID != id {
		t.Fatalf("source.read at %d answered offset %d of %q", offset, resp.Result.Offset, resp.Result.SourceID)
	}
	return *resp.Result
}

// toolResult is the part of an MCP tool result the suites look at.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// TestCallGrants checks what each grant does with a call.
func TestCallGrants(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)

	t.Run("read tool", func(t *testing.T) {
		res := callTool(t, d, "fx", "echo", `{"text":"hello, ledger"}`)
		if res.Status != contracts.CallCompleted || res.ReceiptKind != contracts.ReceiptRead || res.ReceiptID == "" ||
			res.OriginalResultSourceID == "" || res.Truncated || res.IsError {
			t.Fatalf("echo: %+v, want completed with an mcp_read receipt and a source", res)
		}
		if !sameJSON(t, res.StructuredContent, []byte(`{"text":"hello, ledger"}`)) {
			t.Errorf("structuredContent %s", res.StructuredContent)
		}
		text, _ := readSource(t, d, res.OriginalResultSourceID, 0)
		var orig toolResult
		if err := json.Unmarshal([]byte(text), &orig); err != nil {
			t.Fatalf("the retained result is not JSON: %v: %q", err, text)
		}
		if len(orig.Content) != 1 || orig.Content[0].Type != "text" || orig.Content[0].Text != "hello, ledger" ||
			!sameJSON(t, orig.StructuredContent, res.StructuredContent) || !sameJSON(t, []byte(text), mustJSON(t, map[string]any{
			"content": json.RawMessage(res.Content), "structuredContent": json.RawMessage(res.StructuredContent)})) {
			t.Errorf("retained result %s does not match the preview %s / %s", text, res.Content, res.StructuredContent)
		}
	})

	t.Run("autonomous tool", func(t *testing.T) {
		res := callTool(t, d, "fx", "add", `{"a":2,"b":40}`)
		if res.Status != contracts.CallCompleted || res.ReceiptKind != contracts.ReceiptAutonomous || res.ReceiptID == "" {
			t.Fatalf("add: %+v, want completed with an mcp_autonomous receipt", res)
		}
		if !sameJSON(t, res.Content, []byte(`[{"type":"text","text":"42"}]`)) {
			t.Errorf("add content %s, want 42", res.Content)
		}
		var list contracts.ActionsListResult
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &list)
		found := false
		for _, a := range list.Actions {
			if a.Tool == "add" && a.ReceiptID == res.ReceiptID {
				found = true
				if a.State != contracts.ActionCompleted || a.Server != "fx" {
					t.Errorf("the add action is %+v, want completed on fx", a)
				}
			}
		}
		if !found {
			t.Errorf("actions.list has no add action with receipt %s: %+v", res.ReceiptID, list.Actions)
		}
	})

	t.Run("not selected", func(t *testing.T) {
		before := served(t, d)
		for _, tool := range []string{"crash", "env"} {
			e := d.callErr(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: tool})
			if e.Reason() != "tool_not_selected" || !errors.Is(e, contracts.ErrPermissionDenied) {
				t.Errorf("calling unselected %s: %v (%s), want tool_not_selected", tool, e, e.Reason())
			}
		}
		if after := served(t, d); after != before+1 {
			t.Errorf("the fixture received %d calls besides count, want 0", after-before-1)
		}
		if st := serverStatus(t, d, "fx"); st.State != contracts.StateConnected {
			t.Errorf("fx is %q after calling crash unselected, want connected", st.State)
		}
	})

	t.Run("approval required", func(t *testing.T) {
		before := served(t, d)
		res := callTool(t, d, "fx", "tool-0001", `{"input":"later"}`)
		if res.Status != contracts.CallApprovalRequired || !strings.HasPrefix(res.ActionID, "act_") || len(res.Digest) != 64 ||
			res.ReceiptID != "" || len(res.Content) != 0 {
			t.Fatalf("tool-0001: %+v, want approval_required with an action and a digest", res)
		}
		exp, err := time.Parse(time.RFC3339, res.ExpiresAt)
		if err != nil || time.Until(exp) <= 0 || time.Until(exp) > contracts.ApprovalTTLMinutes*time.Minute {
			t.Errorf("expiresAt %q (%v), want within the next 15 minutes", res.ExpiresAt, err)
		}
		wantState(t, d, res.ActionID, contracts.ActionPrepared)
		// pikoctl says so with exit status 4.
		out, _, code := runCtl(t, d, `{"input":"later"}`, "mcp", "call", "fx", "tool-0001")
		if code != 4 || !strings.Contains(out, "approval required") {
			t.Errorf("pikoctl mcp call of an approval tool: exit %d, stdout %q; want 4", code, out)
		}
		if after := served(t, d); after != before+1 {
			t.Errorf("the fixture received %d calls besides count, want 0", after-before-1)
		}
	})

	t.Run("model-facing name", func(t *testing.T) {
		var name string
		for _, tool := range catalogOf(t, d, "fx").Tools {
			if tool.OriginalName == "echo" {
				name = tool.Name
			}
		}
		if name != "mcp_fx_echo" {
			t.Fatalf("echo's model-facing name is %q, want mcp_fx_echo", name)
		}
		var res contracts.CallResult
		d.callInto(t, contracts.MethodMCPCall, contracts.CallParams{Name: name, Arguments: json.RawMessage(`{"text":"by name"}`)}, &res)
		if res.Status != contracts.CallCompleted || res.Server != "fx" || res.Tool != "echo" || !sameJSON(t, res.StructuredContent, []byte(`{"text":"by name"}`)) {
			t.Errorf("call by name: %+v", res)
		}
		out, _, code := runCtl(t, d, `{"text":"cli by name"}`, "mcp", "call", "--name", name)
		if code != 0 || !strings.Contains(out, "cli by name") {
			t.Errorf("pikoctl mcp call --name: exit %d, stdout %q", code, out)
		}
		for _, p := range []contracts.CallParams{{Name: name, Server: "fx"}, {Name: name, Tool: "echo"}} {
			e := d.callErr(t, contracts.MethodMCPCall, p)
			if e.Reason() != "ambiguous_tool" {
				t.Errorf("call with %+v: %v (%s), want ambiguous_tool", p, e, e.Reason())
			}
		}
	})

	t.Run("output schema mismatch", func(t *testing.T) {
		res := callTool(t, d, "fx", "bad-output", "")
		if res.Status != contracts.CallCompleted || res.OutputSchemaError == "" || len(res.Content) == 0 || len(res.StructuredContent) == 0 {
			t.Fatalf("bad-output: %+v, want completed with content and an outputSchemaError", res)
		}
		if !sameJSON(t, res.StructuredContent, []byte(`{"n":"not a number"}`)) {
			t.Errorf("structuredContent %s", res.StructuredContent)
		}
		// A matching result has none.
		if res := callTool(t, d, "fx", "echo", `{"text":"fine"}`); res.OutputSchemaError != "" {
			t.Errorf("echo reported outputSchemaError %q", res.OutputSchemaError)
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCallArguments checks that arguments the tool's schema refuses, and
// ambiguous or oversized ones, never reach the server.
func TestCallArguments(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)
	big := `{"text":"` + strings.Repeat("x", contracts.MaxArgumentsChars) + `"}`
	for _, tc := range []struct {
		name, tool, args, reason string
	}{
		{"wrong type", "add", `{"a":"1","b":2}`, "arguments_invalid"},
		{"missing required", "add", `{"a":1}`, "arguments_invalid"},
		{"no arguments", "echo", ``, "arguments_invalid"},
		{"wrong type on a read tool", "echo", `{"text":7}`, "arguments_invalid"},
		{"integer expected", "sleep", `{"ms":1.5}`, "arguments_invalid"},
		{"approval tool", "tool-0001", `{"input":["x"]}`, "arguments_invalid"},
		{"keys differing by case", "add", `{"a":1,"A":2,"b":3}`, "ambiguous_keys"},
		{"duplicate key", "add", `{"a":1,"a":2,"b":3}`, "ambiguous_keys"},
		{"nested duplicate key", "tool-0001", `{"input":"x","more":{"k":1,"k":2}}`, "ambiguous_keys"},
		{"trailing NUL", "echo", `{"text":"x","text\u0000":"y"}`, "ambiguous_keys"},
		{"lone surrogate", "echo", `{"text":"\ud800"}`, "arguments_invalid_json"},
		{"invalid UTF-8", "echo", "{\"text\":\"\xff\"}", "arguments_invalid_json"},
		{"too large", "echo", big, "arguments_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := served(t, d)
			p := contracts.CallParams{Server: "fx", Tool: tc.tool}
			if tc.args != "" {
				p.Arguments = json.RawMessage(tc.args)
			}
			e := d.callErr(t, contracts.MethodMCPCall, p)
			if e.Code != 1001 || e.Reason() != tc.reason {
				t.Errorf("%s %.80s: code %d reason %q (%s), want 1001 %s", tc.tool, tc.args, e.Code, e.Reason(), e.Message, tc.reason)
			}
			if after := served(t, d); after != before+1 {
				t.Errorf("the fixture received %d calls besides count, want 0", after-before-1)
			}
		})
	}
	// Exactly the limit is accepted.
	atLimit := `{"text":"` + strings.Repeat("x", contracts.MaxArgumentsChars-len(`{"text":""}`)) + `"}`
	if res := callTool(t, d, "fx", "echo", atLimit); res.Status != contracts.CallCompleted {
		t.Errorf("echo with arguments of exactly %d characters: %s (%s)", contracts.MaxArgumentsChars, res.Status, res.Error)
	}
	// The fixture has no tool whose schema forbids extra properties
	// (mcp-go omits additionalProperties): an extra one passes through.
	if res := callTool(t, d, "fx", "echo", `{"text":"x","extra":1}`); res.Status != contracts.CallCompleted {
		t.Errorf("echo with an extra property: %+v", res)
	}
	var list contracts.ActionsListResult
	d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &list)
	if len(list.Actions) != 0 {
		t.Errorf("refused calls left actions: %+v", list.Actions)
	}
}

// TestCallProgress checks that progress reaches the Go client as
// notifications and pikoctl's terminal as a bar.
func TestCallProgress(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)

	t.Run("notifications", func(t *testing.T) {
		c := d.client(t)
		var (
			mu    sync.Mutex
			notes []contracts.ProgressParams
		)
		c.OnNotification(func(method string, params json.RawMessage) {
			if method != contracts.NotifyMCPProgress {
				return
			}
			var p contracts.ProgressParams
			if err := json.Unmarshal(params, &p); err != nil {
				t.Errorf("progress params %s: %v", params, err)
				return
			}
			mu.Lock()
			notes = append(notes, p)
			mu.Unlock()
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var res contracts.CallResult
		// The client numbers its requests from 1: this call's id is 1.
		if err := c.Call(ctx, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "sleep", Arguments: json.RawMessage(`{"ms":1500}`)}, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != contracts.CallCompleted {
			t.Fatalf("sleep: %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(notes) < 3 {
			t.Fatalf("got %d progress notifications, want at least 3", len(notes))
		}
		last := 0.0
		for _, p := range notes {
			if string(p.RequestID) != "1" || p.Server != "fx" || p.Tool != "sleep" || p.Total != 1500 || p.Progress < last {
				t.Errorf("progress %+v (request id %s), want request 1, fx/sleep, total 1500, not going back", p, p.RequestID)
			}
			last = p.Progress
		}
	})

	t.Run("pikoctl bar", func(t *testing.T) {
		p := ctlProgress(t, d, `{"ms":1500}`, "mcp", "call", "fx", "sleep")
		code := p.wait(t)
		if code != 0 || !strings.Contains(p.stdout.String(), "slept 1500ms") {
			t.Fatalf("pikoctl mcp call sleep: exit %d, stdout %q", code, p.stdout.String())
		}
		if bar := p.tty.String(); !strings.Contains(bar, "[#") || !strings.Contains(bar, "%") {
			t.Errorf("no progress bar on the terminal: %q", bar)
		}
		// Without a terminal there is no bar.
		_, stderr, code := runCtl(t, d, `{"ms":300}`, "mcp", "call", "fx", "sleep")
		if code != 0 || strings.Contains(stderr, "[") {
			t.Errorf("pikoctl without a terminal: exit %d, stderr %q", code, stderr)
		}
	})
}

// progressRun is pikoctl with arguments on stdin (a pipe), stdout captured
// and stderr on a pseudo-terminal, where the progress bar goes.
type progressRun struct {
	cmd    *exec.Cmd
	stdout testsupport.Buffer
	tty    *testsupport.Buffer
	done   chan struct{}
}

func ctlProgress(t testing.TB, d *daemon, stdin string, args ...string) *progressRun {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	p := &progressRun{tty: new(testsupport.Buffer), done: make(chan struct{})}
	p.cmd = exec.Command(pikoctlBin, append([]string{"--socket", d.socket}, args...)...)
	p.cmd.Env = minimalEnv(t.TempDir())
	detach(p.cmd)
	p.cmd.Stdin = strings.NewReader(stdin)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = slave
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting pikoctl: %v", err)
	}
	slave.Close()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.tty, master)
		close(copied)
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		master.Close()
		<-copied
	})
	return p
}

func (p *progressRun) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *progressRun) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("pikoctl did not exit; terminal %q", p.tty.String())
	}
	if strings.Contains(p.tty.String(), "WARNING: DATA RACE") {
		t.Errorf("race detected in pikoctl: %s", p.tty.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestCallCancel interrupts pikoctl during a long call: the server's
// handler is cancelled and the call is recorded as uncertain.
func TestCallCancel(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)
	p := ctlProgress(t, d, `{"ms":20000}`, "mcp", "call", "fx", "sleep")
	// The bar appears once the fixture reports progress: the call is out.
	p.tty.WaitFor(t, "[", p.done, waitTimeout)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	if code != 1 && code != 5 {
		t.Errorf("pikoctl interrupted during a call exited %d, want 1 or 5; stdout %q, terminal %q", code, p.stdout.String(), p.tty.String())
	}
	st := waitServer(t, d, "fx", "to report the cancelled sleep", func(st contracts.ServerStatus) bool {
		return strings.Contains(st.StderrTail, "sleep cancelled after")
	})
	if st.State != contracts.StateConnected {
		t.Errorf("fx is %q after a cancelled call, want connected", st.State)
	}
	var sleepAction contracts.ActionSummary
	poll(t, "the sleep action to end", func() bool {
		var list contracts.ActionsListResult
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &list)
		for _, a := range list.Actions {
			if a.Tool == "sleep" {
				sleepAction = a
			}
		}
		return sleepAction.State != "" && sleepAction.State != contracts.ActionDispatched
	}, func() string { return fmt.Sprintf("%+v", sleepAction) })
	if sleepAction.State != contracts.ActionUncertain || sleepAction.Advice == "" {
		t.Errorf("the cancelled sleep is %+v, want uncertain with advice", sleepAction)
	}
	// The call's log line follows the ledger's record of it.
	d.waitLog(t, `"message":"call"`, `"tool":"sleep"`, `"status":"uncertain"`)
}

// TestCallLargeResult returns a 19 MB result: callers get a bounded
// preview and source.read returns every byte.
func TestCallLargeResult(t *testing.T) {
	t.Parallel()
	d := callsDaemon(t)
	const n = 19_000_000
	c := d.client(t)
	// 19 MB through race-built binaries on a busy machine: minutes, not
	// seconds (bench/ measures the speed).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var raw json.RawMessage
	if err := c.Call(ctx, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "big", Arguments: json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, n))}, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) > 100_000 {
		t.Errorf("the call result is %d bytes, want a preview under 100 KB", len(raw))
	}
	var res contracts.CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != contracts.CallCompleted || !res.Truncated || res.OriginalResultSourceID == "" || len(res.Content) == 0 {
		t.Fatalf("big: status %q truncated %v source %q content %d bytes", res.Status, res.Truncated, res.OriginalResultSourceID, len(res.Content))
	}
	text, windows := readSource(t, d, res.OriginalResultSourceID, 1<<20)
	if windows < 2 {
		t.Errorf("read %d characters in %d window(s), want several", len(text), windows)
	}
	var orig toolResult
	if err := json.Unmarshal([]byte(text), &orig); err != nil {
		t.Fatalf("the retained result (%d characters) is not JSON: %v", len(text), err)
	}
	if len(orig.Content) != 1 || len(orig.Content[0].Text) != n || strings.Count(orig.Content[0].Text, "x") != n {
		t.Fatalf("the retained result's text is %d characters, want %d x", len(orig.Content[0].Text), n)
	}
	// A window at an odd offset is the same slice of the text.
	nc, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const off, length = 1_000_003, 77
	w := readWindow(t, nc, bufio.NewReader(nc), 1, res.OriginalResultSourceID, off, length)
	if w.Text != text[off:off+length] || w.EOF || w.Total != int64(len(text)) {
		t.Errorf("window at %d: %+v, want %q of %d", off, w, text[off:off+length], len(text))
	}
}
