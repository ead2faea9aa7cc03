package tests

// Dead ends (issue 19, item 4): every refusal and every interruption of
// pikoctl names the way out, and nothing typed is lost on the way.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
)

// echoIsOn reports whether p's terminal echoes again (checked after the
// program on it ended: one that turned echo off must turn it back on).
func echoIsOn(t testing.TB, p *ttyProc) bool {
	t.Helper()
	n, err := unix.IoctlGetUint32(int(p.master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("finding the terminal's name: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal: %v", err)
	}
	defer slave.Close()
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("reading the terminal's modes: %v", err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// interruptAt waits for prompt on p's terminal, types Ctrl-C, and wants
// pikoctl to say "pikoctl: cancelled: want" and exit 130.
func interruptAt(t *testing.T, p *ttyProc, prompt, want string) string {
	t.Helper()
	p.waitFor(t, prompt)
	p.interrupt(t)
	out, code := p.wait(t)
	out = strings.ReplaceAll(out, "\r\n", "\n")
	if code != 130 || !strings.Contains(out, "pikoctl: cancelled: "+want) {
		t.Fatalf("exit %d after Ctrl-C at %q, want 130 and %q; terminal:\n%s", code, prompt, "pikoctl: cancelled: "+want, out)
	}
	return out
}

// TestCtrlCAtPrompts: Ctrl-C at any pikoctl prompt ends it at once with
// exit 130 and says what it did not do: approve's digest question,
// secret's masked line (echo back on afterwards), edit's "edit again?",
// respond's questions.
func TestCtrlCAtPrompts(t *testing.T) {
	t.Parallel()
	d, callLog := approvalDaemon(t)

	t.Run("approve", func(t *testing.T) {
		nonce := "ctrlc-" + randomHex(t, 8)
		prep := prepareCount(t, d, "fx", nonce)
		p := ctlTTY(t, d, "mcp", "approve", prep.ActionID)
		interruptAt(t, p, approvePrompt, "nothing was approved")
		wantState(t, d, prep.ActionID, contracts.ActionPrepared)
		wantNonce(t, callLog, nonce, 0)
	})

	t.Run("secret", func(t *testing.T) {
		p := ctlTTY(t, d, "mcp", "secret", "fx")
		p.waitFor(t, "credentials for fx")
		waitNoEcho(t, p)
		interruptAt(t, p, "credentials for fx", "nothing was sent")
		if !echoIsOn(t, p) {
			t.Errorf("the terminal's echo is still off after Ctrl-C at the masked prompt")
		}
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{Server: "fx"}, &st)
		if len(st.Servers) != 1 || len(st.Servers[0].CredentialFields) != 0 {
			t.Errorf("credentials after Ctrl-C: %+v, want none stored", st.Servers)
		}
	})

	t.Run("edit again", func(t *testing.T) {
		editor := filepath.Join(t.TempDir(), "editor.sh")
		script := "#!/bin/sh\nsed -i 's/\"timeoutMs\": 10000/\"timeoutMs\": 5/' \"$1\"\n"
		if err := os.WriteFile(editor, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(pikoctlBin, "--socket", d.socket, "mcp", "edit", "fx")
		cmd.Env = append(minimalEnv(t.TempDir()), "EDITOR="+editor)
		p := startTTY(t, cmd)
		out := interruptAt(t, p, "edit again? [Y/n] ", "nothing was saved; your text is kept in ")
		kept := keptFile(t, out)
		if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), `"timeoutMs": 5`) {
			t.Errorf("the kept file %s: %v, %q; want the edited text", kept, err, b)
		}
		if srv, _ := savedServers(t, d); srv["fx"].TimeoutMs != 10000 {
			t.Errorf("timeoutMs after a cancelled edit: %d, want 10000", srv["fx"].TimeoutMs)
		}
	})

	t.Run("import credentials", func(t *testing.T) {
		file := writeFile(t, "mcp.json", `{"inputs":[{"type":"promptString","id":"key","description":"the key","password":true}],
  "servers":{"keyed":{"type":"stdio","command":"`+fixtureBin+`","args":["--tools","2"],"env":{"KEYED_API_KEY":"${input:key}"}}}}`)
		p := ctlTTY(t, d, "mcp", "import", file, "--apply")
		out := interruptAt(t, p, "the key (${input:key}) for keyed", "the servers are saved, but the credentials of keyed were not stored")
		if !strings.Contains(out, "pikoctl mcp secret SERVER") {
			t.Errorf("the cancelled import does not say how to store the credentials:\n%s", out)
		}
		if srv, _ := savedServers(t, d); srv["keyed"].ID != "keyed" {
			t.Errorf("the imported server was not saved: %v", srv)
		}
		if f := credentialFields(t, d, "keyed"); len(f) != 0 {
			t.Errorf("credentials stored after Ctrl-C: %v", f)
		}
	})

	t.Run("respond", func(t *testing.T) {
		d := askWithDaemon(t)
		call := ctlProgress(t, d, `{"message":"name?","schema":{"type":"object","properties":{"name":{"type":"string"}}}}`, "mcp", "call", "fx", "ask-with")
		req := waitPending(t, d, "fx")
		p := ctlTTY(t, d, "mcp", "respond", req.ID)
		p.waitFor(t, "(a/d/c): ")
		p.typeLine(t, "a")
		interruptAt(t, p, "│ name: ", "nothing was sent")
		if st := requestState(t, d, req.ID); st.State != contracts.RequestPending {
			t.Errorf("request after Ctrl-C: %s, want still pending", st.State)
		}
		if call.exited() {
			t.Errorf("the call ended: the server got an answer; stdout %q", call.stdout.String())
		}
	})
}

// keptFile finds the path pikoctl named after "your text is kept in ".
func keptFile(t testing.TB, out string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "your text is kept in ")
	if !ok {
		t.Fatalf("no kept file named; output:\n%s", out)
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		t.Fatalf("no kept file named; output:\n%s", out)
	}
	return strings.TrimRight(f[0], ":;,.")
}

