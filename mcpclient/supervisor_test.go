//go:build linux

package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/pikod/pikod/tests/testsupport"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// fixtureBuild is the fixture server binary, built on first use so that
// tests that need no fixture do not pay for the build.
var fixtureBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureBuild.dir != "" {
		_ = os.RemoveAll(fixtureBuild.dir)
	}
	os.Exit(code)
}

// fixtureBinary builds tests/fixtures/mcpfixture once per test binary.
func fixtureBinary(t testing.TB) string {
	t.Helper()
	fixtureBuild.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		out, err := exec.Command(goTool, "env", "GOMOD").Output()
		if err != nil {
			fixtureBuild.err = fmt.Errorf("finding the module root: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "pkfx")
		if err != nil {
			fixtureBuild.err = err
			return
		}
		fixtureBuild.dir = dir
		fixtureBuild.path = filepath.Join(dir, "mcpfixture")
		build := exec.Command(goTool, "build", "-o", fixtureBuild.path, "./tests/fixtures/mcpfixture")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			fixtureBuild.err = fmt.Errorf("building mcpfixture: %w\n%s", err, out)
		}
	})
	if fixtureBuild.err != nil {
		t.Fatal(fixtureBuild.err)
	}
	return fixtureBuild.path
}

// countingRecords is an in-memory proc.Records that also remembers every
// group leader ever recorded, so a test can count the processes started.
type countingRecords struct {
	*memRecords
	mu      sync.Mutex
	leaders []int
}

func (c *countingRecords) PutProcess(r proc.Record) error {
	if !r.Escapee {
		c.mu.Lock()
		c.leaders = append(c.leaders, r.PID)
		c.mu.Unlock()
	}
	return c.memRecords.PutProcess(r)
}

func (c *countingRecords) started() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.leaders)
}

type harness struct {
	t    *testing.T
	sup  *Supervisor
	recs *countingRecords
	bin  string
	logs *testsupport.Buffer
}

