package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/pikod/pikod/contracts"
)

// TestInstallHosts drives the compiled pikoctl against a real pikod: a
// server imported from a Cursor file and one from a Codex file, then
// 'mcp install --replace-imported' (the imported entries give way to the
// bridge, everything else stays), 'mcp import' of the result (the bridge
// is skipped), and 'mcp uninstall' (the entries come back). pikod's
// settings are only read.
func TestInstallHosts(t *testing.T) {
	d := startDaemon(t)
	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"CODEX_HOME=" + filepath.Join(home, "codex"),
	}
	ctl := func(args ...string) (string, string, int) {
		return runCtlOpts(t, d.socket, ctlOpts{env: env}, "", args...)
	}
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := ctl(args...)
		if code != 0 {
			t.Fatalf("pikoctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
		return out
	}
	exe, err := filepath.EvalSymlinks(pikoctlBin)
	if err != nil {
		t.Fatal(err)
	}

	cursor := filepath.Join(home, ".cursor", "mcp.json")
	cursorOrig := fmt.Sprintf(`{
  "mcpServers": {
    "fixture": {"command": %q, "args": ["--tools", "2"]},
    "elsewhere": {"url": "https://mcp.example.com/mcp"}
  },
  "cursorSetting": 1
}
`, fixtureBin)
	codex := filepath.Join(home, "codex", "config.toml")
	codexOrig := fmt.Sprintf(`model = "o3" # mine

# the fixture
[mcp_servers.fix]
command = %q
args = ["--tools", "1"]

[mcp_servers.keep]
command = "/usr/bin/true"
`, fixtureBin)
	for p, c := range map[string]string{cursor: cursorOrig, codex: codexOrig} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok("mcp", "import", "--apply", "--only", "fixture", cursor)
	ok("mcp", "import", "--apply", "--only", "fix", codex)
	var before contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &before)

	// Cursor (JSON).
	out := ok("mcp", "install", "cursor", "--replace-imported")
	if !strings.Contains(out, `remove "fixture": imported into pikod as fixture`) || !strings.Contains(out, "backup: "+cursor+".pikoctl-backup-") {
		t.Errorf("install cursor output:\n%s", out)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
			URL     string   `json:"url"`
		} `json:"mcpServers"`
		CursorSetting int `json:"cursorSetting"`
	}
	installed := readInstalled(t, cursor)
	if err := json.Unmarshal([]byte(installed), &doc); err != nil {
		t.Fatalf("the installed file is not JSON: %v\n%s", err, installed)
	}
	br := doc.MCPServers["pikod"]
	if br.Command != exe || !slices.Equal(br.Args, []string{"mcp", "serve", "--socket", d.socket}) {
		t.Errorf("bridge entry = %+v, want %s mcp serve --socket %s", br, exe, d.socket)
	}
	if _, still := doc.MCPServers["fixture"]; still || doc.MCPServers["elsewhere"].URL == "" || doc.CursorSetting != 1 {
		t.Errorf("after install:\n%s", installed)
	}
	if !strings.Contains(installed, `    "elsewhere": {"url": "https://mcp.example.com/mcp"}`) {
		t.Errorf("the kept entry was rewritten:\n%s", installed)
	}

	// Importing the installed file skips the bridge, saying why; the other
	// entry is still offered.
	out = ok("mcp", "import", cursor)
	if !strings.Contains(out, "pikod: SKIPPED: this is pikod's own bridge") || !strings.Contains(out, "elsewhere -> elsewhere (http)") {
		t.Errorf("import of the installed file:\n%s", out)
	}

	// Again: unchanged.
	if out := ok("mcp", "install", "cursor", "--replace-imported"); !strings.Contains(out, "unchanged") {
		t.Errorf("a second install:\n%s", out)
	}

	out = ok("mcp", "uninstall", "cursor")
	if !strings.Contains(out, `restore "fixture"`) || !strings.Contains(out, `remove "pikod"`) {
		t.Errorf("uninstall cursor output:\n%s", out)
	}
	var want, got any
	_ = json.Unmarshal([]byte(cursorOrig), &want)
	if err := json.Unmarshal([]byte(readInstalled(t, cursor)), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after uninstall:\n%s\nwant the entries of:\n%s", readInstalled(t, cursor), cursorOrig)
	}
	if _, err := os.Stat(cursor + ".pikoctl-removed.json"); !os.IsNotExist(err) {
		t.Errorf("the record outlived uninstall: %v", err)
	}

	// Codex (TOML).
	out = ok("mcp", "install", "codex", "--replace-imported", "--dry-run")
	if !strings.Contains(out, "-[mcp_servers.fix]") || !strings.Contains(out, "+[mcp_servers.pikod]") || readInstalled(t, codex) != codexOrig {
		t.Errorf("dry run:\n%s", out)
	}
	ok("mcp", "install", "codex", "--replace-imported")
	installed = readInstalled(t, codex)
	var tdoc map[string]any
	if _, err := toml.Decode(installed, &tdoc); err != nil {
		t.Fatalf("the installed file is not TOML: %v\n%s", err, installed)
	}
	servers, _ := tdoc["mcp_servers"].(map[string]any)
	pk, _ := servers["pikod"].(map[string]any)
	if pk["command"] != exe || !reflect.DeepEqual(pk["args"], []any{"mcp", "serve", "--socket", d.socket}) || servers["fix"] != nil || servers["keep"] == nil {
		t.Errorf("after install codex:\n%s", installed)
	}
	if !strings.HasPrefix(installed, "model = \"o3\" # mine\n\n# the fixture\n") {
		t.Errorf("the comments above the tables changed:\n%s", installed)
	}
	out = ok("mcp", "import", codex)
	if !strings.Contains(out, "pikod: SKIPPED: this is pikod's own bridge") {
		t.Errorf("import of the installed codex file:\n%s", out)
	}
	ok("mcp", "uninstall", "codex")
	var restored, orig map[string]any
	if _, err := toml.Decode(readInstalled(t, codex), &restored); err != nil {
		t.Fatal(err)
	}
	_, _ = toml.Decode(codexOrig, &orig)
	if !reflect.DeepEqual(restored, orig) || !strings.Contains(readInstalled(t, codex), "# the fixture\n") {
		t.Errorf("after uninstall codex:\n%s", readInstalled(t, codex))
	}

	// Nothing of pikod's changed.
	var after contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &after)
	if after.Revision != before.Revision {
		t.Errorf("install changed pikod's settings: revision %d -> %d", before.Revision, after.Revision)
	}
}

// TestInstallBrokenHostFile: a file that does not parse is refused by
// line and column, exit 1, and nothing is written.
func TestInstallBrokenHostFile(t *testing.T) {
	d := startDaemon(t)
	home := t.TempDir()
	p := filepath.Join(home, ".claude.json")
	const broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n"
	if err := os.WriteFile(p, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCtlOpts(t, d.socket, ctlOpts{env: []string{"HOME=" + home}}, "", "mcp", "install", "claude-code")
	if code != 1 || !strings.Contains(errOut, "line 3, column 26: a trailing comma") || !strings.Contains(errOut, "nothing was written") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	ents, _ := os.ReadDir(home)
	if readInstalled(t, p) != broken || len(ents) != 1 {
		t.Errorf("a broken file was touched: %v", ents)
	}
}

func readInstalled(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