// TestConfigureForeignFile: configure given another client's file (Claude
// Desktop's or Cursor's mcpServers, VS Code's servers, Codex's TOML) saves
// nothing and names 'pikoctl mcp import FILE', which reads it.
func TestConfigureForeignFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	for _, tc := range []struct{ name, file, content string }{
		{"claude desktop", "claude_desktop_config.json", `{"mcpServers":{"files":{"command":"npx","args":["-y","server-filesystem"]}}}`},
		{"vscode", "mcp.json", `{"servers":{"files":{"type":"stdio","command":"npx"}}}`},
		{"codex", "config.toml", "[mcp_servers.files]\ncommand = \"npx\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.content)
			stderr := ctlFails(t, d, 1, "mcp", "configure", path)
			if want := "'pikoctl mcp import " + path + "'"; !strings.Contains(stderr, want) || !strings.Contains(stderr, "nothing was saved") {
				t.Errorf("configure %s: stderr %q; want %s and nothing saved", tc.file, stderr, want)
			}
			if strings.Contains(stderr, "unknown property") {
				t.Errorf("configure %s: stderr %q still lists the file's fields as unknown properties", tc.file, stderr)
			}
		})
	}
	_, stderr, code := runCtl(t, d, `{"mcpServers":{}}`, "mcp", "configure", "-")
	if code != 1 || !strings.Contains(stderr, "'pikoctl mcp import -'") {
		t.Errorf("configure - with mcpServers: exit %d, stderr %q; want the import command", code, stderr)
	}
	if res := readSettings(t, d); res.Revision != 0 {
		t.Errorf("the settings were saved (revision %d)", res.Revision)
	}
	// pikod's own settings still save.
	ctlOK(t, d, mcpSettings(t), "mcp", "configure", "-")
}

