package tests

// Events, logs and change notifications: extensions.mcp.watch and its
// extensions.mcp.event notifications, extensions.mcp.logging, the
// list_changed refetch, and the CLI commands over them.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/tests/testsupport"
)

// watcher is a socket connection subscribed to events, collecting them.
type watcher struct {
	t      testing.TB
	c      *rpc.Client
	res    contracts.WatchResult
	mu     sync.Mutex
	events []contracts.EventParams
}

// watch opens a connection and subscribes it with p.
func watch(t testing.TB, d *daemon, p contracts.WatchParams) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := rpc.Dial(ctx, d.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &watcher{t: t, c: c}
	c.OnNotification(func(method string, params json.RawMessage) {
		var ev contracts.EventParams
		if method != contracts.NotifyMCPEvent || json.Unmarshal(params, &ev) != nil {
			t.Errorf("unexpected notification %s %s", method, params)
			return
		}
		w.mu.Lock()
		w.events = append(w.events, ev)
		w.mu.Unlock()
	})
	if err := c.Call(ctx, contracts.MethodMCPWatch, p, &w.res); err != nil {
		t.Fatalf("extensions.mcp.watch %+v: %v", p, err)
	}
	return w
}

// all returns the events received so far.
func (w *watcher) all() []contracts.EventParams {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// waitFor waits for an event ok accepts and returns it.
func (w *watcher) waitFor(what string, ok func(contracts.EventParams) bool) contracts.EventParams {
	w.t.Helper()
	var found contracts.EventParams
	poll(w.t, what, func() bool {
		for _, ev := range w.all() {
			if ok(ev) {
				found = ev
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("events so far: %s", eventsText(w.all())) })
	return found
}

// states lists the state events received, as "server:state".
func (w *watcher) states() []string {
	var out []string
	for _, ev := range w.all() {
		if ev.Kind != contracts.EventState {
			continue
		}
		var d contracts.StateEventData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			w.t.Fatalf("state event data %s: %v", ev.Data, err)
		}
		out = append(out, ev.Server+":"+d.State)
	}
	return out
}

func eventsText(evs []contracts.EventParams) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  #%d %s %s %s", ev.Seq, ev.Server, ev.Kind, ev.Data)
	}
	return b.String()
}

func catalogData(t testing.TB, ev contracts.EventParams) contracts.CatalogEventData {
	t.Helper()
	var d contracts.CatalogEventData
	if ev.Kind != contracts.EventCatalog || json.Unmarshal(ev.Data, &d) != nil {
		t.Fatalf("event %+v is not a catalog event", ev)
	}
	return d
}

