package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/pikod/pikod/contracts"
)

// validSettings is one stdio server and one disabled http server.
const validSettings = `{"servers":[
	{"id":"cat","transport":"stdio","command":"/bin/cat","args":["-u"],"timeoutMs":5000},
	{"id":"web","enabled":false,"transport":"http","url":"https://example.com/mcp","maxBytes":4096}
]}`

// configureParams builds extensions.configure params for the mcp extension.
func configureParams(settings string, dryRun bool) map[string]any {
	p := map[string]any{"extension": "mcp", "settings": json.RawMessage(settings)}
	if dryRun {
		p["dryRun"] = true
	}
	return p
}

var settingsParams = map[string]any{"extension": "mcp"}

// readSettings returns the stored mcp settings.
func readSettings(t testing.TB, d *daemon) contracts.SettingsResult {
	t.Helper()
	var res contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, settingsParams, &res)
	return res
}

// runAs runs a program as another uid/gid and returns its output and exit
// code.
func runAs(t *testing.T, uid uint32, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = minimalEnv("/")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s as uid %d: %v", name, uid, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestSocketPermissions(t *testing.T) {
	base, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// The socket's directory does not exist yet: pikod creates it.
	runDir := filepath.Join(base, "run")
	sock := filepath.Join(runDir, "s.sock")
	d := startDaemon(t, withSocket(sock))

	for _, c := range []struct {
		path   string
		perm   os.FileMode
		socket bool
	}{
		{runDir, 0o700, false},
		{sock, 0o600, true},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatalf("stat %s: %v", c.path, err)
		}
		if got := fi.Mode().Perm(); got != c.perm {
			t.Errorf("%s has mode %v, want %v", c.path, got, c.perm)
		}
		if c.socket && fi.Mode()&os.ModeSocket == 0 {
			t.Errorf("%s is %v, want a socket", c.path, fi.Mode())
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
			t.Errorf("%s is owned by uid %d, want the daemon's uid %d", c.path, uid, os.Getuid())
		}
	}

	if os.Getuid() != 0 {
		t.Skip("refusing another uid needs root to run a client as uid 65534; permissions checked, other-uid part skipped")
	}
	// Open everything up so only the peer-credential check stands between
	// uid 65534 and the daemon.
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{base, 0o755}, {runDir, 0o777}, {sock, 0o666}} {
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	// Control: pikoctl runs as uid 65534 (reports an unreachable daemon on
	// a missing socket), so a failure below is the daemon's refusal.
	if _, stderr, code := runAs(t, 65534, pikoctlBin, "--socket", filepath.Join(base, "none.sock"), "version"); code != 3 {
		t.Fatalf("pikoctl as uid 65534 on a missing socket: exit %d, want 3 (can uid 65534 run %s?); stderr:\n%s", code, pikoctlBin, stderr)
	}
	stdout, stderr, code := runAs(t, 65534, pikoctlBin, "--socket", sock, "--json", "rpc", contracts.MethodHello)
	if code == 0 || strings.Contains(stdout, "apiVersion") {
		t.Errorf("uid 65534 got system.hello through a world-writable socket: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Logf("uid 65534: exit %d, stderr %q", code, stderr)

	var hello contracts.HelloResult
	d.callInto(t, contracts.MethodHello, map[string]any{}, &hello)
	if hello.APIVersion != contracts.APIVersion {
		t.Errorf("owner hello apiVersion = %q, want %q", hello.APIVersion, contracts.APIVersion)
	}
}

func TestSingleInstance(t *testing.T) {
	t.Run("concurrent start", func(t *testing.T) {
		d := newInstance(t)
		p1, p2 := d.spawn(t), d.spawn(t)
		var loser, winner *proc
		select {
		case <-p1.done:
			loser, winner = p1, p2
		case <-p2.done:
			loser, winner = p2, p1
		case <-time.After(readyTimeout):
			t.Fatalf("neither of two pikod on one instance exited; stderr 1:\n%s\nstderr 2:\n%s", p1.stderr.String(), p2.stderr.String())
		}
		if loser.code != 1 {
			t.Errorf("second pikod exited with code %d, want 1", loser.code)
		}
		if s := loser.stderr.String(); !strings.Contains(s, "another pikod") {
			t.Errorf("second pikod's stderr does not say %q:\n%s", "another pikod", s)
		}
		if winner.exited() {
			t.Fatalf("both pikod exited; winner code %d, stderr:\n%s", winner.code, winner.stderr.String())
		}
		d.waitReady(t, winner)
		d.mu.Lock()
		d.cur = winner
		d.mu.Unlock()
		if res := readSettings(t, d); res.Revision != 0 {
			t.Errorf("fresh instance revision = %d, want 0", res.Revision)
		}

		// A killed daemon leaves a stale socket and releases the lock: the
		// next start must not wait on either.
		d.kill9()
		if _, err := os.Lstat(d.socket); err != nil {
			t.Fatalf("precondition: kill -9 should leave the socket file behind: %v", err)
		}
		p := d.spawn(t)
		ready := d.waitReady(t, p)
		d.mu.Lock()
		d.cur = p
		d.mu.Unlock()
		took := ready.Sub(p.started)
		t.Logf("ready %v after kill -9", took)
		if took > 2*time.Second {
			t.Errorf("restart after kill -9 took %v to answer system.hello, want under 2s", took)
		}
	})

	t.Run("second start while serving", func(t *testing.T) {
		d := startDaemon(t)
		p := d.spawn(t)
		code, ok := p.wait(readyTimeout)
		if !ok {
			t.Fatalf("second pikod on a served instance did not exit; stderr:\n%s", p.stderr.String())
		}
		if code != 1 || !strings.Contains(p.stderr.String(), "another pikod is running for instance") {
			t.Errorf("second pikod: exit %d, stderr:\n%s\nwant exit 1 and %q", code, p.stderr.String(), "another pikod is running for instance")
		}
		if _, err := rawHello(d.socket, callTimeout); err != nil {
			t.Errorf("first pikod stopped serving after a second start: %v", err)
		}
	})

	t.Run("other state dir on a live socket", func(t *testing.T) {
		d := startDaemon(t)
		other := newInstance(t, withSocket(d.socket))
		p := other.spawn(t)
		code, ok := p.wait(readyTimeout)
		if !ok {
			t.Fatalf("pikod on a live socket did not exit; stderr:\n%s", p.stderr.String())
		}
		if code != 1 || !strings.Contains(p.stderr.String(), "another pikod is serving socket") {
			t.Errorf("pikod on a live socket: exit %d, stderr:\n%s\nwant exit 1 and %q", code, p.stderr.String(), "another pikod is serving socket")
		}
		hello, err := rawHello(d.socket, callTimeout)
		if err != nil {
			t.Fatalf("first pikod stopped serving: %v", err)
		}
		if hello.PID != d.current().pid() {
			t.Errorf("socket answered by pid %d, want the first daemon %d", hello.PID, d.current().pid())
		}
	})
}

// rawResponse is one JSON-RPC response as read off the wire.
type rawResponse struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id"`
	Result  json.RawMessage  `json:"result"`
	Error   *contracts.Error `json:"error"`
}

// rawExchange writes frame plus a newline on a fresh connection and reads
// one response line.
func rawExchange(t *testing.T, socket string, frame string) rawResponse {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatalf("dialing %s: %v", socket, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(callTimeout))
	if _, err := io.WriteString(c, frame+"\n"); err != nil {
		t.Fatalf("writing %q: %v", frame, err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", frame, err)
	}
	line = bytes.TrimSpace(line)
	// A non-object frame may be answered as a one-element batch.
	if len(line) > 0 && line[0] == '[' {
		var batch []rawResponse
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) != 1 {
			t.Fatalf("answer to %q is not one response: %s", frame, line)
		}
		return batch[0]
	}
	var r rawResponse
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("answer to %q is not JSON: %q: %v", frame, line, err)
	}
	if r.JSONRPC != "2.0" {
		t.Errorf("answer to %q has jsonrpc %q, want 2.0", frame, r.JSONRPC)
	}
	return r
}

