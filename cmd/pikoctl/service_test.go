package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSystemdUnit(t *testing.T) {
	tests := []struct {
		name     string
		opts     serviceOptions
		wantExec string
	}{
		{"default", serviceOptions{Instance: "default", Pikod: "/usr/local/bin/pikod"},
			"ExecStart=/usr/local/bin/pikod --instance default\n"},
		{"named", serviceOptions{Instance: "work-2", Pikod: "/opt/pikod/pikod"},
			"ExecStart=/opt/pikod/pikod --instance work-2\n"},
		{"path with spaces and specials", serviceOptions{Instance: "dev", Pikod: `/home/a b/50% "x"/$HOME\pikod`},
			`ExecStart="/home/a b/50%% \"x\"/$$HOME\\pikod" --instance dev` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := systemdUnit(tt.opts)
			for _, want := range []string{
				"[Unit]\n",
				"Description=pikod MCP server supervisor (instance " + tt.opts.Instance + ")\n",
				"Documentation=https://",
				"[Service]\n",
				"Type=simple\n",
				tt.wantExec,
				"Restart=on-failure\n",
				"RestartSec=2\n",
				"KillMode=control-group\n",
				"KillSignal=SIGTERM\n",
				"TimeoutStopSec=20\n",
				"UMask=0077\n",
				"NoNewPrivileges=yes\n",
				"systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS",
				"[Install]\nWantedBy=default.target\n",
			} {
				if !strings.Contains(u, want) {
					t.Errorf("unit lacks %q:\n%s", want, u)
				}
			}
			for _, line := range strings.Split(u, "\n") {
				if strings.HasPrefix(line, "Environment") && strings.Contains(line, "DBUS_SESSION_BUS_ADDRESS") {
					t.Errorf("unit hard-codes the bus address: %q", line)
				}
			}
		})
	}
}

func TestSystemdUnitName(t *testing.T) {
	for instance, want := range map[string]string{"default": "pikod.service", "work": "pikod-work.service"} {
		if got := systemdUnitName(instance); got != want {
			t.Errorf("systemdUnitName(%q) = %q, want %q", instance, got, want)
		}
	}
}

func TestSystemdQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/usr/bin/pikod", "/usr/bin/pikod"},
		{"/a b/pikod", `"/a b/pikod"`},
		{"/a\tb", `"/a\x09b"`},
		{"/a\nb", `"/a\x0ab"`},
		{`/a"b`, `"/a\"b"`},
		{`/a\b`, `"/a\\b"`},
		{"/a'b", `"/a'b"`},
		{"/100%", "/100%%"},
		{"/$HOME/x", "/$$HOME/x"},
		{"${X}", "$${X}"},
		{";", `";"`},
		{"", `""`},
	}
	for _, tt := range tests {
		if got := systemdQuote(tt.in); got != tt.want {
			t.Errorf("systemdQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestSystemdAnalyzeVerify lets systemd itself parse a generated unit whose
// ExecStart path has spaces.
func TestSystemdAnalyzeVerify(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "my bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pikod := filepath.Join(binDir, "pikod")
	if err := os.WriteFile(pikod, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit := systemdUnit(serviceOptions{Instance: "default", Pikod: pikod})
	if !strings.Contains(unit, `ExecStart="`+pikod+`" --instance default`) {
		t.Errorf("ExecStart does not quote %q:\n%s", pikod, unit)
	}
	path := filepath.Join(dir, systemdUnitName("default"))
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: checked the unit's content only")
		return
	}
	cmd := exec.Command(analyze, "verify", path)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:", "SYSTEMD_LOG_LEVEL=notice")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", path, err, out)
	}
	if s := string(out); strings.Contains(s, "pikod.service") {
		t.Errorf("systemd-analyze verify complained about the unit:\n%s", s)
	}
}

func TestLaunchdPlist(t *testing.T) {
	o := serviceOptions{Instance: "work", Pikod: `/Users/a b/x&y<z>"q'/pikod`, StateDir: "/Users/a b/.local/state/pikod/work"}
	p := launchdPlist(o)

	var doc struct {
		XMLName xml.Name `xml:"plist"`
		Version string   `xml:"version,attr"`
		Dict    struct {
			Keys     []string   `xml:"key"`
			Strings  []string   `xml:"string"`
			Integers []int      `xml:"integer"`
			True     []struct{} `xml:"true"`
			Arrays   []struct {
				Strings []string `xml:"string"`
			} `xml:"array"`
			Dicts []struct {
				Keys  []string   `xml:"key"`
				False []struct{} `xml:"false"`
			} `xml:"dict"`
		} `xml:"dict"`
	}
	dec := xml.NewDecoder(strings.NewReader(p))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("plist is not well-formed XML: %v\n%s", err, p)
	}
	d := doc.Dict
	if doc.Version != "1.0" {
		t.Errorf("plist version = %q", doc.Version)
	}
	wantKeys := []string{"Label", "ProgramArguments", "RunAtLoad", "KeepAlive", "ProcessType", "Umask", "ExitTimeOut", "StandardErrorPath"}
	if strings.Join(d.Keys, ",") != strings.Join(wantKeys, ",") {
		t.Errorf("keys = %v, want %v", d.Keys, wantKeys)
	}
	wantStrings := []string{"dev.pikod.work", "Background", "/Users/a b/.local/state/pikod/work/launchd-stderr.log"}
	if strings.Join(d.Strings, "|") != strings.Join(wantStrings, "|") {
		t.Errorf("strings = %q, want %q", d.Strings, wantStrings)
	}
	if len(d.Arrays) != 1 || strings.Join(d.Arrays[0].Strings, "|") != o.Pikod+"|--instance|work" {
		t.Errorf("ProgramArguments = %q, want [%q --instance work]", d.Arrays, o.Pikod)
	}
	if len(d.True) != 1 {
		t.Errorf("RunAtLoad is not <true/>")
	}
	if len(d.Dicts) != 1 || len(d.Dicts[0].Keys) != 1 || d.Dicts[0].Keys[0] != "SuccessfulExit" || len(d.Dicts[0].False) != 1 {
		t.Errorf("KeepAlive = %+v, want {SuccessfulExit false}", d.Dicts)
	}
	if len(d.Integers) != 2 || d.Integers[0] != 0o077 || d.Integers[1] != 20 {
		t.Errorf("integers = %v, want Umask 63 and ExitTimeOut 20", d.Integers)
	}
}

