package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// testApp is an app with captured output and a private environment.
type testApp struct {
	*app
	out, errOut *bytes.Buffer
	env         map[string]string
}

func newTestApp(t *testing.T, stdin string, tty bool) *testApp {
	t.Helper()
	home := t.TempDir()
	ta := &testApp{
		out:    new(bytes.Buffer),
		errOut: new(bytes.Buffer),
		env: map[string]string{
			"HOME":            home,
			"XDG_CONFIG_HOME": filepath.Join(home, "config"),
			"XDG_STATE_HOME":  filepath.Join(home, "state"),
			"XDG_RUNTIME_DIR": filepath.Join(home, "run"),
		},
	}
	ta.app = &app{
		stdin:           strings.NewReader(stdin),
		stdout:          ta.out,
		stderr:          ta.errOut,
		getenv:          func(k string) string { return ta.env[k] },
		stdinIsTerminal: func() bool { return tty },
		openTTY:         func() (ttyIO, error) { return nil, errors.New("no terminal in tests") },
		executable:      func() (string, error) { return "", errors.New("no executable in tests") },
		lookPath:        func(string) (string, error) { return "", errors.New("not in PATH in tests") },
		goos:            "linux",
		uid:             1000,
	}
	return ta
}

func (ta *testApp) runArgs(t *testing.T, args ...string) int {
	t.Helper()
	code := ta.run(context.Background(), args)
	t.Logf("pikoctl %q -> %d\nstdout:\n%s\nstderr:\n%s", args, code, ta.out, ta.errOut)
	return code
}

// fakeDaemon answers JSON-RPC requests on a Unix socket with canned
// results, and records every request it got.
type fakeDaemon struct {
	socket   string
	ln       net.Listener
	handlers map[string]func(params json.RawMessage) (json.RawMessage, *contracts.Error)
	wg       sync.WaitGroup

	// mu guards the fields that follow.
	mu    sync.Mutex
	got   []fakeRequest
	conns []net.Conn
}

type fakeRequest struct {
	Method string
	Params json.RawMessage
}

func startFakeDaemon(t *testing.T, handlers map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error)) *fakeDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &fakeDaemon{socket: filepath.Join(dir, "d.sock"), handlers: handlers}
	d.ln, err = net.Listen("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	d.wg.Add(1)
	go d.accept()
	t.Cleanup(d.stop)
	return d
}

func (d *fakeDaemon) accept() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
		d.wg.Add(1)
		go d.serve(c)
	}
}

func (d *fakeDaemon) serve(c net.Conn) {
	defer d.wg.Done()
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue // notifications
		}
		d.mu.Lock()
		d.got = append(d.got, fakeRequest{req.Method, req.Params})
		d.mu.Unlock()
		var werr *contracts.Error
		var res json.RawMessage
		if h, ok := d.handlers[req.Method]; ok {
			res, werr = h(req.Params)
		} else {
			werr = &contracts.Error{Code: contracts.CodeMethodNotFound, Message: "method not found: " + req.Method}
		}
		// The result goes out byte for byte (json.Marshal would compact
		// it), so tests can check pikoctl prints it as received.
		line := []byte(`{"jsonrpc":"2.0","id":` + string(req.ID))
		if werr != nil {
			b, _ := json.Marshal(werr)
			line = append(append(line, `,"error":`...), b...)
		} else {
			line = append(append(line, `,"result":`...), res...)
		}
		if _, err := c.Write(append(line, "}\n"...)); err != nil {
			return
		}
	}
}

func (d *fakeDaemon) stop() {
	d.ln.Close()
	d.mu.Lock()
	for _, c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

func (d *fakeDaemon) requests() []fakeRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]fakeRequest(nil), d.got...)
}

func canned(result string) func(json.RawMessage) (json.RawMessage, *contracts.Error) {
	return func(json.RawMessage) (json.RawMessage, *contracts.Error) { return json.RawMessage(result), nil }
}

func failing(e *contracts.Error) func(json.RawMessage) (json.RawMessage, *contracts.Error) {
	return func(json.RawMessage) (json.RawMessage, *contracts.Error) { return nil, e }
}

// missingSocket returns a socket path under a fresh directory where nothing
// listens.
func missingSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "nobody.sock")
}