// TestWatchStateEvents: a watcher hears a connect and a disconnect as state
// events, numbered and stamped by the daemon; {"stop": true} ends its
// subscription (another watcher still hears what follows); closing
// watching connections releases them.
func TestWatchStateEvents(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx"), stdioFixture("other")))
	w := watch(t, d, contracts.WatchParams{Kinds: []string{contracts.EventState}, Servers: []string{"fx"}})
	if !w.res.Watching || !slices.Equal(w.res.Kinds, []string{"state"}) || !slices.Equal(w.res.Servers, []string{"fx"}) {
		t.Fatalf("watch answered %+v", w.res)
	}
	connectServer(t, d, "fx")
	connectServer(t, d, "other")
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
	w.waitFor("fx going idle", func(ev contracts.EventParams) bool { return strings.Contains(string(ev.Data), `"idle"`) })
	if got, want := w.states(), []string{"fx:connecting", "fx:connected", "fx:idle"}; !slices.Equal(got, want) {
		t.Errorf("state events %q, want %q (other's filtered out)", got, want)
	}
	evs := w.all()
	for i, ev := range evs {
		if ev.Seq <= w.res.Seq || (i > 0 && ev.Seq <= evs[i-1].Seq) {
			t.Errorf("event seq %d after watch seq %d and previous %v: not increasing", ev.Seq, w.res.Seq, evs[max(i-1, 0)].Seq)
		}
		if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil || !strings.HasSuffix(ev.Time, "Z") {
			t.Errorf("event time %q is not RFC 3339 UTC", ev.Time)
		}
	}

	// Bad filters are refused with every problem listed.
	we := d.callErr(t, contracts.MethodMCPWatch, contracts.WatchParams{Kinds: []string{"state", "bogus"}, Servers: []string{"nope"}, Queue: 3})
	if we.Reason() != "invalid_watch" || we.Data == nil || len(we.Data.Problems) != 3 {
		t.Errorf("bad watch: %+v, want invalid_watch with 3 problems", we)
	}

	// Stop ends the subscription; a second watcher proves events still flow.
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var stopped contracts.WatchResult
	if err := w.c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{Stop: true}, &stopped); err != nil || stopped.Watching {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	before := len(w.all())
	w2 := watch(t, d, contracts.WatchParams{Kinds: []string{contracts.EventState}})
	connectServer(t, d, "fx")
	w2.waitFor("fx connected again", func(ev contracts.EventParams) bool {
		return ev.Server == "fx" && strings.Contains(string(ev.Data), `"connected"`)
	})
	// The stopped connection still works for requests, and got nothing.
	if err := w.c.Call(ctx, contracts.MethodHello, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(w.all()); n != before {
		t.Errorf("a stopped watcher got %d more events: %s", n-before, eventsText(w.all()[before:]))
	}

	// Closing watching connections releases them: pikod's sockets come
	// back to what they were. Sockets, not all descriptors: a reconnect's
	// pipes and process handles come and go on their own time. The base is
	// taken once it holds still, after the connections the harness's own
	// calls closed are gone from pikod too.
	pid := d.current().pid()
	base := settledSockets(t, pid)
	var conns []*rpc.Client
	for range 20 {
		c, err := rpc.Dial(ctx, d.socket)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{}, nil); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if n := openSockets(t, pid); n < base+20 {
		t.Fatalf("%d sockets with 20 watchers, %d before: the count cannot show their release", n, base)
	}
	for _, c := range conns {
		c.Close()
	}
	poll(t, "pikod to release 20 closed watching connections", func() bool { return openSockets(t, pid) <= base },
		func() string { return fmt.Sprintf("%d sockets, %d before", openSockets(t, pid), base) })
}

// settledSockets waits for a process's socket count to read the same
// three times 50 ms apart, and returns it.
func settledSockets(t testing.TB, pid int) int {
	t.Helper()
	n, same := openSockets(t, pid), 0
	for deadline := time.Now().Add(callTimeout); same < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if m := openSockets(t, pid); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}

// openSockets counts a process's open socket descriptors. A descriptor
// closed while it is read is skipped: it is no longer open.
func openSockets(t testing.TB, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// TestSlowWatcherNeverBlocks: a watcher that stops reading fills its socket
// and its queue; pikod goes on (hello is answered, the calls that make the
// events complete, the log ring keeps them all), and when the watcher
// reads again it finds the drops counted where they happened.
func TestSlowWatcherNeverBlocks(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--log-tool").with("tools", []string{"log"}, "readOnlyTools", []string{"log"})))
	connectServer(t, d, "fx")

	nc, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := fmt.Fprintf(nc, `{"jsonrpc":"2.0","id":1,"method":"extensions.mcp.watch","params":{"kinds":["log"],"queue":16}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(nc, 1<<20)
	_ = nc.SetReadDeadline(time.Now().Add(callTimeout))
	if line, err := r.ReadBytes('\n'); err != nil || !strings.Contains(string(line), `"queue":16`) {
		t.Fatalf("watch answer %s %v", line, err)
	}
	// 250 log lines of about 1 KiB: far more than a socket buffer and 16
	// queued events hold. Not a byte is read meanwhile.
	const n = 250
	if res := callTool(t, d, "fx", "log", fmt.Sprintf(`{"count":%d,"level":"error","pad":1000}`, n)); res.Status != contracts.CallCompleted {
		t.Fatalf("log call: %+v", res)
	}
	var logs contracts.LoggingResult
	poll(t, "every log line in the ring", func() bool {
		d.callInto(t, contracts.MethodMCPLogging, contracts.LoggingParams{Server: "fx", Limit: 1000}, &logs)
		return len(logs.Entries) == n
	}, func() string { return fmt.Sprintf("%d entries", len(logs.Entries)) })
	if _, err := rawHello(d.socket, callTimeout); err != nil {
		t.Fatalf("hello while a watcher does not read: %v", err)
	}

	var seen, dropped, last uint64
	_ = nc.SetReadDeadline(time.Now().Add(callTimeout))
	for seen+dropped < n {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d events and %d dropped: %v", seen, dropped, err)
		}
		var msg struct {
			Method string                `json:"method"`
			Params contracts.EventParams `json:"params"`
		}
		if err := json.Unmarshal(line, &msg); err != nil || msg.Method != contracts.NotifyMCPEvent {
			t.Fatalf("line %.200s: %v", line, err)
		}
		ev := msg.Params
		if ev.Seq <= last || (last != 0 && ev.Seq-last < 1+ev.Dropped) {
			t.Fatalf("seq %d after %d with %d dropped before it: the gap does not hold the drops", ev.Seq, last, ev.Dropped)
		}
		last, seen, dropped = ev.Seq, seen+1, dropped+ev.Dropped
	}
	if dropped == 0 || seen+dropped != n {
		t.Errorf("%d delivered and %d dropped, want some dropped and all %d accounted for", seen, dropped, n)
	}
	t.Logf("slow watcher: %d delivered, %d dropped", seen, dropped)
}

// TestListChangedRefetch: list_changed refetches the tools and replaces the
// catalog (a catalog event says so); a refetch that fails marks the
// catalog incomplete with the server's error and suspends the grants of
// the tools it still shows, then recovers by itself; a granted tool the
// server redefines loses its grant after the refetch, as after a connect.
func TestListChangedRefetch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--list-faults", "--state-file", filepath.Join(dir, "state.json")).with(
		"readOnlyTools", []string{"echo", "notify-list-changed", "fail-lists", "redefine"})))
	connectServer(t, d, "fx")
	w := watch(t, d, contracts.WatchParams{Kinds: []string{contracts.EventCatalog}})
	before := catalogOf(t, d, "fx")

	if res := callTool(t, d, "fx", "notify-list-changed", ""); res.Status != contracts.CallCompleted {
		t.Fatalf("notify-list-changed: %+v", res)
	}
	ev := w.waitFor("a catalog event", func(contracts.EventParams) bool { return true })
	got := catalogData(t, ev)
	if ev.Server != "fx" || !slices.Equal(got.Lists, []string{"tools"}) || !got.Complete || got.Counts.Tools != len(before.Tools)+1 ||
		got.Counts.Prompts != len(before.Prompts) {
		t.Errorf("catalog event %+v, want the tools read again, complete, one tool more", got)
	}
	if names, _ := toolNames(catalogOf(t, d, "fx")); !slices.Contains(names, "mcp_fx_late-tool") {
		t.Errorf("the catalog after the event lacks late-tool: %q", names)
	}

	// A failing refetch.
	if res := callTool(t, d, "fx", "fail-lists", `{"ms":4000}`); res.Status != contracts.CallCompleted {
		t.Fatalf("fail-lists: %+v", res)
	}
	badEv := w.waitFor("an incomplete catalog event", func(ev contracts.EventParams) bool {
		return !catalogData(t, ev).Complete
	})
	bad := catalogData(t, badEv)
	if !strings.Contains(bad.Problem, "LIST FAULT") || !strings.Contains(bad.Problem, "tools/list") {
		t.Errorf("incomplete event problem %q, want the server's error on tools/list", bad.Problem)
	}
	cat := catalogOf(t, d, "fx")
	st := serverStatus(t, d, "fx")
	echo := toolOf(t, d, "fx", "echo")
	if cat.Complete || st.CatalogComplete || !strings.Contains(st.CatalogProblem, "LIST FAULT") || len(cat.Tools) != got.Counts.Tools {
		t.Errorf("during the fault: catalog complete %v (%d tools), status complete %v problem %q; want incomplete with the last tools",
			cat.Complete, len(cat.Tools), st.CatalogComplete, st.CatalogProblem)
	}
	wantPin(t, echo, contracts.GrantApproval, contracts.PinUnchecked, contracts.GrantRead)
	if res := callTool(t, d, "fx", "echo", `{"text":"during"}`); res.Status != contracts.CallApprovalRequired {
		t.Errorf("echo during the fault: %+v, want a prepared action (grant suspended)", res)
	}
	w.waitFor("the catalog complete again", func(ev contracts.EventParams) bool {
		return ev.Seq > badEv.Seq && catalogData(t, ev).Complete
	})
	poll(t, "echo's grant back", func() bool { return toolOf(t, d, "fx", "echo").Grant == contracts.GrantRead }, nil)
	if cat := catalogOf(t, d, "fx"); !cat.Complete {
		t.Errorf("after the fault: catalog incomplete: %s", cat.Problem)
	}

	// A redefinition of a granted tool.
	orig := toolOf(t, d, "fx", "echo")
	changed := redefine(t, d, "fx", "echo", "Now does something else.")
	wantPin(t, changed, contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
	if changed.PinnedDigest != orig.Digest {
		t.Errorf("pinnedDigest %s, want the old digest %s", changed.PinnedDigest, orig.Digest)
	}
	w.waitFor("a catalog event naming echo changed", func(ev contracts.EventParams) bool {
		return slices.Contains(catalogData(t, ev).ChangedTools, "echo")
	})
}

// TestLogRingBounded: a server flooding log lines keeps its ring within
// 1,000 entries (ids consecutive to the newest), big lines keep it within
// 1 MiB, and reads filter by level, id and count.
func TestLogRingBounded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("flood", "--flood-notifications", "2000"),
		stdioFixture("big", "--log-tool").with("tools", []string{"log"}, "readOnlyTools", []string{"log"})))
	connectServer(t, d, "flood")
	read := func(server string, p contracts.LoggingParams) contracts.LoggingResult {
		p.Server = server
		var res contracts.LoggingResult
		d.callInto(t, contracts.MethodMCPLogging, p, &res)
		return res
	}
	var res contracts.LoggingResult
	var st contracts.ServerStatus
	// Both are waited for: on a loaded machine the flood can reach pikod
	// slower than its rate, and the budget drops only what exceeds 500/s.
	poll(t, "the flood to overflow the ring and the log budget", func() bool {
		res = read("flood", contracts.LoggingParams{Limit: 1000})
		st = serverStatus(t, d, "flood")
		return res.Evicted > 0 && st.Dropped != nil && st.Dropped.LogMessages > 0
	}, func() string {
		return fmt.Sprintf("kept %d, evicted %d, dropped %+v", res.Kept, res.Evicted, st.Dropped)
	})
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "flood"})
	res = read("flood", contracts.LoggingParams{Limit: 1000})
	if res.Kept != 1000 || len(res.Entries) != 1000 || res.LastID != res.Evicted+1000 {
		t.Fatalf("kept %d (%d returned), evicted %d, last id %d; want 1000 kept, the newest", res.Kept, len(res.Entries), res.Evicted, res.LastID)
	}
	for i, e := range res.Entries {
		if e.ID != res.Evicted+1+uint64(i) || e.Level != "info" || e.Logger != "flood" || !strings.HasPrefix(string(e.Data), `"flood line `) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	// The ring outlives the connection; reads filter.
	if r := read("flood", contracts.LoggingParams{After: res.LastID - 3}); len(r.Entries) != 3 {
		t.Errorf("after lastId-3: %d entries, want 3", len(r.Entries))
	}
	if r := read("flood", contracts.LoggingParams{Level: "warning"}); len(r.Entries) != 0 || r.Kept != 1000 {
		t.Errorf("warning and above: %d entries of %d, want none (the flood logs info)", len(r.Entries), r.Kept)
	}
	if r := read("flood", contracts.LoggingParams{}); len(r.Entries) != 100 {
		t.Errorf("default limit: %d entries, want 100", len(r.Entries))
	}
	for _, p := range []contracts.LoggingParams{{Level: "loud"}, {Limit: 5000}, {Since: "yesterday"}, {Op: "tail"}} {
		p.Server = "flood"
		if we := d.callErr(t, contracts.MethodMCPLogging, p); we.Code != 1001 {
			t.Errorf("logging %+v: %+v, want invalid_argument", p, we)
		}
	}

	// Big lines: the byte bound.
	if res := callTool(t, d, "big", "log", `{"count":290,"level":"error","pad":3900}`); res.Status != contracts.CallCompleted {
		t.Fatalf("log: %+v", res)
	}
	poll(t, "the big lines to arrive", func() bool { res = read("big", contracts.LoggingParams{}); return res.LastID == 290 }, nil)
	if res.Kept >= 290 || res.Evicted != uint64(290-res.Kept) || res.Kept*3900 > 1<<20 {
		t.Errorf("kept %d entries of 4 KB and evicted %d; want at most 1 MiB kept", res.Kept, res.Evicted)
	}
	if e := res.Entries[len(res.Entries)-1]; e.Truncated || !strings.Contains(string(e.Data), strings.Repeat("x", 3900)) {
		t.Errorf("a 4 KB line was cut: %.100s (truncated %v)", e.Data, e.Truncated)
	}
}

// TestLoggingLevelAndFollow: setLevel reaches the server (it then sends
// lines it filtered before), on a legacy and a 2026-07-28 connection; the
// CLI reads, sets the level and follows until Ctrl-C; watch prints events.
func TestLoggingLevelAndFollow(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	logTool := []any{"tools", []string{"log"}, "readOnlyTools", []string{"log"}}
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("legacy", "--log-tool").with(logTool...),
		stdioFixture("modern", "--log-tool").with(append(logTool, "protocol", map[string]string{"pin": modernVersion})...),
		stdioFixture("quiet", "--no-logging")))
	logLines := func(server, level string, count int) {
		t.Helper()
		if res := callTool(t, d, server, "log", fmt.Sprintf(`{"count":%d,"level":%q,"text":"%s says"}`, count, level, server)); res.Status != contracts.CallCompleted {
			t.Fatalf("log on %s: %+v", server, res)
		}
	}
	for _, server := range []string{"legacy", "modern"} {
		logLines(server, "debug", 2) // filtered: no level set yet
		out, stderr, code := runCtl(t, d, "", "mcp", "logs", server, "--level", "debug")
		if code != 0 || !strings.Contains(stderr, "log level set to debug") {
			t.Fatalf("pikoctl mcp logs %s --level debug: exit %d\n%s%s", server, code, out, stderr)
		}
		if server == "modern" && !strings.Contains(stderr, "on every request") {
			t.Errorf("modern: %q does not say the level travels on every request", stderr)
		}
		logLines(server, "debug", 3)
		var res contracts.LoggingResult
		poll(t, server+"'s debug lines", func() bool {
			d.callInto(t, contracts.MethodMCPLogging, contracts.LoggingParams{Server: server}, &res)
			return len(res.Entries) >= 3
		}, nil)
		if len(res.Entries) != 3 || res.Level != "debug" || res.Entries[2].Level != "debug" ||
			!strings.Contains(string(res.Entries[2].Data), `"text":"`+server+` says"`) {
			t.Errorf("%s entries %+v level %q; want the 3 lines sent after the level was set", server, res.Entries, res.Level)
		}
		out, _, code = runCtl(t, d, "", "mcp", "logs", server)
		if code != 0 || strings.Count(out, server+" says") != 3 || !strings.Contains(out, "debug") {
			t.Errorf("pikoctl mcp logs %s: exit %d\n%s", server, code, out)
		}
	}
	if _, stderr, code := runCtl(t, d, "", "mcp", "logs", "quiet", "--level", "info"); code != 1 || !strings.Contains(stderr, "does not offer logging") {
		t.Errorf("setting the level of a server without logging: exit %d: %s", code, stderr)
	}

	// Follow: the CLI prints new lines as they come, until Ctrl-C.
	follow := startCtl(t, d, "mcp", "logs", "legacy", "-f")
	follow.waitErr(t, "following legacy")
	logLines("legacy", "warning", 2)
	follow.waitOut(t, func(out string) bool { return strings.Count(out, "legacy says") == 5 })
	if out := follow.out.String(); strings.Count(out, "warning") != 2 {
		t.Errorf("follow output lacks the two warning lines:\n%s", out)
	}
	if code := follow.interrupt(t); code != 0 {
		t.Errorf("pikoctl mcp logs -f exited %d after Ctrl-C, want 0; stderr:\n%s", code, follow.err.String())
	}

	// Watch, human and JSON.
	human := startCtl(t, d, "mcp", "watch", "--kind", "log", "--kind", "state")
	asJSON := startCtl(t, d, "--json", "mcp", "watch", "--server", "legacy")
	human.waitErr(t, "watching state, log events of every server")
	asJSON.waitErr(t, "watching state, catalog, resource, log, request, task events of legacy")
	logLines("legacy", "error", 1)
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "modern"})
	human.waitOut(t, func(out string) bool {
		return strings.Contains(out, "modern state idle") && strings.Contains(out, "legacy log error")
	})
	asJSON.waitOut(t, func(out string) bool { return strings.Contains(out, `"kind":"log"`) })
	for _, line := range strings.Split(strings.TrimSpace(asJSON.out.String()), "\n") {
		var ev contracts.EventParams
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Server != "legacy" || ev.Seq == 0 {
			t.Errorf("watch --json line %q: %v; want legacy's events as JSON objects", line, err)
		}
	}
	for _, p := range []*ctlProc{human, asJSON} {
		if code := p.interrupt(t); code != 0 {
			t.Errorf("pikoctl mcp watch exited %d after Ctrl-C; stderr:\n%s", code, p.err.String())
		}
	}
}

