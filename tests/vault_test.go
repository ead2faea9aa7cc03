package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// Vault suites: credentials entered through extensions.secret (and the
// compiled pikoctl), kept by the file backend (the Secret Service for the
// stuck-keyring case), bound to the identity of the server they were
// entered for and redacted from everything that leaves or is stored by the
// daemon. What a server process really received is read from the fixture
// itself (--env-file, --header-log), never through the daemon, which
// redacts.

// redactedMark is what the daemon puts where a credential value was.
const redactedMark = "[REDACTED]"

// withPikodArgs adds command-line flags to every pikod process of the
// instance.
func withPikodArgs(args ...string) option {
	return func(d *daemon) { d.args = append(d.args, args...) }
}

// vaultDaemon starts a daemon with the file vault.
func vaultDaemon(t testing.TB, opts ...option) *daemon {
	t.Helper()
	return startDaemon(t, append([]option{withPikodArgs("--vault", "file")}, opts...)...)
}

// newCanary returns a unique value with characters that JSON and log
// encoders escape, so that every escaped form is tested too; ascii leaves
// out the non-ASCII letter (for HTTP header values).
func newCanary(t testing.TB, ascii bool) string {
	t.Helper()
	c := `cnry-` + randomHex(t, 8) + `-"<&>\`
	if !ascii {
		c += "é"
	}
	return c
}

// canaryForms returns the ways a canary can appear in bytes: literally and
// as encoding/json writes it inside a string, with and without HTML
// escaping, and each of those escaped once more.
func canaryForms(c string) []string {
	esc := func(s string, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		out := strings.TrimSpace(b.String())
		return out[1 : len(out)-1]
	}
	forms := []string{c}
	for _, html := range []bool{true, false} {
		once := esc(c, html)
		forms = append(forms, once, esc(once, true), esc(once, false))
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// leaks returns the canaries that occur in b in any form.
func leaks(b []byte, canaries ...string) []string {
	var out []string
	for _, c := range canaries {
		for _, f := range canaryForms(c) {
			if bytes.Contains(b, []byte(f)) {
				out = append(out, f)
			}
		}
	}
	return out
}

// assertLogClean fails the test when pikod.log holds any canary in any
// form.
func (d *daemon) assertLogClean(t testing.TB, canaries ...string) {
	t.Helper()
	b, err := os.ReadFile(d.logPath())
	if err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, "the daemon log", b, canaries...)
}

// assertNoLeak fails the test when b holds any canary in any form, and
// shows where.
func assertNoLeak(t testing.TB, where string, b []byte, canaries ...string) {
	t.Helper()
	if l := leaks(b, canaries...); len(l) > 0 {
		i := bytes.Index(b, []byte(l[0]))
		lo, hi := max(i-200, 0), min(i+len(l[0])+200, len(b))
		t.Errorf("%s holds a credential value (%q); around it:\n%s", where, l, b[lo:hi])
	}
}

// storeSecret replaces a server's credentials through extensions.secret.
func storeSecret(t testing.TB, d *daemon, server string, creds map[string]any) contracts.SecretResult {
	t.Helper()
	var res contracts.SecretResult
	d.callInto(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: server, Credentials: creds}, &res)
	return res
}

// envOf maps the KEY=VALUE lines of an environment dump.
func envOf(text string) map[string]string {
	env := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// readEnvFile reads a fixture's --env-file.
func readEnvFile(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the fixture's env file: %v", err)
	}
	return envOf(string(b))
}

// callText returns the text blocks of a call result's content.
func callText(t testing.TB, res contracts.CallResult) string {
	t.Helper()
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(res.Content, &blocks); err != nil {
		t.Fatalf("decoding the content %s: %v", res.Content, err)
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// waitNoEcho waits until the program on p's terminal has turned echo off:
// typing earlier would let the terminal itself echo the secret.
func waitNoEcho(t testing.TB, p *ttyProc) {
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
	var lflag uint32
	poll(t, "the prompt to turn echo off", func() bool {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatalf("reading the terminal's modes: %v", err)
		}
		lflag = tio.Lflag
		return tio.Lflag&unix.ECHO == 0
	}, func() string { return fmt.Sprintf("lflag %#x", lflag) })
}

// TestVaultFileBackend stores, keeps, clears and refuses credentials
// through pikoctl and the file backend of the compiled daemon.
func TestVaultFileBackend(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("fx"),
		remoteFixture("hx", "http", "http://127.0.0.1:9/mcp"),
		remoteFixture("ox", "http", "http://127.0.0.1:9/mcp").with("oauth", map[string]any{}),
	))
	canary := newCanary(t, false)
	in := mustJSON(t, map[string]any{"env": map[string]string{"FX_TOKEN": canary}})

	// Piped: the JSON result names the field, never the value.
	stdout, stderr, code := runCtl(t, d, string(in), "--json", "mcp", "secret", "fx")
	if code != 0 {
		t.Fatalf("pikoctl mcp secret fx: exit %d; stderr:\n%s", code, stderr)
	}
	assertNoLeak(t, "pikoctl's output", []byte(stdout+stderr), canary)
	var res contracts.SecretResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("decoding %q: %v", stdout, err)
	}
	if res.Server != "fx" || !slices.Equal(res.Fields, []string{"env.FX_TOKEN"}) || res.Generation != 1 || res.Cleared || res.ReconnectRequired {
		t.Errorf("mcp secret fx = %+v, want fields [env.FX_TOKEN], generation 1", res)
	}
	checkCreds := func(what, want string, gen uint64) {
		t.Helper()
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if st.Vault.Backend != "file" {
			t.Errorf("%s: vault backend %q, want file", what, st.Vault.Backend)
		}
		for _, s := range st.Servers {
			if s.ID == "fx" && (s.Credentials != want || s.CredentialGeneration != gen) {
				t.Errorf("%s: fx credentials %q generation %d, want %q generation %d", what, s.Credentials, s.CredentialGeneration, want, gen)
			}
		}
	}
	checkCreds("after storing", "stored", 1)
	for _, f := range []struct {
		path string
		mode fs.FileMode
	}{{filepath.Join(d.stateDir, "vault.key"), 0o600}, {filepath.Join(d.stateDir, "vault"), 0o700 | fs.ModeDir}} {
		fi, err := os.Lstat(f.path)
		if err != nil || fi.Mode() != f.mode {
			t.Errorf("%s: %v, mode %v; want %v", f.path, err, fi.Mode(), f.mode)
		}
	}

	d.restart()
	checkCreds("after a restart", "stored", 1)

	stdout, stderr, code = runCtl(t, d, "{}", "mcp", "secret", "fx")
	if code != 0 || !strings.Contains(stdout, "cleared the credentials of fx (generation 2)") {
		t.Errorf("clearing: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	checkCreds("after clearing", "none", 2)

	// At a terminal the prompt is masked: what is typed is not echoed.
	tty := ctlTTY(t, d, "mcp", "secret", "fx")
	tty.waitFor(t, "credentials for fx")
	waitNoEcho(t, tty)
	tty.typeLine(t, string(in))
	out, code := tty.wait(t)
	if code != 0 || !strings.Contains(out, "stored env.FX_TOKEN for fx (generation 3)") {
		t.Errorf("masked prompt: exit %d; terminal:\n%s", code, out)
	}
	assertNoLeak(t, "the terminal", []byte(out), canary)
	checkCreds("after the masked prompt", "stored", 3)

	// An empty line keeps what is stored.
	tty = ctlTTY(t, d, "mcp", "secret", "fx")
	tty.waitFor(t, "credentials for fx")
	tty.typeLine(t, "")
	out, code = tty.wait(t)
	if code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("empty line at the prompt: exit %d; terminal:\n%s", code, out)
	}
	checkCreds("after an empty line", "stored", 3)

	// Refused objects name the field and never echo the value. The value
	// was never stored, so no redaction could hide it.
	bad := newCanary(t, true)
	for _, tc := range []struct {
		name, server string
		creds        map[string]any
		field        string
	}{
		{"headers for stdio", "fx", map[string]any{"headers": map[string]any{"X-Api-Token": bad}}, "headers"},
		{"unknown field", "fx", map[string]any{"token": bad}, "token"},
		{"non-string env value", "fx", map[string]any{"env": map[string]any{"FX_TOKEN": map[string]any{"v": bad}}}, "env.FX_TOKEN"},
		{"env for http", "hx", map[string]any{"env": map[string]any{"FX_TOKEN": bad}}, "env"},
		{"oauth secret without oauth", "hx", map[string]any{"oauthClientSecret": bad}, "oauthClientSecret"},
		{"authorization with oauth", "ox", map[string]any{"headers": map[string]any{"Authorization": "Bearer " + bad}}, "headers.Authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := d.tryCall(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: tc.server, Credentials: tc.creds})
			var we *contracts.Error
			if !errors.As(err, &we) {
				t.Fatalf("secret %s: %s, %v; want an error", tc.server, raw, err)
			}
			wire := mustJSON(t, we)
			assertNoLeak(t, "the error", wire, bad)
			if we.Reason() != "invalid_credentials" || !errors.Is(we, contracts.ErrInvalidArgument) {
				t.Errorf("error %s, want invalid_credentials", wire)
			}
			var fields []string
			if we.Data != nil {
				for _, p := range we.Data.Problems {
					fields = append(fields, p.Field)
				}
			}
			if !slices.Contains(fields, tc.field) {
				t.Errorf("problems name %q, want %q: %s", fields, tc.field, wire)
			}
			// pikoctl says the same on stderr, without the value.
			in := mustJSON(t, tc.creds)
			stdout, stderr, code := runCtl(t, d, string(in), "mcp", "secret", tc.server)
			if code == 0 || !strings.Contains(stderr, tc.field) {
				t.Errorf("pikoctl: exit %d, stderr %q; want a failure naming %s", code, stderr, tc.field)
			}
			assertNoLeak(t, "pikoctl's output", []byte(stdout+stderr), bad)
		})
	}
	checkCreds("after refused objects", "stored", 3)
	d.assertLogClean(t, canary, bad)
}

// TestVaultIdentity changes what stored credentials are bound to: they are
// not sent to the new command or URL, and work again once re-entered.
func TestVaultIdentity(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		d := vaultDaemon(t)
		dir := t.TempDir()
		envFile := func(name string) string { return filepath.Join(dir, name+".env") }
		// A copy of the fixture: the same program at another path is
		// another command.
		other := filepath.Join(dir, "fixture-copy")
		b, err := os.ReadFile(fixtureBin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(other, b, 0o755); err != nil {
			t.Fatal(err)
		}
		server := func(args ...string) srv {
			return stdioFixture("fx", args...).with("readOnlyTools", []string{"env"})
		}
		base := server("--env-file", envFile("base"))
		configureMCP(t, d, mcpSettings(t, base))
		canary := newCanary(t, false)
		storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": canary}})
		connectServer(t, d, "fx")
		if got := readEnvFile(t, envFile("base"))["FX_TOKEN"]; got != canary {
			t.Fatalf("the server got FX_TOKEN=%q, want the stored value", got)
		}
		res := callTool(t, d, "fx", "env", "")
		if text := callText(t, res); envOf(text)["FX_TOKEN"] != redactedMark {
			t.Errorf("env tool: FX_TOKEN=%q in %+v, want %s", envOf(text)["FX_TOKEN"], res, redactedMark)
		}

		for _, tc := range []struct {
			name    string
			changed srv
		}{
			{"args", server("--env-file", envFile("args"), "--tools", "4")},
			{"cwd", server("--env-file", envFile("cwd")).with("cwd", dir)},
			{"command", server("--env-file", envFile("command")).with("command", other)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				configureMCP(t, d, mcpSettings(t, tc.changed))
				if st := serverStatus(t, d, "fx"); st.Credentials != "reenter" || st.CredentialGeneration != 1 {
					t.Errorf("status credentials %q generation %d, want reenter 1", st.Credentials, st.CredentialGeneration)
				}
				e := connectFails(t, d, "fx")
				if e.Reason() != "credentials_reenter" || e.Data == nil || !strings.Contains(e.Data.Hint, "pikoctl mcp secret fx") {
					t.Errorf("connect: %s, want credentials_reenter with a hint", mustJSON(t, e))
				}
				// The fixture writes its env file first thing: no file, no process.
				if _, err := os.Stat(envFile(tc.name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the changed server ran (env file: %v)", err)
				}
				// Back to the identity they were entered for: they work again.
				configureMCP(t, d, mcpSettings(t, base))
				if st := serverStatus(t, d, "fx"); st.Credentials != "stored" {
					t.Errorf("back to the original identity: credentials %q, want stored", st.Credentials)
				}
			})
		}

		// Re-entering binds the credentials to the new identity.
		changed := server("--env-file", envFile("reentered"), "--tools", "4")
		configureMCP(t, d, mcpSettings(t, changed))
		connectFails(t, d, "fx")
		canary2 := newCanary(t, false)
		if res := storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": canary2}}); res.Generation != 2 {
			t.Errorf("re-entered: generation %d, want 2", res.Generation)
		}
		if st := serverStatus(t, d, "fx"); st.Credentials != "stored" || st.CredentialGeneration != 2 {
			t.Errorf("after re-entry: credentials %q generation %d", st.Credentials, st.CredentialGeneration)
		}
		connectServer(t, d, "fx")
		if got := readEnvFile(t, envFile("reentered"))["FX_TOKEN"]; got != canary2 {
			t.Errorf("after re-entry the server got FX_TOKEN=%q, want the new value", got)
		}
		if text := callText(t, callTool(t, d, "fx", "env", "")); envOf(text)["FX_TOKEN"] != redactedMark {
			t.Errorf("env tool after re-entry:\n%s", text)
		}
		// And the original identity is now the foreign one.
		configureMCP(t, d, mcpSettings(t, base))
		if st := serverStatus(t, d, "fx"); st.Credentials != "reenter" {
			t.Errorf("the original identity after re-entry: credentials %q, want reenter", st.Credentials)
		}
	})

	t.Run("http", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		log1, log2 := filepath.Join(dir, "h1.log"), filepath.Join(dir, "h2.log")
		f1 := startFixtureServer(t, "http", "127.0.0.1:0", "--header-log", log1)
		f2 := startFixtureServer(t, "http", "127.0.0.1:0", "--header-log", log2)
		d := vaultDaemon(t)
		configureMCP(t, d, mcpSettings(t, remoteFixture("hx", "http", f1.url)))
		canary := newCanary(t, true)
		storeSecret(t, d, "hx", map[string]any{"headers": map[string]string{"X-Api-Token": canary}})
		connectServer(t, d, "hx")
		headerLog := func(path string) string {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading the header log: %v", err)
			}
			return string(b)
		}
		if !strings.Contains(headerLog(log1), "X-Api-Token: "+canary+"\n") {
			t.Fatalf("the header did not reach the configured URL; header log:\n%s", headerLog(log1))
		}

		configureMCP(t, d, mcpSettings(t, remoteFixture("hx", "http", f2.url)))
		if st := serverStatus(t, d, "hx"); st.Credentials != "reenter" {
			t.Errorf("after the URL changed: credentials %q, want reenter", st.Credentials)
		}
		if e := connectFails(t, d, "hx"); e.Reason() != "credentials_reenter" {
			t.Errorf("connect to the new URL: %s, want credentials_reenter", mustJSON(t, e))
		}
		if s := headerLog(log2); strings.Contains(s, canary) {
			t.Errorf("the new URL received the credential:\n%s", s)
		}
		if n := f2.accepted(t); n != 0 {
			t.Errorf("the new URL was connected to %d times before re-entry, want 0", n)
		}

		canary2 := newCanary(t, true)
		storeSecret(t, d, "hx", map[string]any{"headers": map[string]string{"X-Api-Token": canary2}})
		connectServer(t, d, "hx")
		s := headerLog(log2)
		if !strings.Contains(s, "X-Api-Token: "+canary2+"\n") || strings.Contains(s, canary) {
			t.Errorf("after re-entry the new URL got the wrong headers:\n%s", s)
		}
	})
}

// wireLog keeps every frame the daemon sent on the connections made
// through it.
type wireLog struct {
	mu     sync.Mutex
	frames [][]byte
}

// call makes one request on a fresh raw connection, keeping every frame
// read (notifications too), and returns the result or the wire error.
func (w *wireLog) call(t testing.TB, socket, method string, params any) (json.RawMessage, *contracts.Error) {
	t.Helper()
	nc, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatalf("dialing %s: %v", socket, err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	req := mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if _, err := nc.Write(append(req, '\n')); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	r := bufio.NewReaderSize(nc, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		w.mu.Lock()
		w.frames = append(w.frames, line)
		w.mu.Unlock()
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", method, err)
		}
		var resp struct {
			ID     json.RawMessage  `json:"id"`
			Result json.RawMessage  `json:"result"`
			Error  *contracts.Error `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("%s: undecodable frame %.300s: %v", method, line, err)
		}
		if string(resp.ID) == "1" {
			return resp.Result, resp.Error
		}
	}
}

