package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestEverydayCLI covers reconnect, unique-prefix action ids, shell
// completion of server, tool and action ids, and doctor.
func TestEverydayCLI(t *testing.T) {
	t.Parallel()
	d, _ := approvalDaemon(t)

	t.Run("reconnect", func(t *testing.T) {
		before := serverStatus(t, d, "fx")
		out := ctlOK(t, d, "", "mcp", "reconnect", "fx")
		after := serverStatus(t, d, "fx")
		if after.State != contracts.StateConnected || after.PID == before.PID || after.Generation <= before.Generation {
			t.Errorf("reconnect: before pid %d gen %d, after %s pid %d gen %d; want a new connected process", before.PID, before.Generation, after.State, after.PID, after.Generation)
		}
		if !strings.Contains(out, "state:      connected") {
			t.Errorf("reconnect printed:\n%s", out)
		}
	})

	t.Run("action id prefixes", func(t *testing.T) {
		a := prepareCount(t, d, "fx", "prefix-"+randomHex(t, 4))
		b := prepareCount(t, d, "fx", "prefix-"+randomHex(t, 4))
		// The shortest prefix of a that b does not share.
		n := len("act_") + 1
		for strings.HasPrefix(b.ActionID, a.ActionID[:n]) {
			n++
		}
		out := ctlOK(t, d, "", "mcp", "review", a.ActionID[:n])
		if !strings.Contains(out, a.ActionID) {
			t.Errorf("review %s did not show action %s:\n%s", a.ActionID[:n], a.ActionID, out)
		}
		// Without "act_" too.
		if out := ctlOK(t, d, "", "mcp", "review", a.ActionID[4:n]); !strings.Contains(out, a.ActionID) {
			t.Errorf("review %s did not show action %s:\n%s", a.ActionID[4:n], a.ActionID, out)
		}
		// "act_" alone matches both (and every other action): ambiguous.
		if _, stderr, code := runCtl(t, d, "", "mcp", "review", "act_"); code != 1 || !strings.Contains(stderr, "is the start of") {
			t.Errorf("an ambiguous prefix: exit %d, stderr %s", code, stderr)
		}
		if _, stderr, code := runCtl(t, d, "", "mcp", "review", "act_zzzzzz"); code != 1 || !strings.Contains(stderr, "no action id starts with") {
			t.Errorf("an unknown prefix: exit %d, stderr %s", code, stderr)
		}
		// reject takes a prefix too, and acts on exactly that action.
		ctlOK(t, d, "", "mcp", "reject", a.ActionID[:n])
		wantState(t, d, a.ActionID, contracts.ActionRejected)
		wantState(t, d, b.ActionID, contracts.ActionPrepared)
	})

	t.Run("completion", func(t *testing.T) {
		for _, shell := range []string{"bash", "zsh", "fish"} {
			if out := ctlOK(t, d, "", "completion", shell); !strings.Contains(out, "pikoctl") {
				t.Errorf("completion %s printed no script", shell)
			}
		}
		if out := ctlOK(t, d, "", "--help"); !strings.Contains(out, "completion") {
			t.Errorf("--help does not list completion:\n%s", out)
		}
		// What the scripts ask pikoctl for.
		if out := ctlOK(t, d, "", "__complete", "mcp", "connect", ""); !strings.Contains(out, "fx\n") {
			t.Errorf("completing a server id:\n%s", out)
		}
		out := ctlOK(t, d, "", "__complete", "mcp", "call", "fx", "")
		for _, tool := range []string{"count", "echo"} {
			if !strings.Contains(out, tool+"\n") {
				t.Errorf("completing a tool of fx lacks %s:\n%s", tool, out)
			}
		}
		p := prepareCount(t, d, "fx", "complete-"+randomHex(t, 4))
		if out := ctlOK(t, d, "", "__complete", "mcp", "approve", ""); !strings.Contains(out, p.ActionID+"\t") {
			t.Errorf("completing a prepared action id lacks %s:\n%s", p.ActionID, out)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		bin := t.TempDir()
		for _, tool := range []string{"node", "npx"} {
			if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, stderr, code := runCtlEnv(t, d, []string{"PATH=" + bin, "XDG_CONFIG_HOME=" + t.TempDir()}, "", "doctor")
		if code != 0 {
			t.Errorf("doctor against a running daemon: exit %d\n%s%s", code, out, stderr)
		}
		for _, want := range []string{"ok    daemon", "ok    socket", "vault", "bus", "ok    node       " + filepath.Join(bin, "node"), "warn  uvx", "clock"} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor output lacks %q:\n%s", want, out)
			}
		}
		// Against no daemon: exit 1, and it says how to start one.
		out, _, code = runCtlEnv(t, d, nil, "", "--socket", filepath.Join(t.TempDir(), "none.sock"), "doctor")
		if code != 1 || !strings.Contains(out, "fail  daemon") || !strings.Contains(out, "start pikod") {
			t.Errorf("doctor without a daemon: exit %d\n%s", code, out)
		}
	})
}

// TestServiceInstallUninstall installs the unit with the installing
// shell's PATH, reports it, and removes only a file it wrote.
func TestServiceInstallUninstall(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cfg := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + cfg, "PATH=/opt/node/bin:relative:" + binDir + ":/usr/bin:/bin"}
	unit := filepath.Join(cfg, "systemd", "user", "pikod.service")

	out, stderr, code := runCtlEnv(t, d, env, "", "service", "status")
	if code != 0 || !strings.Contains(out, "not installed") {
		t.Errorf("service status before install: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code = runCtlEnv(t, d, env, "", "service", "install"); code != 0 {
		t.Fatalf("service install: exit %d\n%s%s", code, out, stderr)
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if want := `Environment="PATH=/opt/node/bin:` + binDir + `:/usr/bin:/bin"`; !strings.Contains(string(b), want) && !strings.Contains(string(b), "Environment=PATH=/opt/node/bin:"+binDir+":/usr/bin:/bin") {
		t.Errorf("the unit does not set the installing shell's absolute PATH (%s):\n%s", want, b)
	}
	if !strings.Contains(string(b), "ExecStart="+filepath.Join(binDir, "pikod")) {
		t.Errorf("the unit does not run the pikod next to pikoctl:\n%s", b)
	}
	if out, _, _ = runCtlEnv(t, d, env, "", "service", "status"); !strings.Contains(out, "up to date") || !strings.Contains(out, "daemon:  pikod") {
		t.Errorf("service status after install:\n%s", out)
	}
	if out, stderr, code = runCtlEnv(t, d, env, "", "service", "uninstall"); code != 0 || !strings.Contains(out, "removed "+unit) {
		t.Errorf("service uninstall: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("the unit is still there after uninstall: %v", err)
	}
	// A file pikoctl did not write stays.
	if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code = runCtlEnv(t, d, env, "", "service", "uninstall"); code != 1 || !strings.Contains(stderr, "did not write it") {
		t.Errorf("uninstall of a foreign unit: exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Errorf("uninstall removed a unit pikoctl did not write: %v", err)
	}
}
