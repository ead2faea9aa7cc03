package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// docURL is where the generated files point the reader for more.
const docURL = "https://github.com/pikod/pikod#readme"

// serviceOptions is what a generated unit or agent depends on. The
// generators are pure functions of it.
type serviceOptions struct {
	// Instance is a valid instance name.
	Instance string
	// Pikod is the absolute path of the pikod binary.
	Pikod string
	// StateDir is the instance's state directory; the launchd agent sends
	// pikod's stderr to a file in it.
	StateDir string
	// PATH, when set, is the search path the service runs with (and gives
	// stdio servers): the installing shell's absolute PATH entries, so
	// npx, uvx and node are found as they are in your shell.
	PATH string
}

// systemdUnitName is the user unit of instance: pikod.service for the
// default instance, pikod-NAME.service otherwise.
func systemdUnitName(instance string) string {
	if instance == contracts.DefaultInstance {
		return "pikod.service"
	}
	return "pikod-" + instance + ".service"
}

// launchdLabel is the launchd job label of instance.
func launchdLabel(instance string) string { return "dev.pikod." + instance }

// systemdUnit returns a systemd user unit that runs pikod for o.Instance.
func systemdUnit(o serviceOptions) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# %s: runs pikod, the MCP server supervisor, for instance %q.", systemdUnitName(o.Instance), o.Instance)
	w("# Written by 'pikoctl service install'; regenerate it rather than edit it.")
	w("[Unit]")
	w("Description=pikod MCP server supervisor (instance %s)", systemdEscapeValue(o.Instance))
	w("Documentation=%s", docURL)
	w("")
	w("[Service]")
	w("Type=simple")
	w("ExecStart=%s %s %s", systemdQuote(o.Pikod), "--instance", systemdQuote(o.Instance))
	if o.PATH != "" {
		w("# The PATH of the shell that ran 'pikoctl service install': stdio servers")
		w("# started with npx, uvx or node find them here. Reinstall to change it.")
		w("Environment=%s", systemdQuote("PATH="+o.PATH))
	}
	w("Restart=on-failure")
	w("RestartSec=2")
	w("# Every MCP server pikod starts runs in its own process group inside this")
	w("# unit's cgroup; control-group stops them all with the unit, even if pikod")
	w("# itself died and could not stop them.")
	w("KillMode=control-group")
	w("KillSignal=SIGTERM")
	w("TimeoutStopSec=20")
	w("UMask=0077")
	w("NoNewPrivileges=yes")
	w("# The secret-service vault backend needs DBUS_SESSION_BUS_ADDRESS. The user")
	w("# manager provides it when the session bus is socket-activated (the")
	w("# dbus-user-session package on Debian and Ubuntu). Otherwise run")
	w("#   systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS")
	w("# in your session before starting the unit, or use the file vault backend.")
	w("# No bus address is written here: it changes from one session to the next.")
	w("")
	w("[Install]")
	w("WantedBy=default.target")
	return b.String()
}

// systemdEscapeValue escapes the characters systemd expands in unit values:
// "%" starts a specifier.
func systemdEscapeValue(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// systemdQuote renders one ExecStart word. systemd splits command lines on
// whitespace, honours quotes and backslash escapes, and expands "%"
// specifiers and "$" variables everywhere, so "%" and "$" are doubled and a
// word with whitespace, quotes, backslashes or control characters goes in
// double quotes with C-style escapes.
func systemdQuote(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if s != "" && s != ";" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '\\'
	}) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launchdPlist returns a launchd agent property list that runs pikod for
