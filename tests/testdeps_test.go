package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestDepsNamesPackages runs scripts/test-deps (what `make test`
// runs first) as a non-root user on a machine that has nothing but Go: it
// must stop at once, change nothing, and name the exact Debian packages,
// honouring the PIKO_SKIP_* flags.
func TestTestDepsNamesPackages(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// A bare PATH: an "id" that says uid 1000, and nothing else.
	if err := os.WriteFile(filepath.Join(bin, "id"), []byte("#!/bin/sh\necho 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) (string, int) {
		cmd := exec.Command("/bin/sh", filepath.Join(root, "scripts", "test-deps"))
		cmd.Env = append([]string{"PATH=" + bin, "GO=" + goTool}, env...)
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("running test-deps: %v", err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run()
	if code == 0 {
		t.Fatalf("test-deps on a bare machine exited 0:\n%s", out)
	}
	for _, pkg := range []string{"git", "gcc", "socat", "systemd", "gnome-keyring", "dbus", "libglib2.0-bin", "nodejs", "npm", "chromium"} {
		if !strings.Contains(out, " "+pkg) {
			t.Errorf("test-deps does not name %s:\n%s", pkg, out)
		}
	}
	if strings.Contains(out, "installing") {
		t.Errorf("test-deps as a non-root user tried to install:\n%s", out)
	}
	out, code = run("PIKO_SKIP_INTEROP=1", "PIKO_SKIP_CONFORMANCE=1", "PIKO_SKIP_SECRET_SERVICE=1")
	if code == 0 || strings.Contains(out, "nodejs") || strings.Contains(out, " chromium") || strings.Contains(out, "gnome-keyring ") || !strings.Contains(out, "socat") {
		t.Errorf("test-deps with every PIKO_SKIP_* flag (exit %d) should still want socat but not node or the keyring:\n%s", code, out)
	}
	// Only the interop tests skipped: the conformance suite still needs npm.
	if out, _ = run("PIKO_SKIP_INTEROP=1"); !strings.Contains(out, "nodejs") {
		t.Errorf("test-deps with PIKO_SKIP_INTEROP=1 alone does not want node for the conformance suite:\n%s", out)
	}
}
