package tests

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// ipv6Loopback reports whether this machine can listen on [::1].
func ipv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// TestNetworkGuard checks the HTTP network guard end to end: http needs
// allowPrivateNetwork; without it no loopback, private or link-local
// address is ever dialled, whatever form the URL gives it; with it the
// exact origin works; redirects are never followed.
func TestNetworkGuard(t *testing.T) {
	t.Parallel()
	fx := startFixtureServer(t, "http", "127.0.0.1:0")
	_, port, err := net.SplitHostPort(fx.hostPort)
	if err != nil {
		t.Fatalf("fixture address %q: %v", fx.hostPort, err)
	}
	var fx6 *fixtureServer
	if ipv6Loopback() {
		fx6 = startFixtureServer(t, "http", "[::1]:0")
	} else {
		t.Log("no IPv6 loopback here: the [::1] case is left out")
	}
	d := startDaemon(t)

	t.Run("http needs allowPrivateNetwork", func(t *testing.T) {
		e := d.callErr(t, contracts.MethodConfigure, map[string]any{"extension": "mcp",
			"settings": json.RawMessage(mcpSettings(t, srv{"id": "plain", "transport": "http", "url": fx.url}))})
		if e.Reason() != "invalid_settings" || e.Data == nil || len(e.Data.Problems) != 1 {
			t.Fatalf("configure error %q reason %q data %+v, want invalid_settings with one problem", e.Message, e.Reason(), e.Data)
		}
		if p := e.Data.Problems[0]; p.Server != "plain" || p.Field != "url" || !strings.Contains(p.Message, "allowPrivateNetwork") {
			t.Errorf("problem %+v, want server plain, field url, a message naming allowPrivateNetwork", p)
		}
	})

	type blocked struct {
		id, url string
		// class is the address class the refusal names.
		class string
	}
	cases := []blocked{
		{"loop4", "https://" + fx.hostPort + "/mcp", "(loopback)"},
		{"localhost", "https://localhost:" + port + "/mcp", "(loopback)"},
		{"mapped", "https://[::ffff:127.0.0.1]:" + port + "/mcp", "(ipv4-mapped loopback)"},
		// Nothing listens on these: a dial would time out rather than be
		// refused at once with the class named.
		{"private", "https://10.0.0.1/mcp", "(private)"},
		{"metadata", "https://169.254.169.254/latest/mcp", "(link-local)"},
	}
	if fx6 != nil {
		cases = append(cases, blocked{"loop6", "https://" + fx6.hostPort + "/mcp", "(loopback)"})
	}
	servers := []srv{
		// The same origin as "loop4", allowed.
		remoteFixture("allowed", "http", fx.url),
	}
	for _, c := range cases {
		servers = append(servers, srv{"id": c.id, "transport": "http", "url": c.url, "timeoutMs": 3000})
	}
	configureMCP(t, d, mcpSettings(t, servers...))

	t.Run("non-public addresses are refused", func(t *testing.T) {
		for _, c := range cases {
			e := connectFails(t, d, c.id)
			t.Logf("%s: %s", c.id, e.Message)
			if !strings.Contains(e.Message, "refusing to connect") || !strings.Contains(e.Message, c.class) {
				t.Errorf("%s (%s): connect error %q, want a refusal naming %s", c.id, c.url, e.Message, c.class)
			}
			if strings.Contains(e.Message, "within timeoutMs") {
				t.Errorf("%s: connect error %q blames a timeout for an immediate refusal", c.id, e.Message)
			}
			if st := serverStatus(t, d, c.id); st.State != contracts.StateFailed || !strings.Contains(st.LastError, c.class) {
				t.Errorf("%s: state %q lastError %q, want failed naming %s", c.id, st.State, st.LastError, c.class)
			}
		}
		if n := fx.accepted(t); n != 0 {
			t.Errorf("the IPv4 fixture accepted %d connections, want 0", n)
		}
		if fx6 != nil {
			if n := fx6.accepted(t); n != 0 {
				t.Errorf("the IPv6 fixture accepted %d connections, want 0", n)
			}
		}
	})

	t.Run("allowPrivateNetwork allows its origin", func(t *testing.T) {
		st := connectServer(t, d, "allowed")
		if st.ProtocolVersion != modernVersion {
			t.Errorf("protocolVersion %q, want %s (http defaults to auto)", st.ProtocolVersion, modernVersion)
		}
		cat := catalogOf(t, d, "allowed")
		if !cat.Complete || len(cat.Tools) != fixedTools+3 {
			t.Errorf("catalog complete %v with %d tools, want complete with %d", cat.Complete, len(cat.Tools), fixedTools+3)
		}
		var ping contracts.PingResult
		d.callInto(t, contracts.MethodMCPPing, contracts.ServerParams{Server: "allowed"}, &ping)
		if ping.Server != "allowed" || ping.ProtocolVersion != st.ProtocolVersion {
			t.Errorf("ping %+v", ping)
		}
		// The accept log works: the zero counts above mean something.
		if n := fx.accepted(t); n == 0 {
			t.Errorf("the fixture logged no accepted connection although pikod talked to it")
		}
	})

	t.Run("redirects are refused", func(t *testing.T) {
		target := startFixtureServer(t, "http", "127.0.0.1:0")
		redirector := startFixtureServer(t, "http", "127.0.0.1:0", "--redirect-to", target.url)
		configureMCP(t, d, mcpSettings(t, remoteFixture("redirect", "http", redirector.url)))
		e := connectFails(t, d, "redirect")
		t.Logf("redirect: %s", e.Message)
		if !strings.Contains(e.Message, "redirect") || !strings.Contains(e.Message, target.hostPort) {
			t.Errorf("connect error %q, want a refused redirect naming %s", e.Message, target.hostPort)
		}
		if n := target.accepted(t); n != 0 {
			t.Errorf("the redirect target accepted %d connections, want 0", n)
		}
		if n := redirector.accepted(t); n == 0 {
			t.Errorf("the redirecting fixture was never reached")
		}
		if st := serverStatus(t, d, "redirect"); st.State != contracts.StateFailed {
			t.Errorf("the redirected server is %q, want failed", st.State)
		}
	})
}
