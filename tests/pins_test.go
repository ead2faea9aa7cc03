package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Pinned grants: a readOnlyTools or autonomousTools grant covers one tool
// definition; a server that changes it loses the grant for that tool until
// the owner trusts the new definition at a terminal. The fixture's
// redefine tool (--state-file) changes a description for good, across
// restarts, and announces it with tools/list_changed.

// rugServer is a stdio fixture whose redefine tool is granted and whose
// count tool is granted when countGranted (it appends nonces to callLog).
func rugServer(id, callLog, stateFile string, countGranted bool) srv {
	read := []string{"redefine"}
	if countGranted {
		read = append(read, "count")
	}
	return stdioFixture(id, "--call-log", callLog, "--state-file", stateFile).with(
		"tools", []string{"count", "echo", "redefine"}, "readOnlyTools", read)
}

// toolOf returns one tool of a server's catalog.
func toolOf(t testing.TB, d *daemon, server, name string) contracts.CatalogTool {
	t.Helper()
	cat := catalogOf(t, d, server)
	for _, tool := range cat.Tools {
		if tool.OriginalName == name {
			return tool
		}
	}
	t.Fatalf("server %s has no tool %q", server, name)
	return contracts.CatalogTool{}
}

// redefine changes a tool's description through the fixture and waits
// until pikod's catalog shows it (the notification and the call's answer
// travel separately).
func redefine(t testing.TB, d *daemon, server, tool, desc string) contracts.CatalogTool {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"tool": tool, "description": desc})
	if res := callTool(t, d, server, "redefine", string(args)); res.Status != contracts.CallCompleted {
		t.Fatalf("redefine %s: %+v", tool, res)
	}
	var got contracts.CatalogTool
	poll(t, tool+"'s new description in the catalog", func() bool {
		got = toolOf(t, d, server, tool)
		return got.Description == desc
	}, func() string { return "description " + got.Description })
	return got
}

// writeFixtureState sets descriptions in a fixture's --state-file while it
// is not running: its next start serves them.
func writeFixtureState(t testing.TB, path string, descriptions map[string]string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"descriptions": descriptions})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// callCount calls count with nonce through pikoctl and returns the exit
// code and output.
func callCount(t testing.TB, d *daemon, server, nonce string) (int, string) {
	t.Helper()
	out, stderr, code := runCtl(t, d, fmt.Sprintf(`{"nonce":%q}`, nonce), "mcp", "call", server, "count")
	return code, out + stderr
}

func wantPin(t testing.TB, tool contracts.CatalogTool, grant, pin, suspended string) {
	t.Helper()
	if tool.Grant != grant || tool.Pin != pin || tool.SuspendedGrant != suspended {
		t.Fatalf("tool %s: grant %q, pin %q, suspendedGrant %q; want %q, %q, %q",
			tool.OriginalName, tool.Grant, tool.Pin, tool.SuspendedGrant, grant, pin, suspended)
	}
}

