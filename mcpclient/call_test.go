package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// mustCanon returns the canonical form of a literal the test knows is good.
func mustCanon(t *testing.T, s string) []byte {
	t.Helper()
	b, err := CanonicalArguments(json.RawMessage(s))
	if err != nil {
		t.Fatalf("CanonicalArguments(%s): %v", s, err)
	}
	return b
}

// resultFields decodes the parts of a raw CallToolResult a test checks.
type resultFields struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func decodeResult(t *testing.T, raw json.RawMessage) resultFields {
	t.Helper()
	var r resultFields
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

// stderrShows waits until the server's stderr tail contains want: the
// fixture writes it from its handler, and nothing else signals it.
func (h *harness) stderrShows(id, want string) {
	h.t.Helper()
	h.waitStatus(id, "stderr containing "+want, func(st contracts.ServerStatus) bool {
		return strings.Contains(st.StderrTail, want)
	})
}

func TestCallEcho(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
	args := mustCanon(t, `{"text":"hi <b>&</b> é"}`)
	out, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "echo", Arguments: args})
	if err != nil {
		t.Fatalf("Call echo: %v", err)
	}
	if out.IsError || out.OutputSchemaError != "" {
		t.Errorf("outcome isError %v outputSchemaError %q, want a clean result", out.IsError, out.OutputSchemaError)
	}
	r := decodeResult(t, out.Result)
	var sc struct{ Text string }
	if err := json.Unmarshal(r.StructuredContent, &sc); err != nil || sc.Text != "hi <b>&</b> é" {
		t.Errorf("structuredContent %s (%v), want the text echoed", r.StructuredContent, err)
	}
	if len(r.Content) != 1 || r.Content[0].Text != "hi <b>&</b> é" {
		t.Errorf("content %+v, want the text echoed", r.Content)
	}
}

// TestCallRefusedBeforeSending checks that every refusal happens before
// anything reaches the server: the fixture's count tool reports how many
// tools/call requests the process received, and logs each nonce.
func TestCallRefusedBeforeSending(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	logDir, err := os.MkdirTemp("", "pkcall")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(logDir) })
	callLog := filepath.Join(logDir, "calls.log")
	cfg := h.stdio("fx", "--call-log", callLog)
	selected := []string{"count", "echo"}
	cfg.Tools = &selected
	h.sup.Apply([]contracts.ServerSettings{cfg})

	tests := []struct {
		name   string
		tool   string
		args   []byte
		class  error
		reason string
		inMsg  string
	}{
		{"wrong type", "count", mustCanon(t, `{"nonce":5}`), contracts.ErrInvalidArgument, "arguments_invalid", "/nonce"},
		{"missing required", "echo", mustCanon(t, `{}`), contracts.ErrInvalidArgument, "arguments_invalid", "text"},
		{"not canonical", "count", []byte(`{ "nonce": "x" }`), contracts.ErrInvalidArgument, "arguments_not_canonical", ""},
		{"ambiguous keys", "count", []byte(`{"nonce":"a","Nonce":"b"}`), contracts.ErrInvalidArgument, "ambiguous_keys", ""},
		{"not an object", "count", []byte(`[1]`), contracts.ErrInvalidArgument, "arguments_not_object", ""},
		{"unknown tool", "cout", mustCanon(t, `{}`), contracts.ErrNotFound, "unknown_tool", ""},
		{"not selected", "add", mustCanon(t, `{"a":1,"b":2}`), contracts.ErrPermissionDenied, "tool_not_selected", ""},
	}
	for _, tt := range tests {
		// Every call is checked: nothing a caller says skips the checks.
		_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: tt.tool, Arguments: tt.args})
		if !errors.Is(err, tt.class) || reasonOf(err) != tt.reason || !strings.Contains(err.Error(), tt.inMsg) {
			t.Errorf("%s: Call = %v (reason %q), want %v with reason %q mentioning %q", tt.name, err, reasonOf(err), tt.class, tt.reason, tt.inMsg)
		}
	}
	if _, err := h.sup.Call(ctx, CallRequest{Server: "nope", Tool: "echo"}); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("unknown server: %v, want ErrNotFound", err)
	}
	_, err = h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "cout", Arguments: mustCanon(t, `{}`)})
	if we := contracts.ToError(err); we.Data == nil || !strings.Contains(we.Data.Hint, `"count"`) {
		t.Errorf("unknown tool: %+v, want a hint naming \"count\"", we)
	}
	if b, err := os.ReadFile(callLog); err == nil && len(b) > 0 {
		t.Errorf("call log after refused calls: %q, want empty", b)
	}

	out, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: mustCanon(t, `{"nonce":"n1"}`)})
	if err != nil {
		t.Fatalf("valid count: %v", err)
	}
	var sc struct {
		Calls int
		Nonce string
	}
	if err := json.Unmarshal(decodeResult(t, out.Result).StructuredContent, &sc); err != nil || sc.Calls != 1 || sc.Nonce != "n1" {
		t.Errorf("count says %+v (%v): want calls=1 (no refused call reached the server), nonce n1", sc, err)
	}
	if b, err := os.ReadFile(callLog); err != nil || string(b) != "n1\n" {
		t.Errorf("call log %q, %v; want exactly the valid call's nonce", b, err)
	}
	// Absent arguments are {}: count's nonce is optional.
	if _, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count"}); err != nil {
		t.Errorf("count without arguments: %v", err)
	}
}

