package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// memPins is an in-memory Pins. fail makes every method fail.
type memPins struct {
	mu    sync.Mutex
	pins  map[string]map[string]ToolPin
	adds  int
	fail  error
	loads int
}

func newMemPins() *memPins { return &memPins{pins: map[string]map[string]ToolPin{}} }

func (m *memPins) Load(server string) (map[string]ToolPin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	if m.fail != nil {
		return nil, m.fail
	}
	out := map[string]ToolPin{}
	for k, v := range m.pins[server] {
		out[k] = v
	}
	return out, nil
}

func (m *memPins) AddMissing(server string, pins []ToolPin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.pins[server] == nil {
		m.pins[server] = map[string]ToolPin{}
	}
	for _, p := range pins {
		if _, ok := m.pins[server][p.Tool]; !ok {
			m.pins[server][p.Tool] = p
			m.adds++
		}
	}
	return nil
}

func (m *memPins) set(server string, p ToolPin) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins[server] == nil {
		m.pins[server] = map[string]ToolPin{}
	}
	m.pins[server][p.Tool] = p
}

func (m *memPins) get(server, tool string) (ToolPin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[server][tool]
	return p, ok
}

// redefineFixture is a stdio fixture whose count tool is granted
// (readOnlyTools) and whose redefine tool changes descriptions.
func (h *harness) redefineFixture(id string) (cfg contracts.ServerSettings, callLog string) {
	dir := h.t.TempDir()
	callLog = filepath.Join(dir, "calls.log")
	cfg = h.stdio(id, "--call-log", callLog, "--state-file", filepath.Join(dir, "state.json"))
	tools := []string{"count", "echo", "redefine"}
	cfg.Tools = &tools
	cfg.ReadOnlyTools = []string{"count"}
	return cfg, callLog
}

