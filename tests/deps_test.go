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

// Third-party modules, named once with the modules they bring along, so
// each row of importRules lists exactly what its package may link. Modules
// only other systems link (darwin, windows) are listed too, so the rules
// hold wherever the test runs.
var (
	// zerolog and what it links (colour and tty detection).
	zerologMods = []string{"github.com/rs/zerolog", "github.com/mattn/go-colorable", "github.com/mattn/go-isatty", "golang.org/x/sys"}
	// jsonrpc2, the socket's protocol library.
	jsonrpcMods = []string{"github.com/sourcegraph/jsonrpc2"}
	// mcp-go, the MCP SDK, and what it links.
	mcpGoMods = []string{"github.com/mark3labs/mcp-go", "github.com/google/jsonschema-go", "github.com/google/uuid", "github.com/spf13/cast", "github.com/yosida95/uritemplate/v3"}
	// The sessions' own: OAuth, JSON Schema validation, IDNA.
	sessionMods = []string{"golang.org/x/oauth2", "github.com/santhosh-tekuri/jsonschema/v6", "golang.org/x/text"}
	// The keyring backends and what they link; busenv is pikod's own
	// module that fixes the session bus address before keyring loads.
	keyringMods = []string{"a.pikod.internal/busenv", "github.com/99designs/keyring", "github.com/99designs/go-keychain", "github.com/danieljoos/wincred",
		"github.com/dvsekhvalnov/jose2go", "github.com/godbus/dbus", "github.com/gsterjov/go-libsecret", "github.com/mtibben/percent", "golang.org/x/crypto", "golang.org/x/term"}
	// bbolt, the ledger's database.
	bboltMods = []string{"go.etcd.io/bbolt"}
	// cobra and what it links.
	cobraMods = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/inconshreveable/mousetrap"}
	// The console: bubbletea, its components and styles, and what they
	// link; termquery is pikod's own module that asks the terminal.
	consoleMods = []string{"a.pikod.internal/termquery", "github.com/charmbracelet/bubbletea", "github.com/charmbracelet/bubbles", "github.com/charmbracelet/lipgloss",
		"github.com/charmbracelet/colorprofile", "github.com/charmbracelet/x/ansi", "github.com/charmbracelet/x/cellbuf", "github.com/charmbracelet/x/term",
		"github.com/atotto/clipboard", "github.com/aymanbagabas/go-osc52/v2", "github.com/clipperhouse/displaywidth", "github.com/clipperhouse/stringish",
		"github.com/clipperhouse/uax29/v2", "github.com/lucasb-eyer/go-colorful", "github.com/mattn/go-runewidth", "github.com/mattn/go-localereader",
		"github.com/erikgeiser/coninput", "github.com/muesli/ansi", "github.com/muesli/cancelreader", "github.com/muesli/termenv", "github.com/rivo/uniseg",
		"github.com/xo/terminfo", "golang.org/x/term", "golang.org/x/text"}
)