// newHarness starts a Supervisor. Cleanup closes it, checks that every
// process it started is gone with its record, and that no goroutine is
// left behind.
func newHarness(t *testing.T, limits CatalogLimits, options ...func(*Options)) *harness {
	t.Helper()
	bin := fixtureBinary(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	runDir, err := os.MkdirTemp("", "pkrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	logs := &testsupport.Buffer{}
	h := &harness{t: t, recs: &countingRecords{memRecords: newMemRecords()}, bin: bin, logs: logs}
	opts := Options{
		Log: zerolog.New(logs), RunDir: runDir, Records: h.recs, ClientVersion: "test",
		DiscoverProbe: 2 * time.Second, Limits: limits,
	}
	for _, o := range options {
		o(&opts)
	}
	h.sup = NewSupervisor(opts)
	t.Cleanup(func() {
		h.sup.Close()
		for _, pid := range h.recs.started() {
			if exists(pid) {
				t.Errorf("server process %d still exists after Close", pid)
			}
		}
		assertNoRecords(t, h.recs.memRecords)
		if t.Failed() {
			t.Logf("supervisor log:\n%s", logs.String())
		}
	})
	return h
}

// stdio returns settings for a stdio fixture with the given flags.
func (h *harness) stdio(id string, args ...string) contracts.ServerSettings {
	return contracts.ServerSettings{ID: id, Transport: contracts.TransportStdio, Command: h.bin, Args: args,
		Env: map[string]string{"DBUS_SESSION_BUS_ADDRESS": "disabled:"}, TimeoutMs: 10_000}
}

func (h *harness) status(id string) contracts.ServerStatus {
	h.t.Helper()
	st, err := h.sup.Status(id)
	if err != nil || len(st) != 1 {
		h.t.Fatalf("Status(%q) = %v, %v", id, st, err)
	}
	return st[0]
}

// waitStatus polls a server's status until ok holds. The supervisor has no
// event to wait on for a state a background goroutine sets (the loss of a
// connection), so this polls with a generous deadline; it never sleeps
// when the state is already there.
func (h *harness) waitStatus(id string, what string, ok func(contracts.ServerStatus) bool) contracts.ServerStatus {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := h.status(id)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("server %q never reached %s; last status %+v", id, what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func toolNames(tools []contracts.CatalogTool) []string {
	out := make([]string, len(tools))
	for i, tl := range tools {
		out[i] = tl.OriginalName
	}
	return out
}

func reasonOf(err error) string {
	if we := contracts.ToError(err); we != nil && we.Data != nil {
		return we.Data.Reason
	}
	return ""
}

// fixedToolNames are the tools every fixture offers whatever its flags.
var fixedToolNames = []string{"add", "big", "count", "crash", "echo", "env", "notify-list-changed", "sleep", "spawn"}

func TestSupervisorStdioConnect(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--name", "pk-fixture", "--version", "9.9.9")})
	if st := h.status("fx"); st.State != contracts.StateIdle {
		t.Errorf("state before connect %q, want idle", st.State)
	}

	st, err := h.sup.Connect(ctx, "fx")
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	started := h.recs.started()
	if len(started) != 1 {
		t.Fatalf("started %v, want one process", started)
	}
	if st.State != contracts.StateConnected || st.PID != started[0] || st.PGID != st.PID ||
		st.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION || st.Generation == 0 || st.ConnectedSince == "" ||
		st.ServerInfo == nil || *st.ServerInfo != (contracts.ServerInfo{Name: "pk-fixture", Version: "9.9.9"}) {
		t.Errorf("status after connect: %+v (serverInfo %+v)", st, st.ServerInfo)
	}
	if !st.CatalogComplete || st.ToolCount != len(fixedToolNames)+3 || st.ResourceCount != 2 || st.TemplateCount != 2 || st.PromptCount != 2 {
		t.Errorf("status catalog: complete %v tools %d resources %d templates %d prompts %d",
			st.CatalogComplete, st.ToolCount, st.ResourceCount, st.TemplateCount, st.PromptCount)
	}
	if !exists(st.PID) {
		t.Errorf("server process %d does not exist while connected", st.PID)
	}

	cat, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	want := append(slices.Clone(fixedToolNames), "tool-0001", "tool-0002", "tool-0003")
	slices.Sort(want)
	if !cat.Complete || cat.Problem != "" || !slices.Equal(toolNames(cat.Tools), want) {
		t.Errorf("catalog complete %v problem %q tools %q, want complete with %q", cat.Complete, cat.Problem, toolNames(cat.Tools), want)
	}
	if len(cat.Resources) != 2 || len(cat.ResourceTemplates) != 2 || len(cat.Prompts) != 2 {
		t.Errorf("catalog has %d resources, %d templates, %d prompts; want 2 each", len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts))
	}
	for _, tl := range cat.Tools {
		if tl.OriginalName != "echo" {
			continue
		}
		// echo carries readOnlyHint: annotations never grant.
		if tl.Name != "mcp_fx_echo" || tl.Grant != contracts.GrantApproval || !tl.Selected ||
			!strings.Contains(string(tl.Annotations), "readOnlyHint") || !strings.Contains(string(tl.OutputSchema), `"required"`) {
			t.Errorf("echo: %+v", tl)
		}
	}

	ping, err := h.sup.Ping(ctx, "fx")
	if err != nil || ping.Server != "fx" || ping.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("Ping = %+v, %v", ping, err)
	}
	res, err := h.sup.CallTool(ctx, "fx", "echo", json.RawMessage(`{"text":"hello"}`))
	if err != nil || !strings.Contains(string(res), `"structuredContent":{"text":"hello"}`) {
		t.Errorf("CallTool echo = %s, %v", res, err)
	}
	if _, err := h.sup.CallTool(ctx, "fx", "no-such-tool", json.RawMessage(`{}`)); !errors.Is(err, contracts.ErrUpstream) {
		t.Errorf("CallTool of an unknown tool: %v, want the server's error (ErrUpstream)", err)
	}

	was, err := h.sup.Disconnect(ctx, "fx")
	if err != nil || !was {
		t.Fatalf("Disconnect = %v, %v; want true", was, err)
	}
	if exists(started[0]) {
		t.Errorf("server process %d still exists after Disconnect", started[0])
	}
	assertNoRecords(t, h.recs.memRecords)
	if st := h.status("fx"); st.State != contracts.StateIdle || st.PID != 0 || st.Generation != 0 {
		t.Errorf("status after disconnect: %+v", st)
	}
	if was, err := h.sup.Disconnect(ctx, "fx"); err != nil || was {
		t.Errorf("second Disconnect = %v, %v; want false", was, err)
	}
	if _, err := h.sup.Connect(ctx, "nope"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Connect of an unknown server: %v, want ErrNotFound", err)
	}
}

func TestSupervisorSharedSetup(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--init-delay", "300ms")})

	const callers = 10
	start := make(chan struct{})
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			<-start
			cat, err := h.sup.Catalog(ctx, "fx")
			if err == nil && (!cat.Complete || len(cat.Tools) != len(fixedToolNames)+3) {
				err = fmt.Errorf("catalog complete %v with %d tools", cat.Complete, len(cat.Tools))
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Catalog: %v", err)
		}
	}
	if started := h.recs.started(); len(started) != 1 {
		t.Errorf("%d processes started (%v), want 1 shared by every caller", len(started), started)
	}
	if g := h.sup.Generation("fx"); g == 0 {
		t.Errorf("generation 0 after a successful connect")
	}
}

func TestSupervisorFailedStaysFailed(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	cfg := h.stdio("fx", "--hang-init")
	cfg.TimeoutMs = 1000
	h.sup.Apply([]contracts.ServerSettings{cfg})

	st, err := h.sup.Connect(ctx, "fx")
	if err == nil {
		t.Fatal("Connect to a server that never answers initialize succeeded")
	}
	if !errors.Is(err, contracts.ErrUnavailable) || reasonOf(err) != "connect_failed" || !strings.Contains(err.Error(), "timeoutMs") {
		t.Errorf("Connect error %q (reason %q), want ErrUnavailable, connect_failed, naming timeoutMs", err, reasonOf(err))
	}
	if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "timeoutMs") {
		t.Errorf("status after the failure: state %q lastError %q", st.State, st.LastError)
	}
	started := h.recs.started()
	if len(started) != 1 {
		t.Fatalf("started %v, want one process", started)
	}
	if exists(started[0]) {
		t.Errorf("the failed server's process %d still exists", started[0])
	}
	assertNoRecords(t, h.recs.memRecords)

	// Nothing retries on its own: give a background retry the time to show.
	time.Sleep(500 * time.Millisecond)
	if st := h.status("fx"); st.State != contracts.StateFailed || st.LastError == "" {
		t.Errorf("later status: state %q lastError %q, want still failed", st.State, st.LastError)
	}
	if n := len(h.recs.started()); n != 1 {
		t.Errorf("%d processes started without an explicit connect, want 1", n)
	}

	// An explicit connect tries again (and fails again, in a new process).
	if _, err := h.sup.Connect(ctx, "fx"); err == nil || !strings.Contains(err.Error(), "timeoutMs") {
		t.Errorf("second Connect: %v, want the handshake timeout again", err)
	}
	if n := len(h.recs.started()); n != 2 {
		t.Errorf("%d processes started after an explicit connect, want 2", n)
	}
	assertNoRecords(t, h.recs.memRecords)
}