// result makes a call that must succeed and decodes its result into out
// (unless nil); it returns the raw result.
func (w *wireLog) result(t testing.TB, socket, method string, params, out any) json.RawMessage {
	t.Helper()
	res, we := w.call(t, socket, method, params)
	if we != nil {
		t.Fatalf("%s: %s", method, mustJSON(t, we))
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", method, res, err)
		}
	}
	return res
}

func (w *wireLog) all() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Join(w.frames, nil)
}

// TestVaultCanary plants credentials in a stdio server's environment, an
// http server's headers and an OAuth client secret, drives results,
// errors, a crash and debug logging that carry them, and then finds none
// of them anywhere the daemon wrote or answered: only [REDACTED] where
// they were.
func TestVaultCanary(t *testing.T) {
	t.Parallel()
	envC, hdrC, bearerC, oauthC := newCanary(t, false), newCanary(t, true), newCanary(t, true), newCanary(t, true)
	canaries := []string{envC, hdrC, bearerC, oauthC}
	f := startFixtureServer(t, "http", "127.0.0.1:0", "--header-log", filepath.Join(t.TempDir(), "headers.log"), "--decode-tool")
	d := vaultDaemon(t, withPikodArgs("--log-level", "debug"))
	var w wireLog
	call := func(method string, params, out any) json.RawMessage {
		t.Helper()
		return w.result(t, d.socket, method, params, out)
	}
	configure := map[string]any{"extension": "mcp", "settings": json.RawMessage(mcpSettings(t,
		stdioFixture("sx", "--print-env", "--name-env", "FX_TOKEN", "--decode-tool").with("readOnlyTools", []string{"env", "echo", "decode", "crash"}),
		remoteFixture("hx", "http", f.url).with("readOnlyTools", []string{"echo", "decode"}),
		remoteFixture("ox", "http", f.url).with("oauth", map[string]any{}),
	))}
	call(contracts.MethodConfigure, configure, nil)
	for _, s := range []struct {
		server string
		creds  map[string]any
	}{
		{"sx", map[string]any{"env": map[string]string{"FX_TOKEN": envC}}},
		{"hx", map[string]any{"headers": map[string]string{"X-Api-Token": hdrC, "Authorization": "Bearer " + bearerC}}},
		{"ox", map[string]any{"oauthClientSecret": oauthC}},
	} {
		call(contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: s.server, Credentials: s.creds}, nil)
	}
	for _, id := range []string{"sx", "hx"} {
		var res contracts.ConnectResult
		call(contracts.MethodMCPConnect, contracts.ServerParams{Server: id}, &res)
		if res.Server.State != contracts.StateConnected {
			t.Fatalf("connect %s: %+v", id, res.Server)
		}
	}
	// ox may or may not connect without a sign-in; what it answers is
	// checked like every other frame.
	w.call(t, d.socket, contracts.MethodMCPConnect, contracts.ServerParams{Server: "ox"})

	// wantRedacted makes a call whose answer would carry a credential and
	// checks that [REDACTED] stands in its place.
	wantRedacted := func(what string, raw []byte) {
		t.Helper()
		if !bytes.Contains(raw, []byte(redactedMark)) {
			t.Errorf("%s: no %s in %.500s", what, redactedMark, raw)
		}
	}
	toolCall := func(server, tool string, args any) (contracts.CallResult, json.RawMessage) {
		t.Helper()
		p := contracts.CallParams{Server: server, Tool: tool}
		if args != nil {
			p.Arguments = mustJSON(t, args)
		}
		var res contracts.CallResult
		raw := call(contracts.MethodMCPCall, p, &res)
		return res, raw
	}

	// Results: the stdio server's environment, and every value as a server
	// answers it without the caller having sent it (decoded from base64:
	// a value the caller sent itself comes back as sent, see
	// TestOracleApprovalPassphrase). ox's OAuth client secret is long
	// enough to be removed from hx's answers too.
	res, raw := toolCall("sx", "env", nil)
	if res.Status != contracts.CallCompleted || envOf(callText(t, res))["FX_TOKEN"] != redactedMark {
		t.Errorf("env tool: %.500s, want FX_TOKEN=%s", raw, redactedMark)
	}
	for _, c := range []struct{ server, text string }{
		{"sx", envC},
		{"sx", "before " + envC + " after"},
		{"hx", hdrC},
		{"hx", bearerC},
		{"hx", oauthC},
	} {
		res, raw := toolCall(c.server, "decode", map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(c.text))})
		if res.Status != contracts.CallCompleted {
			t.Errorf("decode on %s: %.500s", c.server, raw)
		}
		wantRedacted("decode on "+c.server, raw)
		if text := callText(t, res); !strings.Contains(text, redactedMark) {
			t.Errorf("decode on %s: text %q, want %s in it", c.server, text, redactedMark)
		}
	}
	// A result larger than the preview: the retained original is
	// redacted too, and read back through source.read.
	long := strings.Repeat("x", 40_000) + envC + strings.Repeat("y", 40_000)
	res, raw = toolCall("sx", "decode", map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(long))})
	if !res.Truncated || res.OriginalResultSourceID == "" {
		t.Fatalf("a long echo was not truncated: %.300s", raw)
	}
	var retained strings.Builder
	for offset := int64(0); ; {
		var window contracts.SourceReadResult
		call(contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: res.OriginalResultSourceID, Offset: offset, Length: 16_000}, &window)
		retained.WriteString(window.Text)
		offset += int64(len([]rune(window.Text)))
		if window.EOF || window.Text == "" {
			break
		}
	}
	wantRedacted("the retained result", []byte(retained.String()))

	// An unknown tool named after a value: the error quotes the caller's
	// own name as it sent it (redacted, it would say the name is a
	// secret), so that answer is not among the frames checked below, and
	// nothing of it is kept.
	for _, c := range []struct{ server, tool string }{{"sx", envC}, {"hx", hdrC}, {"hx", oauthC}} {
		var own wireLog
		_, we := own.call(t, d.socket, contracts.MethodMCPCall, contracts.CallParams{Server: c.server, Tool: c.tool})
		if we == nil || we.Reason() != "unknown_tool" || !strings.Contains(we.Message, strconv.Quote(c.tool)) {
			t.Errorf("calling the tool named after a canary on %s: %v, want unknown_tool quoting the name as sent", c.server, we)
		}
	}

	// The crash path: the environment the server printed at start is in
	// its stderr tail, and the call ends without an answer.
	res, raw = toolCall("sx", "crash", nil)
	if res.Status == contracts.CallCompleted {
		t.Errorf("crash: %.500s, want failed or uncertain", raw)
	}
	var st contracts.StatusResult
	poll(t, "sx to notice the crash", func() bool {
		call(contracts.MethodMCPStatus, contracts.StatusParams{Server: "sx"}, &st)
		return st.Servers[0].State != contracts.StateConnected
	}, func() string { return fmt.Sprintf("%+v", st.Servers) })
	tail := st.Servers[0].StderrTail
	if envOf(tail)["FX_TOKEN"] != redactedMark {
		t.Errorf("stderr tail after the crash: FX_TOKEN=%q, want %s; tail:\n%s", envOf(tail)["FX_TOKEN"], redactedMark, tail)
	}
	call(contracts.MethodMCPStatus, contracts.StatusParams{}, nil)
	call(contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "hx"}, nil)
	call(contracts.MethodSettings, map[string]any{"extension": "mcp"}, nil)
	// The CLI's view of the same state.
	var cliOut bytes.Buffer
	// Receipts (kept for good, listed to any local tool) carry no value
	// either: over the wire here, in the database file below.
	var rcpts contracts.ReceiptsResult
	call(contracts.MethodMCPReceipts, contracts.ReceiptsParams{}, &rcpts)
	if len(rcpts.Receipts) == 0 {
		t.Error("no receipts after the calls")
	}
	call(contracts.MethodMCPReceipts, contracts.ReceiptsParams{Verify: true}, nil)
	for _, args := range [][]string{{"mcp", "status", "sx"}, {"--json", "mcp", "status"}, {"--json", "mcp", "receipts"}} {
		stdout, stderr, _ := runCtl(t, d, "", args...)
		cliOut.WriteString(stdout + stderr)
	}
	stdout, stderr, _ := runCtl(t, d, string(mustJSON(t, map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(hdrC))})), "mcp", "call", "hx", "decode")
	cliOut.WriteString(stdout + stderr)
	if !strings.Contains(stdout, redactedMark) {
		t.Errorf("pikoctl mcp call hx decode: %q, want %s", stdout, redactedMark)
	}

	p := d.current()
	d.stop(t)

	// The server named itself after its credential (--name-env): the
	// daemon's "connected" line carries it, redacted, in both logs.
	if lines := d.logLines(t, `"connected"`, redactedMark); len(lines) == 0 {
		t.Errorf("no log line reports sx connected with its name %s", redactedMark)
	}
	if !strings.Contains(p.stderr.String(), redactedMark) {
		t.Errorf("pikod's stderr never shows %s:\n%s", redactedMark, p.stderr.String())
	}
	assertNoLeak(t, "the frames the daemon sent", w.all(), canaries...)
	assertNoLeak(t, "pikoctl's output", cliOut.Bytes(), canaries...)
	assertNoLeak(t, "pikod's stderr", []byte(p.stderr.String()+p.stdout.String()), canaries...)
	var files int
	err := filepath.WalkDir(d.stateDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assertNoLeak(t, path, b, canaries...)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the state directory: %v", err)
	}
	for _, want := range []string{"pikod.db", "pikod.log", "tombstones", "sources"} {
		if _, err := os.Stat(filepath.Join(d.stateDir, want)); err != nil {
			t.Errorf("expected %s in the state directory: %v", want, err)
		}
	}
	t.Logf("checked %d frames, %d state files, %d log lines (%d with %s)", len(w.frames), files,
		len(d.logLines(t)), len(d.logLines(t, redactedMark)), redactedMark)
}