func TestCallOutputSchema(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--bad-output")})
	out, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "bad-output", Arguments: mustCanon(t, `{}`)})
	if err != nil {
		t.Fatalf("Call bad-output: %v", err)
	}
	if !strings.Contains(out.OutputSchemaError, "/n") || !strings.Contains(out.OutputSchemaError, "want integer") {
		t.Errorf("OutputSchemaError %q, want the mismatch at /n reported", out.OutputSchemaError)
	}
	if strings.Contains(out.OutputSchemaError, "not a number") {
		t.Errorf("OutputSchemaError %q echoes the value", out.OutputSchemaError)
	}
	// The result is kept whole: the mismatch is reported, not hidden.
	r := decodeResult(t, out.Result)
	if string(r.StructuredContent) != `{"n":"not a number"}` || out.IsError || r.IsError {
		t.Errorf("result %s isError %v, want the server's structuredContent untouched", out.Result, out.IsError)
	}

	// A matching result reports nothing (echo has an outputSchema).
	out, err = h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "echo", Arguments: mustCanon(t, `{"text":"x"}`)})
	if err != nil || out.OutputSchemaError != "" {
		t.Errorf("echo: %+v, %v; want no output schema error", out, err)
	}
}

func TestCallOutcomeChecks(t *testing.T) {
	withSchema := contracts.CatalogTool{OutputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)}
	noSchema := contracts.CatalogTool{}
	tests := []struct {
		name    string
		tool    contracts.CatalogTool
		result  string
		isError bool
		problem string // substring of OutputSchemaError; "" means none
		reason  string // error reason; "" means no error
	}{
		{"match", withSchema, `{"content":[],"structuredContent":{"n":1}}`, false, "", ""},
		{"mismatch", withSchema, `{"content":[],"structuredContent":{}}`, false, "missing property", ""},
		{"missing structuredContent", withSchema, `{"content":[]}`, false, "no structuredContent", ""},
		{"null structuredContent", withSchema, `{"content":[],"structuredContent":null}`, false, "no structuredContent", ""},
		{"error results are not checked", withSchema, `{"content":[],"isError":true}`, true, "", ""},
		{"no schema", noSchema, `{"content":[],"structuredContent":{"anything":1}}`, false, "", ""},
		{"uncompilable schema reported", contracts.CatalogTool{OutputSchema: json.RawMessage(`{"type":5}`)}, `{"structuredContent":{}}`, false, "not checked", ""},
		{"not an object", noSchema, `[]`, false, "", "invalid_result"},
		{"bad isError", noSchema, `{"isError":"yes"}`, false, "", "invalid_result"},
	}
	s := &Supervisor{schemas: NewSchemaCache(0)}
	for _, tt := range tests {
		out, err := s.outcome(tt.tool, json.RawMessage(tt.result))
		if tt.reason != "" {
			if !errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != tt.reason {
				t.Errorf("%s: outcome = %+v, %v; want reason %q", tt.name, out, err, tt.reason)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(out.Result) != tt.result || out.IsError != tt.isError ||
			(tt.problem == "") != (out.OutputSchemaError == "") || !strings.Contains(out.OutputSchemaError, tt.problem) {
			t.Errorf("%s: outcome %+v, want isError %v and problem containing %q", tt.name, out, tt.isError, tt.problem)
		}
	}
}

// progressLog collects progress callbacks; first is closed at the first.
type progressLog struct {
	mu    sync.Mutex
	got   []contracts.ProgressParams
	first chan struct{}
}

func newProgressLog() *progressLog { return &progressLog{first: make(chan struct{})} }

func (l *progressLog) add(p contracts.ProgressParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, p)
	if len(l.got) == 1 {
		close(l.first)
	}
}