func TestSupervisorCrashMidCall(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		calls []string // tools/call of count with these nonces; the last one crashes
	}{
		{name: "crash tool", args: nil},
		{name: "crash-after 2", args: []string{"--crash-after", "2"}, calls: []string{"one", "two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, CatalogLimits{})
			ctx := ctxT(t)
			callLog := filepath.Join(t.TempDir(), "calls")
			h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", append([]string{"--call-log", callLog}, tt.args...)...)})

			var err error
			if tt.calls == nil {
				_, err = h.sup.CallTool(ctx, "fx", "crash", json.RawMessage(`{}`))
			} else {
				for i, nonce := range tt.calls {
					_, err = h.sup.CallTool(ctx, "fx", "count", json.RawMessage(`{"nonce":"`+nonce+`"}`))
					if i < len(tt.calls)-1 && err != nil {
						t.Fatalf("call %d: %v", i+1, err)
					}
				}
			}
			if err == nil {
				t.Fatal("the call that crashed the server succeeded")
			}
			if !errors.Is(err, contracts.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "outcome is unknown") {
				t.Errorf("error %q: want ErrOutcomeUnknown saying the outcome is unknown", err)
			}
			if errors.Is(err, contracts.ErrUpstream) {
				t.Errorf("error %q is classed as the server's own answer", err)
			}

			st := h.waitStatus("fx", "failed with exit status 3 and stderr", func(st contracts.ServerStatus) bool {
				return st.State == contracts.StateFailed && st.ExitStatus != "" && strings.Contains(st.StderrTail, "crashing on purpose")
			})
			if st.ExitStatus != "exit status 3" || st.LastError == "" || st.PID != 0 {
				t.Errorf("status after the crash: exitStatus %q lastError %q pid %d", st.ExitStatus, st.LastError, st.PID)
			}
			// Nothing was retried: one process, and the crashing call never
			// reached a server that could log it.
			if started := h.recs.started(); len(started) != 1 {
				t.Errorf("%d processes started (%v), want 1: nothing may reconnect or retry", len(started), started)
			}
			logged, _ := os.ReadFile(callLog)
			want := ""
			for _, n := range tt.calls[:max(len(tt.calls)-1, 0)] {
				want += n + "\n"
			}
			if string(logged) != want {
				t.Errorf("call log %q, want %q", logged, want)
			}
			if g := h.sup.Generation("fx"); g != 0 {
				t.Errorf("generation %d after the crash, want 0 (not connected)", g)
			}
		})
	}
}

