package tests

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// readmeSection returns the text of the section of a document (README.md
// or docs/..., see docText) titled heading, up to the next heading of the
// same or a higher level.
func readmeSection(t *testing.T, readme, heading string) string {
	t.Helper()
	level := strings.Count(strings.Fields(heading)[0], "#")
	_, rest, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the document has no section %q", heading)
	}
	for line := range strings.Lines(rest) {
		if f := strings.Fields(line); len(f) > 0 && strings.Trim(f[0], "#") == "" && len(f[0]) <= level && strings.HasPrefix(line, "#") {
			rest, _, _ = strings.Cut(rest, line)
			break
		}
	}
	return rest
}

// TestREADMESocketExamples runs the shell block of docs/socket-api.md exactly
// as printed, line by line, against a daemon on the default socket path
// ($XDG_RUNTIME_DIR/pikod/default.sock), with pikoctl on PATH.
func TestREADMESocketExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("socat"); err != nil {
		t.Fatalf("socat is not installed (make test-deps installs it; Debian: apt-get install socat): %v", err)
	}
	section := readmeSection(t, docText(t, "docs/socket-api.md"), "## The socket API")
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the socket API section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	runtime, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	d := startDaemon(t, withSocket(filepath.Join(runtime, "pikod", "default.sock")))
	lines := 0
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = append(minimalEnv(t.TempDir()), "XDG_RUNTIME_DIR="+runtime, "PATH="+binDir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("docs/socket-api.md line %q: %v\n%s", line, err, out)
			continue
		}
		if !strings.Contains(string(out), `"`) {
			t.Errorf("docs/socket-api.md line %q printed no JSON:\n%s", line, out)
		}
	}
	if lines < 3 {
		t.Errorf("the socket API block has %d commands, want the socat, hello and settings examples:\n%s", lines, block)
	}
	_ = d
}

// TestREADMEMethodList checks docs/socket-api.md's list of methods against the
// daemon: every served method has a row of its own in "The socket API"
// ("| `name` |"), and every method that answers not implemented is named
// in the "Reserved" sentence; no row names a method the daemon lacks.
func TestREADMEMethodList(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, docText(t, "docs/socket-api.md"), "## The socket API")
	_, reserved, _ := strings.Cut(section, "Reserved and answering")
	reserved, _, _ = strings.Cut(reserved, "\n\n")
	d := startDaemon(t)
	c := d.client(t)
	for _, info := range contracts.MethodTable {
		m := info.Name
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err := c.Call(ctx, m, map[string]any{}, nil)
		cancel()
		var we *contracts.Error
		served := !(errors.As(err, &we) && we.Reason() == "not_implemented")
		if info.TerminalOnly() && errors.As(err, &we) && we.Reason() == "terminal_required" {
			// Refused before the handler: the README row decides.
			served = strings.Contains(section, "| `"+m+"` |")
		}
		short := strings.TrimPrefix(m, "extensions.mcp.")
		switch {
		case served && !strings.Contains(section, "| `"+m+"` |"):
			t.Errorf("%s is served but docs/socket-api.md has no row \"| `%s` |\"", m, m)
		case !served && !strings.Contains(reserved, "`"+short+"`"):
			t.Errorf("%s answers not implemented but docs/socket-api.md's Reserved list does not name `%s`", m, short)
		}
	}
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if strings.Contains(name, ".") && !strings.Contains(name, " ") && strings.Count(line, "|") > 3 {
			if _, ok := contracts.LookupMethod(name); !ok && (strings.HasPrefix(name, "extensions.") || strings.HasPrefix(name, "system.") || strings.HasPrefix(name, "source.") || strings.HasPrefix(name, "vault.")) {
				t.Errorf("docs/socket-api.md documents %s, which is not in contracts.MethodTable", name)
			}
		}
	}
}
