package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestRefetchLists: a refetch reads only the lists named, keeps the others
// (and their problems and sizes) from the previous catalog, keeps the last
// entries of a list whose refetch fails (marking the catalog incomplete
// and the tools stale), and counts the lists it kept against the byte
// limit.
func TestRefetchLists(t *testing.T) {
	allCaps := serverCaps{tools: true, resources: true, prompts: true}
	cfg := &contracts.ServerSettings{ID: "fs", ReadOnlyTools: []string{"a"}}
	f := &fakeLister{pages: map[string]map[string]string{
		"tools/list":               {"": `{"tools":[{"name":"a"},{"name":"b"}]}`},
		"resources/list":           {"": `{"resources":[{"uri":"file:///r1","name":"r1"}]}`},
		"resources/templates/list": {"": `{"resourceTemplates":[]}`},
		"prompts/list":             {"": `{"prompts":[{"name":"p1"}]}`},
	}}
	ctx := context.Background()
	first := discover(ctx, f.fetch, cfg, allCaps, CatalogLimits{})
	if !first.Complete || len(first.Tools) != 2 || len(first.Prompts) != 1 {
		t.Fatalf("discovery: %+v", first)
	}

	t.Run("only the lists named are read", func(t *testing.T) {
		f.calls = nil
		f.pages["prompts/list"][""] = `{"prompts":[{"name":"p1"},{"name":"p2"}]}`
		cat, failed := refetchLists(ctx, f.fetch, cfg, allCaps, CatalogLimits{}, first, listSet(0).with(listPrompts))
		if !slices.Equal(f.calls, []string{"prompts/list@"}) || failed != 0 {
			t.Fatalf("calls %q failed %b, want prompts/list alone", f.calls, failed)
		}
		if !cat.Complete || len(cat.Prompts) != 2 || len(cat.Tools) != 2 || len(cat.Resources) != 1 || cat.toolsRead {
			t.Errorf("catalog %+v, want the new prompts and the old rest", cat)
		}
		if cat.Tools[0].Grant != contracts.GrantRead {
			t.Errorf("kept tool a has grant %q, want the settings' read back", cat.Tools[0].Grant)
		}
	})

	t.Run("a failed refetch keeps the last entries", func(t *testing.T) {
		f.calls = nil
		delete(f.pages, "tools/list") // fakeLister answers an error
		cat, failed := refetchLists(ctx, f.fetch, cfg, allCaps, CatalogLimits{}, first, listSet(0).with(listTools))
		if !failed.has(listTools) || cat.Complete || !cat.toolsStale {
			t.Fatalf("failed %b complete %v stale %v, want tools failed, incomplete, stale", failed, cat.Complete, cat.toolsStale)
		}
		if !strings.Contains(cat.Problem, "tools/list") || !strings.Contains(cat.Problem, "last complete read") {
			t.Errorf("problem %q does not say which list failed and what is shown", cat.Problem)
		}
		if names := toolNames(cat.Tools); !slices.Equal(names, []string{"a", "b"}) {
			t.Errorf("tools %q, want the last ones read", names)
		}
		// The next refetch of prompts alone keeps the problem; a good
		// tools refetch clears it.
		cat2, _ := refetchLists(ctx, f.fetch, cfg, allCaps, CatalogLimits{}, cat, listSet(0).with(listPrompts))
		if cat2.Complete || !cat2.toolsStale {
			t.Errorf("after a prompts refetch: complete %v stale %v, want the tools problem kept", cat2.Complete, cat2.toolsStale)
		}
		f.pages["tools/list"] = map[string]string{"": `{"tools":[{"name":"a"},{"name":"c"}]}`}
		cat3, failed := refetchLists(ctx, f.fetch, cfg, allCaps, CatalogLimits{}, cat2, listSet(0).with(listTools))
		if failed != 0 || !cat3.Complete || cat3.toolsStale || !slices.Equal(toolNames(cat3.Tools), []string{"a", "c"}) {
			t.Errorf("after a good refetch: failed %b complete %v stale %v tools %q", failed, cat3.Complete, cat3.toolsStale, toolNames(cat3.Tools))
		}
	})

	t.Run("the lists kept count against the byte limit", func(t *testing.T) {
		f.pages["tools/list"] = map[string]string{"": `{"tools":[{"name":"a"},{"name":"b"}]}`}
		lim := CatalogLimits{MaxBytes: first.sizes[listTools] + first.sizes[listResources] + first.sizes[listTemplates] + first.sizes[listPrompts]}
		f.pages["prompts/list"][""] = `{"prompts":[{"name":"p1"},{"name":"a-longer-prompt-name"}]}`
		cat, failed := refetchLists(ctx, f.fetch, cfg, allCaps, lim, first, listSet(0).with(listPrompts))
		if failed != 0 || cat.Complete || !strings.Contains(cat.Problem, "larger than") {
			t.Errorf("failed %b complete %v problem %q, want a limit (not retried)", failed, cat.Complete, cat.Problem)
		}
	})

	t.Run("lists not offered are not read", func(t *testing.T) {
		f.calls = nil
		off := &contracts.ServerSettings{ID: "fs", Prompts: ptr(false)}
		cat, _ := refetchLists(ctx, f.fetch, off, allCaps, CatalogLimits{}, first, listSet(0).with(listPrompts))
		if len(f.calls) != 0 || len(cat.Prompts) != 0 {
			t.Errorf("calls %q prompts %d, want nothing read and no prompts", f.calls, len(cat.Prompts))
		}
	})
}

