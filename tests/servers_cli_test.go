package tests

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// runCtlEnv is runCtl with extra environment variables.
func runCtlEnv(t *testing.T, d *daemon, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCtlOpts(t, d.socket, ctlOpts{env: env}, stdin, args...)
}

// ctlFails runs pikoctl, wants exit code want and returns stderr.
func ctlFails(t *testing.T, d *daemon, want int, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, "", args...)
	if code != want {
		t.Fatalf("pikoctl %v: exit %d, want %d; stdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
	}
	return stderr
}

// savedServers returns the saved settings as parsed entries.
func savedServers(t *testing.T, d *daemon) (map[string]contracts.ServerSettings, uint64) {
	t.Helper()
	res := readSettings(t, d)
	s, err := contracts.ParseMCPSettings(res.Settings)
	if err != nil {
		t.Fatalf("the saved settings do not parse: %v", err)
	}
	out := map[string]contracts.ServerSettings{}
	for _, e := range s.Servers {
		out[e.ID] = e
	}
	return out, res.Revision
}

// TestCLIServerRoundTrips adds, grants, revokes, disables, edits and removes
// servers one at a time, each through configure with the revision check.
func TestCLIServerRoundTrips(t *testing.T) {
	d := startDaemon(t)

	out := ctlOK(t, d, "", "mcp", "add", "fx", "--stdio", "--env", "FIXTURE_MODE=test", "--timeout-ms", "5000", "--", fixtureBin, "--tools", "1")
	if !strings.Contains(out, "saved mcp settings: revision 1") || !strings.Contains(out, "added: fx") {
		t.Errorf("mcp add printed %q, want the save and added: fx", out)
	}
	ctlOK(t, d, "", "mcp", "add", "web", "--http", "https://mcp.example.com/mcp", "--header", "X-Trace=on", "--disabled", "--oauth")
	srv, rev := savedServers(t, d)
	fx, web := srv["fx"], srv["web"]
	enabled := func(id string) bool { s := srv[id]; return s.IsEnabled() }
	if rev != 2 || fx.Transport != "stdio" || fx.Command != fixtureBin || !slices.Equal(fx.Args, []string{"--tools", "1"}) ||
		fx.Env["FIXTURE_MODE"] != "test" || fx.TimeoutMs != 5000 {
		t.Errorf("after add, fx is %+v at revision %d", fx, rev)
	}
	if web.Transport != "http" || web.URL != "https://mcp.example.com/mcp" || enabled("web") || web.Headers["X-Trace"] != "on" || web.OAuth == nil {
		t.Errorf("after add, web is %+v", web)
	}

	// Mistakes change nothing and say what to do.
	if e := ctlFails(t, d, 1, "mcp", "add", "fx", "--stdio", "--", fixtureBin); !strings.Contains(e, `server "fx" is already configured`) {
		t.Errorf("adding fx twice said %q", e)
	}
	if e := ctlFails(t, d, 2, "mcp", "add", "two", "--stdio", "--http", "https://x.example/mcp", "--", "x"); !strings.Contains(e, "the transport is given twice") {
		t.Errorf("add with two transports said %q", e)
	}
	// (A secret-looking -e value goes to the vault: TestAddShapes.)
	if e := ctlFails(t, d, 1, "mcp", "grant", "nope", "echo", "--read"); !strings.Contains(e, `no server "nope" is configured`) {
		t.Errorf("grant on an unknown server said %q", e)
	}
	if e := ctlFails(t, d, 1, "mcp", "grant", "fx", "echo", "--autonomous"); !strings.Contains(e, "explicit") {
		t.Errorf("autonomous grant without a tools list said %q", e)
	}
	if _, r := savedServers(t, d); r != 2 {
		t.Fatalf("refused changes moved the revision to %d, want 2", r)
	}

	// grant --read widens, and says so; the grant takes effect.
	out = ctlOK(t, d, "", "mcp", "grant", "fx", "add", "--read")
	if !strings.Contains(out, `widens: server "fx": "add" runs without approval`) {
		t.Errorf("grant --read printed %q, want a widens line", out)
	}
	if srv, _ = savedServers(t, d); !slices.Equal(srv["fx"].ReadOnlyTools, []string{"add"}) {
		t.Errorf("after grant --read, readOnlyTools = %v", srv["fx"].ReadOnlyTools)
	}
	// --arg values are typed by the tool's schema (numbers here).
	out = ctlOK(t, d, "", "mcp", "call", "fx", "add", "--arg", "a=2", "--arg", "b=3.5")
	if !strings.Contains(out, "5.5") || !strings.Contains(out, "status: completed") {
		t.Errorf("call add --arg a=2 --arg b=3.5 printed %q, want 5.5 completed", out)
	}
	out = ctlOK(t, d, "", "mcp", "call", "fx", "add", "--args-json", `{"a":40}`, "--arg", "b=2")
	if !strings.Contains(out, "42") {
		t.Errorf("call add with --args-json and --arg printed %q, want 42", out)
	}
	if e := ctlFails(t, d, 2, "mcp", "call", "fx", "add", "--arg", "a=two", "--arg", "b=2"); !strings.Contains(e, `"two" is not number`) {
		t.Errorf("a non-number --arg said %q", e)
	}
	// Without a grant, a call with --arg is prepared, not sent (exit 4).
	if _, _, code := runCtl(t, d, "", "mcp", "call", "fx", "echo", "--arg", "text=hi"); code != 4 {
		t.Errorf("call of an ungranted tool exited %d, want 4 (approval required)", code)
	}

	// mcp tool shows grant, pin, annotations and the schema.
	out = ctlOK(t, d, "", "mcp", "tool", "fx", "echo")
	for _, want := range []string{"tool:        echo", "grant:       approval", "pin:         none (not granted)",
		"readOnlyHint: true", "they grant nothing", "Returns its text argument", "text  string  required", "output:"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp tool fx echo lacks %q:\n%s", want, out)
		}
	}
	if out = ctlOK(t, d, "", "mcp", "tool", "fx", "add"); !strings.Contains(out, "grant:       read") || !strings.Contains(out, "pin:         pinned") {
		t.Errorf("mcp tool fx add after grant --read:\n%s", out)
	}
	if e := ctlFails(t, d, 1, "mcp", "tool", "fx", "nope"); !strings.Contains(e, `server "fx" has no tool "nope"`) {
		t.Errorf("mcp tool of an unknown tool said %q", e)
	}

	// Search ranks the connected fixture's tools.
	out = ctlOK(t, d, "", "mcp", "search", "echo", "text")
	if lines := strings.Split(out, "\n"); len(lines) < 2 || !strings.HasPrefix(lines[1], "fx      echo") {
		t.Errorf("search 'echo text' did not rank fx echo first:\n%s", out)
	}
	if !strings.Contains(out, "not searched (not connected): web") {
		t.Errorf("search does not name the unconnected server:\n%s", out)
	}

	// revoke and --select take grants back; enable/disable flip enabled.
	ctlOK(t, d, "", "mcp", "revoke", "fx", "add")
	ctlOK(t, d, "", "mcp", "enable", "web")
	srv, _ = savedServers(t, d)
	if len(srv["fx"].ReadOnlyTools) != 0 || !enabled("web") {
		t.Errorf("after revoke and enable: fx %+v, web enabled %v", srv["fx"], enabled("web"))
	}
	ctlOK(t, d, "", "mcp", "disable", "fx")
	if srv, _ = savedServers(t, d); enabled("fx") {
		t.Error("disable fx left it enabled")
	}

	// edit: $EDITOR changes the entry; the save is validated.
	editor := filepath.Join(t.TempDir(), "editor.sh")
	script := "#!/bin/sh\nsed -i 's/\"timeoutMs\": 5000/\"timeoutMs\": 7000/' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCtlEnv(t, d, []string{"EDITOR=" + editor}, "", "mcp", "edit", "fx")
	if code != 0 || !strings.Contains(stdout, "changed: fx") {
		t.Fatalf("mcp edit fx: exit %d\n%s%s", code, stdout, stderr)
	}
	if srv, _ = savedServers(t, d); srv["fx"].TimeoutMs != 7000 {
		t.Errorf("after edit, fx timeoutMs = %d, want 7000", srv["fx"].TimeoutMs)
	}
	bad := filepath.Join(t.TempDir(), "bad.sh")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\nsed -i 's/\"timeoutMs\": 7000/\"timeoutMs\": 5/' \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCtlEnv(t, d, []string{"EDITOR=" + bad}, "", "mcp", "edit", "fx")
	if code != 1 || !strings.Contains(stderr, "timeoutMs") || !strings.Contains(stderr, "your text is kept in") {
		t.Errorf("an invalid edit: exit %d, stderr %q; want the problem and where the text is kept", code, stderr)
	}
	if srv, _ = savedServers(t, d); srv["fx"].TimeoutMs != 7000 {
		t.Errorf("an invalid edit changed timeoutMs to %d", srv["fx"].TimeoutMs)
	}

	// --json mcp config feeds back to configure, with its revision checked.
	full := ctlOK(t, d, "", "--json", "mcp", "config")
	if out := ctlOK(t, d, full, "mcp", "configure", "-"); !strings.Contains(out, "unchanged") {
		t.Errorf("re-saving --json mcp config printed %q, want unchanged", out)
	}
	ctlOK(t, d, "", "mcp", "remove", "web")
	_, stderr, code = runCtl(t, d, full, "mcp", "configure", "-")
	if code != 1 || !strings.Contains(stderr, "settings are at revision") {
		t.Errorf("stale --json mcp config: exit %d, stderr %q; want revision_moved", code, stderr)
	}
	if srv, _ = savedServers(t, d); len(srv) != 1 || srv["fx"].ID != "fx" {
		t.Errorf("after remove web (and a refused stale save), servers = %v", srv)
	}
	// Plain mcp config round-trips too.
	cfg := ctlOK(t, d, "", "mcp", "config")
	if out := ctlOK(t, d, cfg, "mcp", "configure", "-"); !strings.Contains(out, "unchanged") {
		t.Errorf("re-saving mcp config printed %q, want unchanged", out)
	}
}