func (l *progressLog) all() []contracts.ProgressParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]contracts.ProgressParams(nil), l.got...)
}

func TestCallProgress(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	modern := h.stdio("modern")
	modern.Protocol = &contracts.Protocol{Pin: "2026-07-28"}
	web := contracts.ServerSettings{ID: "web", Transport: contracts.TransportHTTP, URL: httpFixture(t, h.bin),
		AllowPrivateNetwork: true, TimeoutMs: 10_000}
	h.sup.Apply([]contracts.ServerSettings{h.stdio("legacy"), modern, web})
	for _, id := range []string{"legacy", "modern", "web"} {
		log := newProgressLog()
		out, err := h.sup.Call(ctx, CallRequest{Server: id, Tool: "sleep", Arguments: mustCanon(t, `{"ms":600}`), Progress: log.add})
		if err != nil || out.IsError {
			t.Fatalf("%s: Call sleep: %+v, %v", id, out, err)
		}
		got := log.all()
		if len(got) < 3 {
			t.Fatalf("%s: %d progress callbacks, want at least 3 (one per 100ms of 600ms)", id, len(got))
		}
		for i, p := range got {
			if p.Server != id || p.Tool != "sleep" || p.Total != 600 || p.Progress <= 0 || p.Progress > 600 ||
				!strings.HasPrefix(p.Message, "slept ") || (i > 0 && p.Progress < got[i-1].Progress) {
				t.Errorf("%s: progress %d = %+v", id, i, p)
			}
		}
	}
	// Only the calls' own routes are left behind: none.
	for _, id := range []string{"legacy", "modern", "web"} {
		sess, _ := h.sup.session(id)
		sess.mu.Lock()
		c := sess.conn
		sess.mu.Unlock()
		c.progress.mu.Lock()
		n := len(c.progress.routes)
		c.progress.mu.Unlock()
		if n != 0 {
			t.Errorf("%s: %d progress routes left after the calls", id, n)
		}
	}
}

// TestRequestErrorEndedContext: a request whose context ended is
// classified by why it ended, whatever error the transport gave for it
// (mcp-go's HTTP client answers some cancelled requests with "unexpected
// nil response"): cancelled, or past its deadline, never "connection
// lost".
func TestRequestErrorEndedContext(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
	if _, err := h.sup.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	sess, _ := h.sup.session("fx")
	sess.mu.Lock()
	c := sess.conn
	sess.mu.Unlock()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	transportErr := errors.New("unexpected nil response")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"live context", ctx, contracts.ReasonConnectionLostOutcomeUnknown},
		{"cancelled", cancelled, contracts.ReasonCanceledOutcomeUnknown},
		{"past its deadline", expired, contracts.ReasonTimeoutOutcomeUnknown},
	} {
		err := h.sup.requestError(tc.ctx, sess, c, "tools/call sleep", transportErr)
		if !errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != tc.want {
			t.Errorf("%s: %v (reason %q), want %s", tc.name, err, reasonOf(err), tc.want)
		}
	}
}

