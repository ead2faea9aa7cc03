//go:build linux

package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// loggedMessage is one line of the fixture's --request-log.
type loggedMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// requestLog reads the fixture's request log.
func requestLog(t *testing.T, path string) []loggedMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the request log: %v", err)
	}
	var out []loggedMessage
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m loggedMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("request log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func methods(log []loggedMessage) []string {
	out := make([]string, len(log))
	for i, m := range log {
		out[i] = m.Method
	}
	return out
}

// waitLog polls the request log until ok accepts it.
func waitRequestLog(t *testing.T, path, what string, ok func([]loggedMessage) bool) []loggedMessage {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		log := requestLog(t, path)
		if ok(log) {
			return log
		}
		if time.Now().After(deadline) {
			t.Fatalf("request log never showed %s: %q", what, methods(log))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remoteFixture runs the fixture over transport (http or sse) and
// returns its URL.
func remoteFixture(t *testing.T, bin, transport string, args ...string) string {
	url, _ := remoteFixtureStderr(t, bin, transport, args...)
	return url
}

// remoteFixtureStderr is remoteFixture that also returns the fixture's
// stderr.
func remoteFixtureStderr(t *testing.T, bin, transport string, args ...string) (string, *testsupport.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--transport", transport, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testsupport.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("fixture stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the fixture's LISTENING line: %v (%q)", err, line)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if !ok {
		t.Fatalf("fixture said %q, want LISTENING URL", line)
	}
	return url, stderr
}

func (h *harness) remote(id, transport, url string) contracts.ServerSettings {
	return contracts.ServerSettings{ID: id, Transport: transport, URL: url, AllowPrivateNetwork: true, TimeoutMs: 10_000}
}

func protocolOf(mode string) *contracts.Protocol {
	switch mode {
	case "":
		return nil
	case contracts.ProtocolAuto, contracts.ProtocolLegacy:
		return &contracts.Protocol{Mode: mode}
	}
	return &contracts.Protocol{Pin: mode}
}

// TestSupervisorNegotiation checks how each kind of server is met under
// auto and pins, over stdio and Streamable HTTP: what version the
// connection ends on, how status says it was chosen, and what went over
// the wire (no initialize for a 2026-07-28 pin).
func TestSupervisorNegotiation(t *testing.T) {
	legacyTools := len(fixedToolNames) + 3
	tests := []struct {
		name     string
		args     []string
		protocol string
		version  string // want; "" for a failure
		how      string // a part of status negotiated
		reason   string // the failure's reason
		message  string // a part of the failure's message
		// wire is the methods the request log must start with.
		wire []string
	}{
		{name: "empty-unknown", args: []string{"--protocol", "legacy", "--empty-unknown"}, protocol: "auto",
			version: "2025-11-25", how: "fallback after discover: server/discover answered with an invalid result (no supportedVersions)",
			wire: []string{"server/discover", "initialize", "notifications/initialized"}},
		{name: "legacy-discover", args: []string{"--protocol", "legacy-discover"}, protocol: "auto",
			version: "2025-11-25", how: "fallback after discover: server/discover lists only legacy versions (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)",
			wire: []string{"server/discover", "initialize"}},
		{name: "legacy", args: []string{"--protocol", "legacy"}, protocol: "auto",
			version: "2025-11-25", how: "fallback after discover: error -32601", wire: []string{"server/discover", "initialize"}},
		{name: "ignore-discover", args: []string{"--ignore-discover"}, protocol: "auto",
			version: "2025-11-25", how: "fallback after discover: no answer to server/discover within 2s", wire: []string{"server/discover", "initialize"}},
		{name: "both", args: []string{"--protocol", "both"}, protocol: "auto", version: "2026-07-28", how: "discover",
			wire: []string{"server/discover"}},
		{name: "pin", args: []string{"--protocol", "modern"}, protocol: "2026-07-28", version: "2026-07-28", how: "pin",
			wire: []string{"server/discover"}},
		{name: "pin-retry", args: []string{"--protocol", "modern", "--refuse-version-once", "2099-01-01,2026-07-28"}, protocol: "2026-07-28",
			version: "2026-07-28", how: "pin", wire: []string{"server/discover", "server/discover"}},
		{name: "pin-refused", args: []string{"--protocol", "modern", "--refuse-version-once", "2099-01-01"}, protocol: "2026-07-28",
			reason: "protocol_mismatch", message: "does not support the pinned protocol 2026-07-28; it offers 2099-01-01", wire: []string{"server/discover"}},
		{name: "pin-legacy-server", args: []string{"--protocol", "legacy"}, protocol: "2026-07-28",
			reason: "protocol_mismatch", message: "server/discover is not implemented", wire: []string{"server/discover"}},
		{name: "pin-empty-unknown", args: []string{"--protocol", "legacy", "--empty-unknown"}, protocol: "2026-07-28",
			reason: "protocol_mismatch", message: "invalid result (no supportedVersions)", wire: []string{"server/discover"}},
		{name: "auto-refused-to-legacy", args: []string{"--protocol", "both", "--refuse-version-once", "2025-06-18"}, protocol: "auto",
			version: "2025-06-18", how: "fallback after discover: the server refused 2026-07-28 and offers 2025-06-18", wire: []string{"server/discover", "initialize"}},
		{name: "legacy-pin", args: []string{"--protocol", "both"}, protocol: "2025-06-18", version: "2025-06-18", how: "pin",
			wire: []string{"initialize"}},
	}
	for _, transport := range []string{contracts.TransportStdio, contracts.TransportHTTP} {
		for _, tt := range tests {
			t.Run(transport+"/"+tt.name, func(t *testing.T) {
				h := newHarness(t, CatalogLimits{})
				ctx := ctxT(t)
				logPath := filepath.Join(t.TempDir(), "requests.log")
				args := append(slices.Clone(tt.args), "--request-log", logPath)
				var cfg contracts.ServerSettings
				if transport == contracts.TransportStdio {
					cfg = h.stdio("fx", args...)
				} else {
					cfg = h.remote("fx", transport, remoteFixture(t, h.bin, transport, args...))
				}
				cfg.Protocol = protocolOf(tt.protocol)
				h.sup.Apply([]contracts.ServerSettings{cfg})
				st, err := h.sup.Connect(ctx, "fx")
				log := methods(requestLog(t, logPath))
				if len(log) < len(tt.wire) || !slices.Equal(log[:len(tt.wire)], tt.wire) {
					t.Errorf("wire %q, want it to start with %q", log, tt.wire)
				}
				if tt.protocol == mcp.LATEST_PROTOCOL_VERSION && slices.Contains(log, "initialize") {
					t.Errorf("a 2026-07-28 pin sent initialize: %q", log)
				}
				if tt.version == "" {
					if err == nil || reasonOf(err) != tt.reason || !strings.Contains(err.Error(), tt.message) {
						t.Fatalf("Connect: %v (reason %q), want %s naming %q", err, reasonOf(err), tt.reason, tt.message)
					}
					if st := h.status("fx"); st.State != contracts.StateFailed || !strings.Contains(st.LastError, tt.message) {
						t.Errorf("status: state %q lastError %q", st.State, st.LastError)
					}
					return
				}
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				if st.ProtocolVersion != tt.version || !strings.HasPrefix(st.Negotiated, tt.how) {
					t.Errorf("status: protocol %q negotiated %q, want %q and %q", st.ProtocolVersion, st.Negotiated, tt.version, tt.how)
				}
				if !st.CatalogComplete || st.ToolCount != legacyTools || st.ServerInfo == nil || st.ServerInfo.Name != "fixture" {
					t.Errorf("status: catalog complete %v with %d tools (want %d), serverInfo %+v", st.CatalogComplete, st.ToolCount, legacyTools, st.ServerInfo)
				}
				// ping is a round trip on either revision.
				before := len(requestLog(t, logPath))
				if _, err := h.sup.Ping(ctx, "fx"); err != nil {
					t.Errorf("Ping: %v", err)
				}
				want := "ping"
				if mcp.IsModernProtocol(tt.version) {
					want = "server/discover"
				}
				if after := requestLog(t, logPath); len(after) <= before || after[len(after)-1].Method != want {
					t.Errorf("ping sent %q, want %s last", methods(after[before:]), want)
				}
			})
		}
	}
}

// TestSupervisorModernMeta checks what a 2026-07-28 request carries in
// _meta.
func TestSupervisorModernMeta(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	logPath := filepath.Join(t.TempDir(), "requests.log")
	cfg := h.stdio("fx", "--protocol", "modern", "--request-log", logPath)
	cfg.Protocol = protocolOf(contracts.ProtocolAuto)
	h.sup.Apply([]contracts.ServerSettings{cfg})
	if _, err := h.sup.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	for _, m := range requestLog(t, logPath) {
		if m.ID == nil {
			continue // a notification: no required _meta
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if string(p.Meta[mcp.MetaKeyProtocolVersion]) != `"2026-07-28"` || p.Meta[mcp.MetaKeyClientCapabilities] == nil ||
			!strings.Contains(string(p.Meta[mcp.MetaKeyClientInfo]), `"name":"pikod"`) {
			t.Errorf("%s carries _meta %v, want protocolVersion, clientCapabilities and clientInfo", m.Method, p.Meta)
		}
	}
}

// TestSupervisorNeedsAuth checks that 401 and 403 on the first request
// leave the server needs_auth with the challenge kept.
func TestSupervisorNeedsAuth(t *testing.T) {
	for _, tt := range []struct {
		name, transport, protocol string
		status                    int
	}{
		{"http-401-auto", contracts.TransportHTTP, "auto", 401},
		{"http-403-auto", contracts.TransportHTTP, "auto", 403},
		{"http-401-legacy", contracts.TransportHTTP, "legacy", 401},
		{"http-403-pin", contracts.TransportHTTP, "2026-07-28", 403},
		{"sse-401", contracts.TransportSSE, "", 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, CatalogLimits{})
			ctx := ctxT(t)
			cfg := h.remote("fx", tt.transport, remoteFixture(t, h.bin, tt.transport, "--unauthorized", strconv.Itoa(tt.status)))
			cfg.Protocol = protocolOf(tt.protocol)
			h.sup.Apply([]contracts.ServerSettings{cfg})
			_, err := h.sup.Connect(ctx, "fx")
			if reasonOf(err) != "needs_auth" || !errors.Is(err, contracts.ErrPermissionDenied) {
				t.Fatalf("Connect: %v (reason %q), want needs_auth", err, reasonOf(err))
			}
			if st := h.status("fx"); st.State != contracts.StateNeedsAuth || !strings.Contains(st.LastError, strconv.Itoa(tt.status)) {
				t.Errorf("status: state %q lastError %q", st.State, st.LastError)
			}
			ch, ok := h.sup.AuthChallenge("fx")
			if !ok || ch.Status != tt.status || !strings.HasPrefix(ch.WWWAuthenticate, "Bearer ") {
				t.Errorf("AuthChallenge = %+v, %v", ch, ok)
			}
			if tt.status == 401 && !strings.Contains(ch.WWWAuthenticate, `resource_metadata="http://`) {
				t.Errorf("challenge %q lost resource_metadata", ch.WWWAuthenticate)
			}
		})
	}
}