// redefine gives a tool a new description through the fixture and waits
// until the live catalog shows it (the list_changed notification and the
// call's answer travel separately).
func (h *harness) redefine(ctx context.Context, id, tool, desc string) contracts.CatalogTool {
	h.t.Helper()
	args, _ := json.Marshal(map[string]string{"tool": tool, "description": desc})
	if _, err := h.sup.CallTool(ctx, id, "redefine", args); err != nil {
		h.t.Fatalf("redefine %s: %v", tool, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, t, ok, err := h.sup.LiveTool(ctx, id, tool, true)
		if err != nil {
			h.t.Fatalf("LiveTool: %v", err)
		}
		if ok && t.Description == desc {
			return t
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the catalog never showed %s's new description; it has %q", tool, t.Description)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func catalogTool(t *testing.T, h *harness, id, name string) contracts.CatalogTool {
	t.Helper()
	cat, err := h.sup.Catalog(ctxT(t), id)
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	for _, tl := range cat.Tools {
		if tl.OriginalName == name {
			return tl
		}
	}
	t.Fatalf("no tool %q in %v", name, toolNames(cat.Tools))
	return contracts.CatalogTool{}
}

func logCount(h *harness, parts ...string) int {
	n := 0
	for line := range strings.SplitSeq(h.logs.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// TestPinsSuspendChangedGrant: a granted tool is pinned at first
// discovery; a server that redefines it loses the grant for that tool
// (and only that tool) until the pin moves, at the next discovery too.
func TestPinsSuspendChangedGrant(t *testing.T) {
	pins := newMemPins()
	h := newHarness(t, CatalogLimits{}, func(o *Options) { o.Pins = pins })
	ctx := ctxT(t)
	cfg, _ := h.redefineFixture("fx")
	h.sup.Apply([]contracts.ServerSettings{cfg})
	count := catalogTool(t, h, "fx", "count")
	if count.Grant != contracts.GrantRead || count.Pin != contracts.PinPinned || count.SuspendedGrant != "" {
		t.Fatalf("count at first discovery: grant %q pin %q suspended %q; want read, pinned", count.Grant, count.Pin, count.SuspendedGrant)
	}
	if p, ok := pins.get("fx", "count"); !ok || p.Digest != count.Digest || !json.Valid(p.Definition) ||
		!strings.Contains(string(p.Definition), `"description":"Returns how many tool calls`) {
		t.Fatalf("pin of count = %+v, %v; want the discovered definition", p, ok)
	}
	if _, ok := pins.get("fx", "echo"); ok {
		t.Error("echo (selected, not granted) was pinned")
	}
	if echo := catalogTool(t, h, "fx", "echo"); echo.Pin != "" || echo.Grant != contracts.GrantApproval {
		t.Errorf("echo: grant %q pin %q; want approval and no pin", echo.Grant, echo.Pin)
	}
	before := count

	changed := h.redefine(ctx, "fx", "count", "Deletes everything.")
	if changed.Grant != contracts.GrantApproval || changed.Pin != contracts.PinChanged ||
		changed.SuspendedGrant != contracts.GrantRead || changed.PinnedDigest != before.Digest || changed.Digest == before.Digest {
		t.Fatalf("count after redefinition: %+v; want grant approval, pin definition_changed, suspendedGrant read, pinnedDigest the old digest", changed)
	}
	if p, _ := pins.get("fx", "count"); p.Digest != before.Digest {
		t.Error("a re-discovery moved the pin")
	}
	if st := h.status("fx"); !slices.Equal(st.ChangedTools, []string{"count"}) {
		t.Errorf("status changedTools = %q, want [count]", st.ChangedTools)
	}
	if logCount(h, `"level":"warn"`, "grant suspended", `"tool":"count"`) == 0 {
		t.Errorf("no warning logged for the suspended grant; log:\n%s", h.logs.String())
	}
	gen := h.sup.Generation("fx")
	// Reconnecting does not restore the grant: the pin is what counts.
	if _, err := h.sup.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if again := catalogTool(t, h, "fx", "count"); again.Pin != contracts.PinChanged || again.Grant != contracts.GrantApproval {
		t.Fatalf("after reconnecting: grant %q pin %q, want still suspended", again.Grant, again.Pin)
	}
	if h.sup.Generation("fx") == gen {
		t.Fatal("the server was not reconnected")
	}

	// Moving the pin (what trust does) and refreshing restores the grant
	// on the live connection, without a re-discovery.
	live := catalogTool(t, h, "fx", "count")
	pins.set("fx", PinOf(live))
	loads := pins.loads
	if err := h.sup.RefreshPins("fx"); err != nil {
		t.Fatal(err)
	}
	if pins.loads == loads {
		t.Error("RefreshPins did not read the pins")
	}
	if got := catalogTool(t, h, "fx", "count"); got.Grant != contracts.GrantRead || got.Pin != contracts.PinPinned || got.SuspendedGrant != "" || got.PinnedDigest != "" {
		t.Fatalf("after the pin moved: %+v; want grant read, pinned", got)
	}
	if st := h.status("fx"); len(st.ChangedTools) != 0 {
		t.Errorf("status changedTools = %q after trust, want none", st.ChangedTools)
	}
	if err := h.sup.RefreshPins("nope"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("RefreshPins of an unknown server = %v, want ErrNotFound", err)
	}
}

// TestPinsUnreadable: when the pins cannot be read, granted tools lose
// their grants rather than keep them unchecked.
func TestPinsUnreadable(t *testing.T) {
	pins := newMemPins()
	pins.fail = errors.New("disk on fire")
	h := newHarness(t, CatalogLimits{}, func(o *Options) { o.Pins = pins })
	cfg, _ := h.redefineFixture("fx")
	h.sup.Apply([]contracts.ServerSettings{cfg})
	count := catalogTool(t, h, "fx", "count")
	if count.Grant != contracts.GrantApproval || count.Pin != contracts.PinUnchecked || count.SuspendedGrant != contracts.GrantRead {
		t.Fatalf("count with unreadable pins: %+v; want grant approval, pin unchecked", count)
	}
	if logCount(h, `"level":"error"`, "reading tool pins") == 0 {
		t.Errorf("the pin failure was not logged; log:\n%s", h.logs.String())
	}
}

// TestCallBoundDefinition: an approved call goes only if the tool's
// definition is still the one the approval covered, checked right before
// the request is written; otherwise nothing reaches the server.
func TestCallBoundDefinition(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	ctx := ctxT(t)
	cfg, callLog := h.redefineFixture("fx")
	h.sup.Apply([]contracts.ServerSettings{cfg})
	count := catalogTool(t, h, "fx", "count")
	bind := func(digest string) *Binding {
		return &Binding{ConnectionGeneration: h.sup.Generation("fx"), SettingsDigest: cfg.ApprovalDigest("count"), ToolDigest: digest}
	}
	sent := func() string {
		b, err := os.ReadFile(callLog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return string(b)
	}

	t.Run("another digest", func(t *testing.T) {
		_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: mustCanon(t, `{"nonce":"other"}`),
			Bound: bind(strings.Repeat("0", 64))})
		if reasonOf(err) != "definition_changed" || !errors.Is(err, contracts.ErrFailedPrecondition) || !strings.Contains(err.Error(), "nothing was sent") {
			t.Fatalf("Call bound to another digest = %v, want definition_changed", err)
		}
		if strings.Contains(sent(), "other") {
			t.Fatal("the call reached the server")
		}
	})

	t.Run("same digest", func(t *testing.T) {
		if _, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: mustCanon(t, `{"nonce":"same"}`),
			Bound: bind(count.Digest)}); err != nil {
			t.Fatalf("Call bound to the live digest: %v", err)
		}
		if !strings.Contains(sent(), "same\n") {
			t.Fatal("the call did not reach the server")
		}
	})

	t.Run("changed after the lookup", func(t *testing.T) {
		// The definition changes after Call looked the tool up (and found
		// the digest it was bound to) but before the request is written.
		var once sync.Once
		testHookBeforeDefinitionCheck = func() {
			once.Do(func() { h.redefine(ctx, "fx", "count", "Now deletes everything.") })
		}
		t.Cleanup(func() { testHookBeforeDefinitionCheck = nil })
		_, err := h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "count", Arguments: mustCanon(t, `{"nonce":"late"}`),
			Bound: bind(count.Digest)})
		if reasonOf(err) != "definition_changed" {
			t.Fatalf("Call whose definition moved before sending = %v, want definition_changed", err)
		}
		if strings.Contains(sent(), "late") {
			t.Fatal("the call reached the server although its definition moved")
		}
		// The connection is the same: only the definition moved.
		if st := h.status("fx"); st.State != contracts.StateConnected {
			t.Errorf("server state %q, want connected", st.State)
		}
	})
}