func TestCallCancel(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	web := contracts.ServerSettings{ID: "web", Transport: contracts.TransportHTTP, URL: httpFixture(t, h.bin),
		AllowPrivateNetwork: true, TimeoutMs: 10_000}
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx"), web})
	for _, id := range []string{"fx", "web"} {
		callCtx, cancel := context.WithCancel(ctx)
		log := newProgressLog()
		go func() {
			// The first progress proves the call is running on the server.
			<-log.first
			cancel()
		}()
		_, err := h.sup.Call(callCtx, CallRequest{Server: id, Tool: "sleep", Arguments: mustCanon(t, `{"ms":10000}`), Progress: log.add})
		cancel()
		if !errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != "canceled_outcome_unknown" {
			t.Fatalf("%s: canceled Call: %v (reason %q), want canceled_outcome_unknown", id, err, reasonOf(err))
		}
		if id == "fx" {
			// notifications/cancelled reached the handler (HTTP has no such
			// notification; the fixture's stderr is not visible there).
			h.stderrShows("fx", "sleep cancelled")
		}
		// The connection is still good.
		if _, err := h.sup.Call(ctx, CallRequest{Server: id, Tool: "echo", Arguments: mustCanon(t, `{"text":"after"}`)}); err != nil {
			t.Errorf("%s: echo after a canceled call: %v", id, err)
		}
	}

	// A ctx that ended before the call is not sent at all.
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	if _, err := h.sup.Call(done, CallRequest{Server: "fx", Tool: "echo", Arguments: mustCanon(t, `{"text":"x"}`)}); errors.Is(err, contracts.ErrOutcomeUnknown) || err == nil {
		t.Errorf("Call with an ended ctx: %v, want an error that is not outcome-unknown", err)
	}
}

func TestCallTimeouts(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	quiet := h.stdio("quiet", "--no-progress")
	quiet.TimeoutMs = 1000
	chatty := h.stdio("chatty")
	chatty.TimeoutMs = 1000
	h.sup.Apply([]contracts.ServerSettings{quiet, chatty})

	// No progress: timeoutMs ends the call, and the server is told.
	_, err := h.sup.Call(ctx, CallRequest{Server: "quiet", Tool: "sleep", Arguments: mustCanon(t, `{"ms":3000}`)})
	if !errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != "timeout_outcome_unknown" || !strings.Contains(err.Error(), "1000 ms") {
		t.Fatalf("quiet sleep 3000 under timeoutMs 1000: %v (reason %q), want timeout_outcome_unknown", err, reasonOf(err))
	}
	h.stderrShows("quiet", "sleep cancelled")

	// Progress every 100ms keeps a longer call alive.
	out, err := h.sup.Call(ctx, CallRequest{Server: "chatty", Tool: "sleep", Arguments: mustCanon(t, `{"ms":1500}`)})
	if err != nil || out.IsError {
		t.Fatalf("chatty sleep 1500 under timeoutMs 1000: %+v, %v; want completed (progress extends)", out, err)
	}

	// ...but never past the hard maximum.
	_, err = h.sup.Call(ctx, CallRequest{Server: "chatty", Tool: "sleep", Arguments: mustCanon(t, `{"ms":5000}`), HardMax: 1500 * time.Millisecond})
	if !errors.Is(err, contracts.ErrOutcomeUnknown) || reasonOf(err) != "timeout_outcome_unknown" || !strings.Contains(err.Error(), "hard limit") {
		t.Fatalf("chatty sleep 5000 with HardMax 1.5s: %v (reason %q), want a hard-limit timeout", err, reasonOf(err))
	}
	h.stderrShows("chatty", "sleep cancelled")
}