// randomToken returns n random letters and digits.
func randomToken(t *testing.T, n int) string {
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = alpha[int(b[i])%len(alpha)]
	}
	return string(b)
}

// TestCLIImport imports one real-shaped file of each format. Credentials
// never reach the settings, the database or the logs; they reach the
// server from the vault; nothing is granted.
func TestCLIImport(t *testing.T) {
	d := startDaemon(t)
	canaries := map[string]string{
		"claude": "ghp_" + randomToken(t, 36),
		"cursor": "sk-" + randomToken(t, 40),
		"codex":  "ctx7sk-" + randomToken(t, 36),
	}
	claude := fmt.Sprintf(`{
  "mcpServers": {
    "GitHub Tools": {
      "command": %q,
      "args": ["--tools", "2"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": %q, "LOG_LEVEL": "info"},
      "alwaysAllow": ["echo"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}`, fixtureBin, canaries["claude"])
	cursor := fmt.Sprintf(`{
  "mcpServers": {
    "remote-docs": {"url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer %s", "X-Team": "blue"}},
    "local": {"command": %q, "args": [], "env": {}}
  }
}`, canaries["cursor"], fixtureBin)
	vscode := fmt.Sprintf(`// .vscode/mcp.json
{
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "Example API key", "password": true},
  ],
  "servers": {
    "Example Search": {
      "type": "stdio",
      "command": %q,
      "args": ["--name", "vscode"],
      "env": {"EXAMPLE_API_KEY": "${input:api-key}"}, // asked for
      "envFile": "${workspaceFolder}/.env",
    },
    /* a remote one */
    "remote": {"type": "sse", "url": "https://sse.example.com/sse", "headers": {"Authorization": "Bearer ${input:api-key}"}},
    "workspace": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/server.js"]},
  },
}`, fixtureBin)
	codex := fmt.Sprintf(`model = "o3"

[mcp_servers.context7]
command = %q
args = ["--tools", "1"]
env = { "CONTEXT7_API_KEY" = %q }
startup_timeout_sec = 20
tool_timeout_sec = 30

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
enabled_tools = ["get_file"]
disabled_tools = ["delete_file"]
`, fixtureBin, canaries["codex"])

	files := map[string]string{
		"claude": writeFile(t, "claude_desktop_config.json", claude),
		"cursor": writeFile(t, "mcp.json", cursor),
		"vscode": writeFile(t, "vscode-mcp.json", vscode),
		"codex":  writeFile(t, "config.toml", codex),
	}

	// The dry run saves nothing and shows no credential.
	for name, f := range files {
		out := ctlOK(t, d, "", "mcp", "import", f)
		if !strings.Contains(out, "nothing was saved") {
			t.Errorf("dry run of %s printed no 'nothing was saved':\n%s", name, out)
		}
		for _, c := range canaries {
			if strings.Contains(out, c) {
				t.Errorf("dry run of %s printed a credential", name)
			}
		}
	}
	if res := readSettings(t, d); res.Revision != 0 {
		t.Fatalf("dry runs saved the settings (revision %d)", res.Revision)
	}

	out := ctlOK(t, d, "", "mcp", "import", files["claude"])
	for _, want := range []string{"format: mcpServers", "GitHub Tools -> github-tools (stdio)",
		"to the vault: env.GITHUB_PERSONAL_ACCESS_TOKEN (value from the file, not shown)",
		"not imported: alwaysAllow (grants are never imported"} {
		if !strings.Contains(out, want) {
			t.Errorf("claude dry run lacks %q:\n%s", want, out)
		}
	}
	out = ctlOK(t, d, "", "mcp", "import", files["vscode"])
	for _, want := range []string{"format: VS Code", "Example Search -> example-search (stdio)",
		"env.EXAMPLE_API_KEY (asked at the terminal: Example API key (${input:api-key}))",
		"not imported: envFile", "workspace: SKIPPED: args[0] uses ${workspaceFolder}", "remote -> remote (sse)"} {
		if !strings.Contains(out, want) {
			t.Errorf("vscode dry run lacks %q:\n%s", want, out)
		}
	}
	out = ctlOK(t, d, "", "mcp", "import", files["codex"])
	for _, want := range []string{"format: Codex", "context7 -> context7 (stdio)", "to the vault: env.CONTEXT7_API_KEY",
		"not imported: startup_timeout_sec", "not imported: disabled_tools", "figma -> figma (http)",
		"headers.Authorization (asked at the terminal: the value of $FIGMA_OAUTH_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("codex dry run lacks %q:\n%s", want, out)
		}
	}

	for _, name := range []string{"claude", "cursor", "vscode", "codex"} {
		out := ctlOK(t, d, "", "mcp", "import", "--apply", files[name])
		if !strings.Contains(out, "saved mcp settings") {
			t.Errorf("import --apply %s printed:\n%s", name, out)
		}
	}
	srv, _ := savedServers(t, d)
	wantIDs := []string{"github-tools", "remote-docs", "local", "example-search", "remote", "context7", "figma"}
	for _, id := range wantIDs {
		s, ok := srv[id]
		if !ok {
			t.Errorf("import saved no server %q (saved: %v)", id, slices.Sorted(maps.Keys(srv)))
			continue
		}
		if len(s.ReadOnlyTools) > 0 || len(s.AutonomousTools) > 0 {
			t.Errorf("import granted tools of %s: %+v", id, s)
		}
	}
	if len(srv) != len(wantIDs) {
		t.Errorf("import saved %d servers, want %d: %v", len(srv), len(wantIDs), slices.Sorted(maps.Keys(srv)))
	}
	if s := srv["github-tools"]; s.Env["LOG_LEVEL"] != "info" || s.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "" {
		t.Errorf("github-tools env = %v: want LOG_LEVEL kept and the token moved to the vault", s.Env)
	}
	if s := srv["remote-docs"]; s.Transport != "http" || s.Headers["X-Team"] != "blue" || s.Headers["Authorization"] != "" {
		t.Errorf("remote-docs = %+v", s)
	}
	if s := srv["context7"]; s.TimeoutMs != 30000 {
		t.Errorf("context7 timeoutMs = %d, want 30000 from tool_timeout_sec", s.TimeoutMs)
	}
	if s := srv["figma"]; s.Tools == nil || !slices.Equal(*s.Tools, []string{"get_file"}) {
		t.Errorf("figma tools = %v, want [get_file] from enabled_tools", s.Tools)
	}

	// Importing again adds nothing twice.
	if _, stderr, code := runCtl(t, d, "", "mcp", "import", "--apply", files["claude"]); code != 1 || !strings.Contains(stderr, "nothing to import") {
		t.Errorf("importing claude twice: exit %d, %q", code, stderr)
	}

	// The credential reached the server from the vault (its value is
	// redacted in the result, the name is there).
	ctlOK(t, d, "", "mcp", "grant", "github-tools", "env", "--read")
	out = ctlOK(t, d, "", "mcp", "call", "github-tools", "env")
	if !strings.Contains(out, "GITHUB_PERSONAL_ACCESS_TOKEN=") {
		t.Errorf("the imported server's environment lacks the token from the vault:\n%s", out)
	}

	// Canary check: no credential in the settings, the database, the log.
	cfg := ctlOK(t, d, "", "mcp", "config")
	db, err := os.ReadFile(filepath.Join(d.stateDir, "pikod.db"))
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(d.logPath())
	for name, c := range canaries {
		if strings.Contains(cfg, c) || bytes.Contains(db, []byte(c)) || bytes.Contains(log, []byte(c)) || strings.Contains(out, c) {
			t.Errorf("the %s credential was found in the settings, the database, the log or a result", name)
		}
	}
}