// TestVaultChildIsolation: each server's process sees its own credentials,
// never another server's nor pikod's own environment.
func TestVaultChildIsolation(t *testing.T) {
	t.Parallel()
	daemonC := newCanary(t, false)
	d := vaultDaemon(t, withEnv("PIKO_DAEMON_CANARY="+daemonC))
	dir := t.TempDir()
	file := func(id string) string { return filepath.Join(dir, id+".env") }
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("a", "--env-file", file("a")),
		stdioFixture("b", "--env-file", file("b")),
		stdioFixture("c", "--env-file", file("c")),
	))
	secrets := map[string]map[string]string{
		"a": {"A_SECRET": newCanary(t, false), "SHARED_TOKEN": newCanary(t, false)},
		"b": {"B_SECRET": newCanary(t, false), "SHARED_TOKEN": newCanary(t, false)},
		"c": {},
	}
	for id, env := range secrets {
		if len(env) > 0 {
			storeSecret(t, d, id, map[string]any{"env": env})
		}
		connectServer(t, d, id)
	}
	for id, own := range secrets {
		env := readEnvFile(t, file(id))
		for k, v := range own {
			if env[k] != v {
				t.Errorf("server %s: %s=%q, want its stored value", id, k, env[k])
			}
		}
		raw, _ := os.ReadFile(file(id))
		for other, theirs := range secrets {
			if other == id {
				continue
			}
			for k, v := range theirs {
				if bytes.Contains(raw, []byte(v)) {
					t.Errorf("server %s sees server %s's %s", id, other, k)
				}
			}
		}
		if bytes.Contains(raw, []byte(daemonC)) || env["PIKO_DAEMON_CANARY"] != "" {
			t.Errorf("server %s sees pikod's own environment", id)
		}
	}
}

