package tests

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

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
