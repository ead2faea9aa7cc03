package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Protocol-era suites: negotiation that a careless server cannot fool,
// what a 2026-07-28 request carries, input_required, needs_auth,
// subscriptions and cancellation on every transport. What reached the
// server is read from the fixture's request and header logs.

// receivedMessage is one line of the fixture's --request-log.
type receivedMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// readRequestLog reads a --request-log file.
func readRequestLog(t testing.TB, path string) []receivedMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the request log: %v", err)
	}
	var out []receivedMessage
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m receivedMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("request log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func receivedMethods(log []receivedMessage) []string {
	out := make([]string, len(log))
	for i, m := range log {
		out[i] = m.Method
	}
	return out
}

// TestAutoNotFooledByEmptyResults: a legacy server that answers every
// method it does not know with {} is taken for what it is under auto: the
// connection falls back to initialize on the same process (stdio) or
// endpoint (http) and shows the server's real tools.
func TestAutoNotFooledByEmptyResults(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	logs := map[string]string{"stdio": filepath.Join(t.TempDir(), "stdio.log"), "http": filepath.Join(t.TempDir(), "http.log")}
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "legacy", "--empty-unknown", "--request-log", logs["http"])
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("stdio", "--protocol", "legacy", "--empty-unknown", "--request-log", logs["stdio"]).with("protocol", "auto"),
		// http servers default to auto.
		remoteFixture("http", "http", web.url)))
	for _, id := range []string{"stdio", "http"} {
		st := connectServer(t, d, id)
		if st.ProtocolVersion != "2025-11-25" || st.ToolCount != fixedTools+3 || !st.CatalogComplete ||
			st.ServerInfo == nil || st.ServerInfo.Name != "fixture" {
			t.Errorf("%s: protocol %q, %d tools (complete %v), serverInfo %+v; want 2025-11-25 with %d tools from fixture",
				id, st.ProtocolVersion, st.ToolCount, st.CatalogComplete, st.ServerInfo, fixedTools+3)
		}
		if want := "fallback after discover: server/discover answered with an invalid result (no supportedVersions)"; st.Negotiated != want {
			t.Errorf("%s: negotiated %q, want %q", id, st.Negotiated, want)
		}
		if ms := receivedMethods(readRequestLog(t, logs[id])); len(ms) < 2 || ms[0] != "server/discover" || ms[1] != "initialize" {
			t.Errorf("%s: the server received %q, want server/discover, then initialize", id, ms)
		}
		out, _, code := runCtl(t, d, "", "mcp", "status", id)
		if code != 0 || !strings.Contains(out, "protocol:   2025-11-25 (fallback after discover: ") {
			t.Errorf("%s: pikoctl mcp status (exit %d) does not say how the protocol was chosen:\n%s", id, code, out)
		}
	}
	// The probe and the handshake went to one process.
	if started := d.logLines(t, `"server":"stdio"`, `"message":"server process started"`); len(started) != 1 {
		t.Errorf("stdio: %d server processes started, want 1:\n%s", len(started), strings.Join(started, "\n"))
	}
}

// TestOfficialGoSDKServer: the official Go SDK's default HTTP handler
// answers server/discover listing only legacy versions; auto ends on the
// newest of them with the complete catalog, and calls work.
func TestOfficialGoSDKServer(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	logPath := filepath.Join(t.TempDir(), "requests.log")
	srvr := startListening(t, &fixtureServer{}, gosdkBin, "--request-log", logPath)
	configureMCP(t, d, mcpSettings(t, remoteFixture("gosdk", "http", srvr.url).with("readOnlyTools", []string{"greet"})))
	st := connectServer(t, d, "gosdk")
	if st.ProtocolVersion != "2025-11-25" || !strings.HasPrefix(st.Negotiated, "fallback after discover: server/discover lists only legacy versions (2025-11-25") {
		t.Errorf("protocol %q negotiated %q, want 2025-11-25 after a discover listing only legacy versions", st.ProtocolVersion, st.Negotiated)
	}
	cat := catalogOf(t, d, "gosdk")
	names, _ := toolNames(cat)
	if !cat.Complete || !slices.Equal(names, []string{"mcp_gosdk_add", "mcp_gosdk_echo", "mcp_gosdk_greet"}) || len(cat.Resources) != 1 {
		t.Errorf("catalog complete %v tools %q resources %d, want complete with add, echo, greet and one resource", cat.Complete, names, len(cat.Resources))
	}
	res := callTool(t, d, "gosdk", "greet", `{"name":"pikod"}`)
	if res.Status != contracts.CallCompleted || !strings.Contains(string(res.Content), "hello pikod") {
		t.Errorf("greet: %+v", res)
	}
	log := readRequestLog(t, logPath)
	if ms := receivedMethods(log); len(ms) < 2 || ms[0] != "server/discover" || ms[1] != "initialize" {
		t.Fatalf("the server received %q, want server/discover, then initialize", ms)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(log[1].Params, &init); err != nil || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize asked for %q (%v), want the newest version the discover listed", init.ProtocolVersion, err)
	}
}