// TestImportAllowPrivateNetwork: an entry for an http server on loopback
// is skipped with the option that imports it; with --allow-private-network
// NAME the review shows it, and the server is saved and connects.
func TestImportAllowPrivateNetwork(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	fx := startFixtureServer(t, "http", "127.0.0.1:0")
	file := writeFile(t, "claude_desktop_config.json",
		`{"mcpServers":{"local web":{"type":"http","url":"`+fx.url+`"},"tool":{"command":"`+fixtureBin+`"}}}`)

	out := ctlOK(t, d, "", "mcp", "import", file)
	if !strings.Contains(out, "local web: SKIPPED") || !strings.Contains(out, "--allow-private-network 'local web'") {
		t.Errorf("import without the option: want the entry skipped naming --allow-private-network 'local web'; stdout:\n%s", out)
	}
	if stderr := ctlFails(t, d, 2, "mcp", "import", file, "--allow-private-network", "tool"); !strings.Contains(stderr, "local program") {
		t.Errorf("--allow-private-network on a stdio entry: stderr %q, want it refused", stderr)
	}
	if stderr := ctlFails(t, d, 2, "mcp", "import", file, "--allow-private-network", "nope"); !strings.Contains(stderr, "no such entry") {
		t.Errorf("--allow-private-network on an unknown entry: stderr %q, want it refused", stderr)
	}

	out = ctlOK(t, d, "", "mcp", "import", file, "--only", "local web", "--allow-private-network", "local web", "--apply")
	for _, want := range []string{"local web -> local-web (http)", "allowPrivateNetwork: yes (--allow-private-network)",
		`widens: server "local-web": its endpoint may be on this machine or a private network`, "added: local-web"} {
		if !strings.Contains(out, want) {
			t.Errorf("import --allow-private-network --apply: stdout lacks %q:\n%s", want, out)
		}
	}
	if srv, _ := savedServers(t, d); !srv["local-web"].AllowPrivateNetwork || srv["local-web"].URL != fx.url {
		t.Fatalf("saved local-web = %+v, want its url with allowPrivateNetwork", srv["local-web"])
	}
	connectServer(t, d, "local-web")
}

