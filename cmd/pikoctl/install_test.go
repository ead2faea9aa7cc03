package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// installApp is a test app whose pikoctl is a real file reached through a
// symlink (install writes the resolved path).
func installApp(t *testing.T) (*testApp, string) {
	t.Helper()
	ta := newTestApp(t, "", false)
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "pikoctl")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "pikoctl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ta.executable = func() (string, error) { return link, nil }
	resolved, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	return ta, resolved
}

// hostFilePath is the user file of host in ta's environment.
func hostFilePath(t *testing.T, ta *testApp, host string) string {
	t.Helper()
	h, err := lookupHost(host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ta.hostPath(h, "user")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (ta *testApp) reset() { ta.out.Reset(); ta.errOut.Reset() }

func writeTestFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// siblings lists the files next to path whose names start with its own
// and have the suffix (backups, records, temporary files).
func siblings(t *testing.T, path, infix string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), infix) {
			out = append(out, filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
	return out
}

// hostCase is one host file with another entry and comments.
type hostCase struct {
	host, scope string
	path        func(ta *testApp, wd string) string
	original    string
	// kept are pieces of the original that must survive the install.
	kept []string
}

func hostCases() []hostCase {
	return []hostCase{
		{host: "claude-code", scope: "user",
			path: func(ta *testApp, _ string) string { return filepath.Join(ta.env["HOME"], ".claude.json") },
			original: `{
  "numStartups": 12,
  "mcpServers": {
    "fs": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {}
    }
  },
  "projects": {"/src": {"mcpServers": {}}}
}
`, kept: []string{`"numStartups": 12,`, `"projects": {"/src": {"mcpServers": {}}}`, `"args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],`}},
		{host: "claude-code", scope: "project",
			path:     func(_ *testApp, wd string) string { return filepath.Join(wd, ".mcp.json") },
			original: `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]}}}` + "\n",
			kept:     []string{`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]}`}},
		{host: "claude-desktop", scope: "user",
			path: func(ta *testApp, _ string) string {
				return filepath.Join(ta.env["XDG_CONFIG_HOME"], "Claude", "claude_desktop_config.json")
			},
			original: "{\n\t\"globalShortcut\": \"Ctrl+Space\",\n\t\"mcpServers\": {\n\t\t\"fs\": {\"command\": \"npx\"}\n\t}\n}\n",
			kept:     []string{"\t\"globalShortcut\": \"Ctrl+Space\",\n", "\t\t\"fs\": {\"command\": \"npx\"}"}},
		{host: "cursor", scope: "project",
			path:     func(_ *testApp, wd string) string { return filepath.Join(wd, ".cursor", "mcp.json") },
			original: "{\r\n  \"mcpServers\": {\r\n    \"remote\": {\"url\": \"https://mcp.example.com/mcp\"}\r\n  }\r\n}\r\n",
			kept:     []string{"    \"remote\": {\"url\": \"https://mcp.example.com/mcp\"}"}},
		{host: "cursor", scope: "user",
			path:     func(ta *testApp, _ string) string { return filepath.Join(ta.env["HOME"], ".cursor", "mcp.json") },
			original: "{\n  \"mcpServers\": {}\n}\n"},
		{host: "vscode", scope: "user",
			path: func(ta *testApp, _ string) string {
				return filepath.Join(ta.env["XDG_CONFIG_HOME"], "Code", "User", "mcp.json")
			},
			original: `// VS Code MCP servers
{
  "inputs": [
    {"type": "promptString", "id": "key", "password": true}, // asked once
  ],
  "servers": {
    /* files */
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]}, // trailing
  },
}
`, kept: []string{"// VS Code MCP servers\n", "// asked once", "/* files */", `"fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]}, // trailing`}},
		{host: "vscode", scope: "project",
			path: func(_ *testApp, wd string) string { return filepath.Join(wd, ".vscode", "mcp.json") },
			original: `{
  "servers": {
    "fs": {"type": "stdio", "command": "npx"}
    // the end
  }
}
`, kept: []string{"    // the end\n"}},
		{host: "codex", scope: "user",
			path: func(ta *testApp, _ string) string { return filepath.Join(ta.env["CODEX_HOME"], "config.toml") },
			original: `model = "o3" # default model
notes = """
[mcp_servers.pikod]
not a table: inside a string
"""

# docs server
[mcp_servers.context7]
command = "npx"
args = [
  "-y",
  "@upstash/context7-mcp", # pinned
]

[mcp_servers.context7.env]
LOG = "info"

# fast profile
[profiles.fast]
model = "o4-mini"
`, kept: []string{"model = \"o3\" # default model\nnotes = \"\"\"\n[mcp_servers.pikod]\nnot a table: inside a string\n\"\"\"\n", "  \"@upstash/context7-mcp\", # pinned\n", "[mcp_servers.context7.env]\nLOG = \"info\"\n", "# fast profile\n[profiles.fast]\nmodel = \"o4-mini\"\n"}},
		{host: "codex", scope: "project",
			path:     func(_ *testApp, wd string) string { return filepath.Join(wd, ".codex", "config.toml") },
			original: "approval_policy = \"never\"\n"},
	}
}

// bridgeOf returns the command and args of entry name in a host file.
func bridgeOf(t *testing.T, host, content, name string) (string, []string, map[string]any) {
	t.Helper()
	h, err := lookupHost(host)
	if err != nil {
		t.Fatal(err)
	}
	_, ents, err := h.openEditor("test", []byte(content))
	if err != nil {
		t.Fatalf("the written file does not parse: %v\n%s", err, content)
	}
	others := map[string]any{}
	var cmd string
	var args []string
	for _, e := range ents {
		if e.Name == name {
			cmd, args = e.Command, e.Args
			continue
		}
		others[e.Name] = e.Value
	}
	return cmd, args, others
}

// TestInstallRoundTrip installs into each host's file format, checks the
// entry, that everything else is kept byte for byte, that installing again
// is "unchanged" and that import skips the entry; uninstall gives back the
// original bytes.
func TestInstallRoundTrip(t *testing.T) {
	for _, tc := range hostCases() {
		t.Run(tc.host+"-"+tc.scope, func(t *testing.T) {
			ta, exe := installApp(t)
			ta.env["CODEX_HOME"] = filepath.Join(ta.env["HOME"], "codex-home")
			wd := t.TempDir()
			t.Chdir(wd)
			path := tc.path(ta, wd)
			writeTestFile(t, path, tc.original, 0o640)
			_, _, othersBefore := bridgeOf(t, tc.host, tc.original, "pikod")

			sock := filepath.Join(t.TempDir(), "p.sock")
			if code := ta.runArgs(t, "--socket", sock, "mcp", "install", tc.host, "--scope", tc.scope); code != 0 {
				t.Fatalf("install exited %d", code)
			}
			after := readTestFile(t, path)
			cmd, args, others := bridgeOf(t, tc.host, after, "pikod")
			if want := []string{"mcp", "serve", "--socket", sock}; cmd != exe || !reflect.DeepEqual(args, want) {
				t.Errorf("entry runs %q %q, want %q %q\n%s", cmd, args, exe, want, after)
			}
			if !reflect.DeepEqual(others, othersBefore) {
				t.Errorf("other entries changed: %v, want %v", others, othersBefore)
			}
			for _, k := range tc.kept {
				if !strings.Contains(after, k) {
					t.Errorf("the install lost %q:\n%s", k, after)
				}
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("mode after install = %v (%v), want 0640", fi.Mode().Perm(), err)
			}
			backups := siblings(t, path, ".pikoctl-backup-")
			if len(backups) != 1 || readTestFile(t, backups[0]) != tc.original {
				t.Fatalf("backups = %v, want one holding the original", backups)
			}
			if !strings.Contains(ta.out.String(), "backup: "+backups[0]) {
				t.Errorf("install did not name the backup %s:\n%s", backups[0], ta.out)
			}
			if left := siblings(t, path, ".pikoctl-"); len(left) != 1 {
				t.Errorf("files left next to %s: %v", path, left)
			}

			// Again: unchanged, nothing written.
			ta.reset()
			if code := ta.runArgs(t, "--socket", sock, "mcp", "install", tc.host, "--scope", tc.scope); code != 0 {
				t.Fatalf("second install exited %d", code)
			}
			if !strings.Contains(ta.out.String(), "unchanged") || readTestFile(t, path) != after || len(siblings(t, path, ".pikoctl-backup-")) != 1 {
				t.Errorf("a second install was not unchanged:\n%s", ta.out)
			}

			// mcp import of the file skips the bridge, saying why.
			plan, _, err := parseImport(path, []byte(after))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range plan.Servers {
				if (s.Name == "pikod") != (s.Skipped == bridgeSkipReason) {
					t.Errorf("import of %q: skipped %q", s.Name, s.Skipped)
				}
			}

			ta.reset()
			if code := ta.runArgs(t, "mcp", "uninstall", tc.host, "--scope", tc.scope); code != 0 {
				t.Fatalf("uninstall exited %d", code)
			}
			if got := readTestFile(t, path); got != tc.original {
				t.Errorf("after uninstall:\n%s\nwant the original:\n%s", got, tc.original)
			}
			if n := len(siblings(t, path, ".pikoctl-backup-")); n != 2 {
				t.Errorf("uninstall made no backup (%d backups)", n)
			}
		})
	}
}

// TestInstallNewFile creates a missing file (and its directories); the
// bridge reaches the instance given.
func TestInstallNewFile(t *testing.T) {
	for _, host := range hostNames() {
		t.Run(host, func(t *testing.T) {
			ta, exe := installApp(t)
			ta.env["CODEX_HOME"] = filepath.Join(ta.env["HOME"], "codex-home")
			h, _ := lookupHost(host)
			path, err := ta.hostPath(h, "user")
			if err != nil {
				t.Fatal(err)
			}
			if code := ta.runArgs(t, "--instance", "work", "mcp", "install", host); code != 0 {
				t.Fatalf("install exited %d", code)
			}
			cmd, args, _ := bridgeOf(t, host, readTestFile(t, path), "pikod")
			if cmd != exe || !reflect.DeepEqual(args, []string{"mcp", "serve", "--instance", "work"}) {
				t.Errorf("entry runs %q %q", cmd, args)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("a new user file has mode %v, want 0600", fi.Mode().Perm())
			}
			if strings.Contains(ta.out.String(), "backup:") {
				t.Errorf("a backup of a missing file was reported:\n%s", ta.out)
			}
		})
	}
}

// TestInstallDryRun prints the change and writes nothing, neither the file
// nor a backup.
func TestInstallDryRun(t *testing.T) {
	ta, exe := installApp(t)
	path := filepath.Join(ta.env["HOME"], ".cursor", "mcp.json")
	const orig = "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\"}\n  }\n}\n"
	writeTestFile(t, path, orig, 0o600)
	if code := ta.runArgs(t, "mcp", "install", "cursor", "--dry-run"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"-    \"fs\": {\"command\": \"npx\"}\n",
		"+    \"fs\": {\"command\": \"npx\"},\n",
		"+      \"command\": " + jsonQuote(exe) + ",\n",
		"dry run: nothing was written",
	} {
		if !strings.Contains(ta.out.String(), want) {
			t.Errorf("dry run output lacks %q", want)
		}
	}
	if readTestFile(t, path) != orig || len(siblings(t, path, ".pikoctl-")) != 0 {
		t.Error("the dry run wrote something")
	}
	// A missing file is not created either.
	vs := filepath.Join(ta.env["XDG_CONFIG_HOME"], "Code")
	ta.reset()
	if code := ta.runArgs(t, "mcp", "install", "vscode", "--dry-run"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(vs); !os.IsNotExist(err) {
		t.Errorf("the dry run created %s (%v)", vs, err)
	}
	if !strings.Contains(ta.out.String(), "@@ -0,0 +1,9 @@\n+{\n+  \"servers\": {\n") {
		t.Errorf("the dry run of a new file does not show it whole:\n%s", ta.out)
	}
}

// TestInstallForeignEntry refuses an entry of the same name that is not
// the bridge, unless --force.
func TestInstallForeignEntry(t *testing.T) {
	ta, exe := installApp(t)
	path := filepath.Join(ta.env["HOME"], ".claude.json")
	const orig = `{"mcpServers": {"pikod": {"command": "node", "args": ["other.js"]}}}`
	writeTestFile(t, path, orig, 0o600)
	if code := ta.runArgs(t, "mcp", "install", "claude-code"); code != exitFailure {
		t.Fatalf("exit %d, want %d", code, exitFailure)
	}
	if msg := ta.errOut.String(); !strings.Contains(msg, `server named "pikod" that is not pikod's bridge (it runs node other.js)`) || !strings.Contains(msg, "--force") {
		t.Errorf("the refusal does not say what to do:\n%s", msg)
	}
	if readTestFile(t, path) != orig || len(siblings(t, path, ".pikoctl-")) != 0 {
		t.Error("a refused install wrote something")
	}
	// uninstall leaves a foreign entry alone too.
	ta.reset()
	if code := ta.runArgs(t, "mcp", "uninstall", "claude-code"); code != exitFailure || readTestFile(t, path) != orig {
		t.Errorf("uninstall of a foreign entry: exit %d, file %s", code, readTestFile(t, path))
	}
	ta.reset()
	if code := ta.runArgs(t, "mcp", "install", "claude-code", "--force"); code != 0 {
		t.Fatalf("--force exited %d", code)
	}
	if cmd, _, _ := bridgeOf(t, "claude-code", readTestFile(t, path), "pikod"); cmd != exe {
		t.Errorf("--force did not replace the entry: %s", readTestFile(t, path))
	}
	// Another name is fine without --force.
	writeTestFile(t, path, orig, 0o600)
	ta.reset()
	if code := ta.runArgs(t, "mcp", "install", "claude-code", "--name", "pikod-bridge"); code != 0 {
		t.Fatalf("--name exited %d", code)
	}
	if cmd, _, others := bridgeOf(t, "claude-code", readTestFile(t, path), "pikod-bridge"); cmd != exe || others["pikod"] == nil {
		t.Errorf("--name: %s", readTestFile(t, path))
	}
}

// TestInstallBrokenFile refuses a file that does not parse, naming the
// line and column, and writes nothing.
func TestInstallBrokenFile(t *testing.T) {
	for _, tc := range []struct {
		host, content, want string
	}{
		{"cursor", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}\n", "line 4, column 5: unexpected '\"': a comma or } was expected"},
		{"claude-code", "{\n  // a comment\n  \"mcpServers\": {}\n}\n", "line 2, column 3: a comment: this file is plain JSON"},
		{"claude-code", "{\"mcpServers\": {\"a\": 1,}}", "line 1, column 24: a trailing comma"},
		{"claude-code", "[1, 2]", "line 1, column 1: the file's top level is not an object"},
		{"claude-code", "{\"mcpServers\": []}", "line 1, column 16: \"mcpServers\" is not an object"},
		{"vscode", "{\n  \"servers\": {\n    \"a\": tru\n  }\n}", "line 3, column 10: unexpected 't'"},
		{"codex", "model = \"o3\"\n[mcp_servers.a]\ncommand = \n", "line 3, column"},
		{"codex", "mcp_servers = 3\n", "mcp_servers is not a table"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			ta, _ := installApp(t)
			path := hostFilePath(t, ta, tc.host)
			writeTestFile(t, path, tc.content, 0o600)
			if code := ta.runArgs(t, "mcp", "install", tc.host); code != exitFailure {
				t.Fatalf("exit %d, want %d", code, exitFailure)
			}
			msg := ta.errOut.String()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "nothing was written") || !strings.Contains(msg, path) {
				t.Errorf("error %q lacks %q, the path or 'nothing was written'", msg, tc.want)
			}
			if readTestFile(t, path) != tc.content || len(siblings(t, path, ".pikoctl-")) != 0 {
				t.Error("a refused file was written or backed up")
			}
		})
	}
}

func TestInstallBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "install", "emacs"}, `unknown host "emacs": choose one of claude-code, claude-desktop, cursor, vscode, codex`},
		{[]string{"mcp", "install", "claude-desktop", "--scope", "project"}, "claude-desktop has no project configuration: use --scope user"},
		{[]string{"mcp", "install", "cursor", "--scope", "global"}, `--scope "global": use user or project`},
		{[]string{"mcp", "install", "cursor", "--name", ""}, "--name"},
	} {
		ta, _ := installApp(t)
		if code := ta.runArgs(t, tc.args...); code != exitUsage || !strings.Contains(ta.errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tc.args, code, ta.errOut, exitUsage, tc.want)
		}
	}
}

// TestInstallReplaceImported removes the entries that match servers in
// pikod's settings (as import maps them), records them, and uninstall puts
// them back; credential values never reach the output.
func TestInstallReplaceImported(t *testing.T) {
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
	settings := `{"extension":"mcp","revision":3,"settings":{"servers":[` +
		`{"id":"github","transport":"stdio","command":"npx","args":["-y","@modelcontextprotocol/server-github"]},` +
		`{"id":"docs","transport":"http","url":"https://docs.example.com/mcp","enabled":false},` +
		`{"id":"context7","transport":"stdio","command":"npx","args":["-y","@upstash/context7-mcp"]}]}}`
	d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodSettings: canned(settings),
	})
	cases := []struct {
		host, content string
		removed, kept []string
	}{
		{"vscode", `{
  // servers
  "servers": {
    "GitHub": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "` + token + `"} // mine
    },
    "mine": {"type": "stdio", "command": "./local-server"},
    "Docs": {"type": "http", "url": "https://docs.example.com/mcp"},
  },
}
`, []string{"GitHub", "Docs"}, []string{"mine"}},
		{"codex", `# codex
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env = { "CONTEXT7_API_KEY" = "` + token + `" }

[mcp_servers.mine]
command = "./local"
`, []string{"context7"}, []string{"mine"}},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			ta, _ := installApp(t)
			path := hostFilePath(t, ta, tc.host)
			writeTestFile(t, path, tc.content, 0o600)
			_, _, before := bridgeOf(t, tc.host, tc.content, "pikod")

			if code := ta.runArgs(t, "--socket", d.socket, "mcp", "install", tc.host, "--replace-imported", "--dry-run"); code != 0 {
				t.Fatalf("dry run exited %d", code)
			}
			if strings.Contains(ta.out.String(), token) {
				t.Errorf("the dry run printed a credential:\n%s", ta.out)
			}
			if readTestFile(t, path) != tc.content || len(siblings(t, path, ".pikoctl-")) != 0 {
				t.Fatal("the dry run wrote something")
			}
			ta.reset()
			if code := ta.runArgs(t, "--socket", d.socket, "mcp", "install", tc.host, "--replace-imported"); code != 0 {
				t.Fatalf("install exited %d", code)
			}
			out := ta.out.String()
			after := readTestFile(t, path)
			_, _, others := bridgeOf(t, tc.host, after, "pikod")
			for _, n := range tc.removed {
				if others[n] != nil {
					t.Errorf("%q was not removed:\n%s", n, after)
				}
				if !strings.Contains(out, "remove \""+n+"\": imported into pikod as ") {
					t.Errorf("the removal of %q is not listed:\n%s", n, out)
				}
			}
			for _, n := range tc.kept {
				if !reflect.DeepEqual(others[n], before[n]) {
					t.Errorf("%q changed: %v", n, others[n])
				}
			}
			if tc.host == "vscode" && !strings.Contains(out, "disabled in pikod") {
				t.Errorf("a server disabled in pikod is not pointed out:\n%s", out)
			}
			rec := recordPath(path)
			if fi, err := os.Stat(rec); err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(out, rec) {
				t.Fatalf("record %s: %v (%v); output:\n%s", rec, fi, err, out)
			}

			ta.reset()
			if code := ta.runArgs(t, "mcp", "uninstall", tc.host, "--dry-run"); code != 0 {
				t.Fatalf("uninstall dry run exited %d", code)
			}
			if strings.Contains(ta.out.String(), token) || readTestFile(t, path) != after {
				t.Errorf("the uninstall dry run printed a credential or wrote:\n%s", ta.out)
			}
			ta.reset()
			if code := ta.runArgs(t, "mcp", "uninstall", tc.host); code != 0 {
				t.Fatalf("uninstall exited %d", code)
			}
			restored := readTestFile(t, path)
			_, _, got := bridgeOf(t, tc.host, restored, "pikod")
			if !reflect.DeepEqual(got, before) || strings.Contains(restored, "pikoctl") {
				t.Errorf("uninstall did not restore the entries:\n%s\nwant those of:\n%s", restored, tc.content)
			}
			for _, line := range strings.Split(tc.content, "\n") {
				if c := strings.TrimSpace(line); strings.HasPrefix(c, "//") || strings.HasPrefix(c, "#") {
					if !strings.Contains(restored, line) {
						t.Errorf("comment %q lost", line)
					}
				}
			}
			if _, err := os.Stat(rec); !os.IsNotExist(err) {
				t.Errorf("the record is still there after uninstall (%v)", err)
			}
		})
	}
}