func TestServicePrint(t *testing.T) {
	pikod := "/opt/pikod/pikod"
	tests := []struct {
		os   string
		want string
	}{
		{"linux", "ExecStart=/opt/pikod/pikod --instance work\n"},
		{"darwin", "<string>dev.pikod.work</string>"},
	}
	for _, tt := range tests {
		t.Run(tt.os, func(t *testing.T) {
			ta := newTestApp(t, "", true)
			if got := ta.runArgs(t, "--instance", "work", "service", "print", "--os", tt.os, "--pikod", pikod); got != exitOK {
				t.Fatalf("exit code = %d, want 0", got)
			}
			if !strings.Contains(ta.out.String(), tt.want) {
				t.Errorf("stdout lacks %q", tt.want)
			}
		})
	}
	ta := newTestApp(t, "", true)
	if got := ta.runArgs(t, "service", "print", "--os", "plan9", "--pikod", pikod); got != exitFailure {
		t.Errorf("unsupported os: exit code = %d, want 1", got)
	}
}

// TestFindPikod checks the default binary: next to pikoctl first, then PATH,
// else a clear error.
func TestFindPikod(t *testing.T) {
	dir := t.TempDir()
	next := filepath.Join(dir, "pikod")
	if err := os.WriteFile(next, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	ta := newTestApp(t, "", true)
	ta.executable = func() (string, error) { return filepath.Join(dir, "pikoctl"), nil }
	ta.lookPath = func(string) (string, error) { return "/usr/bin/pikod", nil }
	if got, err := ta.findPikod(""); err != nil || got != next {
		t.Errorf("findPikod next to pikoctl = %q, %v; want %q", got, err, next)
	}

	ta.executable = func() (string, error) { return filepath.Join(t.TempDir(), "pikoctl"), nil }
	if got, err := ta.findPikod(""); err != nil || got != "/usr/bin/pikod" {
		t.Errorf("findPikod from PATH = %q, %v; want /usr/bin/pikod", got, err)
	}

	ta = newTestApp(t, "", true)
	if code := ta.runArgs(t, "service", "print"); code != exitFailure {
		t.Errorf("no pikod anywhere: exit code = %d, want 1", code)
	}
	if !strings.Contains(ta.errOut.String(), "--pikod") {
		t.Errorf("error does not mention --pikod")
	}
}

func TestServiceInstall(t *testing.T) {
	dir := t.TempDir()
	pikod := filepath.Join(dir, "bin dir", "pikod")
	if err := os.MkdirAll(filepath.Dir(pikod), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pikod, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	ta := newTestApp(t, "", true)
	env := ta.env
	install := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		a := newTestApp(t, "", true)
		a.env = env
		code = a.runArgs(t, append([]string{"service", "install", "--pikod", pikod}, args...)...)
		return code, a.out.String(), a.errOut.String()
	}
	unitPath := filepath.Join(env["XDG_CONFIG_HOME"], "systemd", "user", "pikod.service")

	code, out, _ := install()
	if code != exitOK {
		t.Fatalf("first install: exit code = %d", code)
	}
	for _, want := range []string{"wrote " + unitPath, "systemctl --user daemon-reload && systemctl --user enable --now pikod.service", "loginctl enable-linger"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q", want)
		}
	}
	fi, err := os.Stat(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode = %v, want 0644", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(unitPath)); err != nil || di.Mode().Perm() != 0o755 {
		t.Errorf("unit directory mode = %v, %v; want 0755", di.Mode().Perm(), err)
	}
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := systemdUnit(serviceOptions{Instance: "default", Pikod: pikod}); string(b) != want {
		t.Errorf("installed unit = %q, want %q", b, want)
	}

	if code, out, _ := install(); code != exitOK || !strings.Contains(out, "already up to date") {
		t.Errorf("same install again: exit code %d, output %q; want 0 and 'already up to date'", code, out)
	}

	edited := append(b, []byte("# my edit\n")...)
	if err := os.WriteFile(unitPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := install()
	if code != exitFailure || !strings.Contains(stderr, "refusing to overwrite") || !strings.Contains(stderr, "--force") {
		t.Errorf("install over an edited unit: exit code %d, stderr %q; want 1 and a refusal naming --force", code, stderr)
	}
	if got, _ := os.ReadFile(unitPath); string(got) != string(edited) {
		t.Errorf("refused install changed the file")
	}

	if code, _, _ := install("--force"); code != exitOK {
		t.Errorf("install --force: exit code %d, want 0", code)
	}
	if got, _ := os.ReadFile(unitPath); string(got) != string(b) {
		t.Errorf("install --force did not restore the generated unit")
	}
	entries, _ := os.ReadDir(filepath.Dir(unitPath))
	if len(entries) != 1 {
		t.Errorf("unit directory holds %d entries, want only the unit (no temp files)", len(entries))
	}

	// A missing binary is refused; a named instance gets its own unit.
	a := newTestApp(t, "", true)
	a.env = env
	if code := a.runArgs(t, "--instance", "work", "service", "install", "--pikod", filepath.Join(dir, "missing")); code != exitFailure {
		t.Errorf("install with a missing binary: exit code %d, want 1", code)
	}
	code, out, _ = install("--instance", "work")
	workPath := filepath.Join(filepath.Dir(unitPath), "pikod-work.service")
	if code != exitOK || !strings.Contains(out, "enable --now pikod-work.service") {
		t.Errorf("install --instance work: exit code %d, output %q", code, out)
	}
	if got, err := os.ReadFile(workPath); err != nil || !strings.Contains(string(got), "--instance work\n") {
		t.Errorf("pikod-work.service = %q, %v; want ExecStart with --instance work", got, err)
	}
}

func TestServiceInstallDarwin(t *testing.T) {
	dir := t.TempDir()
	pikod := filepath.Join(dir, "pikod")
	if err := os.WriteFile(pikod, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ta := newTestApp(t, "", true)
	ta.goos = "darwin"
	ta.uid = 501
	if code := ta.runArgs(t, "--instance", "work", "service", "install", "--pikod", pikod); code != exitOK {
		t.Fatalf("exit code = %d, want 0", code)
	}
	path := filepath.Join(ta.env["HOME"], "Library", "LaunchAgents", "dev.pikod.work.plist")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("agent not written: %v", err)
	}
	if want := "launchctl bootstrap gui/501 " + path; !strings.Contains(ta.out.String(), want) {
		t.Errorf("output lacks %q", want)
	}
	if fi, err := os.Stat(filepath.Join(ta.env["XDG_STATE_HOME"], "pikod", "work")); err != nil || !fi.IsDir() {
		t.Errorf("state directory for the agent's log not created: %v", err)
	}
}