func TestToolLookups(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--long-names")})
	tl, err := h.sup.Tool(ctx, "fx", "echo")
	if err != nil || tl.OriginalName != "echo" || tl.Name != "mcp_fx_echo" || len(tl.OutputSchema) == 0 {
		t.Fatalf("Tool(fx, echo) = %+v, %v", tl, err)
	}
	cat, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	// Every model-facing name, hashed ones included, finds its tool.
	for _, want := range cat.Tools {
		server, got, err := h.sup.ToolByModelName(ctx, want.Name)
		if err != nil || server != "fx" || got.OriginalName != want.OriginalName {
			t.Errorf("ToolByModelName(%q) = %q, %q, %v; want fx, %q", want.Name, server, got.OriginalName, err, want.OriginalName)
		}
	}
	for _, name := range []string{"mcp_fx_nope", "echo", "mcp_", "mcp_fx", "mcp_other_echo", "mcp_fx_ECHO"} {
		if _, _, err := h.sup.ToolByModelName(ctx, name); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("ToolByModelName(%q) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := h.sup.Tool(ctx, "fx", "ECHO"); reasonOf(err) != "unknown_tool" {
		t.Errorf("Tool(fx, ECHO) = %v, want unknown_tool (names are exact)", err)
	}
}

func TestCloseNames(t *testing.T) {
	names := []string{"echo", "count", "crash", "env", "read_file", "write_file", "list_directory"}
	tests := []struct {
		want string
		top  string // expected first suggestion; "" means none
	}{
		{"ECHO", "echo"},
		{"ehco", "echo"},
		{"cout", "count"},
		{"file", "read_file"},
		{"list_dir", "list_directory"},
		{"zzzzzz", ""},
	}
	for _, tt := range tests {
		got := closeNames(tt.want, names, 5)
		if (tt.top == "" && len(got) != 0) || (tt.top != "" && (len(got) == 0 || got[0] != tt.top)) {
			t.Errorf("closeNames(%q) = %q, want first %q", tt.want, got, tt.top)
		}
	}
}

// TestCallParamsOnTheWire sends tools/call params through mcp-go's real
// stdio transport and reads the line it writes: the canonical arguments
// appear in it byte for byte, including the characters encoding/json
// escapes, numbers beyond float64 and key order.
func TestCallParamsOnTheWire(t *testing.T) {
	args := mustCanon(t, `{"z":"<tag> & \u2028","a":12345678901234567890,"m":1e400,"é":{"k":[1,{"y":2,"x":1}]}}`)
	params := toolCallParams("tool<&>", args, "pikod-progress-7", false)

	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	tr := transport.NewIO(clientIn, clientOut, nil)
	cl := client.NewClient(tr)
	ctx := ctxT(t)
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte, 1)
	go func() {
		r := bufio.NewReader(serverIn)
		line, err := r.ReadBytes('\n')
		if err != nil {
			close(lines)
			return
		}
		lines <- line
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &req)
		_, _ = serverOut.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[]}}` + "\n"))
	}()
	raw := &rawRequester{client: cl}
	if _, err := raw.request(ctx, string(mcp.MethodToolsCall), params); err != nil {
		t.Fatalf("request: %v", err)
	}
	line := <-lines
	if !bytes.Contains(line, []byte(`"params":`+string(params))) {
		t.Errorf("wire line\n%s\ndoes not carry the params verbatim\n%s", line, params)
	}
	if !bytes.Contains(line, []byte(`"arguments":`+string(args)+`,`)) {
		t.Errorf("wire line\n%s\ndoes not carry the arguments verbatim\n%s", line, args)
	}
	_ = cl.Close()
	_ = serverOut.Close()
	_ = serverIn.Close()

	// The modern protocol merges its _meta into the params: the arguments
	// stay verbatim and the progress token survives.
	merged, err := raw.withMeta("2026-07-28", params)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(merged, []byte(`"arguments":`+string(args)+`,`)) {
		t.Errorf("withMeta changed the arguments:\n%s\nwant\n%s", merged, args)
	}
	var m struct {
		Name string                     `json:"name"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(merged, &m); err != nil || m.Name != "tool<&>" || string(m.Meta["progressToken"]) != `"pikod-progress-7"` {
		t.Errorf("withMeta params %s: name %q meta %v (%v)", merged, m.Name, m.Meta, err)
	}
	if _, ok := m.Meta[mcp.MetaKeyProtocolVersion]; !ok {
		t.Errorf("withMeta params %s lack the protocol version", merged)
	}
}

