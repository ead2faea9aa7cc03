package tests

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestClearedCredentialsNeverBlock: credentials cleared with {} and then
// orphaned by an args change used to refuse the connect with
// credentials_reenter until {} was stored again. Cleared credentials send
// nothing, so they never block: the connect goes through and status says
// none.
func TestClearedCredentialsNeverBlock(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": newCanary(t, false)}})
	if res := storeSecret(t, d, "fx", map[string]any{}); !res.Cleared {
		t.Fatalf("clearing: %+v, want cleared", res)
	}
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--tools", "4")))
	if st := serverStatus(t, d, "fx"); st.Credentials != "none" {
		t.Errorf("after the args changed: credentials %q, want none", st.Credentials)
	}
	connectServer(t, d, "fx")
}

// TestArgsCredentialsRefused: settings that put a password in a stdio
// server's args as mysql (-pSECRET) or curl (-u user:pass, -uuser:pass)
// take it used to be saved as they were. They are refused, naming the
// argument and where to store the value, never quoting it; a uid:gid and
// a port still pass.
func TestArgsCredentialsRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	secret := "Zq" + randomHex(t, 6)
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"-h", "db", "-uroot", "-p" + secret}, "args[3]"},
		{[]string{"-u", "admin:" + secret, "https://x.example"}, "args[1]"},
		{[]string{"-uadmin:" + secret}, "args[0]"},
		{[]string{"--user=admin:" + secret}, "args[0]"},
	} {
		settings := mcpSettings(t, stdioFixture("fx", tc.args...))
		_, err := d.tryCall(t, contracts.MethodConfigure, map[string]any{"extension": "mcp", "settings": json.RawMessage(settings)})
		var we *contracts.Error
		if !errors.As(err, &we) || !strings.Contains(we.Message, tc.field) || !strings.Contains(we.Message, "pikoctl mcp secret") {
			t.Errorf("args %q: %v, want a refusal naming %s and pikoctl mcp secret", tc.args, err, tc.field)
			continue
		}
		if strings.Contains(mustJSONString(t, we), secret) {
			t.Errorf("the refusal quotes the value: %s", mustJSONString(t, we))
		}
	}
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "-u", "1000:1000", "-p", "8080", "-pthread")))
}

func mustJSONString(t testing.TB, v any) string { return string(mustJSON(t, v)) }

// TestKilledDuringApprovedCall: the owner approves a slow call with
// pikoctl rpc at a terminal and pikod is killed with SIGKILL while the
// call is out. pikoctl used to exit 3 (unreachable: a script would start
// pikod and try again); it exits 5 (uncertain). At the next start the
// action is uncertain and, new, has a receipt in the hash chain, which
// still verifies.
func TestKilledDuringApprovedCall(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx").with("tools", []string{"sleep", "echo"}, "readOnlyTools", []string{"echo"})))
	connectServer(t, d, "fx")
	prep := prepare(t, d, "fx", "sleep", `{"ms":30000}`)
	params := mustJSONString(t, contracts.ApproveParams{ActionID: prep.ActionID, Digest: prep.Digest, Decision: contracts.DecisionApprove})
	p := ctlTTY(t, d, "rpc", contracts.MethodMCPActionsApprove, params)
	deadline := time.Now().Add(60 * time.Second)
	for review(t, d, prep.ActionID).State != contracts.ActionDispatched {
		if time.Now().After(deadline) {
			t.Fatalf("the approved call never started: %+v", review(t, d, prep.ActionID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.kill9()
	out, code := p.wait(t)
	if code != 5 || !strings.Contains(out, "uncertain") {
		t.Errorf("pikoctl rpc approve when pikod died: exit %d, want 5 (uncertain); terminal:\n%s", code, out)
	}
	d.restart()
	r := review(t, d, prep.ActionID)
	if r.State != contracts.ActionUncertain || r.ReceiptID == "" {
		t.Fatalf("after the restart: %+v, want uncertain with a receipt", r)
	}
	var rs contracts.ReceiptsResult
	d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{ID: r.ReceiptID}, &rs)
	if len(rs.Receipts) != 1 || rs.Receipts[0].ActionID != prep.ActionID || rs.Receipts[0].Status != contracts.CallUncertain {
		t.Errorf("the receipt: %+v, want the action's, uncertain", rs.Receipts)
	}
	d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Verify: true}, &rs)
	if rs.Verification == nil || !rs.Verification.OK {
		t.Errorf("the chain after recovery: %+v, want it to verify", rs.Verification)
	}
}

// TestStderrLineBeingWritten: a server writes "secret: " and the first 12
// of its credential's 18 characters to stderr and stops there, without a
// newline. The stderr tail used to show the unfinished line, and with it
// 12 characters of the credential, which redaction cannot recognise until
// the value is whole. The unfinished line is held now.
func TestStderrLineBeingWritten(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--leak-env", "FX_SECRET", "--stderr-partial", "12", "--stderr-lines", "1")))
	secret := newCutCanary(t, 18)
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_SECRET": secret}})
	connectServer(t, d, "fx")
	time.Sleep(200 * time.Millisecond) // the fixture wrote it before it answered initialize
	for _, args := range [][]string{{"--json", "mcp", "status", "fx"}, {"mcp", "status", "fx"}} {
		stdout, stderr, code := runCtl(t, d, "", args...)
		if code != 0 {
			t.Fatalf("pikoctl %q: exit %d\n%s%s", args, code, stdout, stderr)
		}
		assertNoPiece(t, "pikoctl "+strings.Join(args, " "), []byte(stdout), secret)
	}
	if st := serverStatus(t, d, "fx"); !strings.Contains(st.StderrTail, "line") {
		t.Errorf("stderr tail %q, want the finished lines still shown", st.StderrTail)
	}
}