func TestSupervisorCatalogLimits(t *testing.T) {
	h := newHarness(t, CatalogLimits{MaxItems: 10})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx", "--tools", "50", "--page-size", "7")})
	cat, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	if cat.Complete || !strings.Contains(cat.Problem, "more than 10 entries") {
		t.Errorf("catalog complete %v problem %q, want incomplete naming the limit", cat.Complete, cat.Problem)
	}
	if len(cat.Tools) > 10 {
		t.Errorf("%d tools kept, more than the limit", len(cat.Tools))
	}
	st := h.status("fx")
	if st.State != contracts.StateConnected || st.CatalogComplete || !strings.Contains(st.CatalogProblem, "more than 10 entries") {
		t.Errorf("status: state %q catalogComplete %v catalogProblem %q", st.State, st.CatalogComplete, st.CatalogProblem)
	}
}

func TestSupervisorListChanged(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
	cat, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	if slices.Contains(toolNames(cat.Tools), "late-tool") {
		t.Fatal("late-tool listed before it was added")
	}
	gen := h.sup.Generation("fx")
	if _, err := h.sup.CallTool(ctx, "fx", "notify-list-changed", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("CallTool notify-list-changed: %v", err)
	}
	// The server writes the notification and the call's answer from
	// different goroutines, so the answer may arrive first: until the
	// notification lands, Catalog rightly returns the old catalog. Once it
	// has landed, Catalog waits for the re-discovery.
	deadline := time.Now().Add(15 * time.Second)
	for {
		cat, err = h.sup.Catalog(ctx, "fx")
		if err != nil {
			t.Fatalf("Catalog: %v", err)
		}
		if slices.Contains(toolNames(cat.Tools), "late-tool") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late-tool never appeared: %q", toolNames(cat.Tools))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !cat.Complete || len(cat.Tools) != len(fixedToolNames)+4 {
		t.Errorf("re-discovered catalog complete %v with %d tools", cat.Complete, len(cat.Tools))
	}
	if st := h.status("fx"); st.ToolCount != len(fixedToolNames)+4 || st.Generation != gen {
		t.Errorf("status tools %d generation %d, want %d tools on the same connection (generation %d)", st.ToolCount, st.Generation, len(fixedToolNames)+4, gen)
	}
}