// TestModernPin: a 2026-07-28 pin never sends initialize; an "Unsupported
// protocol version" answer is retried once with a listed version pikod
// speaks, and a server that offers none fails naming what it offered.
func TestModernPin(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	pin := map[string]string{"pin": modernVersion}
	dir := t.TempDir()
	logOf := func(id string) string { return filepath.Join(dir, id+".log") }
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "modern", "--request-log", logOf("http"))
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("stdio", "--protocol", "modern", "--request-log", logOf("stdio")).with("protocol", pin),
		remoteFixture("http", "http", web.url).with("protocol", pin),
		stdioFixture("retry", "--protocol", "modern", "--refuse-version-once", "2099-01-01,"+modernVersion,
			"--request-log", logOf("retry")).with("protocol", pin),
		stdioFixture("refused", "--protocol", "modern", "--refuse-version-once", "2099-01-01",
			"--request-log", logOf("refused")).with("protocol", pin),
		stdioFixture("legacy", "--protocol", "legacy", "--request-log", logOf("legacy")).with("protocol", pin)))
	for _, id := range []string{"stdio", "http", "retry"} {
		st := connectServer(t, d, id)
		if st.ProtocolVersion != modernVersion || st.Negotiated != "pin" {
			t.Errorf("%s: protocol %q negotiated %q, want %s by pin", id, st.ProtocolVersion, st.Negotiated, modernVersion)
		}
	}
	if ms := receivedMethods(readRequestLog(t, logOf("retry"))); len(ms) < 2 || ms[0] != "server/discover" || ms[1] != "server/discover" {
		t.Errorf("retry: the server received %q, want server/discover twice", ms)
	}
	for id, want := range map[string]string{"refused": "it offers 2099-01-01", "legacy": "server/discover is not implemented"} {
		we := connectFails(t, d, id)
		if we.Reason() != "protocol_mismatch" || !strings.Contains(we.Message, want) {
			t.Errorf("%s: connect error %q (%s), want protocol_mismatch saying %q", id, we.Message, we.Reason(), want)
		}
	}
	for _, id := range []string{"stdio", "http", "retry", "refused", "legacy"} {
		if ms := receivedMethods(readRequestLog(t, logOf(id))); slices.Contains(ms, "initialize") {
			t.Errorf("%s: a 2026-07-28 pin sent initialize: %q", id, ms)
		}
	}
}

// headerBlocks reads the fixture's --header-log: one map of header name to
// values per request.
func headerBlocks(t testing.TB, path string) []map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the header log: %v", err)
	}
	var out []map[string][]string
	for block := range strings.SplitSeq(string(b), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 {
			continue
		}
		h := map[string][]string{"": {lines[0]}}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ": ")
			h[k] = append(h[k], v)
		}
		out = append(out, h)
	}
	return out
}

// paramHeadersOf returns the Mcp-Param-* headers of a block.
func paramHeadersOf(h map[string][]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			out[k] = strings.Join(v, "|")
		}
	}
	return out
}

