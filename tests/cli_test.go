package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// writeFile writes content to a new file in a temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ctlOK runs pikoctl and fails the test unless it exits 0.
func ctlOK(t *testing.T, d *daemon, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, stdin, args...)
	if code != 0 {
		t.Fatalf("pikoctl %v: exit %d, want 0; stdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
	}
	return stdout
}

func TestCLIMCP(t *testing.T) {
	d := startDaemon(t)

	if out := ctlOK(t, d, "", "mcp", "status"); !strings.Contains(out, "no servers configured") {
		t.Errorf("mcp status with no servers printed %q, want %q", out, "no servers configured")
	}

	file := writeFile(t, "mcp.json", validSettings)
	if out := ctlOK(t, d, "", "mcp", "configure", file); !strings.Contains(out, "saved mcp settings: revision 1") {
		t.Errorf("mcp configure printed %q, want %q", out, "saved mcp settings: revision 1")
	}

	cfg := ctlOK(t, d, "", "mcp", "config")
	if !sameJSON(t, []byte(cfg), []byte(validSettings)) {
		t.Errorf("mcp config printed %s, want %s", cfg, validSettings)
	}
	// What config prints is ready to feed back: an identical save.
	ctlOK(t, d, cfg, "mcp", "configure", "-")
	if res := readSettings(t, d); res.Revision != 1 {
		t.Errorf("re-saving mcp config output moved the revision to %d, want 1", res.Revision)
	}

	var full contracts.SettingsResult
	if err := json.Unmarshal([]byte(ctlOK(t, d, "", "--json", "mcp", "config")), &full); err != nil {
		t.Fatalf("--json mcp config is not a SettingsResult: %v", err)
	}
	if full.Revision != 1 || full.Extension != "mcp" || !sameJSON(t, full.Settings, []byte(validSettings)) {
		t.Errorf("--json mcp config = %+v", full)
	}

	var st contracts.StatusResult
	if err := json.Unmarshal([]byte(ctlOK(t, d, "", "--json", "mcp", "status")), &st); err != nil {
		t.Fatalf("--json mcp status is not a StatusResult: %v", err)
	}
	var ids []string
	for _, s := range st.Servers {
		ids = append(ids, s.ID)
	}
	if slices.Sort(ids); !slices.Equal(ids, []string{"cat", "web"}) || st.Revision != 1 {
		t.Errorf("--json mcp status: revision %d servers %v, want 1 [cat web]", st.Revision, ids)
	}

	table := ctlOK(t, d, "", "mcp", "status")
	for _, want := range []string{"SERVER", "STATE", "TRANSPORT", "ENABLED", "TOOLS", "cat", "web", "idle", "disabled", "stdio", "http"} {
		if !strings.Contains(table, want) {
			t.Errorf("mcp status table lacks %q:\n%s", want, table)
		}
	}
	if out := ctlOK(t, d, "", "mcp", "status", "web"); !strings.Contains(out, "web") || strings.Contains(out, "cat") {
		t.Errorf("mcp status web printed:\n%s", out)
	}
	if _, stderr, code := runCtl(t, d, "", "mcp", "status", "nope"); code != 1 || !strings.Contains(stderr, "nope") {
		t.Errorf("mcp status nope: exit %d stderr %q, want 1 naming the server", code, stderr)
	}

	other := `{"servers":[{"id":"cat","transport":"stdio","command":"/bin/cat"}]}`
	var dry contracts.ConfigureResult
	if err := json.Unmarshal([]byte(ctlOK(t, d, other, "--json", "mcp", "configure", "--dry-run", "-")), &dry); err != nil {
		t.Fatalf("--json mcp configure --dry-run is not a ConfigureResult: %v", err)
	}
	if !dry.DryRun || !slices.Equal(dry.Removed, []string{"web"}) {
		t.Errorf("dry run = %+v, want dryRun removing web", dry)
	}
	if res := readSettings(t, d); res.Revision != 1 {
		t.Errorf("dry run saved: revision %d", res.Revision)
	}

	out := ctlOK(t, d, other, "mcp", "configure", "-")
	if !strings.Contains(out, "saved mcp settings: revision 2") || !strings.Contains(out, "web") {
		t.Errorf("mcp configure - printed %q, want revision 2 and the removed server", out)
	}
	if res := readSettings(t, d); res.Revision != 2 || !sameJSON(t, res.Settings, []byte(other)) {
		t.Errorf("after configure from stdin: rev %d %s", res.Revision, res.Settings)
	}

	t.Run("invalid file", func(t *testing.T) {
		bad := writeFile(t, "bad.json", `{"servers":[
			{"id":"one","transport":"stdio","command":"/bin/cat","timeoutMs":5},
			{"id":"two","transport":"http","url":"https://user:pw@example.com/mcp"}
		]}`)
		stdout, stderr, code := runCtl(t, d, "", "mcp", "configure", bad)
		if code != 1 {
			t.Errorf("mcp configure of invalid settings: exit %d, want 1", code)
		}
		if !strings.Contains(stderr, "invalid settings") {
			t.Errorf("stderr lacks %q:\n%s", "invalid settings", stderr)
		}
		for _, want := range [][2]string{{`server "one"`, "timeoutMs"}, {`server "two"`, "url"}} {
			found := false
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Contains(line, want[0]) && strings.Contains(line, want[1]) {
					found = true
				}
			}
			if !found {
				t.Errorf("stderr has no line naming %s and %s:\n%s", want[0], want[1], stderr)
			}
		}
		if strings.Contains(stdout+stderr, "pw@") {
			t.Errorf("pikoctl echoed the credential in the rejected url:\n%s%s", stdout, stderr)
		}
		if res := readSettings(t, d); res.Revision != 2 {
			t.Errorf("rejected configure moved the revision to %d", res.Revision)
		}
	})

	t.Run("unreadable input", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			stdin string
			args  []string
		}{
			{"missing file", "", []string{"mcp", "configure", filepath.Join(t.TempDir(), "nope.json")}},
			{"not json", "{servers", []string{"mcp", "configure", "-"}},
		} {
			if _, stderr, code := runCtl(t, d, c.stdin, c.args...); code != 1 || stderr == "" {
				t.Errorf("%s: exit %d stderr %q, want exit 1 with a message", c.name, code, stderr)
			}
		}
	})
}