func mods(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// importRules says, per package, which module packages and third-party
// modules it may depend on (transitively), beyond the standard library.
// The arrows and the table are those of docs/architecture.md.
var importRules = map[string]struct {
	own        []string // module packages allowed
	thirdParty []string // module path prefixes allowed; nil means none
}{
	"contracts": {},
	"rpc":       {own: []string{"contracts"}, thirdParty: mods(jsonrpcMods, zerologMods)},
	"mcpclient": {own: []string{"contracts", "mcpclient/proc", "mcpclient/oauth", "mcpclient/netguard"}, thirdParty: mods(mcpGoMods, sessionMods, zerologMods)},
	"vault":     {own: []string{"contracts"}, thirdParty: mods(keyringMods, zerologMods)},
	"approvals": {own: []string{"contracts"}, thirdParty: mods(bboltMods, zerologMods)},
	"daemon":    {own: []string{"contracts", "rpc", "mcpclient", "vault", "approvals", "daemon/present"}, thirdParty: mods(jsonrpcMods, mcpGoMods, sessionMods, keyringMods, bboltMods, zerologMods)},
	// What callers are shown: the wire and the ledger's record types.
	"daemon/present": {own: []string{"contracts", "approvals"}, thirdParty: mods(bboltMods, zerologMods)},
	"cmd/pikod":      {own: []string{"contracts", "daemon", "daemon/present", "rpc", "mcpclient", "vault", "approvals"}, thirdParty: mods(jsonrpcMods, mcpGoMods, sessionMods, keyringMods, bboltMods, zerologMods)},
	"cmd/pikoctl":    {own: []string{"contracts", "rpc", "cmd/pikoctl/tui", "cmd/pikoctl/bridge", "cmd/pikoctl/render"}, thirdParty: mods(jsonrpcMods, cobraMods, consoleMods, mcpGoMods, []string{"github.com/BurntSushi/toml", "github.com/santhosh-tekuri/jsonschema/v6"}, zerologMods)},
	// The bridge is a plain client of the socket: the wire, the rpc
	// client and mcp-go's server, nothing of pikod's own MCP or storage.
	"cmd/pikoctl/bridge": {own: []string{"contracts", "rpc"}, thirdParty: mods(jsonrpcMods, mcpGoMods, []string{"github.com/santhosh-tekuri/jsonschema/v6", "golang.org/x/text"}, zerologMods)},
	// The desktop bridge runs without pikod: the presets and the pairing
	// shape from contracts, mcp-go for both its sides, nothing of pikod's.
	"cmd/browser-bridge": {own: []string{"contracts"}, thirdParty: mods(mcpGoMods, []string{"github.com/santhosh-tekuri/jsonschema/v6", "golang.org/x/text"})},
	// The TUI is part of the thin client: the wire and the rpc client only.
	"cmd/pikoctl/tui": {own: []string{"contracts", "rpc", "cmd/pikoctl/render"}, thirdParty: mods(jsonrpcMods, consoleMods, zerologMods)},
	// The words the CLI and the console share: the wire's types only.
	"cmd/pikoctl/render": {own: []string{"contracts"}},

	// The OAuth protocol pieces know nothing of sessions or the SDK.
	"mcpclient/oauth": {own: []string{"contracts"}, thirdParty: []string{"golang.org/x/oauth2"}},

	// The network guard knows nothing of MCP: the standard library and
	// contracts' error classes.
	"mcpclient/netguard": {own: []string{"contracts"}},

	// Process supervision knows nothing of MCP: no SDK, no other package.
	"mcpclient/proc": {own: []string{"contracts"}, thirdParty: zerologMods},

	// The conformance adapter is pikod's owner, not a client of its own:
	// it drives pikoctl and reads the wire's types, and must not link an
	// MCP or OAuth library or pikod's protocol code.
	"tests/conformance/adapter": {own: []string{"contracts"}, thirdParty: []string{"github.com/creack/pty"}},
	"tests/conformance/runner":  {},
	// Test support: the standard library only.
	"tests/testdisk":    {},
	"tests/testsupport": {},
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
					t.Errorf("%s depends on %s, which docs/architecture.md forbids", pkg, p.ImportPath)
				}
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
	for _, dir := range []string{"contracts", "rpc", "mcpclient", "mcpclient/proc", "mcpclient/oauth", "mcpclient/netguard", "vault", "approvals", "daemon", "daemon/present", "tests", "cmd/pikoctl", "cmd/pikoctl/bridge", "cmd/pikoctl/render", "cmd/pikoctl/tui"} {
		b, err := os.ReadFile(filepath.Join(root, dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go: %v", dir, err)
			continue
		}
		text := string(b)
		// A command's doc says "Command", as Go's own do.
		if !(strings.Contains(text, "// Package ") || strings.Contains(text, "// Command ")) || !strings.Contains(text, "import") {
			t.Errorf("%s/doc.go must start with \"// Package\" (\"// Command\" for a command) and say what the package may import", dir)
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