// TestSupervisorRefetch drives a fixture through list_changed: a refetch
// replaces the catalog and emits a catalog event; a refetch that fails
// keeps the last tools with their grants suspended (a bound call is
// refused) and says why, and a later one restores everything; a granted
// tool redefined by the server loses its grant after the refetch exactly
// as after a connect.
func TestSupervisorRefetch(t *testing.T) {
	var mu sync.Mutex
	var events []contracts.CatalogEventData
	pins := newMemPins()
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.Pins = pins
		o.Event = func(ev contracts.EventParams) {
			if ev.Kind != contracts.EventCatalog {
				return
			}
			var d contracts.CatalogEventData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Errorf("catalog event data %s: %v", ev.Data, err)
			}
			mu.Lock()
			events = append(events, d)
			mu.Unlock()
		}
	})
	waitEvent := func(what string, ok func(contracts.CatalogEventData) bool) contracts.CatalogEventData {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			for _, e := range events {
				if ok(e) {
					mu.Unlock()
					return e
				}
			}
			mu.Unlock()
			if time.Now().After(deadline) {
				t.Fatalf("no catalog event %s; got %+v", what, events)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx := ctxT(t)
	dir := t.TempDir()
	cfg := h.stdio("fx", "--list-faults", "--state-file", dir+"/state.json")
	cfg.ReadOnlyTools = []string{"echo", "redefine", "fail-lists"}
	h.sup.Apply([]contracts.ServerSettings{cfg})
	cat, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	tool := func(cat contracts.CatalogResult, name string) contracts.CatalogTool {
		for _, t := range cat.Tools {
			if t.OriginalName == name {
				return t
			}
		}
		t.Fatalf("no tool %q in %q", name, toolNames(cat.Tools))
		return contracts.CatalogTool{}
	}
	echo := tool(cat, "echo")
	if echo.Grant != contracts.GrantRead || echo.Pin != contracts.PinPinned {
		t.Fatalf("echo %+v, want read and pinned", echo)
	}

	// A failing refetch.
	if _, err := h.sup.CallTool(ctx, "fx", "fail-lists", json.RawMessage(`{"ms":3000}`)); err != nil {
		t.Fatal(err)
	}
	bad := waitEvent("marking the catalog incomplete", func(e contracts.CatalogEventData) bool { return !e.Complete })
	if !slices.Equal(bad.Lists, []string{contracts.ListTools}) || !strings.Contains(bad.Problem, "LIST FAULT") || bad.Counts.Tools != len(cat.Tools) {
		t.Errorf("failure event %+v, want tools, the server's error and the last tools counted", bad)
	}
	cat, err = h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	if e := tool(cat, "echo"); cat.Complete || e.Grant != contracts.GrantApproval || e.SuspendedGrant != contracts.GrantRead || e.Pin != contracts.PinUnchecked {
		t.Errorf("during the fault: complete %v, echo %+v; want incomplete and echo's grant suspended (unchecked)", cat.Complete, e)
	}
	_, err = h.sup.Call(ctx, CallRequest{Server: "fx", Tool: "echo", Arguments: json.RawMessage(`{"text":"x"}`),
		Bound: &Binding{ToolDigest: echo.Digest, ConnectionGeneration: h.sup.Generation("fx"), SettingsDigest: cfg.ApprovalDigest("echo")}})
	if reasonOf(err) != "catalog_stale" {
		t.Errorf("a bound call during the fault: %v, want catalog_stale", err)
	}
	// The fault ends; the fixture announces it; all is back.
	waitEvent("complete again", func(e contracts.CatalogEventData) bool { return e.Complete })
	cat, err = h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	if e := tool(cat, "echo"); !cat.Complete || e.Grant != contracts.GrantRead || e.Pin != contracts.PinPinned {
		t.Errorf("after the fault: complete %v, echo %+v; want complete, read, pinned", cat.Complete, e)
	}

	// A redefinition through list_changed: pins apply as at a connect.
	if _, err := h.sup.CallTool(ctx, "fx", "redefine", json.RawMessage(`{"tool":"echo","description":"changed"}`)); err != nil {
		t.Fatal(err)
	}
	changed := waitEvent("with echo changed", func(e contracts.CatalogEventData) bool { return slices.Contains(e.ChangedTools, "echo") })
	if !changed.Complete {
		t.Errorf("redefinition event %+v, want complete", changed)
	}
	cat, _ = h.sup.Catalog(ctx, "fx")
	if e := tool(cat, "echo"); e.Description != "changed" || e.Pin != contracts.PinChanged || e.Grant != contracts.GrantApproval || e.PinnedDigest != echo.Digest {
		t.Errorf("redefined echo %+v, want its grant suspended with the old digest pinned", e)
	}
	if e := tool(cat, "redefine"); e.Grant != contracts.GrantRead {
		t.Errorf("unchanged redefine lost its grant: %+v", e)
	}
}