// TestSearchMethod checks extensions.mcp.search's errors and shape.
func TestSearchMethod(t *testing.T) {
	d := startDaemon(t)
	configureMCP(t, d, fmt.Sprintf(`{"servers":[{"id":"fx","transport":"stdio","command":%q},{"id":"idle","transport":"stdio","command":%q}]}`, fixtureBin, fixtureBin))
	if e := d.callErr(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: " "}); e.Reason() != "missing_query" {
		t.Errorf("empty query: reason %q, want missing_query", e.Reason())
	}
	if e := d.callErr(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: "x", Limit: 1000}); e.Reason() != "invalid_limit" {
		t.Errorf("limit 1000: reason %q, want invalid_limit", e.Reason())
	}
	var res contracts.SearchResult
	d.callInto(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: "sleep"}, &res)
	if len(res.Results) != 0 || len(res.Searched) != 0 || !slices.Equal(res.NotSearched, []string{"fx", "idle"}) {
		t.Errorf("search before any connect = %+v, want nothing searched, nothing connected", res)
	}
	d.call(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "fx"})
	d.callInto(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: "sleep milliseconds", Limit: 2}, &res)
	if len(res.Results) == 0 || res.Results[0].Tool != "sleep" || res.Results[0].Server != "fx" || res.Results[0].Grant != contracts.GrantApproval ||
		res.Results[0].Name != "mcp_fx_sleep" || res.Results[0].Score <= 0 || len(res.Results) > 2 {
		t.Errorf("search 'sleep milliseconds' = %+v, want fx sleep first with its grant and a score, at most 2", res.Results)
	}
	if !slices.Equal(res.Searched, []string{"fx"}) || !slices.Equal(res.NotSearched, []string{"idle"}) {
		t.Errorf("searched %v, not searched %v", res.Searched, res.NotSearched)
	}
	d.callInto(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: "zzzunknownword"}, &res)
	if len(res.Results) != 0 {
		t.Errorf("a word no tool has matched %+v", res.Results)
	}
}