// snapshotDir maps every entry under dir to its mode and content.
func snapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return out
}

// TestVaultWrongKey: a daemon whose file key does not open the vault (or
// is missing) refuses to start, says why, and writes nothing to the vault.
func TestVaultWrongKey(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": newCanary(t, false)}})
	d.stop(t)
	keyPath := filepath.Join(d.stateDir, "vault.key")
	vaultDir := filepath.Join(d.stateDir, "vault")
	goodKey, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, vaultDir)
	if len(before) < 3 {
		t.Fatalf("the vault directory holds %v, want at least the check item and one credential", before)
	}

	refused := func(what, want string) {
		t.Helper()
		p := d.spawn(t)
		code, ok := p.wait(readyTimeout)
		if !ok {
			p.kill9()
			t.Fatalf("%s: pikod kept running; stderr:\n%s", what, p.stderr.String())
		}
		if code == 0 || !strings.Contains(p.stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant a failure saying %q", what, code, p.stderr.String(), want)
		}
		checkNoRace(t, p)
		after := snapshotDir(t, vaultDir)
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s: %s changed", what, k)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("%s: %s appeared in the vault directory", what, k)
			}
		}
	}

	other, err := hex.DecodeString(randomHex(t, 32))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, []byte(base64.StdEncoding.EncodeToString(other)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("another key", "vault key does not match")

	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	refused("no key file", "is missing")
	if _, err := os.Stat(keyPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a new key file was generated over an existing vault: %v", err)
	}

	// The right key opens it again, with the credentials as they were.
	if err := os.WriteFile(keyPath, goodKey, 0o600); err != nil {
		t.Fatal(err)
	}
	d.start(t)
	if st := serverStatus(t, d, "fx"); st.Credentials != "stored" || st.CredentialGeneration != 1 {
		t.Errorf("with the right key again: credentials %q generation %d", st.Credentials, st.CredentialGeneration)
	}
}

// secretService starts a private session bus and a GNOME Keyring on it
// for one test (it fails without them, see requireSecretService), in a
// short directory it removes at the end, and returns the bus address and
// the keyring daemon.
func secretService(t *testing.T) (addr string, keyring *exec.Cmd) {
	t.Helper()
	requireSecretService(t)
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr = testsupport.PrivateBus(t, dir, minimalEnv(dir))
	return addr, startKeyring(t, dir, addr)
}

// requireSecretService fails (never skips, unless
// PIKO_SKIP_SECRET_SERVICE=1) when a program the keyring tests need is
// missing.
func requireSecretService(t *testing.T) {
	t.Helper()
	for _, n := range []string{"dbus-daemon", "gnome-keyring-daemon", "gdbus"} {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("PIKO_SKIP_SECRET_SERVICE") == "1" {
				t.Skipf("%s not installed and PIKO_SKIP_SECRET_SERVICE=1", n)
			}
			t.Fatalf("%s is not installed: this test needs it (apt-get install dbus gnome-keyring libglib2.0-bin), "+
				"or set PIKO_SKIP_SECRET_SERVICE=1", n)
		}
	}
}

// startKeyring runs gnome-keyring-daemon (secrets only) on the bus at addr
// with its login keyring unlocked, and waits until it owns the Secret
// Service name.
func startKeyring(t *testing.T, dir, addr string) *exec.Cmd {
	t.Helper()
	env := minimalEnv(filepath.Join(dir, "home"))
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") })
	env = append(env, "DBUS_SESSION_BUS_ADDRESS="+addr)
	for _, v := range []string{"XDG_DATA_HOME=data", "XDG_RUNTIME_DIR=run", "XDG_CONFIG_HOME=config", "XDG_CACHE_HOME=cache", "HOME=home"} {
		name, sub, _ := strings.Cut(v, "=")
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, name+"="+p)
	}
	cmd := exec.Command("gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock")
	cmd.Env = env
	cmd.Stdin = strings.NewReader("test-password") // --unlock reads it to EOF
	var stderr testsupport.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting gnome-keyring-daemon: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wait := exec.CommandContext(ctx, "gdbus", "wait", "--address", addr, "--timeout", "30", "org.freedesktop.secrets")
	wait.Env = minimalEnv(dir)
	if out, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("gnome-keyring-daemon never owned org.freedesktop.secrets: %v\n%s\nkeyring stderr:\n%s", err, out, stderr.String())
	}
	return cmd
}

