package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestLivePolicy: grants, revocations and timeouts apply to the running
// server (same process, same connection generation) and keep the prepared
// actions whose tool is still selected; deselecting a tool makes its
// actions stale; a change to how the server is started reconnects it.
func TestLivePolicy(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)
	before := serverStatus(t, d, "fx")
	same := func(when string) {
		t.Helper()
		st := serverStatus(t, d, "fx")
		if st.State != contracts.StateConnected || st.PID != before.PID || st.Generation != before.Generation {
			t.Fatalf("%s: fx is %s with pid %d generation %d, want connected with pid %d generation %d (no restart)",
				when, st.State, st.PID, st.Generation, before.PID, before.Generation)
		}
	}
	grantOf := func(tool string) string {
		t.Helper()
		var cat contracts.CatalogResult
		d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "fx"}, &cat)
		for _, c := range cat.Tools {
			if c.OriginalName == tool {
				return c.Grant
			}
		}
		t.Fatalf("fx's catalog has no %q", tool)
		return ""
	}

	nonce := "live-" + randomHex(t, 8)
	kept := prepareCount(t, d, "fx", nonce)

	// Several tools in one grant, applied live.
	out := ctlOK(t, d, "", "mcp", "grant", "fx", "tool-0001", "notify-list-changed", "--autonomous")
	for _, want := range []string{"applied live: fx", `widens: server "fx": "tool-0001" runs without approval (autonomousTools)`,
		`widens: server "fx": "notify-list-changed" runs without approval (autonomousTools)`} {
		if !strings.Contains(out, want) {
			t.Errorf("grant of two tools lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "disconnected") {
		t.Errorf("a grant disconnected the server:\n%s", out)
	}
	same("after the grant")
	if g := grantOf("tool-0001"); g != contracts.GrantAutonomous {
		t.Errorf("tool-0001's grant after the live grant is %q, want autonomous", g)
	}
	if g := grantOf("notify-list-changed"); g != contracts.GrantAutonomous {
		t.Errorf("notify-list-changed's grant after the live grant is %q, want autonomous", g)
	}

	// A timeout is pikod's own limit: live too.
	settings := readSettings(t, d)
	var s contracts.MCPSettings
	if err := json.Unmarshal(settings.Settings, &s); err != nil {
		t.Fatal(err)
	}
	s.Servers[0].TimeoutMs = 9000
	res := configureMCP(t, d, string(s.Canonical()))
	if !slices.Equal(res.Live, []string{"fx"}) || len(res.Disconnected) != 0 {
		t.Errorf("a timeout change: live %v disconnected %v, want live [fx]", res.Live, res.Disconnected)
	}
	same("after the timeout change")

	// The action prepared before both changes is still approvable, and
	// approving it sends it once.
	wantState(t, d, kept.ActionID, contracts.ActionPrepared)
	p := ctlTTY(t, d, "mcp", "approve", kept.ActionID)
	p.waitFor(t, approvePrompt)
	p.typeLine(t, suffixOf(kept.Digest))
	if out, code := p.wait(t); code != 0 || !strings.Contains(out, "status: completed") {
		t.Fatalf("approving the action kept across live changes: exit %d\n%s", code, out)
	}
	wantNonce(t, callLog, nonce, 1)

	// Deselecting a tool is live too, and its prepared actions go stale.
	gone := prepareCount(t, d, "fx", "gone-"+randomHex(t, 8))
	if out := ctlOK(t, d, "", "mcp", "revoke", "fx", "count", "tool-0001", "--deselect"); !strings.Contains(out, "applied live: fx") {
		t.Errorf("revoke --deselect of two tools printed:\n%s", out)
	}
	same("after the revocation")
	if r := wantState(t, d, gone.ActionID, contracts.ActionStale); !strings.Contains(r.Reason, "settings changed") {
		t.Errorf("the action of a deselected tool is stale for %q, want the settings", r.Reason)
	}
	if g := grantOf("tool-0001"); g != contracts.GrantNotSelected {
		t.Errorf("tool-0001 after revoke --deselect is %q, want not_selected", g)
	}

	// --all-read-only grants what claims readOnlyHint, only once confirmed.
	ctlOK(t, d, "", "mcp", "revoke", "fx", "echo")
	if g := grantOf("echo"); g != contracts.GrantApproval {
		t.Fatalf("echo after revoke is %q, want approval", g)
	}
	if e := ctlFails(t, d, 1, "mcp", "grant", "fx", "--read", "--all-read-only"); !strings.Contains(e, "  echo") ||
		!strings.Contains(e, "not a guarantee") || !strings.Contains(e, "nothing was changed") {
		t.Errorf("--all-read-only without a terminal or --yes said:\n%s", e)
	}
	if g := grantOf("echo"); g != contracts.GrantApproval {
		t.Errorf("an unconfirmed --all-read-only granted echo: %q", g)
	}
	stdout, stderr, code := runCtl(t, d, "", "mcp", "grant", "fx", "--read", "--all-read-only", "--yes")
	if code != 0 || !strings.Contains(stderr, "  echo") || !strings.Contains(stdout, "applied live: fx") {
		t.Errorf("--all-read-only --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if g := grantOf("echo"); g != contracts.GrantRead {
		t.Errorf("echo after --all-read-only --yes is %q, want read", g)
	}
	if e := ctlFails(t, d, 2, "mcp", "grant", "fx", "echo", "--read", "--all-read-only"); !strings.Contains(e, "no TOOL") {
		t.Errorf("--all-read-only with a TOOL said %q", e)
	}
	same("after --all-read-only")

	// How the server is started is not policy: it reconnects.
	if err := json.Unmarshal(readSettings(t, d).Settings, &s); err != nil {
		t.Fatal(err)
	}
	s.Servers[0].Env = map[string]string{"LIVE_TEST": "1"}
	if res := configureMCP(t, d, string(s.Canonical())); !slices.Equal(res.Disconnected, []string{"fx"}) || len(res.Live) != 0 {
		t.Errorf("an env change: live %v disconnected %v, want disconnected [fx]", res.Live, res.Disconnected)
	}
	if st := connectServer(t, d, "fx"); st.PID == before.PID || st.Generation == before.Generation {
		t.Errorf("after an env change fx still runs pid %d generation %d", st.PID, st.Generation)
	}
}
