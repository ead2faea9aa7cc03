package tests

// Roots: a change of a server's roots alone keeps its connection; the
// server hears notifications/roots/list_changed and its next roots/list
// sees the new roots.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestRootsChange: roots changed through configure reach the live
// connection (stdio, Streamable HTTP and legacy SSE, whose fixture only
// logs what it receives) without a reconnect; adding the
// first roots or removing the last changes the declared capabilities and
// reconnects.
func TestRootsChange(t *testing.T) {
	t.Parallel()
	web := startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", "legacy", "--roots-tool")
	sseLog := filepath.Join(t.TempDir(), "sse.log")
	sse := startFixtureServer(t, "sse", "127.0.0.1:0", "--request-log", sseLog)
	first, second := "file://"+t.TempDir(), "file://"+t.TempDir()
	servers := func(roots []map[string]string) string {
		stdio := stdioFixture("fx-stdio", "--protocol", "legacy", "--roots-tool").with("readOnlyTools", []string{"roots"})
		http := srv{"id": "fx-http", "transport": "http", "url": web.url, "allowPrivateNetwork": true, "readOnlyTools": []string{"roots"}}
		legacy := srv{"id": "fx-sse", "transport": "sse", "url": sse.url, "allowPrivateNetwork": true, "readOnlyTools": []string{"echo"}}
		if roots != nil {
			stdio, http, legacy = stdio.with("roots", roots), http.with("roots", roots), legacy.with("roots", roots)
		}
		return mcpSettings(t, stdio, http, legacy)
	}
	ids := []string{"fx-stdio", "fx-http"}
	sseNotified := func() int {
		n := 0
		for _, m := range readRequestLog(t, sseLog) {
			if m.Method == "notifications/roots/list_changed" {
				n++
			}
		}
		return n
	}
	d := startDaemon(t)
	configureMCP(t, d, servers([]map[string]string{{"uri": first, "name": "first"}}))

	rootsOf := func(id string) string {
		t.Helper()
		res := callTool(t, d, id, "roots", `{}`)
		if res.Status != contracts.CallCompleted {
			t.Fatalf("%s: roots: %+v", id, res)
		}
		return string(res.Content)
	}
	before := map[string]contracts.ServerStatus{}
	for _, id := range ids {
		if got := rootsOf(id); !strings.Contains(got, "list_changed 0") || !strings.Contains(got, first+" first") {
			t.Fatalf("%s: roots %s, want the first root and no list_changed yet", id, got)
		}
		before[id] = serverStatus(t, d, id)
	}
	if res := callTool(t, d, "fx-sse", "echo", `{"text":"hi"}`); res.Status != contracts.CallCompleted {
		t.Fatalf("fx-sse: echo: %+v", res)
	}
	before["fx-sse"] = serverStatus(t, d, "fx-sse")
	if before["fx-stdio"].PID == 0 {
		t.Fatalf("fx-stdio has no pid: %+v", before["fx-stdio"])
	}

	res := configureMCP(t, d, servers([]map[string]string{{"uri": second, "name": "second"}, {"uri": first, "name": "renamed"}}))
	if len(res.Disconnected) != 0 || len(res.Changed) != 3 {
		t.Fatalf("configure with new roots: %+v, want all three changed and none disconnected", res)
	}
	var n int
	poll(t, "fx-sse hearing notifications/roots/list_changed", func() bool {
		n = sseNotified()
		return n > 0
	}, func() string { return "none in the request log" })
	if n != 1 {
		t.Errorf("fx-sse received notifications/roots/list_changed %d times, want once", n)
	}
	if after := serverStatus(t, d, "fx-sse"); after.State != contracts.StateConnected || after.Generation != before["fx-sse"].Generation {
		t.Errorf("fx-sse: after the roots change state %q generation %d, want the same connection (generation %d)",
			after.State, after.Generation, before["fx-sse"].Generation)
	}
	for _, id := range ids {
		var got string
		poll(t, id+" hearing notifications/roots/list_changed", func() bool {
			got = rootsOf(id)
			return strings.Contains(got, "list_changed 1")
		}, func() string { return got })
		if !strings.Contains(got, second+" second") || !strings.Contains(got, first+" renamed") || strings.Contains(got, first+" first") {
			t.Errorf("%s: roots after the change %s, want the new roots only", id, got)
		}
		after := serverStatus(t, d, id)
		if after.State != contracts.StateConnected || after.PID != before[id].PID || after.Generation != before[id].Generation {
			t.Errorf("%s: after the roots change state %q pid %d generation %d, want the same connection (pid %d generation %d)",
				id, after.State, after.PID, after.Generation, before[id].PID, before[id].Generation)
		}
	}

	// No roots at all: the capability goes, so the connection does.
	res = configureMCP(t, d, servers(nil))
	if want := []string{"fx-http", "fx-sse", "fx-stdio"}; !slices.Equal(res.Disconnected, want) {
		t.Errorf("configure without roots: disconnected %v, want %v", res.Disconnected, want)
	}
}