// ctlProc is a pikoctl run in the background.
type ctlProc struct {
	cmd      *exec.Cmd
	out, err testsupport.Buffer
	done     chan struct{}
	code     int
}

// startCtl starts pikoctl against d; it is killed at the end of the test
// if still running.
func startCtl(t testing.TB, d *daemon, args ...string) *ctlProc {
	t.Helper()
	p := &ctlProc{done: make(chan struct{})}
	p.cmd = exec.Command(pikoctlBin, append([]string{"--socket", d.socket}, args...)...)
	p.cmd.Env = minimalEnv(t.TempDir())
	detach(p.cmd)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *ctlProc) waitOut(t testing.TB, ok func(string) bool) {
	t.Helper()
	poll(t, "pikoctl's output", func() bool { return ok(p.out.String()) },
		func() string { return "stdout:\n" + p.out.String() + "\nstderr:\n" + p.err.String() })
}

func (p *ctlProc) waitErr(t testing.TB, substr string) {
	t.Helper()
	poll(t, fmt.Sprintf("pikoctl to print %q", substr), func() bool { return strings.Contains(p.err.String(), substr) },
		func() string { return "stderr:\n" + p.err.String() })
}

// interrupt sends SIGINT and returns the exit code.
func (p *ctlProc) interrupt(t testing.TB) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("pikoctl did not exit after SIGINT; stderr:\n%s", p.err.String())
	}
	if strings.Contains(p.err.String(), "WARNING: DATA RACE") {
		t.Errorf("race in pikoctl:\n%s", p.err.String())
	}
	return p.code
}

