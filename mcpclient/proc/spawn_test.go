//go:build linux

package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/pikod/pikod/contracts"
)

func TestProcessEnvIsScrubbed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("PIKO_CANARY_PROCESS", "canary-7f3a")
	spec := baseSpec(t, "env")
	spec.Env["FOO"] = "bar baz"
	spec.Env[MarkVariable] = "forged" // the mark is pikod's, never the settings'
	spec.PATH = "/usr/bin:relative::/bin"
	recs := newMemRecords()
	p := startTest(t, spec, recs)

	env := map[string]string{}
	out := bufio.NewReader(p.Stdout())
	for {
		line := readLine(t, out)
		if line == "--end--" {
			break
		}
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	var keys []string
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"DBUS_SESSION_BUS_ADDRESS", "FOO", "HOME", "LANG", "LC_ALL", "PATH", MarkVariable, envMode, "TMPDIR",
		"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"}
	sort.Strings(want)
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("child env keys = %v, want %v", keys, want)
	}
	for k, v := range env {
		if strings.Contains(v, "canary-7f3a") {
			t.Errorf("canary leaked into child env as %s", k)
		}
	}
	checks := map[string]string{"FOO": "bar baz", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": p.HomeDir()}
	for k, v := range checks {
		if env[k] != v {
			t.Errorf("child %s = %q, want %q", k, env[k], v)
		}
	}
	if filepath.Dir(p.HomeDir()) != spec.RunDir {
		t.Errorf("home %q is not inside run dir %q", p.HomeDir(), spec.RunDir)
	}
	for _, k := range []string{"HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME"} {
		fi, err := os.Stat(env[k])
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s=%q: stat %v, err %v; want a 0700 dir", k, env[k], fi, err)
		}
		if !strings.HasPrefix(env[k], p.HomeDir()) {
			t.Errorf("%s=%q is outside the home %q", k, env[k], p.HomeDir())
		}
	}
	if recs, _ := recs.ListProcesses(); len(recs) != 1 || recs[0].PID != p.PID() || recs[0].StartTicks == 0 || recs[0].HomeDir != p.HomeDir() ||
		recs[0].Mark != env[MarkVariable] || len(recs[0].Mark) != 32 {
		t.Errorf("records while running = %+v, want one group record for pid %d with the mark %q", recs, p.PID(), env[MarkVariable])
	}

	stopTest(t, p)
	if got := p.ExitStatus(); got != "exit status 0" {
		t.Errorf("ExitStatus after stdin close = %q, want exit status 0", got)
	}
	if _, err := os.Stat(p.HomeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("home still there after Stop: %v", err)
	}
	assertNoRecords(t, recs)
}

func TestProcessArgsVerbatim(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "args")
	spec.Args = []string{"$HOME", "a;b", "*", "`id`", "$(id)", "x y", ""}
	p := startTest(t, spec, newMemRecords())
	var got []string
	if err := json.Unmarshal([]byte(readLine(t, bufio.NewReader(p.Stdout()))), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\x00") != strings.Join(spec.Args, "\x00") || len(got) != len(spec.Args) {
		t.Errorf("child args = %q, want %q", got, spec.Args)
	}
	stopTest(t, p)
}