func TestCLIVersion(t *testing.T) {
	d := startDaemon(t)
	var hello contracts.HelloResult
	d.callInto(t, contracts.MethodHello, map[string]any{}, &hello)

	out := ctlOK(t, d, "", "version")
	if !strings.HasPrefix(out, "pikoctl ") || !strings.Contains(out, "(api 1)") {
		t.Errorf("version printed %q, want a first line %q", out, "pikoctl VERSION (api 1)")
	}
	if !strings.Contains(out, hello.DaemonVersion) || strings.Count(strings.TrimSpace(out), "\n") < 1 {
		t.Errorf("version printed %q, want a daemon line with %q", out, hello.DaemonVersion)
	}

	var v struct {
		Client struct {
			Version    string `json:"version"`
			APIVersion string `json:"apiVersion"`
		} `json:"client"`
		Daemon contracts.HelloResult `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(ctlOK(t, d, "", "--json", "version")), &v); err != nil {
		t.Fatalf("--json version: %v", err)
	}
	if v.Client.Version == "" || v.Client.APIVersion != "1" || v.Daemon.APIVersion != "1" || v.Daemon.PID != d.current().pid() {
		t.Errorf("--json version = %+v, want client and daemon (pid %d) with api 1", v, d.current().pid())
	}

	t.Run("daemon down", func(t *testing.T) {
		sock := filepath.Join(d.sockDir, "absent.sock")
		stdout, stderr, code := runCtlSocket(t, sock, "", "version")
		if code != 3 {
			t.Errorf("version with no daemon: exit %d, want 3", code)
		}
		if !strings.HasPrefix(stdout, "pikoctl ") {
			t.Errorf("version with no daemon printed %q, want the client line", stdout)
		}
		for _, want := range []string{"pikod", sock, "pikod --instance"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("unreachable message lacks %q:\n%s", want, stderr)
			}
		}
		if _, _, code := runCtlSocket(t, sock, "", "mcp", "status"); code != 3 {
			t.Errorf("mcp status with no daemon: exit %d, want 3", code)
		}
	})
}

func TestCLIRPC(t *testing.T) {
	d := startDaemon(t)

	var hello contracts.HelloResult
	out := ctlOK(t, d, "", "rpc", "system.hello")
	if err := json.Unmarshal([]byte(out), &hello); err != nil || hello.APIVersion != "1" {
		t.Errorf("rpc system.hello printed %q (%v), want a result with apiVersion 1", out, err)
	}
	if hello.PID != d.current().pid() || hello.Socket != d.socket {
		t.Errorf("rpc system.hello = %+v, want pid %d socket %s", hello, d.current().pid(), d.socket)
	}

	d.call(t, contracts.MethodConfigure, configureParams(validSettings, false))
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"stdin dash", `{"extension":"mcp"}`, []string{"rpc", "extensions.settings", "-"}},
		{"stdin implied", `{"extension":"mcp"}`, []string{"rpc", "extensions.settings"}},
		{"argument", "", []string{"rpc", "extensions.settings", `{"extension":"mcp"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var res contracts.SettingsResult
			out := ctlOK(t, d, c.stdin, c.args...)
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("rpc printed %q: %v", out, err)
			}
			if res.Revision != 1 || !sameJSON(t, res.Settings, []byte(validSettings)) {
				t.Errorf("rpc extensions.settings = %+v", res)
			}
		})
	}

	t.Run("daemon error", func(t *testing.T) {
		// Every method is served now: the daemon's error here is a server
		// nobody configured.
		stdout, stderr, code := runCtl(t, d, "", "rpc", contracts.MethodMCPConnect, `{"server":"nope"}`)
		if code != 1 || !strings.HasPrefix(stderr, "pikoctl: ") || !strings.Contains(stderr, `no server "nope"`) {
			t.Errorf("rpc naming an unknown server: exit %d stdout %q stderr %q, want exit 1 and %q", code, stdout, stderr, `pikoctl: ... no server "nope" ...`)
		}

		stdout, _, code = runCtl(t, d, "", "--json", "rpc", contracts.MethodMCPConnect, `{"server":"nope"}`)
		var e contracts.Error
		if err := json.Unmarshal([]byte(stdout), &e); err != nil || code != 1 || e.Code != 1002 || e.Reason() != "unknown_server" {
			t.Errorf("--json rpc error: exit %d stdout %q (%v), want exit 1 and the error object with code 1002, reason unknown_server", code, stdout, err)
		}

		_, stderr, code = runCtl(t, d, `{"extension":"mcp","settings":{"servers":[{"id":"x","transport":"stdio","command":"/bin/cat","maxBytes":3}]}}`, "rpc", contracts.MethodConfigure, "-")
		if code != 1 || !strings.Contains(stderr, "maxBytes") || !strings.Contains(stderr, `"x"`) {
			t.Errorf("rpc of invalid settings: exit %d stderr %q, want exit 1 listing the problem", code, stderr)
		}
	})

	t.Run("bad params", func(t *testing.T) {
		if _, stderr, code := runCtl(t, d, "", "rpc", "extensions.settings", "{not json"); code != 1 || stderr == "" {
			t.Errorf("rpc with malformed params: exit %d stderr %q, want 1", code, stderr)
		}
	})
}

func TestCLIUsage(t *testing.T) {
	d := startDaemon(t)
	for _, args := range [][]string{
		{"nosuchcmd"},
		{"--no-such-flag", "version"},
		{"mcp", "configure"},
		{"mcp", "configure", "a.json", "b.json"},
		{"rpc"},
	} {
		if stdout, stderr, code := runCtl(t, d, "", args...); code != 2 {
			t.Errorf("pikoctl %v: exit %d, want 2; stdout %q stderr %q", args, code, stdout, stderr)
		}
	}
}
