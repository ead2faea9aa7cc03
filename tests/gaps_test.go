package tests

import (
	"testing"
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