// editorScript writes an $EDITOR that runs script with the file as $1.
func editorScript(t testing.TB, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEditFromKeptFile: the file a refused edit keeps (one server's entry,
// or the whole settings after revision_moved) is named with the command
// that retries it, 'pikoctl mcp edit [SERVER] --from FILE', and that
// command saves it on top of the current settings.
func TestEditFromKeptFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	ctlOK(t, d, "", "mcp", "add", "fx", "--timeout-ms", "5000", "--", fixtureBin)
	ctlOK(t, d, "", "mcp", "add", "gx", "--timeout-ms", "5000", "--", fixtureBin, "--tools", "1")
	env := func(editor string) []string {
		return []string{"EDITOR=" + editor, "PIKOCTL=" + pikoctlBin, "SOCK=" + d.socket}
	}

	t.Run("one server", func(t *testing.T) {
		bad := editorScript(t, `sed -i 's/"timeoutMs": 5000/"timeoutMs": 5/' "$1"`)
		_, stderr, code := runCtlEnv(t, d, env(bad), "", "mcp", "edit", "fx")
		kept := keptFile(t, stderr)
		if want := "'pikoctl mcp edit fx --from " + kept + "'"; code != 1 || !strings.Contains(stderr, want) {
			t.Fatalf("a refused edit: exit %d, stderr %q; want %s", code, stderr, want)
		}
		fix := editorScript(t, `sed -i 's/"timeoutMs": 5,/"timeoutMs": 7000,/; s/"timeoutMs": 5$/"timeoutMs": 7000/' "$1"`)
		// The id comes from the file when SERVER is not given.
		stdout, stderr, code := runCtlEnv(t, d, env(fix), "", "mcp", "edit", "--from", kept)
		if code != 0 || !strings.Contains(stdout, "changed: fx") {
			t.Fatalf("edit --from %s: exit %d\n%s%s", kept, code, stdout, stderr)
		}
		if srv, _ := savedServers(t, d); srv["fx"].TimeoutMs != 7000 || srv["gx"].TimeoutMs != 5000 {
			t.Errorf("after edit --from: fx %d, gx %d; want 7000 and 5000 (gx untouched)", srv["fx"].TimeoutMs, srv["gx"].TimeoutMs)
		}
		if _, err := os.Stat(kept); !os.IsNotExist(err) {
			t.Errorf("the kept file %s is still there after its text was saved (%v)", kept, err)
		}
	})

	t.Run("whole settings after revision_moved", func(t *testing.T) {
		// Someone else saves while the editor is open.
		racing := editorScript(t, `"$PIKOCTL" --socket "$SOCK" mcp disable gx >/dev/null || exit 9
sed -i 's/"timeoutMs": 5000/"timeoutMs": 8000/' "$1"`)
		_, stderr, code := runCtlEnv(t, d, env(racing), "", "mcp", "edit")
		kept := keptFile(t, stderr)
		if want := "'pikoctl mcp edit --from " + kept + "'"; code != 1 || !strings.Contains(stderr, want) ||
			!strings.Contains(stderr, "settings are at revision") {
			t.Fatalf("an edit overtaken by another save: exit %d, stderr %q; want revision_moved and %s", code, stderr, want)
		}
		stdout, stderr, code := runCtlEnv(t, d, env("true"), "", "mcp", "edit", "--from", kept)
		if code != 0 || !strings.Contains(stdout, "changed: gx") {
			t.Fatalf("edit --from %s: exit %d\n%s%s", kept, code, stdout, stderr)
		}
		if srv, _ := savedServers(t, d); srv["gx"].TimeoutMs != 8000 {
			t.Errorf("after edit --from: gx timeoutMs %d, want 8000", srv["gx"].TimeoutMs)
		}
	})

	t.Run("wrong shape", func(t *testing.T) {
		whole := writeFile(t, "whole.json", mcpSettings(t))
		if stderr := ctlFails(t, d, 1, "mcp", "edit", "fx", "--from", whole); !strings.Contains(stderr, "pikoctl mcp edit --from "+whole) {
			t.Errorf("edit fx --from a whole-settings file: stderr %q; want the command without SERVER", stderr)
		}
		other := writeFile(t, "other.json", `{"id":"nope","transport":"stdio","command":"x"}`)
		if stderr := ctlFails(t, d, 1, "mcp", "edit", "--from", other); !strings.Contains(stderr, "pikoctl mcp edit SERVER --from "+other) {
			t.Errorf("edit --from an entry of an unknown server: stderr %q; want the command naming SERVER", stderr)
		}
	})
}

// TestJSONErrorsSayWhere: a JSON syntax error names its line and column;
// in a settings file or a command-line argument it also shows the line
// around it with a caret, while credentials and arguments on stdin, which
// may hold secrets, are never quoted.
func TestJSONErrorsSayWhere(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)

	bad := writeFile(t, "mcp.json", "{\"servers\": [\n  {\"id\": \"a\", \"transport\": \"stdio\" \"command\": \"x\"}\n]}\n")
	stderr := ctlFails(t, d, 1, "mcp", "configure", bad)
	for _, want := range []string{"line 2, column 36", `  2 |   {"id": "a", "transport": "stdio" "command": "x"}`,
		"\n    | " + strings.Repeat(" ", 35) + "^"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("configure with a syntax error: stderr lacks %q:\n%s", want, stderr)
		}
	}

	stderr = ctlFails(t, d, 2, "mcp", "call", "fx", "echo", "--args-json", `{"text": hi}`)
	if !strings.Contains(stderr, "line 1, column 10") || !strings.Contains(stderr, `  1 | {"text": hi}`) {
		t.Errorf("call --args-json with a syntax error: stderr %q; want line 1, column 10 and the text", stderr)
	}

	secret := strings.Trim(newCanary(t, true), `"\<&>`)
	for _, tc := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"secret", "{\"env\":\n {\"FX_TOKEN\": " + secret + "\"}}", "line 2, column 15", []string{"mcp", "secret", "fx"}},
		{"secret cut short", `{"env":{"FX_TOKEN":"` + secret, "line 1, column 43", []string{"mcp", "secret", "fx"}},
		{"call on stdin", `{"token": ` + secret + `}`, "line 1, column 11", []string{"mcp", "call", "fx", "echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCtl(t, d, tc.stdin, tc.args...)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %s", code, stderr, tc.want)
			}
			for _, part := range []string{secret, secret[:8], secret[len(secret)-8:]} {
				if strings.Contains(stdout+stderr, part) {
					t.Errorf("the error quotes the secret (%q); stderr %q", part, stderr)
				}
			}
		})
	}
}