// eventLog collects EventResource events.
type eventLog struct {
	ch chan contracts.ResourceEventData
}

func (e *eventLog) option(o *Options) {
	o.Event = func(ev contracts.EventParams) {
		if ev.Kind != contracts.EventResource {
			return
		}
		var d contracts.ResourceEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			select {
			case e.ch <- d:
			default:
			}
		}
	}
}

func (e *eventLog) next(t *testing.T) (contracts.ResourceEventData, bool) {
	t.Helper()
	select {
	case d := <-e.ch:
		return d, true
	case <-time.After(10 * time.Second):
		return contracts.ResourceEventData{}, false
	}
}

// TestSupervisorSubscriptions checks resource subscriptions on every
// transport and both eras: an update of a subscribed resource arrives as
// an event; after unsubscribing nothing is sent to pikod.
func TestSupervisorSubscriptions(t *testing.T) {
	for _, tt := range []struct {
		name, transport, protocol string
	}{
		{"stdio-legacy", contracts.TransportStdio, "legacy"},
		{"stdio-modern", contracts.TransportStdio, "2026-07-28"},
		{"http-legacy", contracts.TransportHTTP, "legacy"},
		{"http-modern", contracts.TransportHTTP, "auto"},
		{"sse", contracts.TransportSSE, "legacy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events := &eventLog{ch: make(chan contracts.ResourceEventData, 16)}
			h := newHarness(t, CatalogLimits{}, events.option)
			ctx := ctxT(t)
			var cfg contracts.ServerSettings
			if tt.transport == contracts.TransportStdio {
				cfg = h.stdio("fx", "--subscribe")
			} else {
				cfg = h.remote("fx", tt.transport, remoteFixture(t, h.bin, tt.transport, "--subscribe"))
			}
			cfg.Protocol = protocolOf(tt.protocol)
			h.sup.Apply([]contracts.ServerSettings{cfg})
			const uri = "fixture://resources/0001"
			res, err := h.sup.Subscribe(ctx, "fx", uri)
			if err != nil || !res.Subscribed || !res.Changed {
				t.Fatalf("Subscribe = %+v, %v", res, err)
			}
			if again, err := h.sup.Subscribe(ctx, "fx", uri); err != nil || !again.Subscribed || again.Changed {
				t.Errorf("second Subscribe = %+v, %v; want subscribed, unchanged", again, err)
			}
			if st := h.status("fx"); !slices.Equal(st.Subscriptions, []string{uri}) {
				t.Errorf("status subscriptions %q", st.Subscriptions)
			}
			out, err := h.sup.CallTool(ctx, "fx", "touch-resource", json.RawMessage(`{"uri":"`+uri+`"}`))
			if err != nil || !strings.Contains(string(out), "notified 1") {
				t.Fatalf("touch-resource = %s, %v", out, err)
			}
			ev, ok := events.next(t)
			if !ok || ev.URI != uri || ev.Title != "resource-0001" {
				t.Fatalf("event %+v (%v), want %s titled resource-0001 (the catalog's name)", ev, ok, uri)
			}
			if _, err := h.sup.CallTool(ctx, "fx", "touch-resource", json.RawMessage(`{"uri":"`+uri+`","title":"Renamed"}`)); err != nil {
				t.Fatal(err)
			}
			if ev, ok := events.next(t); !ok || ev.Title != "Renamed" {
				t.Errorf("event %+v (%v), want the title the update gave", ev, ok)
			}
			res, err = h.sup.Unsubscribe(ctx, "fx", uri)
			if err != nil || res.Subscribed || !res.Changed {
				t.Fatalf("Unsubscribe = %+v, %v", res, err)
			}
			// On 2026-07-28 Streamable HTTP closing the stream is the
			// cancellation, and the server notices it on its own time; on
			// stdio the notifications/cancelled is written before
			// Unsubscribe returns. Either way pikod reports nothing more.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				out, err = h.sup.CallTool(ctx, "fx", "touch-resource", json.RawMessage(`{"uri":"`+uri+`"}`))
				if err != nil || strings.Contains(string(out), "notified 0") || time.Now().After(deadline) ||
					(tt.transport == contracts.TransportStdio) {
					break
				}
			}
			if err != nil || !strings.Contains(string(out), "notified 0") {
				t.Errorf("touch-resource after unsubscribing = %s, %v; want nobody notified", out, err)
			}
			select {
			case ev := <-events.ch:
				t.Errorf("an event after unsubscribing: %+v", ev)
			default:
			}
			// Subscriptions end with the connection.
			if _, err := h.sup.Subscribe(ctx, "fx", uri); err != nil {
				t.Fatal(err)
			}
			if _, err := h.sup.Disconnect(ctx, "fx"); err != nil {
				t.Fatal(err)
			}
			if st, err := h.sup.Connect(ctx, "fx"); err != nil || len(st.Subscriptions) != 0 {
				t.Errorf("after reconnecting: subscriptions %q, %v", st.Subscriptions, err)
			}
		})
	}
}