func TestHostileFrames(t *testing.T) {
	d := startDaemon(t)
	helloOK := func(t *testing.T) {
		t.Helper()
		var hello contracts.HelloResult
		d.callInto(t, contracts.MethodHello, map[string]any{}, &hello)
		if hello.APIVersion != contracts.APIVersion {
			t.Errorf("hello apiVersion = %q after a hostile frame", hello.APIVersion)
		}
	}

	for _, c := range []struct {
		name  string
		frame string
		code  int
		id    string // expected id in the answer, "" to skip
	}{
		{"malformed json", `{"jsonrpc":"2.0","id":1,"method":`, contracts.CodeParseError, ""},
		{"not json at all", `hello there`, contracts.CodeParseError, ""},
		{"array", `[1]`, contracts.CodeInvalidRequest, ""},
		{"number", `42`, contracts.CodeInvalidRequest, ""},
		{"string", `"system.hello"`, contracts.CodeInvalidRequest, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"no.such.method","params":{}}`, contracts.CodeMethodNotFound, "7"},
		{"wrong param type", `{"jsonrpc":"2.0","id":"x","method":"extensions.settings","params":{"extension":5}}`, contracts.CodeInvalidParams, `"x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rawExchange(t, d.socket, c.frame)
			if r.Error == nil {
				t.Fatalf("%s: got result %s, want error %d", c.frame, r.Result, c.code)
			}
			if r.Error.Code != c.code {
				t.Errorf("%s: error code %d (%q), want %d", c.frame, r.Error.Code, r.Error.Message, c.code)
			}
			if r.Error.Message == "" {
				t.Errorf("%s: error without a message", c.frame)
			}
			if c.id != "" && string(r.ID) != c.id {
				t.Errorf("%s: answer id %s, want %s", c.frame, r.ID, c.id)
			}
			helloOK(t)
		})
	}

	t.Run("oversized frame", func(t *testing.T) {
		bystander, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer bystander.Close()

		c, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		big := `{"jsonrpc":"2.0","id":1,"method":"system.hello","params":{"clientVersion":"` +
			strings.Repeat("a", 9<<20) + `"}}` + "\n"
		wrote := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, big)
			wrote <- err
		}()
		// The daemon may answer with an error before closing; it must
		// never answer with a result, and the connection must end.
		br := bufio.NewReader(c)
		var readErr error
		for readErr == nil {
			var line []byte
			line, readErr = br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var r rawResponse
				if json.Unmarshal(line, &r) == nil && r.Result != nil {
					t.Errorf("a 9 MiB frame got a result: %.200s", line)
				}
			}
		}
		if ne, ok := readErr.(net.Error); ok && ne.Timeout() {
			t.Errorf("connection still open 30s after a 9 MiB frame")
		}
		c.Close()
		<-wrote

		// Other connections are unaffected.
		_ = bystander.SetDeadline(time.Now().Add(callTimeout))
		if _, err := io.WriteString(bystander, `{"jsonrpc":"2.0","id":2,"method":"system.hello","params":{}}`+"\n"); err != nil {
			t.Fatalf("bystander write: %v", err)
		}
		line, err := bufio.NewReader(bystander).ReadBytes('\n')
		if err != nil {
			t.Fatalf("bystander connection broken by another connection's oversized frame: %v", err)
		}
		var r rawResponse
		if err := json.Unmarshal(line, &r); err != nil || r.Error != nil || r.Result == nil {
			t.Errorf("bystander hello answer %q", line)
		}
		helloOK(t)
	})

	t.Run("not implemented", func(t *testing.T) {
		served := []string{contracts.MethodHello, contracts.MethodConfigure, contracts.MethodSettings, contracts.MethodMCPStatus,
			contracts.MethodMCPConnect, contracts.MethodMCPDisconnect, contracts.MethodMCPPing, contracts.MethodMCPCatalog, contracts.MethodMCPResource,
			contracts.MethodMCPCall, contracts.MethodMCPActionsList, contracts.MethodMCPActionsReview,
			contracts.MethodMCPActionsApprove, contracts.MethodMCPActionsResult, contracts.MethodSourceRead, contracts.MethodSecret, contracts.MethodVaultUnlock, contracts.MethodVaultMigrate,
			contracts.MethodMCPReceipts, contracts.MethodMCPCompact, contracts.MethodMCPTrust, contracts.MethodPassphrase,
			contracts.MethodMCPResource, contracts.MethodMCPPrompt, contracts.MethodMCPComplete, contracts.MethodMCPSkills,
			contracts.MethodMCPWatch, contracts.MethodMCPLogging,
			contracts.MethodMCPAuth, contracts.MethodMCPAuthCancel, contracts.MethodMCPLogout,
			contracts.MethodMCPSearch, contracts.MethodMCPRequests, contracts.MethodMCPRequestsRead, contracts.MethodMCPRequestsRespond, contracts.MethodMCPRequestsPropose,
			contracts.MethodMCPPause, contracts.MethodMCPResume, contracts.MethodMCPArtifact, contracts.MethodMCPImport, contracts.MethodMCPTasks}
		c := d.client(t)
		for _, info := range contracts.MethodTable {
			m := info.Name
			if slices.Contains(served, m) {
				continue
			}
			params := map[string]any{}
			if info.TerminalOnly() {
				// This test has no terminal: a terminal-only method is
				// refused before its handler runs, whether served or not.
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				err := c.Call(ctx, m, params, nil)
				cancel()
				var we *contracts.Error
				if !errors.As(err, &we) || we.Reason() != "terminal_required" {
					t.Errorf("%s without a terminal: %v, want terminal_required", m, err)
				}
				if info.Exempt == nil {
					continue
				}
				// The exempt form reaches the handler.
				params[info.Exempt.Field] = info.Exempt.Value
			}
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			var res json.RawMessage
			err := c.Call(ctx, m, params, &res)
			cancel()
			var we *contracts.Error
			if !errors.As(err, &we) {
				t.Errorf("%s: got (%s, %v), want a not_implemented error", m, res, err)
				continue
			}
			if we.Code != 1007 || we.Reason() != "not_implemented" {
				t.Errorf("%s: code %d reason %q, want 1007 not_implemented", m, we.Code, we.Reason())
			}
			if !errors.Is(err, contracts.ErrNotImplemented) {
				t.Errorf("%s: errors.Is(err, ErrNotImplemented) = false", m)
			}
			if !strings.Contains(we.Message, m) {
				t.Errorf("%s: message %q does not name the method", m, we.Message)
			}
		}
		helloOK(t)
	})
}

