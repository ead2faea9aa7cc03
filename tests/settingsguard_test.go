package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestSettingsRefuseEmbeddedSecrets saves settings with a credential
// inside a longer value (a password in a URL, a password flag's value, a
// webhook URL whose path is the secret): each is refused naming the server
// and field, the value never appears in the answer or pikoctl's output,
// and the saved settings stay as they were.
func TestSettingsRefuseEmbeddedSecrets(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("ok")))
	saved := readSettings(t, d)
	const canary = "Canary7pw"
	for _, c := range []struct {
		name, field, what string
		server            srv
	}{
		{"url password in env", "env.DATABASE_URL", "password in this URL",
			stdioFixture("s").with("env", map[string]string{"DATABASE_URL": "postgres://app:" + canary + "@db.internal:5432/app"})},
		{"-p VALUE", "args[3]", "-p (a password flag)",
			stdioFixture("s", "-u", "root", "-p", canary)},
		{"--password VALUE", "args[1]", "credential",
			stdioFixture("s", "--password", canary)},
		{"--token VALUE", "args[1]", "credential",
			stdioFixture("s", "--token", canary)},
		{"--password=VALUE", "args[0]", "credential",
			stdioFixture("s", "--password="+canary)},
		{"slack webhook in args", "args[1]", "Slack webhook",
			stdioFixture("s", "--notify", "https://hooks.slack.com/services/T0001/B0001/"+canary)},
		{"discord webhook in env", "env.HOOK", "Discord webhook",
			stdioFixture("s").with("env", map[string]string{"HOOK": "https://discordapp.com/api/webhooks/42/" + canary})},
		{"slack webhook as url", "url", "Slack webhook",
			srv{"id": "s", "transport": "http", "url": "https://hooks.slack.com/services/T0001/B0001/" + canary}},
	} {
		t.Run(c.name, func(t *testing.T) {
			settings := mcpSettings(t, c.server)
			e := d.callErr(t, contracts.MethodConfigure, configureParams(settings, false))
			checkInvalid(t, e, []contracts.Problem{{Server: "s", Field: c.field}})
			found := false
			for _, p := range e.Data.Problems {
				found = found || (p.Field == c.field && strings.Contains(p.Message, c.what) && strings.Contains(p.Message, "pikoctl mcp secret s"))
			}
			if !found {
				t.Errorf("no problem for %s saying %q and where the secret goes: %+v", c.field, c.what, e.Data.Problems)
			}
			wire, _ := json.Marshal(e)
			if strings.Contains(string(wire), canary) {
				t.Errorf("the refusal shows the secret: %s", wire)
			}
			stdout, stderr, code := runCtl(t, d, settings, "mcp", "configure", "-")
			if code == 0 || !strings.Contains(stderr, c.field) {
				t.Errorf("pikoctl mcp configure exited %d, stderr %q; want a failure naming %s", code, stderr, c.field)
			}
			if strings.Contains(stdout+stderr, canary) {
				t.Errorf("pikoctl shows the secret:\n%s%s", stdout, stderr)
			}
			assertSettings(t, d, saved)
		})
	}
	// Ports after -p are not passwords.
	configureMCP(t, d, mcpSettings(t, stdioFixture("ports", "-p", "8080:80", "-p", "3000")))
}

// TestPlaintextHTTPNeverPublic: allowPrivateNetwork lets a server use
// plaintext http to loopback (it connects), never to a public address
// (refused before any packet, saying why).
func TestPlaintextHTTPNeverPublic(t *testing.T) {
	t.Parallel()
	fx := startFixtureServer(t, "http", "127.0.0.1:0")
	d := startDaemon(t)
	servers := []srv{remoteFixture("lan", "http", fx.url)}
	public := map[string]struct{ url, ip string }{
		"pub4": {"http://1.1.1.1:8080/mcp", "1.1.1.1"},
		"pub6": {"http://[2606:4700:4700::1111]/mcp", "2606:4700:4700::1111"},
	}
	for id, p := range public {
		servers = append(servers, remoteFixture(id, "http", p.url).with("timeoutMs", 3000))
	}
	configureMCP(t, d, mcpSettings(t, servers...))
	connectServer(t, d, "lan")
	for id, p := range public {
		e := connectFails(t, d, id)
		t.Logf("%s: %s", id, e.Message)
		if !strings.Contains(e.Message, "refusing plaintext http to "+p.ip+" (public)") ||
			!strings.Contains(e.Message, "only to loopback and private addresses") {
			t.Errorf("%s (%s): connect error %q, want a refusal of plaintext http to the public %s", id, p.url, e.Message, p.ip)
		}
		if st := serverStatus(t, d, id); st.State != contracts.StateFailed || !strings.Contains(st.LastError, "plaintext http") {
			t.Errorf("%s: state %q lastError %q, want failed saying why", id, st.State, st.LastError)
		}
	}
}