// o.Instance.
func launchdPlist(o serviceOptions) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by 'pikoctl service install'; regenerate it rather than edit it. -->
<plist version="1.0">
<dict>
`)
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", xmlEscape(k)) }
	str := func(indent, v string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlEscape(v)) }
	key("Label")
	str("\t", launchdLabel(o.Instance))
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, arg := range []string{o.Pikod, "--instance", o.Instance} {
		str("\t\t", arg)
	}
	b.WriteString("\t</array>\n")
	if o.PATH != "" {
		key("EnvironmentVariables")
		b.WriteString("\t<dict>\n")
		fmt.Fprintf(&b, "\t\t<key>PATH</key>\n")
		str("\t\t", o.PATH)
		b.WriteString("\t</dict>\n")
	}
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	// Restart after a crash, not after a clean stop.
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ProcessType")
	str("\t", "Background")
	key("Umask")
	b.WriteString("\t<integer>63</integer>\n") // 0077
	key("ExitTimeOut")
	b.WriteString("\t<integer>20</integer>\n")
	key("StandardErrorPath")
	str("\t", filepath.Join(o.StateDir, "launchd-stderr.log"))
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	// EscapeText writes to a bytes.Buffer, which cannot fail.
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (a *app) newServiceCmd() *cobra.Command {
	svc := groupCmd("service", "Generate or install a systemd user unit (Linux) or launchd agent (macOS) for pikod")
	svc.AddCommand(a.newServicePrintCmd(), a.newServiceInstallCmd(), a.newServiceUninstallCmd(), a.newServiceStatusCmd())
	return svc
}

func (a *app) newServicePrintCmd() *cobra.Command {
	var pikod, goos string
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the unit (Linux) or agent (macOS) that runs pikod for this instance",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o, err := a.serviceOptions(pikod)
			if err != nil {
				return err
			}
			content, _, err := a.serviceFile(goos, o)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(a.stdout, content)
			return err
		},
	}
	cmd.Flags().StringVar(&pikod, "pikod", "", "absolute path of the pikod binary (default: next to pikoctl, else from PATH)")
	cmd.Flags().StringVar(&goos, "os", a.goos, "generate for this OS: linux or darwin")
	_ = cmd.Flags().MarkHidden("os")
	return cmd
}

func (a *app) newServiceInstallCmd() *cobra.Command {
	var (
		pikod string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Write the unit (Linux) or agent (macOS) and print how to start it",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o, err := a.serviceOptions(pikod)
			if err != nil {
				return err
			}
			if err := checkExecutable(o.Pikod); err != nil {
				return err
			}
			content, path, err := a.serviceFile(a.goos, o)
			if err != nil {
				return err
			}
			written, err := installFile(path, []byte(content), force)
			if err != nil {
				return err
			}
			if written {
				fmt.Fprintf(a.stdout, "wrote %s\n", path)
			} else {
				fmt.Fprintf(a.stdout, "%s is already up to date\n", path)
			}
			if a.goos == "darwin" {
				// launchd opens the stderr file before pikod creates its
				// state directory.
				if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
					return fmt.Errorf("creating the state directory for the agent's log: %w", err)
				}
				label := launchdLabel(o.Instance)
				fmt.Fprintf(a.stdout, "next, load and start it:\n  launchctl bootstrap gui/%d %s\n", a.uid, path)
				fmt.Fprintf(a.stdout, "if an older version is loaded, unload it first:\n  launchctl bootout gui/%d/%s\n", a.uid, label)
				fmt.Fprintf(a.stdout, "pikod's stderr goes to %s\n", filepath.Join(o.StateDir, "launchd-stderr.log"))
				return nil
			}
			unit := systemdUnitName(o.Instance)
			fmt.Fprintf(a.stdout, "next, load and start it:\n  systemctl --user daemon-reload && systemctl --user enable --now %s\n", unit)
			fmt.Fprintf(a.stdout, "to keep pikod running after you log out and start it at boot:\n  loginctl enable-linger $USER\n")
			return nil
		},
	}
	cmd.Flags().StringVar(&pikod, "pikod", "", "absolute path of the pikod binary (default: next to pikoctl, else from PATH)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file that differs")
	return cmd
}

// serviceOptions resolves the instance, the pikod binary and the state
// directory.
func (a *app) serviceOptions(pikodFlag string) (serviceOptions, error) {
	instance, _, err := a.target()
	if err != nil {
		return serviceOptions{}, err
	}
	pikod, err := a.findPikod(pikodFlag)
	if err != nil {
		return serviceOptions{}, err
	}
	stateDir, err := contracts.StateDir(instance, "", a.getenv)
	if err != nil {
		return serviceOptions{}, err
	}
	return serviceOptions{Instance: instance, Pikod: pikod, StateDir: stateDir, PATH: absolutePATH(a.getenv("PATH"))}, nil
}

// findPikod returns the pikod binary the service should run: the flag, else
// the pikod next to this pikoctl (they ship together), else pikod from PATH.
func (a *app) findPikod(flag string) (string, error) {
	if flag != "" {
		if !filepath.IsAbs(flag) {
			return "", usageErrorf("--pikod must be an absolute path, got %q", flag)
		}
		return filepath.Clean(flag), nil
	}
	if exe, err := a.executable(); err == nil {
		cand := filepath.Join(filepath.Dir(exe), "pikod")
		if checkExecutable(cand) == nil {
			return cand, nil
		}
	}
	if p, err := a.lookPath("pikod"); err == nil {
		return filepath.Abs(p)
	}
	return "", contracts.Errorf(contracts.ErrNotFound, contracts.ReasonPikodNotFound,
		"finding the pikod binary: it is neither next to pikoctl nor in PATH; pass --pikod /absolute/path/to/pikod")
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("checking the pikod binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonNotExecutable, "checking the pikod binary: %s is not an executable file", path)
	}
	return nil
}

// serviceFile returns the file content for goos and where install puts it.
func (a *app) serviceFile(goos string, o serviceOptions) (content, path string, err error) {
	switch goos {
	case "linux":
		dir := a.getenv("XDG_CONFIG_HOME")
		if dir == "" || !filepath.IsAbs(dir) {
			home, err := a.home()
			if err != nil {
				return "", "", err
			}
			dir = filepath.Join(home, ".config")
		}
		return systemdUnit(o), filepath.Join(dir, "systemd", "user", systemdUnitName(o.Instance)), nil
	case "darwin":
		home, err := a.home()
		if err != nil {
			return "", "", err
		}
		return launchdPlist(o), filepath.Join(home, "Library", "LaunchAgents", launchdLabel(o.Instance)+".plist"), nil
	}
	return "", "", contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsupportedOS,
		"generating a service for %s: only linux (systemd) and darwin (launchd) are supported", goos)
}

func (a *app) home() (string, error) {
	if h := a.getenv("HOME"); h != "" {
		return h, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory: %w", err)
	}
	return h, nil
}

// installFile writes content to path (0644, parent created 0755), replacing
// it atomically. An existing file with the same content is left alone and
// reported as not written; a different one is replaced only with force, so
// a hand-edited unit is not lost by accident.
func installFile(path string, content []byte, force bool) (written bool, err error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		return false, nil
	case err == nil && !force:
		return false, contracts.Errorf(contracts.ErrAlreadyExists, contracts.ReasonFileExists,
			"refusing to overwrite %s: it differs from the generated file; compare it with 'pikoctl service print', then rerun with --force", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("reading the existing %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if _, err := f.Write(content); err != nil {
		f.Close()
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// absolutePATH keeps the absolute entries of a PATH value, in order and
// without repeats: a relative entry would depend on the service's cwd.
func absolutePATH(path string) string {
	var keep []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && !seen[dir] {
			seen[dir] = true
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// generatedMark is in every file service install writes; uninstall removes
// only such files.
const generatedMark = "Written by 'pikoctl service install'"

func (a *app) newServiceUninstallCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and disable the service, then remove its unit (Linux) or agent (macOS)",
		Long: `uninstall stops and disables the service (systemctl --user disable --now, or
launchctl bootout) and removes the file 'pikoctl service install' wrote. A
file pikoctl did not write is left alone. pikod's state (settings, database,
vault) is not touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.serviceOptions("/pikod")
			if err != nil {
				return err
			}
			_, path, err := a.serviceFile(a.goos, o)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(a.stdout, "%s is not installed; nothing to do\n", path)
				return nil
			} else if err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			if !bytes.Contains(b, []byte(generatedMark)) {
				return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNotGenerated,
					"refusing to remove %s: pikoctl did not write it", path)
			}
			var stop []string
			if a.goos == "darwin" {
				stop = []string{"launchctl", "bootout", fmt.Sprintf("gui/%d/%s", a.uid, launchdLabel(o.Instance))}
			} else {
				stop = []string{"systemctl", "--user", "disable", "--now", systemdUnitName(o.Instance)}
			}
			if out, err := exec.CommandContext(cmd.Context(), stop[0], stop[1:]...).CombinedOutput(); err != nil {
				fmt.Fprintf(a.stderr, "pikoctl: %s: %v %s(continuing: it may not have been loaded)\n", strings.Join(stop, " "), err, clean(string(out))+" ")
			} else {
				fmt.Fprintf(a.stdout, "stopped: %s\n", strings.Join(stop, " "))
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("removing %s: %w", path, err)
			}
			fmt.Fprintf(a.stdout, "removed %s\n", path)
			if a.goos != "darwin" {
				_ = exec.CommandContext(cmd.Context(), "systemctl", "--user", "daemon-reload").Run()
			}
			return nil
		},
	}
}