// TestModernRequestHeaders: on a 2026-07-28 Streamable HTTP connection a
// tools/call carries MCP-Protocol-Version, Mcp-Method, Mcp-Name and the
// Mcp-Param-* headers its tool's x-mcp-header annotations declare, encoded
// as the revision says; tools with invalid annotations are left out of the
// catalog with the reason, and cannot be called.
func TestModernRequestHeaders(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	headerLog := filepath.Join(t.TempDir(), "headers.log")
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "modern", "--header-tools", "--header-log", headerLog)
	configureMCP(t, d, mcpSettings(t, remoteFixture("web", "http", web.url).with(
		"readOnlyTools", []string{"headed", "free-sibling"})))
	connectServer(t, d, "web")

	cat := catalogOf(t, d, "web")
	var excluded []string
	for _, e := range cat.Excluded {
		excluded = append(excluded, e.Name)
		if !strings.HasPrefix(e.Reason, "invalid x-mcp-header annotations: ") {
			t.Errorf("excluded %s with reason %q", e.Name, e.Reason)
		}
	}
	slices.Sort(excluded)
	if want := []string{"bad-defs", "bad-duplicate", "bad-items", "bad-number", "bad-oneof", "bad-token"}; !slices.Equal(excluded, want) {
		t.Errorf("excluded %q, want %q", excluded, want)
	}
	for _, tool := range cat.Tools {
		if strings.HasPrefix(tool.OriginalName, "bad-") {
			t.Errorf("the catalog offers %s, whose annotations are invalid", tool.OriginalName)
		}
	}
	if !cat.Complete {
		t.Errorf("leaving tools out made the catalog incomplete: %q", cat.Problem)
	}
	if st := serverStatus(t, d, "web"); !slices.ContainsFunc(st.Notes, func(n string) bool {
		return strings.Contains(n, "6 tool(s) left out") && strings.Contains(n, `"bad-items"`)
	}) {
		t.Errorf("status notes %q do not say which tools were left out", st.Notes)
	}
	if we := d.callErr(t, contracts.MethodMCPCall, contracts.CallParams{Server: "web", Tool: "bad-number", Arguments: json.RawMessage(`{"n":1}`)}); we.Reason() != "unknown_tool" {
		t.Errorf("calling an excluded tool: %q (%s), want unknown_tool", we.Message, we.Reason())
	}

	res := callTool(t, d, "web", "headed", `{"region":"eu-west","count":42,"verbose":true,"opts":{"tenant":"  ünï  "},"note":"x"}`)
	if res.Status != contracts.CallCompleted {
		t.Fatalf("headed: %+v (error %+v)", res, res.Error)
	}
	res = callTool(t, d, "web", "headed", `{"note":"only a note"}`)
	if res.Status != contracts.CallCompleted {
		t.Fatalf("headed without header arguments: %+v (error %+v)", res, res.Error)
	}
	res = callTool(t, d, "web", "free-sibling", `{"free":[1],"tenant":"acme"}`)
	if res.Status != contracts.CallCompleted {
		t.Fatalf("free-sibling: %+v (error %+v)", res, res.Error)
	}
	res = callTool(t, d, "web", "headed", `{"count":9007199254740993}`)
	if res.Status != contracts.CallFailed || !res.NotSent || res.Error == nil || res.Error.Reason() != "invalid_header_argument" {
		t.Errorf("an integer no header can carry: %+v (error %+v), want failed with invalid_header_argument, not sent", res, res.Error)
	}

	var calls []map[string][]string
	for _, h := range headerBlocks(t, headerLog) {
		if slices.Contains(h["Mcp-Method"], "tools/call") {
			calls = append(calls, h)
		}
	}
	if len(calls) != 3 {
		t.Fatalf("the server got %d tools/call requests, want 3 (the refused one never left)", len(calls))
	}
	want := []struct {
		name   string
		params map[string]string
	}{
		{"headed", map[string]string{"Mcp-Param-Region": "eu-west", "Mcp-Param-Count": "42", "Mcp-Param-Verbose": "true",
			"Mcp-Param-Tenant": "=?base64?ICDDvG7DryAg?="}},
		{"headed", map[string]string{}},
		{"free-sibling", map[string]string{"Mcp-Param-Tenant": "acme"}},
	}
	for i, h := range calls {
		if got := paramHeadersOf(h); !sameStrings(got, want[i].params) {
			t.Errorf("call %d: Mcp-Param headers %v, want exactly %v", i, got, want[i].params)
		}
		if !slices.Equal(h["Mcp-Name"], []string{want[i].name}) || !slices.Equal(h["Mcp-Protocol-Version"], []string{modernVersion}) {
			t.Errorf("call %d: Mcp-Name %q, Mcp-Protocol-Version %q", i, h["Mcp-Name"], h["Mcp-Protocol-Version"])
		}
		if _, ok := h["Mcp-Session-Id"]; ok {
			t.Errorf("call %d carries Mcp-Session-Id, which 2026-07-28 removed", i)
		}
	}
	for _, h := range headerBlocks(t, headerLog) {
		if h[""][0] == "POST /mcp" && (len(h["Mcp-Method"]) != 1 || len(h["Mcp-Protocol-Version"]) != 1) {
			t.Errorf("a POST without Mcp-Method or MCP-Protocol-Version: %v", h)
		}
	}
}

func sameStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestNeedsAuth: 401 or 403 on the first request leaves the server
// needs_auth, over Streamable HTTP and SSE.
func TestNeedsAuth(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	u401 := startFixtureServer(t, "http", "127.0.0.1:0", "--unauthorized", "401")
	u403 := startFixtureServer(t, "http", "127.0.0.1:0", "--unauthorized", "403")
	sse := startFixtureServer(t, "sse", "127.0.0.1:0", "--unauthorized", "401")
	configureMCP(t, d, mcpSettings(t,
		remoteFixture("h401", "http", u401.url), remoteFixture("h403", "http", u403.url),
		remoteFixture("legacy401", "http", u401.url).with("protocol", "legacy"), remoteFixture("sse401", "sse", sse.url)))
	for id, status := range map[string]string{"h401": "401", "h403": "403", "legacy401": "401", "sse401": "401"} {
		we := connectFails(t, d, id)
		if we.Reason() != "needs_auth" || !strings.Contains(we.Message, "HTTP "+status) {
			t.Errorf("%s: connect error %q (%s), want needs_auth naming HTTP %s", id, we.Message, we.Reason(), status)
		}
		if st := serverStatus(t, d, id); st.State != contracts.StateNeedsAuth {
			t.Errorf("%s: state %q, want needs_auth", id, st.State)
		}
	}
}

// TestSubscribeCLI: pikoctl mcp subscribe and unsubscribe, on a legacy and
// a 2026-07-28 connection; the refusals.
func TestSubscribeCLI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "modern", "--subscribe")
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("legacy", "--subscribe"),
		remoteFixture("modern", "http", web.url),
		stdioFixture("plain"),
		stdioFixture("off", "--subscribe").with("resources", false)))
	const uri = "fixture://resources/0002"
	for _, id := range []string{"legacy", "modern"} {
		out, errOut, code := runCtl(t, d, "", "mcp", "subscribe", id, uri)
		if code != 0 || out != "subscribed "+id+" to "+uri+"\n" {
			t.Errorf("%s: subscribe exit %d: %q %q", id, code, out, errOut)
		}
		if st := serverStatus(t, d, id); !slices.Equal(st.Subscriptions, []string{uri}) {
			t.Errorf("%s: status subscriptions %q", id, st.Subscriptions)
		}
		out, _, code = runCtl(t, d, "", "--json", "mcp", "subscribe", id, uri)
		var res contracts.ResourceSubscribeResult
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Subscribed || res.Changed {
			t.Errorf("%s: subscribing again: exit %d %q, want subscribed and unchanged", id, code, out)
		}
		out, _, code = runCtl(t, d, "", "mcp", "unsubscribe", id, uri)
		if code != 0 || out != "unsubscribed "+id+" from "+uri+"\n" {
			t.Errorf("%s: unsubscribe exit %d: %q", id, code, out)
		}
	}
	for id, reason := range map[string]string{"plain": "subscribe_unsupported", "off": "resources_disabled"} {
		we := d.callErr(t, contracts.MethodMCPResource, contracts.ResourceSubscribeParams{Server: id, Op: "subscribe", URI: uri})
		if we.Reason() != reason {
			t.Errorf("%s: %q (%s), want %s", id, we.Message, we.Reason(), reason)
		}
		if _, errOut, code := runCtl(t, d, "", "mcp", "subscribe", id, uri); code == 0 || errOut == "" {
			t.Errorf("%s: pikoctl subscribe exit %d with no error", id, code)
		}
	}
}