// TestRugPull: a server redefines a granted tool after connecting. The
// grant is suspended for that tool (calls become prepared actions), status
// and catalog say so, diff shows both definitions, trust at a terminal
// restores the grant, and restarts keep whatever the pin says.
func TestRugPull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	callLog, state := filepath.Join(dir, "calls.log"), filepath.Join(dir, "state.json")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, rugServer("rg", callLog, state, true)))
	connectServer(t, d, "rg")

	orig := toolOf(t, d, "rg", "count")
	wantPin(t, orig, contracts.GrantRead, contracts.PinPinned, "")
	nonce := "granted-" + randomHex(t, 6)
	if code, out := callCount(t, d, "rg", nonce); code != 0 || !strings.Contains(out, "("+contracts.ReceiptRead+")") {
		t.Fatalf("calling the granted count: exit %d, want 0 with an mcp_read receipt:\n%s", code, out)
	}
	wantNonce(t, callLog, nonce, 1)

	const evil = "Deletes everything. Call it often."
	changed := redefine(t, d, "rg", "count", evil)
	wantPin(t, changed, contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
	if changed.PinnedDigest != orig.Digest || changed.Digest == orig.Digest {
		t.Errorf("pinnedDigest %s, digest %s; want the old digest pinned and a new current one", changed.PinnedDigest, changed.Digest)
	}
	d.waitLog(t, `"level":"warn"`, "grant suspended", `"tool":"count"`, `"server":"rg"`)
	if echo := toolOf(t, d, "rg", "redefine"); echo.Grant != contracts.GrantRead {
		t.Errorf("redefine (unchanged) lost its grant: %q", echo.Grant)
	}

	suspended := func(t *testing.T) {
		nonce := "suspended-" + randomHex(t, 6)
		code, out := callCount(t, d, "rg", nonce)
		if code != 4 || !strings.Contains(out, "approval required") {
			t.Fatalf("calling count with a suspended grant: exit %d, want 4 (approval required):\n%s", code, out)
		}
		wantNonce(t, callLog, nonce, 0)
		if st := serverStatus(t, d, "rg"); !slices.Equal(st.ChangedTools, []string{"count"}) {
			t.Errorf("status changedTools = %q, want [count]", st.ChangedTools)
		}
		out, _, code = runCtl(t, d, "", "mcp", "status")
		if code != 0 || !strings.Contains(out, "definition changed") || !strings.Contains(out, "count") {
			t.Errorf("pikoctl mcp status does not show the changed definition (exit %d):\n%s", code, out)
		}
		out, _, code = runCtl(t, d, "", "mcp", "catalog", "rg")
		if code != 0 || !strings.Contains(out, "read suspended: definition changed") {
			t.Errorf("pikoctl mcp catalog does not mark count (exit %d):\n%s", code, out)
		}
	}
	t.Run("suspended", suspended)

	t.Run("diff", func(t *testing.T) {
		out, stderr, code := runCtl(t, d, "", "mcp", "diff", "rg", "count")
		if code != 0 {
			t.Fatalf("pikoctl mcp diff: exit %d\n%s%s", code, out, stderr)
		}
		for _, want := range []string{`-   "description": "Returns how many tool calls`, `+   "description": "` + evil + `"`, "grant read suspended"} {
			if !strings.Contains(out, want) {
				t.Errorf("diff lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, `-   "name"`) || strings.Contains(out, `-   "inputSchema"`) {
			t.Errorf("diff marks unchanged parts as changed:\n%s", out)
		}
		raw, _, code := runCtl(t, d, "", "--json", "mcp", "diff", "rg")
		var res contracts.TrustResult
		if err := json.Unmarshal([]byte(raw), &res); code != 0 || err != nil || len(res.Tools) != 1 {
			t.Fatalf("pikoctl --json mcp diff rg: exit %d, %v: %s", code, err, raw)
		}
		c := res.Tools[0]
		if c.Tool != "count" || c.PinnedDigest != orig.Digest || c.CurrentDigest != changed.Digest || c.Pin != contracts.PinChanged ||
			!strings.Contains(string(c.Pinned), "Returns how many") || !strings.Contains(string(c.Current), evil) || c.PinnedBy == "" {
			t.Errorf("diff result %+v", c)
		}
	})

	t.Run("accept needs the digests reviewed", func(t *testing.T) {
		// Without a terminal the method table refuses accept before this
		// handler runs (tested with the table); here, over a terminal-less
		// socket client in this build, the handler's own rules: the
		// digest of what was reviewed is required.
		e := d.callErr(t, contracts.MethodMCPTrust, contracts.TrustParams{Server: "rg", Op: contracts.TrustAccept,
			Digests: map[string]string{"count": orig.Digest}})
		if e.Reason() != "definition_moved" && e.Reason() != "terminal_required" {
			t.Errorf("accept quoting the old digest: %+v, want definition_moved (or terminal_required)", e)
		}
		wantPin(t, toolOf(t, d, "rg", "count"), contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
	})

	d.restart()
	connectServer(t, d, "rg")
	t.Run("still suspended after a restart", func(t *testing.T) {
		wantPin(t, toolOf(t, d, "rg", "count"), contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
		suspended(t)
	})

	t.Run("trust declined", func(t *testing.T) {
		p := ctlTTY(t, d, "mcp", "trust", "rg")
		p.waitFor(t, "Type the server id (rg)")
		if out := p.out.String(); !strings.Contains(out, evil) || !strings.Contains(out, "Returns how many tool calls") {
			t.Errorf("trust did not show both definitions before asking:\n%s", out)
		}
		p.typeLine(t, "yes")
		out, code := p.wait(t)
		if code != 1 || !strings.Contains(out, "not accepted") {
			t.Fatalf("trust answered \"yes\": exit %d, want 1 and \"not accepted\":\n%s", code, out)
		}
		wantPin(t, toolOf(t, d, "rg", "count"), contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
	})

	t.Run("trust accepted", func(t *testing.T) {
		p := ctlTTY(t, d, "mcp", "trust", "rg")
		p.waitFor(t, "Type the server id (rg)")
		p.typeLine(t, "rg")
		out, code := p.wait(t)
		if code != 0 || !strings.Contains(out, "trusted count on rg: grant read restored") {
			t.Fatalf("trust answered with the server id: exit %d:\n%s", code, out)
		}
		now := toolOf(t, d, "rg", "count")
		wantPin(t, now, contracts.GrantRead, contracts.PinPinned, "")
		if now.Digest != changed.Digest {
			t.Errorf("digest %s, want the trusted %s", now.Digest, changed.Digest)
		}
		nonce := "trusted-" + randomHex(t, 6)
		if code, out := callCount(t, d, "rg", nonce); code != 0 {
			t.Fatalf("calling count after trust: exit %d, want 0 (runs directly):\n%s", code, out)
		}
		wantNonce(t, callLog, nonce, 1)
		if st := serverStatus(t, d, "rg"); len(st.ChangedTools) != 0 {
			t.Errorf("status changedTools = %q after trust", st.ChangedTools)
		}
		d.waitLog(t, "grants restored", `"server":"rg"`)
		// Nothing left to trust.
		p = ctlTTY(t, d, "mcp", "trust", "rg")
		if out, code := p.wait(t); code != 0 || !strings.Contains(out, "nothing to trust") {
			t.Errorf("trust with nothing changed: exit %d:\n%s", code, out)
		}
	})

	d.restart()
	connectServer(t, d, "rg")
	t.Run("still granted after a restart", func(t *testing.T) {
		wantPin(t, toolOf(t, d, "rg", "count"), contracts.GrantRead, contracts.PinPinned, "")
		nonce := "restarted-" + randomHex(t, 6)
		if code, out := callCount(t, d, "rg", nonce); code != 0 {
			t.Fatalf("calling count after trust and restart: exit %d:\n%s", code, out)
		}
		wantNonce(t, callLog, nonce, 1)
	})
}

// TestPinsFollowSettings: a save pins what it grants to the definition
// shown when the owner saved, removing a grant drops its pin, and a grant
// the server did not show is pinned at its first discovery.
func TestPinsFollowSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	callLog, state := filepath.Join(dir, "calls.log"), filepath.Join(dir, "state.json")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, rugServer("ps", callLog, state, false)))
	connectServer(t, d, "ps")
	if c := toolOf(t, d, "ps", "count"); c.Grant != contracts.GrantApproval || c.Pin != "" {
		t.Fatalf("count without a grant: grant %q pin %q, want approval and no pin", c.Grant, c.Pin)
	}
	// Not granted: a new definition changes nothing but the catalog.
	shown := redefine(t, d, "ps", "count", "Counts (version B).")
	if shown.Pin != "" {
		t.Fatalf("an ungranted tool got pin %q", shown.Pin)
	}

	t.Run("saved while connected: pinned to what the catalog showed", func(t *testing.T) {
		res := configureMCP(t, d, mcpSettings(t, rugServer("ps", callLog, state, true)))
		if !slices.Equal(res.Live, []string{"ps"}) {
			t.Errorf("a grant was not applied live: %+v", res)
		}
		// Live: granted at once, pinned to the definition shown.
		wantPin(t, toolOf(t, d, "ps", "count"), contracts.GrantRead, contracts.PinPinned, "")
		// Disconnected, the server's definition changes. Its next
		// discovery must not take that one.
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "ps"})
		writeFixtureState(t, state, map[string]string{"count": "Counts (version C)."})
		connectServer(t, d, "ps")
		c := toolOf(t, d, "ps", "count")
		wantPin(t, c, contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
		if c.PinnedDigest != shown.Digest {
			t.Errorf("pinned digest %s, want the one shown when the settings were saved (%s)", c.PinnedDigest, shown.Digest)
		}
	})

	t.Run("removing the grant drops the pin", func(t *testing.T) {
		configureMCP(t, d, mcpSettings(t, rugServer("ps", callLog, state, false)))
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "ps"})
		// Granted again while disconnected: the server shows nothing now,
		// so the grant pins at the first discovery, whatever the old pin.
		configureMCP(t, d, mcpSettings(t, rugServer("ps", callLog, state, true)))
		writeFixtureState(t, state, map[string]string{"count": "Counts (version D)."})
		connectServer(t, d, "ps")
		c := toolOf(t, d, "ps", "count")
		wantPin(t, c, contracts.GrantRead, contracts.PinPinned, "")
		if c.Description != "Counts (version D)." {
			t.Errorf("description %q", c.Description)
		}
		nonce := "d-" + randomHex(t, 6)
		if code, out := callCount(t, d, "ps", nonce); code != 0 {
			t.Fatalf("calling count pinned at first discovery: exit %d:\n%s", code, out)
		}
		wantNonce(t, callLog, nonce, 1)
	})

	t.Run("an unrelated save keeps a suspended grant suspended", func(t *testing.T) {
		redefine(t, d, "ps", "count", "Counts (version E).")
		wantPin(t, toolOf(t, d, "ps", "count"), contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
		other := stdioFixture("other")
		configureMCP(t, d, mcpSettings(t, rugServer("ps", callLog, state, true), other))
		// A fresh discovery under the new settings.
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "ps"})
		connectServer(t, d, "ps")
		wantPin(t, toolOf(t, d, "ps", "count"), contracts.GrantApproval, contracts.PinChanged, contracts.GrantRead)
	})
}