func TestProgressRoutesNeverBlock(t *testing.T) {
	var r progressRoutes
	sup := NewSupervisor(Options{Redact: func(s string) string { return strings.ReplaceAll(s, "secret-value", "[REDACTED]") }})
	defer sup.Close()
	ch := r.add("t1")
	n := mcp.NotificationParams{AdditionalFields: map[string]any{"progressToken": "t1", "progress": 1.0, "total": 2.0, "message": "m\x1b[31m " + strings.Repeat("x", 476) + "secret-value"}}
	// Far more than the buffer holds, with nobody reading: route returns.
	for range 10 * cap(ch) {
		r.route(n, sup.clean)
	}
	if len(ch) != cap(ch) {
		t.Errorf("buffered %d of %d", len(ch), cap(ch))
	}
	u := <-ch
	if u.progress != 1 || u.total != 2 || strings.ContainsRune(u.message, 0x1b) {
		t.Errorf("update %+v, want progress 1 total 2 and a cleaned message", u)
	}
	// Redacted before the cut at 500 characters: no piece of the value.
	if strings.Contains(u.message, "secret") {
		t.Errorf("message %q holds a piece of the secret", u.message)
	}
	// Other tokens, numbers as tokens and removed routes go nowhere.
	r.route(mcp.NotificationParams{AdditionalFields: map[string]any{"progressToken": "t2", "progress": 1.0}}, sup.clean)
	r.route(mcp.NotificationParams{AdditionalFields: map[string]any{"progressToken": 1.0, "progress": 1.0}}, sup.clean)
	r.remove("t1")
	for len(ch) > 0 {
		<-ch
	}
	r.route(n, sup.clean)
	if len(ch) != 0 {
		t.Errorf("a removed route still receives")
	}
}

func TestForwarderCoalesces(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []float64
	f := startForwarder(func(p contracts.ProgressParams) {
		<-release
		mu.Lock()
		seen = append(seen, p.Progress)
		mu.Unlock()
	}, "s", "t")
	// The callback is stuck on the first update; the rest coalesce into the
	// latest, and offering never blocks.
	for i := 1; i <= 100; i++ {
		f.offer(progressUpdate{progress: float64(i)})
	}
	close(release)
	f.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || len(seen) > 3 || seen[len(seen)-1] != 100 {
		t.Errorf("callbacks saw %v, want a few ending with the latest (100)", seen)
	}
}

// TestCallBound: an approved call goes to the connection and settings it
// was approved for, or nowhere; it never connects by itself.
func TestCallBound(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	cfg := h.stdio("fx")
	h.sup.Apply([]contracts.ServerSettings{cfg})
	if _, err := h.sup.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	gen := h.sup.Generation("fx")
	args := mustCanon(t, `{"nonce":"b"}`)
	good := Binding{ConnectionGeneration: gen, SettingsDigest: cfg.ApprovalDigest("count")}
	if _, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: args, Bound: &good}); err != nil {
		t.Fatalf("bound call on its own connection: %v", err)
	}
	for name, b := range map[string]Binding{
		"other generation": {ConnectionGeneration: gen + 1, SettingsDigest: cfg.ApprovalDigest("count")},
		"other settings":   {ConnectionGeneration: gen, SettingsDigest: "0000"},
	} {
		_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: args, Bound: &b})
		if reasonOf(err) != "connection_changed" || !errors.Is(err, contracts.ErrFailedPrecondition) {
			t.Errorf("%s: Call = %v, want connection_changed", name, err)
		}
	}
	// A live policy change keeps the binding while count stays selected
	// and moves it once count is deselected.
	live := cfg
	live.Tools, live.ReadOnlyTools = &[]string{"count", "echo"}, []string{"echo"}
	if ap := h.sup.Apply([]contracts.ServerSettings{live}); len(ap.Live) != 1 {
		t.Fatalf("a grant change was not applied live: %+v", ap)
	}
	good.SettingsDigest = live.ApprovalDigest("count")
	if good.SettingsDigest != cfg.ApprovalDigest("count") {
		t.Errorf("selecting count explicitly and granting echo moved count's approval digest")
	}
	if _, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: args, Bound: &good}); err != nil {
		t.Fatalf("bound call after a live grant of another tool: %v", err)
	}
	gone := live
	gone.Tools = &[]string{"echo"}
	h.sup.Apply([]contracts.ServerSettings{gone})
	if _, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: args, Bound: &good}); reasonOf(err) != "connection_changed" {
		t.Errorf("bound call of a deselected tool: %v, want connection_changed", err)
	}
	h.sup.Apply([]contracts.ServerSettings{live})
	if _, err := h.sup.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: args, Bound: &good})
	if reasonOf(err) != "connection_changed" {
		t.Errorf("bound call after disconnect = %v, want connection_changed", err)
	}
	if st := h.status("fx"); st.State != contracts.StateIdle {
		t.Errorf("a bound call connected the server: state %q", st.State)
	}
	h.sup.Close()
}