// TestVaultKeyring runs the daemon against a real Secret Service on a
// private bus: "auto" stays with the backend it chose first, and a keyring
// that stops answering costs a bounded vault_timeout while the daemon
// keeps serving. (A bus that accepts connections and never answers at all
// hangs pikod before main, in keyring's init: see vault/doc.go.)
func TestVaultKeyring(t *testing.T) {
	t.Parallel()
	addr, keyring := secretService(t)
	onBus := withEnv("DBUS_SESSION_BUS_ADDRESS=" + addr)

	t.Run("auto is pinned", func(t *testing.T) {
		// Chosen without a bus: the file backend, for good.
		d := startDaemon(t, withPikodArgs("--vault", "auto"))
		configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
		storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": newCanary(t, false)}})
		d.stop(t)
		withEnv("DBUS_SESSION_BUS_ADDRESS=" + addr)(d)
		d.start(t)
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if st.Vault.Backend != "file" || len(st.Servers) != 1 || st.Servers[0].Credentials != "stored" ||
			!strings.Contains(st.Vault.Chosen, "auto chose file at the first start") || !strings.Contains(st.Vault.Chosen, "pikoctl vault migrate --to secret-service") {
			t.Errorf("auto after a keyring appeared: vault %+v, servers %+v; want the file backend, pinned, credentials stored", st.Vault, st.Servers)
		}
		// A fresh instance with the bus picks the Secret Service.
		d2 := startDaemon(t, onBus)
		d2.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if st.Vault.Backend != "secret-service" || st.Vault.Pinned != "secret-service" ||
			!strings.HasPrefix(st.Vault.Chosen, "auto chose secret-service: the session bus answers org.freedesktop.secrets") {
			t.Errorf("auto with a keyring: vault %+v, want secret-service, pinned, saying why", st.Vault)
		}
	})

	t.Run("stuck keyring", func(t *testing.T) {
		d := startDaemon(t, withPikodArgs("--vault", "secret-service"), onBus)
		configureMCP(t, d, mcpSettings(t, stdioFixture("fx"), stdioFixture("plain")))
		canary := newCanary(t, false)
		storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": canary}})
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if len(st.Servers) != 2 || st.Servers[0].Credentials != "stored" || st.Servers[1].Credentials != "none" || st.Vault.Backend != "secret-service" {
			t.Fatalf("before the keyring stops: vault %+v, servers %+v", st.Vault, st.Servers)
		}

		if err := keyring.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				_ = keyring.Process.Signal(syscall.SIGCONT)
			}
		}
		defer resume()
		secret := func() *contracts.Error {
			t.Helper()
			return d.callErr(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "fx",
				Credentials: map[string]any{"env": map[string]string{"FX_TOKEN": newCanary(t, false)}}})
		}
		// The harness gives up on a call after callTimeout: a daemon
		// stuck in the keyring would fail here with a client timeout.
		if e := secret(); e.Reason() != "vault_timeout" || !errors.Is(e, contracts.ErrUnavailable) {
			t.Fatalf("secret with a stopped keyring: %s, want vault_timeout", mustJSON(t, e))
		}
		if e := secret(); e.Reason() != "vault_timeout" {
			t.Errorf("second secret with a stopped keyring: %s, want vault_timeout at once", mustJSON(t, e))
		}
		// The daemon keeps serving: hello, status, configure, connect.
		if _, err := rawHello(d.socket, callTimeout); err != nil {
			t.Errorf("system.hello while the keyring is stuck: %v", err)
		}
		configureMCP(t, d, mcpSettings(t, stdioFixture("fx"), stdioFixture("plain"), stdioFixture("late")))
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		got := map[string]string{}
		for _, s := range st.Servers {
			got[s.ID] = s.Credentials
		}
		// fx's write timed out and may still land, so the daemon no longer
		// trusts its cached record: unknown until the keyring answers.
		if st.Vault.Backend != "secret-service" || got["fx"] != "unknown" || got["plain"] != "none" || got["late"] != "unknown" {
			t.Errorf("status while stuck: vault %+v, credentials %v; want fx unknown, plain none, late unknown", st.Vault, got)
		}
		connectServer(t, d, "plain")
		// Bounded, classed unavailable, and saying why.
		if e := connectFails(t, d, "late"); !errors.Is(e, contracts.ErrUnavailable) || !strings.Contains(e.Message, "still busy") ||
			!strings.HasPrefix(e.Reason(), "vault_") {
			t.Errorf("connect of a server whose credentials cannot be read: %s, want unavailable naming the busy keyring", mustJSON(t, e))
		}

		// It answers again: the vault serves again.
		resume()
		var last *contracts.Error
		poll(t, "the vault to serve after the keyring resumed", func() bool {
			_, err := d.tryCall(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "late",
				Credentials: map[string]any{"env": map[string]string{"LATE_TOKEN": newCanary(t, false)}}})
			last = nil
			if err != nil && !errors.As(err, &last) {
				t.Fatalf("secret: %v", err)
			}
			return err == nil
		}, func() string { return fmt.Sprintf("last error %v", last) })
		if st := serverStatus(t, d, "late"); st.Credentials != "stored" {
			t.Errorf("late after the keyring resumed: credentials %q", st.Credentials)
		}
		p := d.current()
		d.stop(t)
		assertNoLeak(t, "pikod's stderr", []byte(p.stderr.String()), canary)
		// The write that timed out was not cancelled: it may have landed
		// once the keyring resumed. Record what a restart finds.
		d.start(t)
		fx := serverStatus(t, d, "fx")
		t.Logf("after a restart, fx credentials %q generation %d (1 = the timed-out write did not land)", fx.Credentials, fx.CredentialGeneration)
	})
}

// TestVaultUnreachableBus: auto with a bus address nobody listens on
// chooses the file backend at once and says why.
func TestVaultUnreachableBus(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, withEnv("DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/pikod-test-bus"), withPikodArgs("--vault", "auto"))
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	if st.Vault.Backend != "file" || !strings.Contains(st.Vault.Note, "session bus") || !strings.Contains(st.Vault.Reason, "/nonexistent/pikod-test-bus") ||
		!strings.HasPrefix(st.Vault.Chosen, "auto chose file: no keyring: cannot reach the session bus") {
		t.Errorf("auto with an unreachable bus: vault %+v, want file with the reason", st.Vault)
	}
	e := d.callErr(t, contracts.MethodSecret, map[string]any{"server": "nope", "credentials": map[string]any{}})
	if e.Reason() != "unknown_server" {
		t.Errorf("secret for an unknown server: %s", mustJSON(t, e))
	}
}

// TestVaultUnlock: a file vault in unlock mode holds its key only in
// daemon memory: locked at every start until 'pikoctl vault unlock', a
// wrong passphrase changes nothing, and servers with stored credentials
// cannot connect while it is locked.
func TestVaultUnlock(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, withPikodArgs("--vault", "file-unlock"))
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	if !st.Vault.Locked || st.Servers[0].Credentials != "unknown" {
		t.Fatalf("fresh file-unlock vault: %+v, credentials %q; want locked, unknown", st.Vault, st.Servers[0].Credentials)
	}
	if e := d.callErr(t, contracts.MethodSecret, contracts.SecretParams{Server: "fx",
		Credentials: map[string]any{"env": map[string]string{"FX_TOKEN": "locked-canary-1234"}}}); e.Reason() != "vault_locked" {
		t.Errorf("secret while locked: %s, want vault_locked", mustJSON(t, e))
	}
	// The first unlock of an empty vault sets the passphrase.
	if out, errOut, code := runCtl(t, d, "correct horse battery\n", "vault", "unlock"); code != 0 || !strings.Contains(out, "vault unlocked") {
		t.Fatalf("pikoctl vault unlock: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": "unlock-canary-5678"}})

	d.restart()
	if st := serverStatus(t, d, "fx"); st.Credentials != "unknown" {
		t.Errorf("after a restart: credentials %q, want unknown (locked again)", st.Credentials)
	}
	if e := d.callErr(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "fx"}); e.Reason() != "vault_locked" {
		t.Errorf("connect while locked: %s, want vault_locked", mustJSON(t, e))
	}
	if _, errOut, code := runCtl(t, d, "wrong passphrase\n", "vault", "unlock"); code != 1 || !strings.Contains(errOut, "passphrase") {
		t.Errorf("unlock with a wrong passphrase: exit %d, stderr %q; want exit 1 naming the passphrase", code, errOut)
	}
	if _, _, code := runCtl(t, d, "correct horse battery\n", "vault", "unlock"); code != 0 {
		t.Fatalf("unlock with the right passphrase: exit %d", code)
	}
	if st := serverStatus(t, d, "fx"); st.Credentials != "stored" || st.CredentialGeneration != 1 {
		t.Errorf("after unlocking: credentials %q generation %d, want stored 1", st.Credentials, st.CredentialGeneration)
	}
}