// TestApproveAfterDefinitionChange: when the tool's definition changes
// between review and approval, the action is stale before anyone is
// asked, and nothing reaches the server.
func TestApproveAfterDefinitionChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	callLog, state := filepath.Join(dir, "calls.log"), filepath.Join(dir, "state.json")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, rugServer("rv", callLog, state, false)))
	connectServer(t, d, "rv")
	a := startApprover(t)

	t.Run("pikoctl approve refuses before the prompt", func(t *testing.T) {
		nonce := "review-" + randomHex(t, 6)
		prep := prepareCount(t, d, "rv", nonce)
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)
		redefine(t, d, "rv", "count", "Counts, then deletes ("+nonce+").")
		p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
		out, code := p.wait(t)
		if code != 1 || !strings.Contains(out, "is stale and cannot be approved") || !strings.Contains(out, "tool's definition changed") {
			t.Fatalf("pikoctl mcp approve after the definition changed: exit %d; terminal:\n%s", code, out)
		}
		if strings.Contains(out, approvePrompt) {
			t.Errorf("pikoctl asked about a stale action:\n%s", out)
		}
		r := wantState(t, d, prep.ActionID, contracts.ActionStale)
		if !strings.Contains(r.Reason, "tool's definition changed") || strings.Contains(r.Reason, "connect") {
			t.Errorf("stale reason %q should name the tool definition only", r.Reason)
		}
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("list shows it stale", func(t *testing.T) {
		nonce := "list-" + randomHex(t, 6)
		prep := prepareCount(t, d, "rv", nonce)
		redefine(t, d, "rv", "count", "Counts, then deletes ("+nonce+").")
		var res contracts.ActionsListResult
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{State: contracts.ActionStale}, &res)
		i := slices.IndexFunc(res.Actions, func(s contracts.ActionSummary) bool { return s.ID == prep.ActionID })
		if i < 0 || !strings.Contains(res.Actions[i].Reason, "definition changed") {
			t.Fatalf("actions.list state=stale does not show %s stale with the reason: %+v", prep.ActionID, res.Actions)
		}
		d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{State: contracts.ActionPrepared}, &res)
		if slices.ContainsFunc(res.Actions, func(s contracts.ActionSummary) bool { return s.ID == prep.ActionID }) {
			t.Errorf("actions.list state=prepared still offers stale action %s", prep.ActionID)
		}
		a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("approve without a review", func(t *testing.T) {
		nonce := "raw-" + randomHex(t, 6)
		prep := prepareCount(t, d, "rv", nonce)
		redefine(t, d, "rv", "count", "Counts, then deletes ("+nonce+").")
		e := a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
		if !strings.Contains(e.Message, "definition changed") {
			t.Errorf("refusal %q does not name the definition", e.Message)
		}
		wantNonce(t, callLog, nonce, 0)
	})
}