// TestCLIImportPrompts: ${input:...} references are asked once at the
// terminal with echo off, substituted, and stored in the vault for every
// server that uses them; the answer is nowhere else.
func TestCLIImportPrompts(t *testing.T) {
	d := startDaemon(t)
	answer := randomToken(t, 32)
	literal := "ghp_" + randomToken(t, 36)
	file := writeFile(t, "mcp.json", fmt.Sprintf(`{
  "inputs": [{"type": "promptString", "id": "api-key", "description": "Example API key", "password": true}],
  "servers": {
    "Example Search": {"type": "stdio", "command": %q, "env": {"EXAMPLE_API_KEY": "${input:api-key}"}},
    "lit": {"command": %q, "args": ["--tools", "1"], "env": {"LIT_API_TOKEN": %q}},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}}
  }
}`, fixtureBin, fixtureBin, literal))
	p := ctlTTY(t, d, "mcp", "import", "--apply", file)
	p.waitFor(t, "(hidden; empty skips): ")
	p.typeLine(t, answer)
	p.waitFor(t, "env.LIT_API_TOKEN for lit: Enter stores the value from the file")
	p.typeLine(t, "")
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("import --apply on a terminal exited %d:\n%s", code, out)
	}
	if strings.Count(out, "Example API key (${input:api-key})") != 3 {
		// Twice in the dry-run listing, once as the only prompt.
		t.Errorf("the reference was not asked exactly once:\n%s", out)
	}
	for _, want := range []string{"stored env.EXAMPLE_API_KEY for example-search", "stored headers.Authorization for remote", "stored env.LIT_API_TOKEN for lit"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out)
		}
	}
	ctlOK(t, d, "", "mcp", "grant", "example-search", "env", "--read")
	env := ctlOK(t, d, "", "mcp", "call", "example-search", "env")
	if !strings.Contains(env, "EXAMPLE_API_KEY=") {
		t.Errorf("the server's environment lacks the answered variable:\n%s", env)
	}
	cfg := ctlOK(t, d, "", "mcp", "config")
	db, err := os.ReadFile(filepath.Join(d.stateDir, "pikod.db"))
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(d.logPath())
	for _, secret := range []string{answer, literal} {
		if strings.Contains(out, secret) || strings.Contains(cfg, secret) || strings.Contains(env, secret) ||
			bytes.Contains(db, []byte(secret)) || bytes.Contains(log, []byte(secret)) {
			t.Error("a credential was echoed, saved in the settings or database, logged, or returned")
		}
	}
}