func (a *app) newServiceStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say whether the service file is installed and current, and whether it runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.serviceOptions("")
			installedPikod := ""
			if err != nil {
				// No pikod next to pikoctl or on PATH: still report the file.
				if o, err = a.serviceOptions("/pikod"); err != nil {
					return err
				}
			} else {
				installedPikod = o.Pikod
			}
			want, path, err := a.serviceFile(a.goos, o)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				fmt.Fprintf(a.stdout, "file:    %s: not installed ('pikoctl service install')\n", path)
			case err != nil:
				return fmt.Errorf("reading %s: %w", path, err)
			case installedPikod != "" && string(b) == want:
				fmt.Fprintf(a.stdout, "file:    %s: installed, up to date (pikod %s)\n", path, installedPikod)
			default:
				fmt.Fprintf(a.stdout, "file:    %s: installed, differs from what 'pikoctl service install' would write now (see 'pikoctl service print')\n", path)
			}
			var q []string
			if a.goos == "darwin" {
				q = []string{"launchctl", "print", fmt.Sprintf("gui/%d/%s", a.uid, launchdLabel(o.Instance))}
			} else {
				q = []string{"systemctl", "--user", "is-active", systemdUnitName(o.Instance)}
			}
			out, _ := exec.CommandContext(cmd.Context(), q[0], q[1:]...).Output()
			state := strings.TrimSpace(string(out))
			if a.goos == "darwin" {
				state = map[bool]string{true: "loaded", false: "not loaded"}[len(out) > 0]
			}
			if state == "" {
				state = "unknown (" + q[0] + " did not answer)"
			}
			fmt.Fprintf(a.stdout, "service: %s (%s)\n", clean(state), strings.Join(q, " "))
			var hello contracts.HelloResult
			if err := a.call(cmd.Context(), contracts.MethodHello, contracts.HelloParams{APIVersion: contracts.APIVersion}, &hello); err != nil {
				fmt.Fprintf(a.stdout, "daemon:  not answering\n")
			} else {
				fmt.Fprintf(a.stdout, "daemon:  pikod %s, pid %d\n", clean(hello.DaemonVersion), hello.PID)
				a.warnAPI(hello)
			}
			return nil
		},
	}
}