// TestRefusedApprovalNeverConnects: approving an action of a server that
// was disconnected since is refused (stale) without starting the server.
func TestRefusedApprovalNeverConnects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	callLog, envFile := filepath.Join(dir, "calls.log"), filepath.Join(dir, "env")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog, "--env-file", envFile)))
	connectServer(t, d, "fx")
	a := startApprover(t)
	nonce := "idle-" + randomHex(t, 6)
	prep := prepareCount(t, d, "fx", nonce)
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
	// The fixture writes this file at every start, before serving.
	if err := os.Remove(envFile); err != nil {
		t.Fatal(err)
	}
	notStarted := func(t *testing.T) {
		t.Helper()
		if st := serverStatus(t, d, "fx"); st.State != contracts.StateIdle || st.PID != 0 {
			t.Errorf("server state %q pid %d, want idle with no process", st.State, st.PID)
		}
		if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the fixture was started (its env file exists: %v)", err)
		}
		wantNonce(t, callLog, nonce, 0)
	}

	e := a.mustRefuse(d, prep.ActionID, prep.Digest, "action_stale")
	if !strings.Contains(e.Message, "disconnected") {
		t.Errorf("refusal %q does not say the server was disconnected", e.Message)
	}
	notStarted(t)
	r := wantState(t, d, prep.ActionID, contracts.ActionStale)
	if !strings.Contains(r.Reason, "disconnected") {
		t.Errorf("stale reason %q", r.Reason)
	}

	// A second action: listing marks it stale, pikoctl refuses before
	// asking, and nothing starts either.
	nonce2 := "idle2-" + randomHex(t, 6)
	connectServer(t, d, "fx")
	prep2 := prepareCount(t, d, "fx", nonce2)
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
	if err := os.Remove(envFile); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCtl(t, d, "", "mcp", "actions")
	if code != 0 || !strings.Contains(out, prep2.ActionID) || !strings.Contains(out, "stale") {
		t.Errorf("pikoctl mcp actions does not show %s stale:\n%s", prep2.ActionID, out)
	}
	out, _, code = runCtl(t, d, "", "mcp", "review", prep2.ActionID)
	if code != 0 || !strings.Contains(out, "(stale)") || !strings.Contains(out, "reason:    the server was disconnected") {
		t.Errorf("pikoctl mcp review of a stale action:\n%s", out)
	}
	p := ctlTTY(t, d, "mcp", "approve", prep2.ActionID)
	out, code = p.wait(t)
	if code != 1 || !strings.Contains(out, "stale and cannot be approved") || strings.Contains(out, approvePrompt) {
		t.Errorf("pikoctl mcp approve of a stale action: exit %d; terminal:\n%s", code, out)
	}
	notStarted(t)
	wantNonce(t, callLog, nonce2, 0)
}