// TestCLIEditAgain: at a terminal, a refused edit is shown and reopened
// with the text kept; the second, valid edit is saved.
func TestCLIEditAgain(t *testing.T) {
	d := startDaemon(t)
	ctlOK(t, d, "", "mcp", "add", "fx", "--stdio", "--timeout-ms", "5000", "--", fixtureBin)
	dir := t.TempDir()
	// First run: an invalid timeout. Second run: the file still holds the
	// invalid text (kept), which it fixes.
	editor := filepath.Join(dir, "editor.sh")
	script := "#!/bin/sh\n" +
		"if [ ! -e " + dir + "/once ]; then touch " + dir + "/once; sed -i 's/\"timeoutMs\": 5000/\"timeoutMs\": 5/' \"$1\"; exit 0; fi\n" +
		"grep -q '\"timeoutMs\": 5,' \"$1\" || grep -q '\"timeoutMs\": 5$' \"$1\" || exit 7\n" +
		"sed -i 's/\"timeoutMs\": 5\\b/\"timeoutMs\": 9000/' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pikoctlBin, "--socket", d.socket, "mcp", "edit", "fx")
	cmd.Env = append(minimalEnv(t.TempDir()), "EDITOR="+editor)
	p := startTTY(t, cmd)
	p.waitFor(t, "edit again? [Y/n] ")
	p.typeLine(t, "")
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("edit exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "timeoutMs") || !strings.Contains(out, "changed: fx") {
		t.Errorf("the terminal lacks the problem or the save:\n%s", out)
	}
	if srv, _ := savedServers(t, d); srv["fx"].TimeoutMs != 9000 {
		t.Errorf("after the second edit, timeoutMs = %d, want 9000", srv["fx"].TimeoutMs)
	}
}