// TestSupervisorSubscribeRefused checks the refusals: resources disabled
// by the settings, a server without subscriptions, a bad URI.
func TestSupervisorSubscribeRefused(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	off := h.stdio("off", "--subscribe")
	no := false
	off.Resources = &no
	h.sup.Apply([]contracts.ServerSettings{off, h.stdio("plain"), h.stdio("fx", "--subscribe")})
	if _, err := h.sup.Subscribe(ctx, "off", "fixture://resources/0001"); reasonOf(err) != "resources_disabled" {
		t.Errorf("Subscribe with resources off: %v, want resources_disabled", err)
	}
	if st := h.status("off"); st.State != contracts.StateIdle {
		t.Errorf("refusing connected the server: %q", st.State)
	}
	if _, err := h.sup.Subscribe(ctx, "plain", "fixture://resources/0001"); reasonOf(err) != "subscribe_unsupported" {
		t.Errorf("Subscribe on a server without subscribe: %v, want subscribe_unsupported", err)
	}
	for _, uri := range []string{"", "a\nb", strings.Repeat("x", maxURIBytes+1)} {
		if _, err := h.sup.Subscribe(ctx, "fx", uri); !errors.Is(err, contracts.ErrInvalidArgument) {
			t.Errorf("Subscribe(%.20q): %v, want invalid argument", uri, err)
		}
	}
}