// TestVaultMerge stores credentials with "merge": given fields replace or
// add to the stored ones, the others stay, nothing new keeps the
// generation, an empty value is refused, and a merge never carries
// credentials over to another identity. Results, status, errors and the
// log name fields, never values.
func TestVaultMerge(t *testing.T) {
	t.Parallel()
	d := vaultDaemon(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "fx.env")
	base := stdioFixture("fx", "--env-file", envFile)
	configureMCP(t, d, mcpSettings(t, base))
	a, b, a2, c := newCanary(t, false), newCanary(t, false), newCanary(t, false), newCanary(t, false)
	canaries := []string{a, b, a2, c}
	merge := func(creds map[string]any) contracts.SecretResult {
		t.Helper()
		var res contracts.SecretResult
		raw := d.call(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "fx", Credentials: creds, Merge: true})
		assertNoLeak(t, "the merge result", raw, canaries...)
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("decoding %s: %v", raw, err)
		}
		return res
	}
	wantStatus := func(what string, gen uint64, fields ...string) {
		t.Helper()
		st := serverStatus(t, d, "fx")
		if st.Credentials != "stored" || st.CredentialGeneration != gen || !slices.Equal(st.CredentialFields, fields) {
			t.Errorf("%s: status credentials %q generation %d fields %q, want stored %d %q",
				what, st.Credentials, st.CredentialGeneration, st.CredentialFields, gen, fields)
		}
		assertNoLeak(t, "status", mustJSON(t, st), canaries...)
	}

	// A merge with nothing stored stores what it is given.
	if res := merge(map[string]any{"env": map[string]string{"A_TOKEN": a}}); res.Generation != 1 || res.Unchanged ||
		!slices.Equal(res.Fields, []string{"env.A_TOKEN"}) {
		t.Errorf("first merge = %+v, want env.A_TOKEN at generation 1", res)
	}
	// A second field is added; the first stays.
	if res := merge(map[string]any{"env": map[string]string{"B_TOKEN": b}}); res.Generation != 2 || res.Unchanged ||
		!slices.Equal(res.Fields, []string{"env.A_TOKEN", "env.B_TOKEN"}) {
		t.Errorf("adding B_TOKEN = %+v, want both fields at generation 2", res)
	}
	wantStatus("after adding", 2, "env.A_TOKEN", "env.B_TOKEN")
	// Replacing one keeps the other.
	merge(map[string]any{"env": map[string]string{"A_TOKEN": a2}})
	// The same value again, or nothing: no write, no new generation.
	for _, creds := range []map[string]any{{"env": map[string]string{"A_TOKEN": a2}}, {}} {
		if res := merge(creds); res.Generation != 3 || !res.Unchanged || !slices.Equal(res.Fields, []string{"env.A_TOKEN", "env.B_TOKEN"}) {
			t.Errorf("merging nothing new (%d fields) = %+v, want unchanged at generation 3", len(creds), res)
		}
	}
	wantStatus("after merging nothing new", 3, "env.A_TOKEN", "env.B_TOKEN")

	// The server gets the merged set.
	connectServer(t, d, "fx")
	if env := readEnvFile(t, envFile); env["A_TOKEN"] != a2 || env["B_TOKEN"] != b {
		t.Errorf("the server got A_TOKEN %t B_TOKEN %t, want the replaced A and the kept B", env["A_TOKEN"] == a2, env["B_TOKEN"] == b)
	}
	// A change while connected says a reconnect is needed.
	if res := merge(map[string]any{"env": map[string]string{"C_TOKEN": c}}); res.Generation != 4 || !res.ReconnectRequired {
		t.Errorf("merging while connected = %+v, want generation 4 and a reconnect", res)
	}

	// An empty value is refused with the way to remove a field.
	e := d.callErr(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "fx",
		Credentials: map[string]any{"env": map[string]string{"A_TOKEN": ""}}, Merge: true})
	said := false
	if e.Data != nil {
		for _, p := range e.Data.Problems {
			said = said || p.Field == "env.A_TOKEN" && strings.Contains(p.Message, `without "merge"`)
		}
	}
	if e.Reason() != "invalid_credentials" || !said {
		t.Errorf("empty value in a merge: %s, want invalid_credentials saying to replace without merge", mustJSON(t, e))
	}
	wantStatus("after a refused merge", 4, "env.A_TOKEN", "env.B_TOKEN", "env.C_TOKEN")

	// pikoctl mcp secret --merge.
	in := mustJSON(t, map[string]any{"env": map[string]string{"B_TOKEN": a}})
	stdout, stderr, code := runCtl(t, d, string(in), "mcp", "secret", "--merge", "fx")
	if code != 0 || !strings.Contains(stdout, "stored env.A_TOKEN, env.B_TOKEN, env.C_TOKEN for fx (generation 5)") {
		t.Errorf("pikoctl mcp secret --merge: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	assertNoLeak(t, "pikoctl's output", []byte(stdout+stderr), canaries...)

	// Stored for another identity: a merge refuses to carry them over.
	d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--env-file", envFile, "--tools", "4")))
	e = d.callErr(t, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "fx",
		Credentials: map[string]any{"env": map[string]string{"C_TOKEN": c}}, Merge: true})
	if e.Reason() != "credentials_reenter" {
		t.Errorf("merge over credentials of another identity: %s, want credentials_reenter", mustJSON(t, e))
	}
	if st := serverStatus(t, d, "fx"); st.Credentials != "reenter" || st.CredentialGeneration != 5 {
		t.Errorf("after the refused merge: %q generation %d, want reenter 5", st.Credentials, st.CredentialGeneration)
	}

	log, err := os.ReadFile(d.logPath())
	if err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, "the daemon log", log, canaries...)
}

// vaultItemFiles lists the item files (64 hex digits) in a file vault's
// directory, the check item included.
func vaultItemFiles(t testing.TB, stateDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(stateDir, "vault"))
	if err != nil {
		t.Fatalf("listing the file vault: %v", err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); len(n) == 64 && strings.Trim(n, "0123456789abcdef") == "" {
			out = append(out, n)
		}
	}
	return out
}

// vaultItemKey is the name an item has in every backend: hex SHA-256 of
// the service ("pikod-" + instance), NUL, the item's name.
func vaultItemKey(instance, name string) string {
	sum := sha256.Sum256([]byte("pikod-" + instance + "\x00" + name))
	return hex.EncodeToString(sum[:])
}

// keyringHolds reports whether the Secret Service on the bus at addr holds
// an item under key, asking it directly (gdbus), not through pikod.
func keyringHolds(t testing.TB, addr, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gdbus", "call", "--address", addr, "--dest", "org.freedesktop.secrets",
		"--object-path", "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.SearchItems",
		"{'profile': '"+key+"'}")
	cmd.Env = minimalEnv(t.TempDir())
	detach(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("asking the secret service for an item: %v\n%s", err, out)
	}
	return strings.Contains(string(out), "/collection/")
}

// migrateAtTTY runs 'pikoctl vault migrate --to to' on a terminal, types
// the backend's name when asked and returns the terminal's text and the
// exit code.
func migrateAtTTY(t testing.TB, d *daemon, to string) (string, int) {
	t.Helper()
	tty := ctlTTY(t, d, "vault", "migrate", "--to", to)
	tty.waitFor(t, "Type the backend's name")
	tty.typeLine(t, to)
	return tty.wait(t)
}