// TestInstallReplaceImportedNeedsPikod: without a daemon, nothing is
// written and the error says how to start it.
func TestInstallReplaceImportedNeedsPikod(t *testing.T) {
	ta, _ := installApp(t)
	path := filepath.Join(ta.env["HOME"], ".cursor", "mcp.json")
	writeTestFile(t, path, `{"mcpServers": {}}`, 0o600)
	code := ta.runArgs(t, "--socket", filepath.Join(t.TempDir(), "none.sock"), "mcp", "install", "cursor", "--replace-imported")
	if code != exitUnreachable || !strings.Contains(ta.errOut.String(), "nothing was written") {
		t.Errorf("exit %d, stderr %s", code, ta.errOut)
	}
	if readTestFile(t, path) != `{"mcpServers": {}}` {
		t.Error("the file was written")
	}
}

// TestImportSkipsBridge: mcp import never imports pikod's own bridge.
func TestImportSkipsBridge(t *testing.T) {
	for name, in := range map[string]string{
		"mcp.json":    `{"mcpServers": {"pikod": {"command": "/usr/local/bin/pikoctl", "args": ["--instance", "work", "mcp", "serve"]}, "fs": {"command": "npx"}}}`,
		"config.toml": "[mcp_servers.pikod]\ncommand = \"/opt/pikoctl\"\nargs = [\"mcp\", \"serve\"]\n[mcp_servers.fs]\ncommand = \"npx\"\n",
	} {
		plan, _, err := parseImport(name, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range plan.Servers {
			if (s.Name == "pikod") != (s.Skipped == bridgeSkipReason) {
				t.Errorf("%s: %q skipped %q", name, s.Name, s.Skipped)
			}
		}
	}
	for _, tc := range []struct {
		cmd  string
		args []string
		want bool
	}{
		{"/usr/bin/pikoctl", []string{"mcp", "serve"}, true},
		{"pikoctl", []string{"--socket", "/s", "mcp", "serve", "--servers", "a"}, true},
		{"/usr/bin/pikoctl", []string{"mcp", "status"}, false},
		{"/usr/bin/node", []string{"mcp", "serve"}, false},
		{"/usr/bin/pikoctl", []string{"serve", "mcp"}, false},
	} {
		if got := isBridgeEntry(tc.cmd, tc.args); got != tc.want {
			t.Errorf("isBridgeEntry(%q, %q) = %v, want %v", tc.cmd, tc.args, got, tc.want)
		}
	}
}

// TestInstallJSONLayouts edits JSON laid out in many ways: each result
// parses, holds the entry, and removing it gives back the original where
// the layout allows.
func TestInstallJSONLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		jsonc     bool
		roundTrip bool
	}{
		{"one line", `{"mcpServers": {"a": {"command": "x"}}}`, false, true},
		{"one line, two", `{"mcpServers": {"a": 1, "b": {"command": "x"}}}`, false, true},
		{"no servers key", "{\n  \"theme\": \"dark\"\n}\n", false, false},
		{"no servers key, one line", `{"theme": "dark"}`, false, false},
		{"empty object", "{}", false, false},
		{"empty file", "", false, false},
		{"only a comment", "// nothing yet\n", true, false},
		{"empty servers", "{\n  \"mcpServers\": {\n  }\n}\n", false, false},
		{"comment inside empty servers", "{\n  \"servers\": {\n    // add some\n  }\n}\n", true, false},
		{"trailing comma", "{\n  \"servers\": {\n    \"a\": {},\n  },\n}\n", true, true},
		{"comment after last", "{\n  \"servers\": {\n    \"a\": {} // about a\n  }\n}\n", true, true},
		{"block comment after", "{\n  \"servers\": {\n    \"a\": {} /* a */, /* b */ \"b\": 2\n  }\n}\n", true, true},
		{"crlf", "{\r\n  \"mcpServers\": {\r\n    \"a\": {}\r\n  }\r\n}\r\n", false, true},
		{"tabs", "{\n\t\"mcpServers\": {\n\t\t\"a\": {}\n\t}\n}\n", false, true},
		{"bom", "\xef\xbb\xbf{\"mcpServers\": {\"a\": {}}}", false, true},
		{"escaped key", `{"mcpServers": {"a\u0062": {}}}`, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			container := "mcpServers"
			if tc.jsonc {
				container = "servers"
			}
			ed, err := newJSONEditor([]byte(tc.in), tc.jsonc, container)
			if err != nil {
				t.Fatal(err)
			}
			b := jsonBridge{Command: "/bin/pikoctl", Args: []string{"mcp", "serve"}}
			if err := ed.set("pikod", b); err != nil {
				t.Fatalf("set: %v", err)
			}
			got := string(ed.bytes())
			ents, err := ed.entries()
			if err != nil {
				t.Fatal(err)
			}
			if e := findEntry(ents, "pikod"); e == nil || e.Command != "/bin/pikoctl" {
				t.Fatalf("no entry after set:\n%s", got)
			}
			if strings.Count(got, "//") != strings.Count(tc.in, "//") || strings.Count(got, "/*") != strings.Count(tc.in, "/*") {
				t.Errorf("a comment was lost:\n%s", got)
			}
			// Setting again changes nothing.
			if err := ed.set("pikod", b); err != nil || string(ed.bytes()) != got {
				t.Errorf("a second set changed the text (%v):\n%s", err, ed.bytes())
			}
			if err := ed.remove("pikod"); err != nil {
				t.Fatalf("remove: %v", err)
			}
			if tc.roundTrip && string(ed.bytes()) != tc.in {
				t.Errorf("set then remove:\n%q\nwant\n%q", ed.bytes(), tc.in)
			}
			t.Logf("with the entry:\n%s\nafter remove:\n%s", got, ed.bytes())
		})
	}
}

