package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/pikod/pikod"

// importRules says, per package, which module packages and third-party
// module prefixes it may depend on (transitively), beyond the standard
// library. The arrows are those of DESIGN.md §1.
var importRules = map[string]struct {
	own        []string // module packages allowed
	thirdParty []string // module path prefixes allowed; nil means none
	anyThird   bool
}{
	"contracts":   {},
	"rpc":         {own: []string{"contracts"}, thirdParty: []string{"github.com/sourcegraph/jsonrpc2", "github.com/rs/zerolog", "golang.org/x/sys", "github.com/mattn/go-colorable", "github.com/mattn/go-isatty"}},
	"mcpclient":   {own: []string{"contracts", "mcpclient/proc", "mcpclient/oauth"}, anyThird: true},
	"vault":       {own: []string{"contracts"}, anyThird: true},
	"approvals":   {own: []string{"contracts"}, anyThird: true},
	"daemon":      {own: []string{"contracts", "rpc", "mcpclient", "vault", "approvals"}, anyThird: true},
	"cmd/pikod":   {own: []string{"contracts", "daemon", "rpc", "mcpclient", "vault", "approvals"}, anyThird: true},
	"cmd/pikoctl": {own: []string{"contracts", "rpc", "cmd/pikoctl/tui", "cmd/pikoctl/bridge"}, anyThird: true},
	// The bridge is a plain client of the socket: the wire, the rpc
	// client and mcp-go's server, nothing of pikod's own MCP or storage.
	"cmd/pikoctl/bridge": {own: []string{"contracts", "rpc"}, anyThird: true},
	// The desktop bridge runs without pikod: the presets and the pairing
	// shape from contracts, mcp-go for both its sides, nothing of pikod's.
	"cmd/browser-bridge": {own: []string{"contracts"}, anyThird: true},
	// The TUI is part of the thin client: the wire and the rpc client only.
	"cmd/pikoctl/tui": {own: []string{"contracts", "rpc"}, anyThird: true},

	// The OAuth protocol pieces know nothing of sessions or the SDK.
	"mcpclient/oauth": {own: []string{"contracts"}, thirdParty: []string{"golang.org/x/oauth2"}},

	// Process supervision knows nothing of MCP: no SDK, no other package.
	"mcpclient/proc": {own: []string{"contracts"}, thirdParty: []string{"github.com/rs/zerolog", "golang.org/x/sys", "github.com/mattn/go-colorable", "github.com/mattn/go-isatty"}},

	// The conformance adapter is pikod's owner, not a client of its own:
	// it drives pikoctl and reads the wire's types, and must not link an
	// MCP or OAuth library or pikod's protocol code.
	"tests/conformance/adapter": {own: []string{"contracts"}, thirdParty: []string{"github.com/creack/pty"}},
	"tests/conformance/runner":  {},
	// Test support: the standard library only.
	"tests/testdisk": {},
}

type listedPackage struct {
	ImportPath string
	Standard   bool
	Deps       []string
	Module     *struct{ Path string }
}

func TestImportRules(t *testing.T) {
	root := depsModuleRoot(t)
	for pkg, rule := range importRules {
		cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Module", "./"+pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var p listedPackage
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			if p.Standard || p.ImportPath == module+"/"+pkg {
				continue
			}
			if rest, ok := strings.CutPrefix(p.ImportPath, module+"/"); ok {
				if !allowedOwn(rest, rule.own) {
					t.Errorf("%s depends on %s, which DESIGN.md §1 forbids", pkg, p.ImportPath)
				}
				continue
			}
			if rule.anyThird {
				continue
			}
			if !hasPrefix(p.ImportPath, rule.thirdParty) {
				t.Errorf("%s depends on third-party package %s; it may use only %v", pkg, p.ImportPath, rule.thirdParty)
			}
		}
	}
}

func allowedOwn(pkg string, allowed []string) bool {
	for _, a := range allowed {
		if pkg == a || strings.HasPrefix(pkg, a+"/") {
			return true
		}
	}
	return false
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// TestPackageDocs checks that every package has a doc.go saying what it
// owns and what it may not import.
func TestPackageDocs(t *testing.T) {
	root := depsModuleRoot(t)
	for _, dir := range []string{"contracts", "rpc", "mcpclient", "mcpclient/proc", "mcpclient/oauth", "vault", "approvals", "daemon", "tests"} {
		b, err := os.ReadFile(filepath.Join(root, dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go: %v", dir, err)
			continue
		}
		text := string(b)
		if !strings.Contains(text, "// Package ") || !strings.Contains(text, "import") {
			t.Errorf("%s/doc.go must start with \"// Package\" and say what the package may import", dir)
		}
	}
}

func depsModuleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestPikoctlLinksNoBus checks that pikoctl links neither the keyring
// library nor D-Bus: importing keyring dials the session bus while the
// program loads (and, without an address, used to start one).
func TestPikoctlLinksNoBus(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/pikoctl")
	cmd.Dir = depsModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/pikoctl: %v", err)
	}
	n := 0
	for pkg := range strings.Lines(string(out)) {
		pkg = strings.TrimSpace(pkg)
		n++
		if hasPrefix(pkg, []string{"github.com/99designs/keyring", "github.com/godbus/dbus", "github.com/pikod/pikod/vault"}) {
			t.Errorf("pikoctl links %s", pkg)
		}
	}
	if n < 10 {
		t.Fatalf("go list listed %d packages for pikoctl: %q", n, out)
	}
}