// TestSupervisorListenStream checks the 2026-07-28 subscription stream:
// list_changed arrives through it (stdio and HTTP); a dropped stream is
// reopened and the catalog discovered again.
func TestSupervisorListenStream(t *testing.T) {
	for _, transport := range []string{contracts.TransportStdio, contracts.TransportHTTP} {
		t.Run(transport, func(t *testing.T) {
			h := newHarness(t, CatalogLimits{})
			ctx := ctxT(t)
			logPath := filepath.Join(t.TempDir(), "requests.log")
			args := []string{"--protocol", "modern", "--subscribe", "--request-log", logPath}
			var cfg contracts.ServerSettings
			if transport == contracts.TransportStdio {
				cfg = h.stdio("fx", args...)
			} else {
				cfg = h.remote("fx", transport, remoteFixture(t, h.bin, transport, args...))
			}
			cfg.Protocol = protocolOf("2026-07-28")
			h.sup.Apply([]contracts.ServerSettings{cfg})
			if _, err := h.sup.Connect(ctx, "fx"); err != nil {
				t.Fatal(err)
			}
			log := requestLog(t, logPath)
			var listen struct {
				Notifications mcp.SubscriptionFilter `json:"notifications"`
			}
			for _, m := range log {
				if m.Method == "subscriptions/listen" {
					_ = json.Unmarshal(m.Params, &listen)
				}
			}
			if want := (mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}); !sameFilter(listen.Notifications, want) {
				t.Errorf("listen filter %+v, want %+v (request log %q)", listen.Notifications, want, methods(log))
			}
			if i, j := slices.Index(methods(log), "subscriptions/listen"), slices.Index(methods(log), "tools/list"); i < 0 || i > j {
				t.Errorf("the stream was not opened before discovery: %q", methods(log))
			}

			// Dropped: reopened, and the lists fetched again.
			out, err := h.sup.CallTool(ctx, "fx", "drop-listen", json.RawMessage(`{}`))
			if err != nil || !strings.Contains(string(out), "dropped 1") {
				t.Fatalf("drop-listen = %s, %v", out, err)
			}
			waitRequestLog(t, logPath, "a second subscriptions/listen, then tools/list", func(log []loggedMessage) bool {
				ms := methods(log)
				var opens []int
				for i, m := range ms {
					if m == "subscriptions/listen" {
						opens = append(opens, i)
					}
				}
				return len(opens) >= 2 && slices.Contains(ms[opens[1]:], "tools/list")
			})
			// The reopened stream carries list_changed.
			if _, err := h.sup.CallTool(ctx, "fx", "notify-list-changed", json.RawMessage(`{}`)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				cat, err := h.sup.Catalog(ctx, "fx")
				if err == nil && slices.Contains(toolNames(cat.Tools), "late-tool") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("late-tool never appeared: %v %v", toolNames(cat.Tools), err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestSupervisorCancelEveryTransport checks that a timed-out call is
// cancelled at the server: notifications/cancelled on stdio, legacy
// Streamable HTTP and SSE; on 2026-07-28 HTTP closing the stream is the
// cancellation and no notification is sent.
func TestSupervisorCancelEveryTransport(t *testing.T) {
	for _, tt := range []struct {
		name, transport, protocol string
		notified                  bool
	}{
		{"stdio-legacy", contracts.TransportStdio, "legacy", true},
		{"stdio-modern", contracts.TransportStdio, "2026-07-28", true},
		{"http-legacy", contracts.TransportHTTP, "legacy", true},
		{"sse", contracts.TransportSSE, "legacy", true},
		{"http-modern", contracts.TransportHTTP, "2026-07-28", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, CatalogLimits{})
			ctx := ctxT(t)
			logPath := filepath.Join(t.TempDir(), "requests.log")
			args := []string{"--no-progress", "--request-log", logPath}
			var cfg contracts.ServerSettings
			// stderr is the fixture's: the sleep tool says there when it
			// was cancelled.
			var stderr func() string
			if tt.transport == contracts.TransportStdio {
				cfg = h.stdio("fx", args...)
				stderr = func() string { return h.status("fx").StderrTail }
			} else {
				url, buf := remoteFixtureStderr(t, h.bin, tt.transport, args...)
				cfg = h.remote("fx", tt.transport, url)
				stderr = buf.String
			}
			cfg.Protocol = protocolOf(tt.protocol)
			cfg.TimeoutMs = 1000
			h.sup.Apply([]contracts.ServerSettings{cfg})
			_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "sleep", Arguments: []byte(`{"ms":20000}`)})
			if !errors.Is(err, contracts.ErrOutcomeUnknown) {
				t.Fatalf("Call: %v, want a timeout with an unknown outcome", err)
			}
			var callID json.RawMessage
			for _, m := range requestLog(t, logPath) {
				if m.Method == "tools/call" {
					callID = m.ID
				}
			}
			if callID == nil {
				t.Fatal("the call never reached the server")
			}
			cancelled := func(log []loggedMessage) bool {
				for _, m := range log {
					var p struct {
						RequestID json.RawMessage `json:"requestId"`
					}
					if m.Method == "notifications/cancelled" && json.Unmarshal(m.Params, &p) == nil && string(p.RequestID) == string(callID) {
						return true
					}
				}
				return false
			}
			if tt.notified {
				waitRequestLog(t, logPath, "notifications/cancelled for "+string(callID), cancelled)
			} else if cancelled(requestLog(t, logPath)) {
				t.Errorf("notifications/cancelled sent on a 2026-07-28 Streamable HTTP connection")
			}
			// The sleep stopped at the server: the notification (or, on
			// 2026-07-28 HTTP, the closed stream) cancelled it.
			deadline := time.Now().Add(15 * time.Second)
			for !strings.Contains(stderr(), "sleep cancelled after") {
				if time.Now().After(deadline) {
					t.Fatalf("the server never cancelled the sleep; its stderr:\n%s", stderr())
				}
				time.Sleep(20 * time.Millisecond)
			}
			for _, m := range requestLog(t, logPath) {
				if m.Method == "notifications/cancelled" && strings.Contains(string(m.Params), "initialize") {
					t.Errorf("a cancellation referenced initialize: %s", m.Params)
				}
			}
		})
	}
}

// TestSupervisorInputRequired checks that an input_required result is
// answered (its elicitation goes to Options.ServerRequest, tied to the
// call) and the call goes again with the answer and the requestState; that
// an input pikod did not declare fails the call with input_not_given; and
// that an unknown resultType is an invalid result.
func TestSupervisorInputRequired(t *testing.T) {
	var (
		mu  sync.Mutex
		got []ServerRequest
	)
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.ServerRequest = func(_ context.Context, r ServerRequest) (json.RawMessage, error) {
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
			return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
		}
	})
	ctx := ctxT(t)
	cfg := h.stdio("fx", "--protocol", "modern", "--input-tools")
	cfg.Protocol = protocolOf("2026-07-28")
	cfg.Elicitation = true
	plain := h.stdio("plain", "--protocol", "modern", "--input-tools")
	plain.Protocol = protocolOf("2026-07-28")
	h.sup.Apply([]contracts.ServerSettings{cfg, plain})
	out, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "ask", Arguments: []byte(`{}`)})
	if err != nil || out.IsError || !strings.Contains(string(out.Result), "hello Ada") {
		t.Fatalf("Call ask = %+v, %v; want the answered call's result (hello Ada)", out, err)
	}
	mu.Lock()
	if len(got) != 1 || got[0].Method != "elicitation/create" || got[0].Tool != "ask" || !got[0].InputRequired ||
		!strings.Contains(string(got[0].Params), "what is your name?") {
		t.Errorf("server requests = %+v, want the one elicitation of ask", got)
	}
	mu.Unlock()
	_, err = h.sup.Call(ctx, CallRequest{Server: "plain", Tool: "ask", Arguments: []byte(`{}`)})
	if reasonOf(err) != "input_not_given" || !strings.Contains(err.Error(), "elicitation: true") {
		t.Errorf("Call ask without elicitation: %v, want input_not_given saying elicitation is not enabled", err)
	}
	_, err = h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "weird-result", Arguments: []byte(`{}`)})
	if reasonOf(err) != "invalid_result" || !errors.Is(err, contracts.ErrOutcomeUnknown) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("Call weird-result: %v, want invalid_result naming the resultType", err)
	}
}