// typeAfter waits until p's terminal shows prompt after the last marker
// (a question asked again: pikoctl discards what is typed before its
// prompt shows) and types line.
func typeAfter(t *testing.T, p *ttyProc, marker, prompt, line string) {
	t.Helper()
	poll(t, fmt.Sprintf("%q after %q", prompt, marker), func() bool {
		out := p.out.String()
		i := strings.LastIndex(out, marker)
		return i >= 0 && strings.Contains(out[i:], prompt)
	}, p.out.String)
	p.typeLine(t, line)
}

// TestRespondChecksEachField: each field of a form elicitation is checked
// as it is typed (type, required, enum, bounds) and only that field is
// asked again; the answers already given stay, and the whole answer goes
// to the server.
func TestRespondChecksEachField(t *testing.T) {
	t.Parallel()
	d := askWithDaemon(t)
	args := `{"message":"who are you?","schema":{"type":"object","properties":{` +
		`"age":{"type":"integer","minimum":18,"maximum":130},` +
		`"color":{"type":"string","enum":["red","green"]},` +
		`"name":{"type":"string","minLength":2}},"required":["name"]}}`
	call := ctlProgress(t, d, args, "mcp", "call", "fx", "ask-with")
	req := waitPending(t, d, "fx")
	p := ctlTTY(t, d, "mcp", "respond", req.ID)
	p.waitFor(t, "(a/d/c): ")
	p.typeLine(t, "a")
	for _, step := range []struct{ marker, prompt, line string }{
		{"(integer; 18 to 130)", "fx │ age: ", "abc"},
		{"not accepted: type a whole number; try again", "fx │ age: ", "7"},
		{"not accepted: type a number of at least 18; try again", "fx │ age: ", "42"},
		{"fx │ color", "fx │ color: ", "blue"},
		{"not accepted: type one of the choices shown above; try again", "fx │ color: ", "green"},
		{"fx │ name (string; at least 2 characters) [required]", "fx │ name: ", ""},
		{"not accepted: this field is required and has no default", "fx │ name: ", "A"},
		{"not accepted: type at least 2 characters (that was 1); try again", "fx │ name: ", "Ada"},
	} {
		typeAfter(t, p, step.marker, step.prompt, step.line)
	}
	out, code := p.wait(t)
	if code != 0 || !strings.Contains(out, "request "+req.ID+": answered") {
		t.Fatalf("respond: exit %d; terminal:\n%s", code, out)
	}
	if code := call.wait(t); code != 0 {
		t.Fatalf("the call exited %d; stdout %q", code, call.stdout.String())
	}
	got := call.stdout.String()
	for _, want := range []string{`"age":42`, `"color":"green"`, `"name":"Ada"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the server's answer lacks %s: %q", want, got)
		}
	}
}

// credentialFields reads the stored credential field names of server.
func credentialFields(t testing.TB, d *daemon, server string) []string {
	t.Helper()
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{Server: server}, &st)
	if len(st.Servers) != 1 {
		t.Fatalf("status of %s: %+v", server, st.Servers)
	}
	return st.Servers[0].CredentialFields
}

// TestSecretFieldByField: --fields asks each credential alone, masked; at
// the terminal a JSON line that does not parse is dropped and asked again
// (its place named, never its text), and the next good one is stored.
func TestSecretFieldByField(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
	one, two := strings.Trim(newCanary(t, true), `"\<&>`), strings.Trim(newCanary(t, true), `"\<&>`)

	p := ctlTTY(t, d, "mcp", "secret", "fx", "--fields", "env.FX_TOKEN,env.OTHER_TOKEN")
	p.waitFor(t, "env.FX_TOKEN for fx (hidden): ")
	waitNoEcho(t, p)
	p.typeLine(t, one)
	typeAfter(t, p, "env.FX_TOKEN for fx", "env.OTHER_TOKEN for fx (hidden): ", "")
	typeAfter(t, p, "env.OTHER_TOKEN: nothing typed", "env.OTHER_TOKEN for fx (hidden): ", two)
	out, code := p.wait(t)
	if code != 0 || !strings.Contains(out, "stored env.FX_TOKEN, env.OTHER_TOKEN for fx") {
		t.Fatalf("secret --fields: exit %d; terminal:\n%s", code, out)
	}
	assertNoLeak(t, "the terminal", []byte(out), one)
	assertNoLeak(t, "the terminal", []byte(out), two)
	if got := strings.Join(credentialFields(t, d, "fx"), ","); got != "env.FX_TOKEN,env.OTHER_TOKEN" {
		t.Errorf("stored fields %q, want env.FX_TOKEN,env.OTHER_TOKEN", got)
	}

	p = ctlTTY(t, d, "mcp", "secret", "fx", "--merge")
	p.waitFor(t, "credentials for fx as JSON")
	waitNoEcho(t, p)
	p.typeLine(t, `{"env":{"THIRD_TOKEN": `+one+`}}`)
	typeAfter(t, p, "nothing was kept or sent: type it again", "credentials for fx as JSON", `{"env":{"THIRD_TOKEN":"`+two+`"}}`)
	out, code = p.wait(t)
	if code != 0 || !strings.Contains(out, "line 1, column 24: syntax error") || !strings.Contains(out, "stored ") {
		t.Fatalf("secret with a JSON error, then good JSON: exit %d; terminal:\n%s", code, out)
	}
	assertNoLeak(t, "the terminal", []byte(out), one)
	if got := strings.Join(credentialFields(t, d, "fx"), ","); got != "env.FX_TOKEN,env.OTHER_TOKEN,env.THIRD_TOKEN" {
		t.Errorf("stored fields %q, want the three", got)
	}

	if _, stderr, code := runCtl(t, d, "", "mcp", "secret", "fx", "--fields", "env.X"); code != 1 || !strings.Contains(stderr, "stdin is not one") {
		t.Errorf("--fields without a terminal: exit %d, stderr %q", code, stderr)
	}
	if stderr := ctlFails(t, d, 2, "mcp", "secret", "fx", "--fields", "token"); !strings.Contains(stderr, "not a credential field") {
		t.Errorf("--fields token: stderr %q", stderr)
	}
}

// TestWatchReadsEveryKind: pikoctl mcp watch prints resource and request
// events as sentences with the command that follows up, not as JSON;
// --json still prints each event's params as sent.
func TestWatchReadsEveryKind(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("res", "--subscribe").with("readOnlyTools", []string{"touch-resource"}),
		stdioFixture("fx", "--protocol", "modern", "--input-tools").with(
			"protocol", map[string]string{"pin": modernVersion}, "readOnlyTools", []string{"ask-with"}, "elicitation", true)))
	connectServer(t, d, "res")
	connectServer(t, d, "fx")
	human := startCtl(t, d, "mcp", "watch", "--kind", "resource", "--kind", "request")
	asJSON := startCtl(t, d, "--json", "mcp", "watch", "--kind", "resource", "--kind", "request")
	human.waitErr(t, "watching resource, request events")
	asJSON.waitErr(t, "watching resource, request events")

	const uri = "fixture://resources/0002"
	ctlOK(t, d, "", "mcp", "subscribe", "res", uri)
	ctlOK(t, d, "", "mcp", "call", "res", "touch-resource", "--args-json", `{"uri":"`+uri+`","title":"the second"}`)
	want := "res resource changed: " + uri + " (the second); read it with 'pikoctl mcp read res " + uri + "'"
	human.waitOut(t, func(out string) bool { return strings.Contains(out, want) })

	call := ctlProgress(t, d, `{"message":"who?","schema":{"type":"object","properties":{"name":{"type":"string"}}}}`, "mcp", "call", "fx", "ask-with")
	req := waitPending(t, d, "fx")
	pending := "fx request " + req.ID + ", a question (elicitation) during ask-with, waits for you: \"who?\"; answer with 'pikoctl mcp respond " + req.ID + "'"
	human.waitOut(t, func(out string) bool { return strings.Contains(out, pending) })
	if out, code := respondOnPTY(t, d, req, "d", nil); code != 0 {
		t.Fatalf("respond d: exit %d; terminal:\n%s", code, out)
	}
	call.wait(t)
	declined := "fx request " + req.ID + ", a question (elicitation) during ask-with: declined"
	human.waitOut(t, func(out string) bool { return strings.Contains(out, declined) })
	t.Logf("pikoctl mcp watch:\n%s", human.out.String())
	for line := range strings.SplitSeq(human.out.String(), "\n") {
		if strings.Contains(line, "{") {
			t.Errorf("watch printed JSON in a line for people: %q", line)
		}
	}
	asJSON.waitOut(t, func(out string) bool {
		return strings.Contains(out, `"kind":"resource"`) && strings.Contains(out, `"uri":"`+uri+`"`) &&
			strings.Contains(out, `"state":"declined"`)
	})
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRemoteConnectErrorSaidOnce: a refused remote connection says what
// failed once (mcp-go's doubled "failed to send request:" collapsed), and
// its hint sends an http or sse owner to the server's reachability, not
// to a stderr pikod does not have; a stdio server's hint keeps its stderr.
func TestRemoteConnectErrorSaidOnce(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	addr := closedPort(t)
	configureMCP(t, d, mcpSettings(t,
		remoteFixture("web", "http", "http://"+addr+"/mcp"),
		remoteFixture("old", "sse", "http://"+addr+"/sse"),
		stdioFixture("bad", "--transport", "bogus")))
	for _, id := range []string{"web", "old"} {
		stderr := ctlFails(t, d, 1, "mcp", "connect", id)
		if n := strings.Count(stderr, "failed to send request"); n > 1 {
			t.Errorf("connect %s: %q says it %d times", id, stderr, n)
		}
		if !strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "stderr") ||
			!strings.Contains(stderr, "reachable") {
			t.Errorf("connect %s: stderr %q; want the refusal and a hint about reaching the server, not its stderr", id, stderr)
		}
		status := ctlOK(t, d, "", "mcp", "status", id)
		if n := strings.Count(status, "failed to send request"); n > 1 {
			t.Errorf("status %s: the last error says it %d times:\n%s", id, n, status)
		}
	}
	if stderr := ctlFails(t, d, 1, "mcp", "connect", "bad"); !strings.Contains(stderr, "for the server's stderr") {
		t.Errorf("connect bad (stdio): stderr %q; want the hint to its stderr", stderr)
	}
}