// TestInteropEverythingLogging: server-everything over stdio. Its
// toggle-simulated-logging tool sends one log line at a random level at
// once and another every 5 s, filtered at the server by the level set
// with logging/setLevel. pikod sets the level (at emergency the lines of
// the other seven levels stay away), keeps the lines in the ring and
// delivers them to a watcher as log events.
func TestInteropEverythingLogging(t *testing.T) {
	dir := interopDir(t)
	everything := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, srv{"id": "everything", "transport": "stdio", "command": everything,
		"args": []string{"stdio"}, "timeoutMs": 30000, "readOnlyTools": []string{"toggle-simulated-logging"}}))
	connectServer(t, d, "everything")
	w := watch(t, d, contracts.WatchParams{Kinds: []string{contracts.EventLog}, Servers: []string{"everything"}})
	setLevel := func(level string) {
		t.Helper()
		var set contracts.LoggingResult
		d.callInto(t, contracts.MethodMCPLogging, contracts.LoggingParams{Server: "everything", Op: contracts.LoggingSetLevel, Level: level}, &set)
		if set.Level != level || set.Applied != "logging/setLevel" || set.ProtocolVersion == modernVersion {
			t.Fatalf("setLevel answered %+v, want %s through logging/setLevel on a legacy connection", set, level)
		}
	}
	read := func(p contracts.LoggingParams) contracts.LoggingResult {
		p.Server = "everything"
		var res contracts.LoggingResult
		d.callInto(t, contracts.MethodMCPLogging, p, &res)
		return res
	}

	setLevel("emergency")
	if res := callTool(t, d, "everything", "toggle-simulated-logging", ""); res.Status != contracts.CallCompleted {
		t.Fatalf("toggle-simulated-logging: %+v", res)
	}
	// Two lines were due: the first at once, the next after 5 s. Without
	// the level both would be kept; with it, only an emergency one is.
	time.Sleep(5500 * time.Millisecond)
	quiet := read(contracts.LoggingParams{})
	for _, e := range quiet.Entries {
		if e.Level != "emergency" {
			t.Errorf("at level emergency the server sent a %s line: %+v", e.Level, e)
		}
	}

	setLevel("debug")
	var logs contracts.LoggingResult
	poll(t, "a simulated log line at level debug", func() bool {
		logs = read(contracts.LoggingParams{After: quiet.LastID})
		return len(logs.Entries) >= 1
	}, func() string { return fmt.Sprintf("%+v", logs) })
	for _, e := range logs.Entries {
		var text string
		if contracts.LogLevelRank(e.Level) < 0 || json.Unmarshal(e.Data, &text) != nil || !strings.Contains(strings.ToLower(text), "level") {
			t.Errorf("entry %+v: want one of the eight levels and the server's text", e)
		}
	}
	first := logs.Entries[0]
	ev := w.waitFor("the line as a log event", func(ev contracts.EventParams) bool {
		var e contracts.LogEntry
		return json.Unmarshal(ev.Data, &e) == nil && e.ID == first.ID
	})
	var e contracts.LogEntry
	_ = json.Unmarshal(ev.Data, &e)
	if e.Level != first.Level || string(e.Data) != string(first.Data) || ev.Server != "everything" {
		t.Errorf("event %+v carries %+v, want the ring's entry %+v", ev, e, first)
	}
	for _, e := range read(contracts.LoggingParams{Level: "error"}).Entries {
		if contracts.LogLevelRank(e.Level) < contracts.LogLevelRank("error") {
			t.Errorf("a read at error returned a %s line", e.Level)
		}
	}
	// Stop the simulation before the daemon stops the server.
	callTool(t, d, "everything", "toggle-simulated-logging", "")
}
