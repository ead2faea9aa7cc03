package tests

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pikod/pikod/contracts"
)

// pinnedPeer is a Streamable HTTP MCP server on 127.0.0.1 with TLS (the
// httptest certificate, trusted by no one) that requires a bearer token:
// the shape of a desktop bridge, with two tools of the playwright preset.
type pinnedPeer struct {
	*httptest.Server
	token string
	// authorized and refused count the requests with the token and
	// without it.
	authorized, refused atomic.Int64
}

func newToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func startPinnedPeer(t *testing.T) *pinnedPeer {
	t.Helper()
	s := server.NewMCPServer("peer", "1.0.0", server.WithToolCapabilities(false))
	for _, name := range []string{"browser_navigate", "browser_evaluate"} {
		s.AddTool(mcp.NewTool(name, mcp.WithString("url")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name + " done: " + req.GetString("url", "")), nil
		})
	}
	p := &pinnedPeer{token: newToken(t)}
	mcpHandler := server.NewStreamableHTTPServer(s)
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+p.token {
			p.refused.Add(1)
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		p.authorized.Add(1)
		mcpHandler.ServeHTTP(w, r)
	}))
	p.EnableHTTP2 = true
	p.StartTLS()
	t.Cleanup(p.Close)
	return p
}

// pairing returns pairing JSON for the peer with pin as its fingerprint.
func (p *pinnedPeer) pairing(t *testing.T, token, pin string) string {
	t.Helper()
	b, err := json.Marshal(contracts.BrowserPairing{Version: contracts.BrowserPairingVersion, URL: p.URL + "/mcp", Token: token,
		Fingerprint: pin, Preset: contracts.BrowserPlaywright, Tools: []string{"browser_evaluate", "browser_navigate"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (p *pinnedPeer) keyPin() string {
	return contracts.FormatTLSPin(sha256.Sum256(p.Certificate().RawSubjectPublicKeyInfo))
}

// grepTree lists the files under dir whose bytes contain s.
func grepTree(t *testing.T, dir, s string) []string {
	t.Helper()
	var hits []string
	_ = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
			hits = append(hits, path)
		}
		return nil
	})
	return hits
}

// TestBrowserRemotePairing pairs pikod with a pinned peer through
// 'pikoctl mcp browser-remote -': the review and its grants, the token in
// the vault and nowhere else, the connection trusted by the pin alone,
// a wrong pin refused in the handshake with both fingerprints named and
// nothing sent, and a wrong token answered 401 (needs_auth).
func TestBrowserRemotePairing(t *testing.T) {
	t.Parallel()
	peer := startPinnedPeer(t)
	d := startDaemon(t)
	pairing := peer.pairing(t, peer.token, peer.keyPin())

	// Not from a file or an argument, and not saved without a terminal
	// or --yes.
	if _, stderr, code := runCtl(t, d, pairing, "mcp", "browser-remote", "pairing.json"); code == 0 || !strings.Contains(stderr, "reads the pairing from stdin") {
		t.Errorf("browser-remote FILE: exit %d, stderr:\n%s", code, stderr)
	}
	if out, stderr, code := runCtlNoTTY(t, d, pairing, "mcp", "browser-remote", "-"); code == 0 || !strings.Contains(stderr, "nothing was saved") ||
		!strings.Contains(out, "tls pin:") {
		t.Errorf("browser-remote without a terminal or --yes: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := runCtl(t, d, `{"version":1,"url":"https://127.0.0.1:1/mcp","token":"`+peer.token+`","fingerprint":"sha256:00"}`,
		"mcp", "browser-remote", "-", "--yes"); code == 0 || strings.Contains(stderr, peer.token) || !strings.Contains(stderr, "fingerprint must be") {
		t.Errorf("a bad pairing: exit %d, stderr:\n%s", code, stderr)
	}

	out, stderr, code := runCtl(t, d, pairing, "mcp", "browser-remote", "-", "--yes")
	if code != 0 {
		t.Fatalf("pikoctl mcp browser-remote -: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"browser bridge (preset playwright", "tls pin:   " + peer.keyPin(),
		`widens: server "browser-remote": "browser_navigate" runs without approval (autonomousTools)`,
		"need your approval: browser_evaluate", "the token is in the vault (headers.Authorization)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("browser-remote output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"browser_evaluate" runs without approval`) {
		t.Errorf("browser-remote delegates browser_evaluate:\n%s", out)
	}
	var set contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &set)
	var cfg contracts.MCPSettings
	if err := json.Unmarshal(set.Settings, &cfg); err != nil || len(cfg.Servers) != 1 {
		t.Fatalf("settings after browser-remote: %s (%v)", set.Settings, err)
	}
	if s := cfg.Servers[0]; s.ID != "browser-remote" || s.Transport != "http" || s.URL != peer.URL+"/mcp" || s.TLSPin != peer.keyPin() ||
		!s.AllowPrivateNetwork || len(s.AutonomousTools) != 1 || strings.Contains(string(set.Settings), peer.token) {
		t.Errorf("browser-remote entry: %s", set.Settings)
	}

	connectServer(t, d, "browser-remote")
	res := callTool(t, d, "browser-remote", "browser_navigate", `{"url":"https://example.test/"}`)
	if res.Status != contracts.CallCompleted || res.ReceiptKind != contracts.ReceiptAutonomous || !strings.Contains(string(res.Content), "browser_navigate done") {
		t.Fatalf("navigate through the pinned connection: %+v", res)
	}
	prepare(t, d, "browser-remote", "browser_evaluate", `{"url":"x"}`)
	var dr contracts.DisconnectResult
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "browser-remote"}, &dr)

	// Another certificate at the same address: refused before a request.
	wrong := contracts.FormatTLSPin(sha256.Sum256([]byte("not this peer")))
	if out, stderr, code := runCtl(t, d, peer.pairing(t, peer.token, wrong), "mcp", "browser-remote", "-", "--yes"); code != 0 {
		t.Fatalf("pairing with another pin: exit %d\n%s%s", code, out, stderr)
	}
	before := peer.authorized.Load() + peer.refused.Load()
	e := connectFails(t, d, "browser-remote")
	st := serverStatus(t, d, "browser-remote")
	certPin := contracts.FormatTLSPin(sha256.Sum256(peer.Certificate().Raw))
	for _, want := range []string{"refusing the TLS peer of " + peer.URL, "the pin (tlsPin) is " + wrong, "presented certificate " + certPin, "public key " + peer.keyPin()} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("a wrong pin: lastError %q lacks %q (connect: %v)", st.LastError, want, e)
		}
	}
	if n := peer.authorized.Load() + peer.refused.Load(); n != before {
		t.Errorf("the peer got %d requests through a wrong pin", n-before)
	}

	// The right pin with another token: the peer answers 401.
	if out, stderr, code := runCtl(t, d, peer.pairing(t, newToken(t), peer.keyPin()), "mcp", "browser-remote", "-", "--yes"); code != 0 {
		t.Fatalf("pairing with another token: exit %d\n%s%s", code, out, stderr)
	}
	d.callErr(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "browser-remote"})
	if st := serverStatus(t, d, "browser-remote"); st.State != contracts.StateNeedsAuth || peer.refused.Load() == 0 {
		t.Errorf("a wrong token: state %q (%s), %d refused requests; want needs_auth after a 401", st.State, st.LastError, peer.refused.Load())
	}

	p := d.current()
	d.stop(t)
	if hits := grepTree(t, d.stateDir, peer.token); len(hits) != 0 {
		t.Errorf("the token is in plain text in %v", hits)
	}
	if strings.Contains(p.stderr.String(), peer.token) {
		t.Errorf("pikod's stderr carries the token")
	}
}