func TestSupervisorOversizedLine(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	cfg := h.stdio("fx", "--oversized-line", "2000000")
	cfg.MaxBytes = 1_000_000
	h.sup.Apply([]contracts.ServerSettings{cfg})
	// The line comes during discovery: the connect may fail outright or
	// succeed just before the loss is noticed; either way the session must
	// end up failed, never connected to a dead connection.
	_, _ = h.sup.Connect(ctx, "fx")
	st := h.waitStatus("fx", "failed", func(st contracts.ServerStatus) bool { return st.State != contracts.StateConnected })
	if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "maxBytes") {
		t.Errorf("status: state %q lastError %q, want failed naming maxBytes", st.State, st.LastError)
	}
}

func TestSupervisorPinMismatch(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	cfg := h.stdio("fx", "--protocol", "legacy")
	cfg.Protocol = &contracts.Protocol{Pin: "2026-07-28"}
	h.sup.Apply([]contracts.ServerSettings{cfg})
	_, err := h.sup.Connect(ctx, "fx")
	if reasonOf(err) != "protocol_mismatch" || !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Fatalf("Connect: %v (reason %q), want protocol_mismatch", err, reasonOf(err))
	}
	if st := h.status("fx"); st.State != contracts.StateFailed || !strings.Contains(st.LastError, "2026-07-28") {
		t.Errorf("status: state %q lastError %q", st.State, st.LastError)
	}
}

func TestSupervisorApply(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	a, b, c, d := h.stdio("a"), h.stdio("b"), h.stdio("c"), h.stdio("d")
	h.sup.Apply([]contracts.ServerSettings{a, b, c, d})
	pids := map[string]int{}
	gens := map[string]uint64{}
	for _, id := range []string{"a", "b", "c"} {
		st, err := h.sup.Connect(ctx, id)
		if err != nil {
			t.Fatalf("Connect %s: %v", id, err)
		}
		pids[id], gens[id] = st.PID, st.Generation
	}

	// a changes, b's grants and timeout change (live), c goes, d (idle)
	// changes, e is new.
	a2 := h.stdio("a", "--tools", "4")
	d2 := h.stdio("d", "--tools", "5")
	b2 := b
	b2.ReadOnlyTools, b2.TimeoutMs = []string{"echo"}, 7000
	applied := h.sup.Apply([]contracts.ServerSettings{a2, b2, d2, h.stdio("e")})
	disconnected := applied.Disconnected
	slices.Sort(disconnected)
	if !slices.Equal(disconnected, []string{"a", "c"}) {
		t.Errorf("Apply disconnected %q, want [a c]", disconnected)
	}
	if !slices.Equal(applied.Live, []string{"b"}) {
		t.Errorf("Apply applied live %q, want [b]", applied.Live)
	}
	if tool, err := h.sup.Tool(ctx, "b", "echo"); err != nil || tool.Grant != contracts.GrantRead {
		t.Errorf("b's echo after a live grant: grant %q, %v; want read", tool.Grant, err)
	}
	for _, id := range []string{"a", "c"} {
		if exists(pids[id]) {
			t.Errorf("process %d of %s still exists after Apply", pids[id], id)
		}
	}
	if st := h.status("a"); st.State != contracts.StateIdle {
		t.Errorf("changed server a is %q, want idle", st.State)
	}
	if st := h.status("b"); st.State != contracts.StateConnected || st.PID != pids["b"] || st.Generation != gens["b"] {
		t.Errorf("server b (grants changed live): state %q pid %d (was %d) generation %d (was %d)", st.State, st.PID, pids["b"], st.Generation, gens["b"])
	}
	if _, err := h.sup.Status("c"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("removed server c: %v, want ErrNotFound", err)
	}
	all, err := h.sup.Status("")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, st := range all {
		order = append(order, st.ID)
	}
	if !slices.Equal(order, []string{"a", "b", "d", "e"}) {
		t.Errorf("status order %q, want the settings order", order)
	}
	// The new settings take effect on the next connect.
	cat, err := h.sup.Catalog(ctx, "a")
	if err != nil || len(cat.Tools) != len(fixedToolNames)+4 {
		t.Errorf("catalog of a after the change: %d tools, %v", len(cat.Tools), err)
	}
	if g := h.sup.Generation("a"); g == 0 || g == gens["a"] {
		t.Errorf("a reconnected with generation %d (was %d), want a new one", g, gens["a"])
	}
}