// TestVaultMigrate moves the credentials of an instance that auto pinned
// to the file backend over to a real Secret Service (a private bus and
// gnome-keyring) and back, through 'pikoctl vault migrate' at a terminal:
// each time every item is in the new backend and no longer in the old
// one, the pin moved (a restart keeps the new backend), and the server
// still gets its credential (the identity binding moved with it). Nothing
// a person or a log sees holds the value.
func TestVaultMigrate(t *testing.T) {
	t.Parallel()
	addr, _ := secretService(t)

	// The first start has no bus: auto chooses the file backend, for good.
	d := startDaemon(t, withPikodArgs("--vault", "auto"))
	envFile := filepath.Join(t.TempDir(), "fx.env")
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--env-file", envFile).with("readOnlyTools", []string{"env"})))
	canary := newCanary(t, false)
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": canary}})
	key := vaultItemKey("default", "server/fx")
	d.stop(t)
	withEnv("DBUS_SESSION_BUS_ADDRESS=" + addr)(d)
	d.start(t)

	vaultIs := func(what, backend, pinnedBy string) {
		t.Helper()
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		shown := strings.TrimSuffix(backend, "-unlock") // status says file for both file modes
		if st.Vault.Backend != shown || st.Vault.Pinned != backend || st.Vault.PinnedBy != pinnedBy || st.Vault.Warning != "" {
			t.Errorf("%s: vault %+v, want %s pinned by %s, no warning", what, st.Vault, backend, pinnedBy)
		}
		if len(st.Servers) != 1 || st.Servers[0].Credentials != "stored" || st.Servers[0].CredentialGeneration != 1 {
			t.Errorf("%s: servers %+v, want fx with its credentials stored, generation 1", what, st.Servers)
		}
	}
	serverGets := func(what string) {
		t.Helper()
		_ = os.Remove(envFile)
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "fx"})
		connectServer(t, d, "fx")
		if got := readEnvFile(t, envFile)["FX_TOKEN"]; got != canary {
			t.Errorf("%s: the server got FX_TOKEN=%q, want the stored value", what, got)
		}
	}
	vaultIs("a keyring appeared after the first start", "file", "auto")
	serverGets("before moving")
	if files := vaultItemFiles(t, d.stateDir); !slices.Contains(files, key) {
		t.Fatalf("the file vault holds %v, want the item of fx (%s)", files, key)
	}

	// file -> secret-service.
	out, code := migrateAtTTY(t, d, "secret-service")
	if code != 0 || !strings.Contains(out, "moved 1 item(s) from file to secret-service: server/fx") ||
		!strings.Contains(out, "pikod now uses secret-service, pinned for this instance") {
		t.Fatalf("migrate to secret-service: exit %d; terminal:\n%s", code, out)
	}
	assertNoLeak(t, "the terminal", []byte(out), canary)
	vaultIs("after moving to secret-service", "secret-service", "migrate")
	if files := vaultItemFiles(t, d.stateDir); len(files) != 0 {
		t.Errorf("after moving to secret-service the file vault still holds %v (want it emptied, check item too)", files)
	}
	if !keyringHolds(t, addr, key) {
		t.Errorf("the secret service does not hold the item of fx after the move")
	}
	serverGets("after moving to secret-service")
	d.restart()
	vaultIs("secret-service after a restart", "secret-service", "migrate")
	serverGets("secret-service after a restart")

	// And back: secret-service -> file.
	out, code = migrateAtTTY(t, d, "file")
	if code != 0 || !strings.Contains(out, "moved 1 item(s) from secret-service to file: server/fx") {
		t.Fatalf("migrate to file: exit %d; terminal:\n%s", code, out)
	}
	assertNoLeak(t, "the terminal", []byte(out), canary)
	vaultIs("after moving back to file", "file", "migrate")
	if keyringHolds(t, addr, key) {
		t.Errorf("the secret service still holds the item of fx after moving back")
	}
	if files := vaultItemFiles(t, d.stateDir); !slices.Contains(files, key) || len(files) != 2 {
		t.Errorf("after moving back the file vault holds %v, want the item of fx and the check item", files)
	}
	serverGets("after moving back to file")
	d.restart()
	vaultIs("file after a restart", "file", "migrate")

	// An explicit --vault for another backend overrides the pin for one
	// run, says so, and moves nothing.
	d.args = []string{"--vault", "secret-service"}
	d.restart()
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	if st.Vault.Backend != "secret-service" || st.Vault.Pinned != "file" || !strings.Contains(st.Vault.Chosen, "for this run only") ||
		!strings.Contains(st.Vault.Warning, "are not used") || st.Servers[0].Credentials != "none" {
		t.Errorf("with --vault secret-service over the pinned file backend: vault %+v, fx credentials %q", st.Vault, st.Servers[0].Credentials)
	}
	d.args = []string{"--vault", "auto"}
	d.restart()
	vaultIs("back on auto after the override", "file", "migrate")
	serverGets("back on auto after the override")

	// To a passphrase vault in the emptied directory, through the
	// keyring: the passphrase is asked twice with echo off.
	if out, code := migrateAtTTY(t, d, "secret-service"); code != 0 {
		t.Fatalf("migrate to secret-service again: exit %d; terminal:\n%s", code, out)
	}
	const pass = "migration passphrase 4711"
	tty := ctlTTY(t, d, "vault", "migrate", "--to", "file-unlock")
	tty.waitFor(t, "Type the backend's name")
	tty.typeLine(t, "file-unlock")
	tty.waitFor(t, "passphrase of the file-unlock vault")
	waitNoEcho(t, tty)
	tty.typeLine(t, pass)
	tty.waitFor(t, "the passphrase again")
	waitNoEcho(t, tty)
	tty.typeLine(t, pass)
	out, code = tty.wait(t)
	if code != 0 || !strings.Contains(out, "moved 1 item(s) from secret-service to file-unlock: server/fx") || strings.Contains(out, pass) {
		t.Fatalf("migrate to file-unlock: exit %d; terminal:\n%s", code, out)
	}
	vaultIs("after moving to file-unlock", "file-unlock", "migrate")
	if keyringHolds(t, addr, key) {
		t.Errorf("the secret service still holds the item of fx after moving to file-unlock")
	}
	serverGets("after moving to file-unlock")
	d.restart()
	if st := serverStatus(t, d, "fx"); st.Credentials != "unknown" {
		t.Errorf("file-unlock after a restart: fx credentials %q, want unknown (locked)", st.Credentials)
	}
	if _, errOut, code := runCtl(t, d, pass+"\n", "vault", "unlock"); code != 0 {
		t.Fatalf("pikoctl vault unlock: exit %d, stderr %q", code, errOut)
	}
	vaultIs("file-unlock unlocked after a restart", "file-unlock", "migrate")
	serverGets("file-unlock unlocked after a restart")

	d.mu.Lock()
	procs := slices.Clone(d.procs)
	d.mu.Unlock()
	for _, p := range procs {
		assertNoLeak(t, "pikod's stderr", []byte(p.stderr.String()), canary)
	}
	d.assertLogClean(t, canary)
}