func TestProcessStartErrors(t *testing.T) {
	exe := testExe(t)
	binDir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(binDir, "pikochild")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(*Spec)
		class   error
		message string
	}{
		{"found in spec PATH", func(s *Spec) { s.Command, s.PATH = "pikochild", "/nonexistent:"+binDir }, nil, ""},
		{"found in env PATH", func(s *Spec) { s.Command, s.PATH, s.Env["PATH"] = "pikochild", "/nonexistent", binDir }, nil, ""},
		{"env PATH not quoted", func(s *Spec) { s.Command, s.Env["PATH"] = "no-such-cmd-pk", "/secret-ish" }, contracts.ErrFailedPrecondition, `not found in PATH from env (install`},
		{"not in PATH", func(s *Spec) { s.Command, s.PATH = "no-such-cmd-pk", binDir }, contracts.ErrFailedPrecondition, `command "no-such-cmd-pk" not found in PATH`},
		{"relative PATH entry ignored", func(s *Spec) { s.Command, s.PATH = "pikochild", "."; s.Cwd = binDir }, contracts.ErrFailedPrecondition, "not found in PATH"},
		{"relative command", func(s *Spec) { s.Command = "./pikochild" }, contracts.ErrInvalidArgument, "must be an absolute path"},
		{"cwd relative", func(s *Spec) { s.Cwd = "rel" }, contracts.ErrInvalidArgument, `cwd "rel" is not an absolute path`},
		{"cwd is a file", func(s *Spec) { s.Cwd = file }, contracts.ErrFailedPrecondition, "is not a directory"},
		{"cwd missing", func(s *Spec) { s.Cwd = file + "-gone" }, contracts.ErrFailedPrecondition, "is not usable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := baseSpec(t, "stdin-eof")
			tt.mod(&spec)
			p, err := Start(spec, newMemRecords(), zerolog.Nop())
			if tt.class == nil {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if line := readLine(t, bufio.NewReader(p.Stdout())); line != "ready" {
					t.Errorf("child said %q, want ready", line)
				}
				stopTest(t, p)
				return
			}
			if err == nil {
				_ = p.Stop(context.Background())
				t.Fatalf("Start succeeded, want %v", tt.class)
			}
			if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Start error = %v, want class %v containing %q", err, tt.class, tt.message)
			}
			if entries, _ := os.ReadDir(spec.RunDir); len(entries) != 0 {
				t.Errorf("failed start left %d entries in the run dir", len(entries))
			}
		})
	}
}

func TestProcessExitStatus(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	recs := newMemRecords()
	p := startTest(t, baseSpec(t, "exit3"), recs)
	if p.ExitStatus() != "" {
		select {
		case <-p.Done():
		default:
			t.Errorf("ExitStatus %q before Done", p.ExitStatus())
		}
	}
	<-p.Done()
	if got := p.ExitStatus(); got != "exit status 3" {
		t.Errorf("ExitStatus = %q, want exit status 3", got)
	}
	// The exited leader stays unreaped until Stop, holding its group id.
	if info, ok := readProc(p.PID()); !ok || !info.Zombie {
		t.Errorf("leader before Stop: exists %v zombie %v, want an unreaped zombie", ok, info.Zombie)
	}
	stopTest(t, p)
	if exists(p.PID()) {
		t.Errorf("leader %d not reaped by Stop", p.PID())
	}
	if _, err := os.Stat(p.HomeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("home still there after Stop: %v", err)
	}
	assertNoRecords(t, recs)
}

// TestShortTempDir checks the browser's temporary directory: short,
// private, the child's TMPDIR (TMP, TEMP), recorded with its group and
// removed at Stop.
func TestShortTempDir(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "env")
	spec.ShortTempDir = true
	recs := newMemRecords()
	p := startTest(t, spec, recs)
	env := map[string]string{}
	out := bufio.NewReader(p.Stdout())
	for {
		line := readLine(t, out)
		if line == "--end--" {
			break
		}
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	tmp := env["TMPDIR"]
	if env["TMP"] != tmp || env["TEMP"] != tmp || strings.HasPrefix(tmp, p.HomeDir()) || len(tmp) > 40 {
		t.Errorf("TMPDIR=%q TMP=%q TEMP=%q (home %q): want one short directory outside the home", tmp, env["TMP"], env["TEMP"], p.HomeDir())
	}
	if fi, err := os.Lstat(tmp); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("TMPDIR %q: %v, %v; want a 0700 directory", tmp, fi, err)
	}
	if list, _ := recs.ListProcesses(); len(list) != 1 || list[0].TempDir != tmp {
		t.Errorf("records = %+v, want the group's TempDir %q", list, tmp)
	}
	stopTest(t, p)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR %q still there after Stop: %v", tmp, err)
	}
}