// httpFixture runs the fixture over HTTP and returns its URL. Its cleanup
// stops it; register the harness first so that the supervisor closes
// before the fixture goes away.
func httpFixture(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--transport", "http", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the fixture's LISTENING line: %v (%q)", err, line)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if !ok {
		t.Fatalf("fixture said %q, want LISTENING URL", line)
	}
	return url
}

func TestSupervisorHTTP(t *testing.T) {
	tests := []struct {
		protocol string // the fixture's --protocol
		want     func(string) bool
	}{
		{"both", func(v string) bool { return v == "2026-07-28" }},
		{"modern", func(v string) bool { return v == "2026-07-28" }},
		{"legacy", func(v string) bool { return v != "" && !mcp.IsModernProtocol(v) }},
	}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			h := newHarness(t, CatalogLimits{})
			ctx := ctxT(t)
			url := httpFixture(t, h.bin, "--protocol", tt.protocol)
			h.sup.Apply([]contracts.ServerSettings{{ID: "web", Transport: contracts.TransportHTTP, URL: url,
				AllowPrivateNetwork: true, TimeoutMs: 10_000}})

			st, err := h.sup.Connect(ctx, "web")
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if st.State != contracts.StateConnected || !tt.want(st.ProtocolVersion) || st.PID != 0 {
				t.Errorf("status: state %q protocol %q pid %d", st.State, st.ProtocolVersion, st.PID)
			}
			cat, err := h.sup.Catalog(ctx, "web")
			if err != nil || !cat.Complete || len(cat.Tools) != len(fixedToolNames)+3 || len(cat.Prompts) != 2 {
				t.Errorf("Catalog: complete %v problem %q tools %d prompts %d, %v", cat.Complete, cat.Problem, len(cat.Tools), len(cat.Prompts), err)
			}
			if ping, err := h.sup.Ping(ctx, "web"); err != nil || ping.ProtocolVersion != st.ProtocolVersion {
				t.Errorf("Ping = %+v, %v", ping, err)
			}
			res, err := h.sup.CallTool(ctx, "web", "add", json.RawMessage(`{"a":2,"b":3}`))
			if err != nil || !strings.Contains(string(res), `"text":"5"`) {
				t.Errorf("CallTool add = %s, %v", res, err)
			}
			if was, err := h.sup.Disconnect(ctx, "web"); err != nil || !was {
				t.Errorf("Disconnect = %v, %v", was, err)
			}
			h.sup.Close()
		})
	}
}