// TestVaultMigrateRefusals: a migration that cannot be made says why and
// what to do, and changes nothing: the target is unavailable (no session
// bus), the backend in use, the wrong name typed, stdin not the terminal,
// a caller not at a terminal at all, a locked vault.
func TestVaultMigrateRefusals(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, withPikodArgs("--vault", "auto"))
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx")))
	canary := newCanary(t, false)
	storeSecret(t, d, "fx", map[string]any{"env": map[string]string{"FX_TOKEN": canary}})
	vaultDir := filepath.Join(d.stateDir, "vault")
	before := snapshotDir(t, vaultDir)
	unchanged := func(what string) {
		t.Helper()
		after := snapshotDir(t, vaultDir)
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s: %s changed", what, k)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("%s: %s appeared", what, k)
			}
		}
		if st := serverStatus(t, d, "fx"); st.Credentials != "stored" {
			t.Errorf("%s: fx credentials %q, want stored", what, st.Credentials)
		}
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
		if st.Vault.Backend != "file" || st.Vault.Pinned != "file" || st.Vault.PinnedBy != "auto" {
			t.Errorf("%s: vault %+v, want file pinned by auto", what, st.Vault)
		}
	}

	type refusal struct {
		name, to string
		want     []string
	}
	refusals := []refusal{{"the backend in use", "file", []string{"the vault already uses the file backend: nothing to move"}}}
	if runtime.GOOS == "linux" {
		refusals = append(refusals,
			refusal{"no session bus", "secret-service", []string{"cannot move the credentials to the secret-service backend (nothing was changed)",
				"the session bus is disabled (DBUS_SESSION_BUS_ADDRESS=disabled:)", "hint: start pikod where DBUS_SESSION_BUS_ADDRESS reaches your session bus"}},
			refusal{"no keychain", "keychain", []string{"cannot move the credentials to the keychain backend (nothing was changed)", "only on macOS"}})
	}
	for _, tc := range refusals {
		out, code := migrateAtTTY(t, d, tc.to)
		for _, w := range tc.want {
			if code != 1 || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d, terminal:\n%s\nwant exit 1 and %q", tc.name, code, out, w)
			}
		}
		assertNoLeak(t, tc.name, []byte(out), canary)
		unchanged(tc.name)
	}

	// Another name typed: nothing is sent.
	tty := ctlTTY(t, d, "vault", "migrate", "--to", "secret-service")
	tty.waitFor(t, "Type the backend's name")
	tty.typeLine(t, "yes")
	if out, code := tty.wait(t); code != 1 || !strings.Contains(out, "not moved: the vault stays as it is") {
		t.Errorf("another name typed: exit %d, terminal:\n%s", code, out)
	}
	// A pipe is not the owner at the terminal, and neither is a program
	// calling the socket.
	if _, stderr, code := runCtl(t, d, "secret-service\n", "vault", "migrate", "--to", "secret-service"); code != 1 || !strings.Contains(stderr, "stdin is not the terminal") {
		t.Errorf("migrate from a pipe: exit %d, stderr %q", code, stderr)
	}
	if e := d.callErr(t, contracts.MethodVaultMigrate, contracts.VaultMigrateParams{To: "secret-service"}); e.Reason() != "terminal_required" {
		t.Errorf("vault.migrate from a program: %s, want terminal_required", mustJSON(t, e))
	}
	if _, stderr, code := runCtl(t, d, "", "vault", "migrate", "--to", "auto"); code != 2 || !strings.Contains(stderr, "give --to secret-service|keychain|file|file-unlock") {
		t.Errorf("migrate --to auto: exit %d, stderr %q", code, stderr)
	}
	unchanged("after the refusals")

	// A locked vault cannot be read, so it is not moved.
	locked := startDaemon(t, withPikodArgs("--vault", "file-unlock"))
	tty = ctlTTY(t, locked, "vault", "migrate", "--to", "secret-service")
	if out, code := tty.wait(t); code != 1 || !strings.Contains(out, "the vault is locked") || !strings.Contains(out, "pikoctl vault unlock") {
		t.Errorf("migrate of a locked vault: exit %d, terminal:\n%s", code, out)
	}

	d.assertLogClean(t, canary)
}

// TestDoctorVaultBackend: doctor says which backend auto chose and why,
// that the choice is pinned and how to move it, at the first start and
// after a restart (from the record made at the first start).
func TestDoctorVaultBackend(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, withPikodArgs("--vault", "auto"))
	doctor := func() string {
		t.Helper()
		out, stderr, code := runCtlEnv(t, d, []string{"XDG_CONFIG_HOME=" + t.TempDir()}, "", "doctor")
		if code != 0 && code != 1 {
			t.Fatalf("doctor: exit %d\n%s%s", code, out, stderr)
		}
		return out
	}
	want := func(what, out string, parts ...string) {
		t.Helper()
		var line string
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "ok    vault      auto chose") {
				line = l
			}
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				t.Errorf("%s: doctor's vault line lacks %q:\n%s", what, p, out)
			}
		}
	}
	out := doctor()
	want("the first start", out, "auto chose file: no keyring: the session bus is disabled (DBUS_SESSION_BUS_ADDRESS=disabled:)",
		"pinned: later starts keep file", "'pikoctl vault migrate --to secret-service' moves every credential")
	if !strings.Contains(out, "ok    vault      backend file: auto: no keyring") {
		t.Errorf("doctor's backend line:\n%s", out)
	}
	d.restart()
	want("a later start", doctor(), "auto chose file at the first start (", "DBUS_SESSION_BUS_ADDRESS=disabled:", "pinned: later starts keep file",
		"pikoctl vault migrate --to secret-service")
	// The start log line says the same.
	if lines := d.logLines(t, `"message":"vault open"`, `"pinned_by":"auto"`, `DBUS_SESSION_BUS_ADDRESS=disabled:`); len(lines) < 2 {
		t.Errorf("the log has %d 'vault open' lines with the pin and the reason, want one per start", len(lines))
	}
}

// TestVaultMigrateCrash kills pikod (SIGKILL) while it moves the
// credentials of many servers to a real Secret Service, as soon as the
// first item lands there, and checks what must hold wherever the kill
// fell: the next start finds every credential in the backend it pins, and
// removes the copies the interrupted migration left on the other side, so
// exactly one backend holds the items.
func TestVaultMigrateCrash(t *testing.T) {
	t.Parallel()
	addr, _ := secretService(t)
	d := startDaemon(t, withPikodArgs("--vault", "auto"))
	const n = 24
	var servers []srv
	for i := range n {
		servers = append(servers, stdioFixture(fmt.Sprintf("s%02d", i)))
	}
	configureMCP(t, d, mcpSettings(t, servers...))
	canary := newCanary(t, false)
	var keys []string
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		storeSecret(t, d, id, map[string]any{"env": map[string]string{"TOKEN": canary + id}})
		keys = append(keys, vaultItemKey("default", "server/"+id))
	}
	slices.Sort(keys) // the order items are written in
	d.stop(t)
	withEnv("DBUS_SESSION_BUS_ADDRESS=" + addr)(d)
	d.start(t)

	tty := ctlTTY(t, d, "vault", "migrate", "--to", "secret-service")
	tty.waitFor(t, "Type the backend's name")
	tty.typeLine(t, "secret-service")
	poll(t, "the first item to reach the secret service", func() bool { return keyringHolds(t, addr, keys[0]) }, func() string { return "" })
	d.kill9()
	out, _ := tty.wait(t)
	assertNoLeak(t, "the terminal", []byte(out), canary)

	d.start(t)
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{}, &st)
	t.Logf("after the kill pikod uses %s (pinned %s, warning %q)", st.Vault.Backend, st.Vault.Pinned, st.Vault.Warning)
	if st.Vault.Backend != st.Vault.Pinned || st.Vault.Warning != "" || (st.Vault.Backend != "file" && st.Vault.Backend != "secret-service") {
		t.Errorf("after the kill: vault %+v, want the pinned backend and no warning", st.Vault)
	}
	for _, s := range st.Servers {
		if s.Credentials != "stored" || s.CredentialGeneration != 1 {
			t.Errorf("after the kill %s has credentials %q generation %d, want stored 1", s.ID, s.Credentials, s.CredentialGeneration)
		}
	}
	files := vaultItemFiles(t, d.stateDir)
	inKeyring := 0
	for _, k := range keys {
		if keyringHolds(t, addr, k) {
			inKeyring++
		}
	}
	switch st.Vault.Backend {
	case "file":
		if len(files) != n+1 || inKeyring != 0 {
			t.Errorf("on file after the kill: %d item files (want %d and the check item), %d items left in the secret service (want 0)", len(files), n, inKeyring)
		}
		// The first copy was in the secret service when pikod died.
		if len(d.logLines(t, "removed what an interrupted vault migration left behind", `"cleaned":"secret-service"`)) != 1 {
			t.Errorf("the start after the kill did not log removing the interrupted migration's copies")
		}
	case "secret-service":
		if len(files) != 0 || inKeyring != n {
			t.Errorf("on secret-service after the kill: %d item files left (want 0), %d items in the secret service (want %d)", len(files), inKeyring, n)
		}
	}
	// The server still gets its value from wherever it is now: the env
	// tool's answer has it redacted, which it can be only if it arrived.
	configureMCP(t, d, mcpSettings(t, append([]srv{servers[0].with("readOnlyTools", []string{"env"})}, servers[1:]...)...))
	connectServer(t, d, "s00")
	if got := envOf(callText(t, callTool(t, d, "s00", "env", "")))["TOKEN"]; got != redactedMark {
		t.Errorf("after the kill s00 has TOKEN=%q, want the stored value (shown %s)", got, redactedMark)
	}
	d.assertLogClean(t, canary)
}