func TestSettings(t *testing.T) {
	d := startDaemon(t)

	initial := readSettings(t, d)
	if initial.Revision != 0 || !sameJSON(t, initial.Settings, []byte(`{"servers":[]}`)) || initial.Extension != "mcp" {
		t.Errorf("settings before any save = rev %d %s (ext %q), want rev 0 {\"servers\":[]}", initial.Revision, initial.Settings, initial.Extension)
	}

	var res contracts.ConfigureResult
	d.callInto(t, contracts.MethodConfigure, configureParams(validSettings, false), &res)
	if res.Revision != 1 || res.DryRun || res.Unchanged || res.Extension != "mcp" {
		t.Errorf("configure = %+v, want revision 1, saved", res)
	}
	if added := slices.Sorted(slices.Values(res.Added)); !slices.Equal(added, []string{"cat", "web"}) {
		t.Errorf("configure added %v, want [cat web]", res.Added)
	}
	if len(res.Changed)+len(res.Removed) != 0 {
		t.Errorf("first configure changed %v removed %v, want none", res.Changed, res.Removed)
	}

	saved := readSettings(t, d)
	if saved.Revision != 1 || !sameJSON(t, saved.Settings, []byte(validSettings)) {
		t.Errorf("settings after save = rev %d %s, want rev 1 %s", saved.Revision, saved.Settings, validSettings)
	}
	if _, err := time.Parse(time.RFC3339, saved.UpdatedAt); err != nil {
		t.Errorf("updatedAt %q is not RFC 3339: %v", saved.UpdatedAt, err)
	}

	t.Run("status", func(t *testing.T) {
		var st contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, map[string]any{}, &st)
		if st.Revision != 1 || len(st.Servers) != 2 {
			t.Fatalf("status = %+v, want revision 1 and two servers", st)
		}
		want := map[string]struct {
			enabled   bool
			transport string
			state     string
		}{
			"cat": {true, contracts.TransportStdio, contracts.StateIdle},
			"web": {false, contracts.TransportHTTP, contracts.StateDisabled},
		}
		for _, s := range st.Servers {
			w, ok := want[s.ID]
			if !ok {
				t.Errorf("status lists unknown server %q", s.ID)
				continue
			}
			delete(want, s.ID)
			if s.Enabled != w.enabled || s.Transport != w.transport || s.State != w.state || s.ToolCount != 0 || s.CatalogComplete {
				t.Errorf("status of %s = %+v, want enabled %v transport %s state %s", s.ID, s, w.enabled, w.transport, w.state)
			}
		}
		if len(want) != 0 {
			t.Errorf("status misses servers %v", want)
		}
		// No session bus in the harness: auto lands on the file vault.
		if st.Vault.Backend != "file" || st.Vault.Note == "" {
			t.Errorf("vault backend %q (note %q), want file with a note", st.Vault.Backend, st.Vault.Note)
		}

		var one contracts.StatusResult
		d.callInto(t, contracts.MethodMCPStatus, map[string]any{"server": "web"}, &one)
		if len(one.Servers) != 1 || one.Servers[0].ID != "web" {
			t.Errorf("status {server: web} = %+v, want only web", one.Servers)
		}
		e := d.callErr(t, contracts.MethodMCPStatus, map[string]any{"server": "nope"})
		if e.Code != 1002 || !errors.Is(e, contracts.ErrNotFound) || !strings.Contains(e.Message, "nope") {
			t.Errorf("status of unknown server: code %d (%q), want 1002 naming the server", e.Code, e.Message)
		}
	})

	t.Run("identical save", func(t *testing.T) {
		var again contracts.ConfigureResult
		d.callInto(t, contracts.MethodConfigure, configureParams(validSettings, false), &again)
		if again.Revision != 1 || !again.Unchanged {
			t.Errorf("identical configure = %+v, want unchanged at revision 1", again)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		other := `{"servers":[{"id":"cat","transport":"stdio","command":"/bin/cat"},{"id":"new","transport":"sse","url":"https://example.org/sse"}]}`
		var dry contracts.ConfigureResult
		d.callInto(t, contracts.MethodConfigure, configureParams(other, true), &dry)
		if !dry.DryRun || dry.Revision != 2 {
			t.Errorf("dry run = %+v, want dryRun and would-be revision 2", dry)
		}
		if !slices.Equal(dry.Added, []string{"new"}) || !slices.Equal(dry.Removed, []string{"web"}) || !slices.Equal(dry.Changed, []string{"cat"}) {
			t.Errorf("dry run added %v changed %v removed %v, want [new] [cat] [web]", dry.Added, dry.Changed, dry.Removed)
		}
		assertSettings(t, d, saved)
	})

	t.Run("unknown extension", func(t *testing.T) {
		e := d.callErr(t, contracts.MethodConfigure, map[string]any{"extension": "nope", "settings": json.RawMessage(`{"servers":[]}`)})
		if e.Code != 1001 || e.Reason() != "unknown_extension" {
			t.Errorf("unknown extension: code %d reason %q, want 1001 unknown_extension", e.Code, e.Reason())
		}
		assertSettings(t, d, saved)
	})

	t.Run("expect revision", func(t *testing.T) {
		p := configureParams(`{"servers":[]}`, false)
		p["expectRevision"] = 7
		e := d.callErr(t, contracts.MethodConfigure, p)
		if e.Code != 1004 {
			t.Errorf("configure with a stale expectRevision: code %d (%s), want 1004", e.Code, e.Message)
		}
		assertSettings(t, d, saved)
	})

	t.Run("invalid", func(t *testing.T) {
		many := make([]string, 65)
		for i := range many {
			many[i] = fmt.Sprintf(`{"id":"s%d","transport":"stdio","command":"/bin/cat"}`, i)
		}
		for _, c := range []struct {
			name   string
			server string // the server the problem must name ("" for none; alternatives split by |)
			field  string // a substring of the problem's field
			srv    string // the settings' servers array, without brackets
		}{
			{"bad id", "Bad_ID|servers[0]", "id", `{"id":"Bad_ID","transport":"stdio","command":"/bin/cat"}`},
			{"duplicate ids", "dup", "id", `{"id":"dup","transport":"stdio","command":"/bin/cat"},{"id":"dup","transport":"stdio","command":"/bin/cat"}`},
			{"65 servers", "", "servers", strings.Join(many, ",")},
			{"timeout too small", "a", "timeoutMs", `{"id":"a","transport":"stdio","command":"/bin/cat","timeoutMs":999}`},
			{"maxBytes too big", "a", "maxBytes", `{"id":"a","transport":"stdio","command":"/bin/cat","maxBytes":20000001}`},
			{"bad protocol", "a", "protocol", `{"id":"a","transport":"stdio","command":"/bin/cat","protocol":"newest"}`},
			{"stdio with url", "a", "url", `{"id":"a","transport":"stdio","command":"/bin/cat","url":"https://example.com/mcp"}`},
			{"relative cwd", "a", "cwd", `{"id":"a","transport":"stdio","command":"/bin/cat","cwd":"some/dir"}`},
			{"autonomous not in tools", "a", "autonomousTools", `{"id":"a","transport":"stdio","command":"/bin/cat","tools":["read"],"autonomousTools":["write"]}`},
			{"authorization header", "h", "headers", `{"id":"h","transport":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer abc"}}`},
			{"userinfo in url", "h", "url", `{"id":"h","transport":"http","url":"https://user:pw@example.com/mcp"}`},
			{"secret-looking env", "a", "env", `{"id":"a","transport":"stdio","command":"/bin/cat","env":{"GITHUB_TOKEN":"abc"}}`},
			{"plain http url", "h", "url", `{"id":"h","transport":"http","url":"http://example.com/mcp"}`},
			{"missing transport", "a", "transport", `{"id":"a","command":"/bin/cat"}`},
			{"unknown transport", "a", "transport", `{"id":"a","transport":"carrier-pigeon","command":"/bin/cat"}`},
			{"missing command", "a", "command", `{"id":"a","transport":"stdio"}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := d.callErr(t, contracts.MethodConfigure, configureParams(`{"servers":[`+c.srv+`]}`, false))
				checkInvalid(t, e, []contracts.Problem{{Server: c.server, Field: c.field}})
				assertSettings(t, d, saved)
			})
		}

		t.Run("several problems", func(t *testing.T) {
			e := d.callErr(t, contracts.MethodConfigure, configureParams(`{"servers":[
				{"id":"one","transport":"stdio","command":"/bin/cat","timeoutMs":5},
				{"id":"two","transport":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer abc"}},
				{"id":"three","transport":"stdio","command":"/bin/cat","cwd":"rel"}
			]}`, false))
			want := []contracts.Problem{{Server: "one", Field: "timeoutMs"}, {Server: "two", Field: "headers"}, {Server: "three", Field: "cwd"}}
			checkInvalid(t, e, want)
			for _, w := range want {
				if !strings.Contains(e.Message, w.Server) {
					t.Errorf("message %q does not mention server %q", e.Message, w.Server)
				}
			}
			assertSettings(t, d, saved)
		})

		t.Run("dry run rejected", func(t *testing.T) {
			e := d.callErr(t, contracts.MethodConfigure, configureParams(`{"servers":[{"id":"a","transport":"stdio","command":"/bin/cat","maxBytes":1}]}`, true))
			checkInvalid(t, e, []contracts.Problem{{Server: "a", Field: "maxBytes"}})
			assertSettings(t, d, saved)
		})
	})
}

// checkInvalid asserts e is an invalid_settings rejection with a problem
// for each of want (Server exact, Field a substring).
func checkInvalid(t *testing.T, e *contracts.Error, want []contracts.Problem) {
	t.Helper()
	if e.Code != 1001 || e.Reason() != "invalid_settings" {
		t.Fatalf("code %d reason %q (%s), want 1001 invalid_settings", e.Code, e.Reason(), e.Message)
	}
	if e.Data == nil || len(e.Data.Problems) < len(want) {
		t.Fatalf("problems %+v, want at least %d (message %q)", e.Data, len(want), e.Message)
	}
	for _, w := range want {
		found := false
		for _, p := range e.Data.Problems {
			if slices.Contains(strings.Split(w.Server, "|"), p.Server) && strings.Contains(p.Field, w.Field) && p.Message != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem naming server %q field %q in %+v", w.Server, w.Field, e.Data.Problems)
		}
	}
}

// assertSettings asserts the stored settings are still want.
func assertSettings(t *testing.T, d *daemon, want contracts.SettingsResult) {
	t.Helper()
	got := readSettings(t, d)
	if got.Revision != want.Revision || !sameJSON(t, got.Settings, want.Settings) {
		t.Errorf("settings changed: rev %d %s, want rev %d %s", got.Revision, got.Settings, want.Revision, want.Settings)
	}
}

// panicRE matches the runtime's report of an unrecovered panic.
var panicRE = regexp.MustCompile(`(?m)^(panic: |goroutine \d+ \[)`)

// crashSettings is the k-th settings of a crash round: alternately a stdio
// and an http server, each id carrying the round and k.
func crashSettings(round, k int) string {
	if k%2 == 0 {
		return fmt.Sprintf(`{"servers":[{"id":"r%d-a%d","transport":"stdio","command":"/bin/cat","args":["%d"]}]}`, round, k, k)
	}
	return fmt.Sprintf(`{"servers":[{"id":"r%d-b%d","enabled":false,"transport":"http","url":"https://example.com/mcp/%d/%d"}]}`, round, k, round, k)
}

func TestCrashConsistency(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	d := startDaemon(t)
	// known maps every revision seen durable to its canonical content.
	known := map[uint64]string{0: canonJSON(t, []byte(`{"servers":[]}`))}
	var last uint64    // the highest revision acknowledged or seen durable
	var pending string // the configure in flight at the last kill, if any
	committedInFlight := 0

	check := func(round int) {
		t.Helper()
		got := readSettings(t, d)
		content := canonJSON(t, got.Settings)
		switch {
		case got.Revision < last:
			t.Fatalf("round %d: revision %d after restart, but %d was acknowledged", round, got.Revision, last)
		case got.Revision == last:
			if content != known[last] {
				t.Fatalf("round %d: revision %d holds %s, but it was acknowledged with %s", round, last, content, known[last])
			}
		case got.Revision == last+1 && pending != "":
			// The configure in flight at the kill was committed.
			if content != pending {
				t.Fatalf("round %d: revision %d holds %s, want the in-flight %s", round, got.Revision, content, pending)
			}
			known[got.Revision] = content
			last = got.Revision
			committedInFlight++
		default:
			t.Fatalf("round %d: revision %d %s after restart, last acknowledged %d, in flight %q", round, got.Revision, content, last, pending)
		}
		pending = ""
	}

	type ack struct {
		rev     uint64
		content string
	}
	for round := range rounds {
		if round > 0 {
			d.restart()
		}
		check(round)

		c := d.client(t)
		acks := make(chan ack, 1024)
		inflight := make(chan string, 1)
		go func() {
			defer close(acks)
			for k := 0; k < 1000; k++ {
				s := crashSettings(round, k)
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				var res contracts.ConfigureResult
				err := c.Call(ctx, contracts.MethodConfigure, configureParams(s, false), &res)
				cancel()
				if err != nil {
					inflight <- s
					return
				}
				acks <- ack{res.Revision, s}
			}
			inflight <- ""
		}()
		time.Sleep(time.Duration(rng.IntN(31)) * time.Millisecond)
		d.kill9()
		for a := range acks {
			if a.rev != last+1 {
				t.Fatalf("round %d: configure acknowledged revision %d, want %d", round, a.rev, last+1)
			}
			last = a.rev
			known[a.rev] = canonJSON(t, []byte(a.content))
		}
		if s := <-inflight; s != "" {
			pending = canonJSON(t, []byte(s))
		}
		c.Close()
	}
	d.restart()
	check(rounds)
	t.Logf("%d rounds, last revision %d, %d unacknowledged configures found committed", rounds, last, committedInFlight)
	d.stop(t)

	db, err := bolt.Open(filepath.Join(d.stateDir, "pikod.db"), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("opening the database after the crash rounds: %v", err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptDatabase(t *testing.T) {
	// makeDB runs a daemon to produce a valid database with some settings.
	makeDB := func(t *testing.T) string {
		d := startDaemon(t)
		d.call(t, contracts.MethodConfigure, configureParams(validSettings, false))
		d.stop(t)
		return filepath.Join(d.stateDir, "pikod.db")
	}
	// metaPage reads the newest valid-looking meta page of a bbolt file.
	type meta struct{ pageSize, root, freelist, txid uint64 }
	readMeta := func(t *testing.T, b []byte) meta {
		var best meta
		for _, off := range []uint64{0, uint64(binary.LittleEndian.Uint32(b[24:28]))} {
			m := b[off+16:]
			cur := meta{
				pageSize: uint64(binary.LittleEndian.Uint32(m[8:12])),
				root:     binary.LittleEndian.Uint64(m[16:24]),
				freelist: binary.LittleEndian.Uint64(m[32:40]),
				txid:     binary.LittleEndian.Uint64(m[48:56]),
			}
			if binary.LittleEndian.Uint32(m[0:4]) != 0xED0CDAED {
				t.Fatalf("no bbolt magic at offset %d", off)
			}
			if cur.txid >= best.txid {
				best = cur
			}
		}
		return best
	}
	scribble := func(b []byte, from, to uint64) {
		r := rand.New(rand.NewPCG(1, 2))
		for i := from; i < to && i < uint64(len(b)); i++ {
			b[i] = byte(r.Uint32())
		}
	}

	for _, c := range []struct {
		name string
		make func(t *testing.T) (path string, data []byte)
	}{
		{"random bytes", func(t *testing.T) (string, []byte) {
			b := make([]byte, 64<<10)
			r := rand.New(rand.NewPCG(3, 4))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return filepath.Join(t.TempDir(), "state", "pikod.db"), b
		}},
		{"meta pages scribbled", func(t *testing.T) (string, []byte) {
			path := makeDB(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m := readMeta(t, b)
			scribble(b, 0, 2*m.pageSize)
			return path, b
		}},
		{"root page scribbled", func(t *testing.T) (string, []byte) {
			path := makeDB(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m := readMeta(t, b)
			if m.root == m.freelist || (m.root+1)*m.pageSize > uint64(len(b)) {
				t.Fatalf("unexpected bbolt layout %+v, file %d bytes", m, len(b))
			}
			scribble(b, m.root*m.pageSize, (m.root+1)*m.pageSize)
			return path, b
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, data := c.make(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)

			d := newInstance(t, withStateDir(filepath.Dir(path)))
			p := d.spawn(t)
			code, ok := p.wait(readyTimeout)
			if !ok {
				t.Fatalf("pikod kept running on a corrupt database; stderr:\n%s", p.stderr.String())
			}
			stderr := p.stderr.String()
			if code == 0 {
				t.Errorf("pikod exited 0 on a corrupt database")
			}
			if code != 1 {
				t.Errorf("pikod exit code %d on a corrupt database, want 1", code)
			}
			low := strings.ToLower(stderr)
			if !strings.Contains(stderr, path) || !strings.Contains(low, "database") ||
				!(strings.Contains(low, "corrupt") || strings.Contains(low, "check")) {
				t.Errorf("stderr does not name the database %s and say it is corrupt:\n%s", path, stderr)
			}
			if panicRE.MatchString(stderr) {
				t.Errorf("pikod panicked on a corrupt database:\n%s", stderr)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading the database after the failed start: %v", err)
			}
			if sha256.Sum256(after) != sum {
				t.Errorf("pikod modified the corrupt database (%d bytes before, %d after)", len(data), len(after))
			}
		})
	}
}

func TestCleanShutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemon(t)
			d.call(t, contracts.MethodConfigure, configureParams(validSettings, false))
			d.callErr(t, contracts.MethodMCPCall, map[string]any{})
			d.stopWith(t, sig)

			if _, err := os.Lstat(d.socket); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket %s still exists after a clean shutdown (lstat: %v)", d.socket, err)
			}
			logPath := filepath.Join(d.stateDir, "pikod.log")
			b, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatalf("reading the log: %v", err)
			}
			lines := 0
			for _, line := range strings.Split(string(b), "\n") {
				if strings.TrimSpace(line) == "" {
					continue
				}
				lines++
				var obj map[string]any
				if err := json.Unmarshal([]byte(line), &obj); err != nil {
					t.Errorf("log line is not a JSON object: %q: %v", line, err)
				}
			}
			if lines == 0 {
				t.Errorf("log %s is empty", logPath)
			}
			for _, dir := range []string{d.stateDir} {
				fi, err := os.Stat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o700 {
					t.Errorf("state dir mode %v, want 0700", fi.Mode().Perm())
				}
			}
		})
	}
}

func TestPikodFlags(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"version", []string{"--version"}, 0, "pikod "},
		{"unknown flag", []string{"--no-such-flag"}, 2, ""},
		{"bad log level", []string{"--log-level", "loud", "--state-dir", "/nonexistent/x"}, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, pikodBin, c.args...)
			cmd.Env = minimalEnv(t.TempDir())
			detach(cmd)
			var out, errb bytes.Buffer
			cmd.Stdout = &out
			cmd.Stderr = &errb
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != c.code {
				t.Errorf("pikod %v: exit %d, want %d; stderr:\n%s", c.args, code, c.code, errb.String())
			}
			// The stream is not specified: pikod prints its version on stderr.
			if s := out.String() + errb.String(); !strings.HasPrefix(s, c.stdout) {
				t.Errorf("pikod %v: output %q, want prefix %q", c.args, s, c.stdout)
			}
		})
	}
}