func TestSupervisorClose(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	hang := h.stdio("hang", "--hang-init")
	hang.TimeoutMs = 60_000
	h.sup.Apply([]contracts.ServerSettings{h.stdio("a"), h.stdio("b"), hang})
	for _, id := range []string{"a", "b"} {
		if _, err := h.sup.Connect(ctx, id); err != nil {
			t.Fatalf("Connect %s: %v", id, err)
		}
	}
	// A connect in progress when Close comes must end, not wait out its
	// timeout.
	pending := make(chan error, 1)
	go func() {
		_, err := h.sup.Connect(ctx, "hang")
		pending <- err
	}()
	h.waitStatus("hang", "connecting", func(st contracts.ServerStatus) bool { return st.State == contracts.StateConnecting })

	h.sup.Close()
	select {
	case err := <-pending:
		if err == nil {
			t.Error("the pending connect succeeded across Close")
		}
	case <-ctx.Done():
		t.Fatal("the pending connect did not end at Close")
	}
	for _, pid := range h.recs.started() {
		if exists(pid) {
			t.Errorf("process %d still exists after Close", pid)
		}
	}
	assertNoRecords(t, h.recs.memRecords)
	if _, err := h.sup.Connect(ctx, "a"); !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("Connect after Close: %v, want ErrUnavailable", err)
	}
	if _, err := h.sup.Status(""); err != nil {
		t.Errorf("Status after Close: %v", err)
	}
	h.sup.Close() // twice is fine
}

// TestSupervisorSessionExpired: a legacy Streamable HTTP server that
// forgets the session answers 404; that request fails as not run (never
// replayed, never "uncertain"), and the next request starts a new session.
func TestSupervisorSessionExpired(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	url := httpFixture(t, h.bin, "--protocol", "legacy", "--forgetful")
	h.sup.Apply([]contracts.ServerSettings{{ID: "web", Transport: contracts.TransportHTTP, URL: url,
		AllowPrivateNetwork: true, TimeoutMs: 10_000}})
	if _, err := h.sup.Connect(ctx, "web"); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	gen := h.sup.Generation("web")
	if _, err := h.sup.CallTool(ctx, "web", "forget-session", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("forget-session: %v", err)
	}
	_, err := h.sup.CallTool(ctx, "web", "count", json.RawMessage(`{"nonce":"lost"}`))
	if !errors.Is(err, contracts.ErrUnavailable) || reasonOf(err) != "session_expired" || errors.Is(err, contracts.ErrOutcomeUnknown) {
		t.Fatalf("call on a forgotten session = %v (reason %q), want session_expired, not outcome unknown", err, reasonOf(err))
	}
	if st := h.status("web"); st.State != contracts.StateIdle {
		t.Errorf("after a 404 session, state = %q, want idle", st.State)
	}
	// The next request reconnects with a new session; the refused call was
	// not run and was not replayed: this call is the server's second.
	res, err := h.sup.CallTool(ctx, "web", "count", json.RawMessage(`{"nonce":"next"}`))
	if err != nil {
		t.Fatalf("call after the 404: %v", err)
	}
	if !strings.Contains(string(res), "calls=2 nonce=next") || h.sup.Generation("web") == gen {
		t.Errorf("call after the 404 = %s (generation %d, before %d); want a new connection", res, h.sup.Generation("web"), gen)
	}
	if strings.Contains(string(res), "lost") {
		t.Errorf("the refused call was replayed: %s", res)
	}
	h.sup.Close()
}

// TestSupervisorStateEvents: every state a session goes through reaches
// Options.Event, in order, with the failure's reason.
func TestSupervisorStateEvents(t *testing.T) {
	var mu sync.Mutex
	var got []string
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.Event = func(ev contracts.EventParams) {
			var d contracts.StateEventData
			if ev.Kind != contracts.EventState || json.Unmarshal(ev.Data, &d) != nil {
				t.Errorf("event %+v, want a state event", ev)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev.Server+":"+d.State)
			if d.State == contracts.StateFailed && !strings.Contains(d.LastError, "timeoutMs") {
				t.Errorf("failed event without the reason: %+v", d)
			}
		}
	})
	ctx := ctxT(t)
	bad := h.stdio("bad", "--hang-init")
	bad.TimeoutMs = 1000
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx"), bad})
	if _, err := h.sup.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.Connect(ctx, "bad"); err == nil {
		t.Fatal("connecting a server that never answers succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"fx:connecting", "fx:connected", "fx:idle", "bad:connecting", "bad:failed"}
	if !slices.Equal(got, want) {
		t.Errorf("state events %q, want %q", got, want)
	}
}