// TestInstallJSONRemove removes each member of objects laid out in
// several ways; the result is valid and keeps the comments.
func TestInstallJSONRemove(t *testing.T) {
	for _, in := range []string{
		"{\n  \"servers\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 3\n  }\n}",
		"{\n  \"servers\": {\n    // about a\n    \"a\": 1, // a\n    /* about b */\n    \"b\": 2,\n    \"c\": 3 // c\n  }\n}",
		"{\"servers\": {\"a\": 1, \"b\": 2, \"c\": 3,}}",
		"{\"servers\": {\"a\": 1 , \"b\": 2 ,\"c\": 3}}",
	} {
		for _, name := range []string{"a", "b", "c"} {
			ed, err := newJSONEditor([]byte(in), true, "servers")
			if err != nil {
				t.Fatal(err)
			}
			if err := ed.remove(name); err != nil {
				t.Errorf("remove %s from %q: %v", name, in, err)
				continue
			}
			out := string(ed.bytes())
			for _, c := range []string{"// about a", "/* about b */", "// c"} {
				if strings.Contains(in, c) && !strings.Contains(out, c) {
					t.Errorf("remove %s from %q lost %q: %q", name, in, c, out)
				}
			}
			ents, _ := ed.entries()
			if len(ents) != 2 || findEntry(ents, name) != nil {
				t.Errorf("remove %s from %q: %q", name, in, out)
			}
		}
	}
}

func TestInstallTOMLLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		roundTrip bool
		wantErr   string
	}{
		{"empty", "", false, ""},
		{"no final newline", "model = \"o3\"", false, ""},
		{"after the servers", "[mcp_servers.a]\ncommand = \"x\"\n\n# next\n[profiles.x]\nmodel = \"y\"\n", true, ""},
		{"crlf", "[mcp_servers.a]\r\ncommand = \"x\"\r\n", true, ""},
		{"quoted header", "[ mcp_servers . \"pikod\" ]\ncommand = \"old\"\nargs = [\"x\"]\n[mcp_servers.\"pikod\".env]\nA = \"1\"\n", false, ""},
		{"inline entry", "[mcp_servers]\npikod = { command = \"x\" }\n", false, "inline table"},
		{"array of tables", "[[hooks]]\nrun = \"a\"\n", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ed, err := newTOMLEditor([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			err = ed.set("pikod", "/bin/pikoctl", []string{"mcp", "serve"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || string(ed.bytes()) != tc.in {
					t.Fatalf("set: %v, want %q and no change", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := ed.entries()
			e := findEntry(ents, "pikod")
			if e == nil || e.Command != "/bin/pikoctl" || !reflect.DeepEqual(e.Args, []string{"mcp", "serve"}) {
				t.Fatalf("entry after set: %+v\n%s", e, ed.bytes())
			}
			if strings.Contains(string(ed.bytes()), "old") {
				t.Errorf("the old entry's tables are left:\n%s", ed.bytes())
			}
			if err := ed.remove("pikod"); err != nil {
				t.Fatal(err)
			}
			if tc.roundTrip && string(ed.bytes()) != tc.in {
				t.Errorf("set then remove:\n%q\nwant\n%q", ed.bytes(), tc.in)
			}
		})
	}
}

// TestInstallUnchangedReformatted: a bridge entry the owner reformatted
// but that runs the same command is unchanged, not rewritten; one that
// runs another pikoctl is replaced.
func TestInstallUnchangedReformatted(t *testing.T) {
	ta, exe := installApp(t)
	path := filepath.Join(ta.env["HOME"], ".cursor", "mcp.json")
	same := `{"mcpServers": {"pikod": {"args": ["mcp", "serve"], "command": ` + jsonQuote(exe) + `}}}`
	writeTestFile(t, path, same, 0o600)
	if code := ta.runArgs(t, "mcp", "install", "cursor"); code != 0 || !strings.Contains(ta.out.String(), "unchanged") {
		t.Fatalf("exit %d; want unchanged", code)
	}
	if readTestFile(t, path) != same || len(siblings(t, path, ".pikoctl-")) != 0 {
		t.Error("an identical entry was rewritten")
	}
	old := `{"mcpServers": {"pikod": {"command": "/old/bin/pikoctl", "args": ["mcp", "serve"]}}}`
	writeTestFile(t, path, old, 0o600)
	ta.reset()
	if code := ta.runArgs(t, "mcp", "install", "cursor"); code != 0 || !strings.Contains(ta.out.String(), `replace "pikod"`) {
		t.Fatalf("exit %d; want the old bridge replaced", code)
	}
	if cmd, _, _ := bridgeOf(t, "cursor", readTestFile(t, path), "pikod"); cmd != exe {
		t.Errorf("the old bridge was not replaced: %s", readTestFile(t, path))
	}
}