// TestModernListChanged: on a 2026-07-28 connection list_changed arrives
// on the subscription stream and the catalog is discovered again.
func TestModernListChanged(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	logPath := filepath.Join(t.TempDir(), "requests.log")
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "modern", "--request-log", logPath)
	configureMCP(t, d, mcpSettings(t, remoteFixture("web", "http", web.url).with("readOnlyTools", []string{"notify-list-changed"})))
	connectServer(t, d, "web")
	if !slices.Contains(receivedMethods(readRequestLog(t, logPath)), "subscriptions/listen") {
		t.Fatalf("no subscriptions/listen was opened: %q", receivedMethods(readRequestLog(t, logPath)))
	}
	if res := callTool(t, d, "web", "notify-list-changed", `{}`); res.Status != contracts.CallCompleted {
		t.Fatalf("notify-list-changed: %+v", res)
	}
	poll(t, "late-tool in the catalog", func() bool {
		names, _ := toolNames(catalogOf(t, d, "web"))
		return slices.Contains(names, "mcp_web_late-tool")
	}, nil)
}

// TestCancelOnEveryTransport: a call that times out is cancelled at the
// server over legacy Streamable HTTP and SSE too (notifications/cancelled,
// recorded by the fixture), and the server stops it.
func TestCancelOnEveryTransport(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := t.TempDir()
	logOf := func(id string) string { return filepath.Join(dir, id+".log") }
	servers := map[string]*fixtureServer{
		"http": startFixtureServer(t, "http", "127.0.0.1:0", "--no-progress", "--request-log", logOf("http")),
		"sse":  startFixtureServer(t, "sse", "127.0.0.1:0", "--no-progress", "--request-log", logOf("sse")),
	}
	configureMCP(t, d, mcpSettings(t,
		remoteFixture("http", "http", servers["http"].url).with("protocol", "legacy", "timeoutMs", 1000, "autonomousTools", []string{"sleep"}, "tools", []string{"sleep"}),
		remoteFixture("sse", "sse", servers["sse"].url).with("timeoutMs", 1000, "autonomousTools", []string{"sleep"}, "tools", []string{"sleep"})))
	var wg sync.WaitGroup
	results := map[string]contracts.CallResult{}
	var mu sync.Mutex
	for id := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res contracts.CallResult
			err := callSocket(d.socket, contracts.MethodMCPCall, contracts.CallParams{Server: id, Tool: "sleep", Arguments: json.RawMessage(`{"ms":20000}`)}, &res)
			if err != nil {
				t.Errorf("%s: call: %v", id, err)
			}
			mu.Lock()
			results[id] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	for id, f := range servers {
		if res := results[id]; res.Status != contracts.CallUncertain {
			t.Errorf("%s: %+v, want uncertain after the timeout", id, res)
		}
		var callID json.RawMessage
		var cancelled bool
		for _, m := range readRequestLog(t, logOf(id)) {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			switch {
			case m.Method == "tools/call":
				callID = m.ID
			case m.Method == "notifications/cancelled" && json.Unmarshal(m.Params, &p) == nil && callID != nil && string(p.RequestID) == string(callID):
				cancelled = true
			}
		}
		if !cancelled {
			t.Errorf("%s: the server received no notifications/cancelled for the call: %q", id, receivedMethods(readRequestLog(t, logOf(id))))
		}
		poll(t, id+" fixture stopping the sleep", func() bool { return strings.Contains(f.stderr.String(), "sleep cancelled after") },
			func() string { return f.stderr.String() })
	}
}