func TestExitCodes(t *testing.T) {
	settings := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(settings, []byte(`{"servers":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string // --socket pointing nowhere is prepended
		want       int
		wantStderr []string
		wantStdout []string
	}{
		{"help", []string{"--help"}, exitOK, nil, []string{"Usage:"}},
		{"group without subcommand prints help", []string{"mcp"}, exitOK, nil, []string{"configure"}},
		{"unknown command", []string{"bogus"}, exitUsage, []string{`pikoctl: unknown command "bogus"`, "--help"}, nil},
		{"unknown subcommand", []string{"mcp", "bogus"}, exitUsage, []string{`unknown command "bogus" for "pikoctl mcp"`}, nil},
		{"unknown flag", []string{"version", "--nope"}, exitUsage, []string{"unknown flag: --nope"}, nil},
		{"rpc without method", []string{"rpc"}, exitUsage, []string{"arg"}, nil},
		{"rpc with too many args", []string{"rpc", "a", "{}", "x"}, exitUsage, []string{"arg"}, nil},
		{"status with two servers", []string{"mcp", "status", "a", "b"}, exitUsage, nil, nil},
		{"configure without file", []string{"mcp", "configure"}, exitUsage, nil, nil},
		{"bad instance", []string{"--instance", "Bad_Name", "mcp", "status"}, exitUsage, []string{"invalid instance name"}, nil},
		{"relative --pikod", []string{"service", "print", "--pikod", "bin/pikod"}, exitUsage, []string{"absolute"}, nil},
		{"params not an object", []string{"rpc", "system.hello", "[1]"}, exitFailure, []string{"want a JSON object", "an array"}, nil},
		{"params not JSON", []string{"rpc", "system.hello", "{"}, exitFailure, []string{"parsing params"}, nil},
		{"settings file missing", []string{"mcp", "configure", filepath.Join(t.TempDir(), "none.json")}, exitFailure, []string{"opening the settings file"}, nil},
		{"version unreachable", []string{"version"}, exitUnreachable, []string{"nobody.sock", "pikod --instance default"}, []string{"pikoctl dev (api 1)"}},
		{"json version unreachable", []string{"--json", "version"}, exitUnreachable, []string{"nobody.sock"}, []string{`{"client":{"version":"dev","apiVersion":"1"},"daemon":null}`}},
		{"rpc unreachable", []string{"rpc", "system.hello", "{}"}, exitUnreachable, []string{"nobody.sock", "hint: start it with 'make run'"}, nil},
		{"status unreachable", []string{"mcp", "status"}, exitUnreachable, []string{"nobody.sock"}, nil},
		{"configure unreachable", []string{"mcp", "configure", settings}, exitUnreachable, []string{"nobody.sock"}, nil},
		{"config unreachable", []string{"--instance", "work", "mcp", "config"}, exitUnreachable, []string{"nobody.sock", "pikod --instance work"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t, "", true)
			args := append([]string{"--socket", missingSocket(t)}, tt.args...)
			if got := ta.runArgs(t, args...); got != tt.want {
				t.Errorf("exit code = %d, want %d", got, tt.want)
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(ta.errOut.String(), s) {
					t.Errorf("stderr does not contain %q", s)
				}
			}
			for _, s := range tt.wantStdout {
				if !strings.Contains(ta.out.String(), s) {
					t.Errorf("stdout does not contain %q", s)
				}
			}
		})
	}
}

// TestUnreachableDefaultSocket checks that without --socket the instance's
// socket is derived from the environment and named in the message.
func TestUnreachableDefaultSocket(t *testing.T) {
	ta := newTestApp(t, "", true)
	ta.env["XDG_RUNTIME_DIR"] = missingSocket(t) // a directory that does not exist
	want := filepath.Join(ta.env["XDG_RUNTIME_DIR"], "pikod", "dev.sock")
	if got := ta.runArgs(t, "--instance", "dev", "mcp", "status"); got != exitUnreachable {
		t.Fatalf("exit code = %d, want %d", got, exitUnreachable)
	}
	if !strings.Contains(ta.errOut.String(), want) {
		t.Errorf("stderr does not name the socket %s", want)
	}
}

func TestRPCParams(t *testing.T) {
	const result = `{"b":1,"a":[2, 3]}`
	tests := []struct {
		name       string
		args       []string
		stdin      string
		tty        bool
		wantParams string
	}{
		{"argument", []string{`{"server":"x"}`}, "ignored", false, `{"server":"x"}`},
		{"dash reads stdin", []string{"-"}, ` {"a":1}` + "\n", true, `{"a":1}`},
		{"omitted reads piped stdin", nil, `{"a":2}`, false, `{"a":2}`},
		{"omitted with empty stdin", nil, "", false, `{}`},
		{"omitted on a terminal", nil, `{"never":"read"}`, true, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
				"x.y": canned(result),
			})
			ta := newTestApp(t, tt.stdin, tt.tty)
			args := append([]string{"--socket", d.socket, "rpc", "x.y"}, tt.args...)
			if got := ta.runArgs(t, args...); got != exitOK {
				t.Fatalf("exit code = %d, want 0", got)
			}
			if got := ta.out.String(); got != result+"\n" {
				t.Errorf("stdout = %q, want the raw result %q", got, result+"\n")
			}
			reqs := d.requests()
			if len(reqs) != 1 || reqs[0].Method != "x.y" {
				t.Fatalf("daemon got %+v, want one x.y request", reqs)
			}
			if !jsonEqual(t, reqs[0].Params, []byte(tt.wantParams)) {
				t.Errorf("params = %s, want %s", reqs[0].Params, tt.wantParams)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decoding %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func TestDaemonErrors(t *testing.T) {
	invalid := &contracts.Error{
		Code:    1001,
		Message: "2 problems:\n  - ...",
		Data: &contracts.ErrorData{
			Reason: "invalid_settings",
			Problems: []contracts.Problem{
				{Server: "x", Field: "command", Message: "required for stdio"},
				{Field: "servers[1].id", Message: "duplicate \x1b[31mid"},
			},
			Hint: "see the README",
		},
	}
	d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodConfigure: failing(invalid),
		contracts.MethodMCPStatus: failing(&contracts.Error{Code: 1002, Message: `unknown server "nope"`, Data: &contracts.ErrorData{Reason: "not_found"}}),
	})
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"servers":[{"id":"x","transport":"stdio"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("problems one per line", func(t *testing.T) {
		ta := newTestApp(t, "", true)
		if got := ta.runArgs(t, "--socket", d.socket, "mcp", "configure", file); got != exitFailure {
			t.Fatalf("exit code = %d, want 1", got)
		}
		want := "pikoctl: invalid settings:\n" +
			"  - server \"x\": command: required for stdio\n" +
			"  - servers[1].id: duplicate \\u{001B}[31mid\n" +
			"hint: see the README\n"
		if got := ta.errOut.String(); got != want {
			t.Errorf("stderr = %q, want %q", got, want)
		}
		if ta.out.Len() != 0 {
			t.Errorf("stdout = %q, want nothing without --json", ta.out)
		}
	})
	t.Run("json error object on stdout", func(t *testing.T) {
		ta := newTestApp(t, "", true)
		if got := ta.runArgs(t, "--json", "--socket", d.socket, "mcp", "status", "nope"); got != exitFailure {
			t.Fatalf("exit code = %d, want 1", got)
		}
		var e contracts.Error
		if err := json.Unmarshal(ta.out.Bytes(), &e); err != nil {
			t.Fatalf("stdout is not an error object: %v", err)
		}
		if e.Code != 1002 || e.Reason() != "not_found" {
			t.Errorf("error object = %+v, want code 1002 reason not_found", e)
		}
		if !strings.Contains(ta.errOut.String(), `pikoctl: unknown server "nope"`) {
			t.Errorf("stderr lacks the message")
		}
	})
	t.Run("rpc method not found", func(t *testing.T) {
		ta := newTestApp(t, "", true)
		if got := ta.runArgs(t, "--socket", d.socket, "rpc", "no.such", "{}"); got != exitFailure {
			t.Fatalf("exit code = %d, want 1", got)
		}
		if !strings.Contains(ta.errOut.String(), "pikoctl: method not found: no.such") {
			t.Errorf("stderr lacks the message")
		}
	})
}

func TestVersion(t *testing.T) {
	hello := func(api string) string {
		return `{"apiVersion":"` + api + `","daemonVersion":"1.2.3","instance":"default","pid":42,"socket":"/s","stateDir":"/d","startedAt":"2026-01-01T00:00:00Z"}`
	}
	tests := []struct {
		name     string
		api      string
		json     bool
		wantOut  []string
		wantWarn bool
	}{
		{"same api", "1", false, []string{"pikoctl dev (api 1)\n", "pikod 1.2.3 (api 1), instance default, pid 42, socket /s\n"}, false},
		{"other api", "2", false, []string{"pikod 1.2.3 (api 2)"}, true},
		{"json", "1", true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
				contracts.MethodHello: canned(hello(tt.api)),
			})
			ta := newTestApp(t, "", true)
			args := []string{"--socket", d.socket, "version"}
			if tt.json {
				args = append([]string{"--json"}, args...)
			}
			if got := ta.runArgs(t, args...); got != exitOK {
				t.Fatalf("exit code = %d, want 0", got)
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(ta.out.String(), s) {
					t.Errorf("stdout does not contain %q", s)
				}
			}
			if warned := strings.Contains(ta.errOut.String(), "warning"); warned != tt.wantWarn {
				t.Errorf("warned = %v, want %v", warned, tt.wantWarn)
			}
			if tt.json {
				var out struct {
					Client struct{ Version, APIVersion string }
					Daemon contracts.HelloResult
				}
				if err := json.Unmarshal(ta.out.Bytes(), &out); err != nil {
					t.Fatalf("stdout is not JSON: %v", err)
				}
				if out.Client.Version != "dev" || out.Client.APIVersion != contracts.APIVersion || out.Daemon.PID != 42 {
					t.Errorf("json version = %+v", out)
				}
			}
			reqs := d.requests()
			if len(reqs) != 1 || !strings.Contains(string(reqs[0].Params), `"clientVersion":"dev"`) {
				t.Errorf("hello params = %+v, want clientVersion dev", reqs)
			}
		})
	}
}

func TestMCPConfigure(t *testing.T) {
	const settings = `{"servers":[{"id":"a","transport":"stdio","command":"/bin/cat"}]}`
	tests := []struct {
		name       string
		args       []string
		result     string
		wantOut    string
		wantDryRun bool
	}{
		{"saved", nil,
			`{"extension":"mcp","revision":3,"dryRun":false,"unchanged":false,"added":["a"],"changed":[],"removed":["b","c"],"disconnected":["b"]}`,
			"saved mcp settings: revision 3\n  added: a\n  removed: b, c\n  disconnected: b\n", false},
		{"unchanged", nil,
			`{"extension":"mcp","revision":3,"dryRun":false,"unchanged":true,"added":[],"changed":[],"removed":[],"disconnected":[]}`,
			"mcp settings unchanged: revision 3\n", false},
		{"dry run", []string{"--dry-run"},
			`{"extension":"mcp","revision":4,"dryRun":true,"unchanged":false,"added":[],"changed":["a"],"removed":[],"disconnected":[]}`,
			"dry run: mcp settings are valid and would be saved as revision 4\n  changed: a\n", true},
		{"json", []string{"--json"},
			`{"extension":"mcp","revision":5,"dryRun":false,"unchanged":false,"added":["a"],"changed":[],"removed":[],"disconnected":[]}`,
			`{"extension":"mcp","revision":5,"dryRun":false,"unchanged":false,"added":["a"],"changed":[],"removed":[],"disconnected":[]}` + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
				contracts.MethodConfigure: canned(tt.result),
			})
			ta := newTestApp(t, settings, false)
			args := append([]string{"--socket", d.socket, "mcp", "configure", "-"}, tt.args...)
			if got := ta.runArgs(t, args...); got != exitOK {
				t.Fatalf("exit code = %d, want 0", got)
			}
			if got := ta.out.String(); got != tt.wantOut {
				t.Errorf("stdout = %q, want %q", got, tt.wantOut)
			}
			reqs := d.requests()
			if len(reqs) != 1 {
				t.Fatalf("daemon got %d requests, want 1", len(reqs))
			}
			var p contracts.ConfigureParams
			if err := json.Unmarshal(reqs[0].Params, &p); err != nil {
				t.Fatal(err)
			}
			if p.Extension != "mcp" || p.DryRun != tt.wantDryRun || !jsonEqual(t, p.Settings, []byte(settings)) {
				t.Errorf("configure params = %s", reqs[0].Params)
			}
		})
	}
}

func TestMCPConfig(t *testing.T) {
	const result = `{"extension":"mcp","revision":2,"settings":{"servers":[{"id":"a","transport":"stdio","command":"/bin/cat"}]},"updatedAt":"2026-01-01T00:00:00Z"}`
	d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodSettings: canned(result),
	})

	ta := newTestApp(t, "", true)
	if got := ta.runArgs(t, "--socket", d.socket, "mcp", "config"); got != exitOK {
		t.Fatalf("exit code = %d, want 0", got)
	}
	want := `{
  "servers": [
    {
      "id": "a",
      "transport": "stdio",
      "command": "/bin/cat"
    }
  ]
}
`
	if got := ta.out.String(); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}

	ta = newTestApp(t, "", true)
	if got := ta.runArgs(t, "--json", "--socket", d.socket, "mcp", "config"); got != exitOK {
		t.Fatalf("exit code = %d, want 0", got)
	}
	if got := ta.out.String(); got != result+"\n" {
		t.Errorf("--json stdout = %q, want the whole result", got)
	}
	reqs := d.requests()
	if len(reqs) != 2 || !jsonEqual(t, reqs[0].Params, []byte(`{"extension":"mcp"}`)) {
		t.Errorf("settings requests = %+v", reqs)
	}
}

func TestMCPStatus(t *testing.T) {
	const full = `{"revision":2,"servers":[` +
		`{"id":"files","enabled":true,"transport":"stdio","state":"connected","protocolVersion":"2025-06-18","pid":4242,"toolCount":14,"resourceCount":0,"resourceTemplateCount":0,"promptCount":0,"catalogComplete":true},` +
		`{"id":"web","enabled":false,"transport":"http","state":"failed","lastError":"dial tcp: \u001b[2Jconnection refused\nsecond line and a very long tail that goes on and on and on past the column width","toolCount":0,"resourceCount":0,"resourceTemplateCount":0,"promptCount":0,"catalogComplete":false}` +
		`],"vault":{"backend":"none","note":"no secrets stored"}}`
	const empty = `{"revision":0,"servers":[],"vault":{"backend":"none"}}`
	tests := []struct {
		name       string
		result     string
		args       []string
		wantServer string
		want       []string
		dontWant   []string
	}{
		{"table", full, nil, "", []string{
			"SERVER  STATE", "LAST ERROR",
			"files   connected  stdio      yes      2025-06-18  4242  14",
			"web     failed     http       no       -           -     -      dial tcp: \\u{001B}[2Jconnection refused second line",
			"…\n",
			"vault: none (no secrets stored)",
		}, []string{"\x1b", "past the column width"}},
		{"one server", full, []string{"web"}, "web", []string{"web"}, nil},
		{"empty", empty, nil, "", []string{"no servers configured (see 'pikoctl mcp configure')\n"}, []string{"SERVER"}},
		{"json", full, []string{"--json"}, "", []string{full + "\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
				contracts.MethodMCPStatus: canned(tt.result),
			})
			ta := newTestApp(t, "", true)
			args := append([]string{"--socket", d.socket, "mcp", "status"}, tt.args...)
			if got := ta.runArgs(t, args...); got != exitOK {
				t.Fatalf("exit code = %d, want 0", got)
			}
			for _, s := range tt.want {
				if !strings.Contains(ta.out.String(), s) {
					t.Errorf("stdout does not contain %q", s)
				}
			}
			for _, s := range tt.dontWant {
				if strings.Contains(ta.out.String(), s) {
					t.Errorf("stdout contains %q", s)
				}
			}
			var p contracts.StatusParams
			if err := json.Unmarshal(d.requests()[0].Params, &p); err != nil {
				t.Fatal(err)
			}
			if p.Server != tt.wantServer {
				t.Errorf("status params server = %q, want %q", p.Server, tt.wantServer)
			}
		})
	}
}

// TestExitCodeTable: the exit-code reference (docs/reference, generated:
// TestCLIReferenceUpToDate) is the table 'pikoctl --help' prints.
func TestExitCodeTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	help := exitCodeHelp()
	for _, e := range exitCodes {
		row := fmt.Sprintf("| %d | %s |", e.code, e.what)
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/reference/exit-codes.md lacks the exit-code row %q", row)
		}
		if !strings.Contains(help, fmt.Sprintf("  %d  %s", e.code, e.what)) {
			t.Errorf("--help lacks exit code %d", e.code)
		}
	}
}
