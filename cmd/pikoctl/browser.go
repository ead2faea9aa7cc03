package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// browserFlags are the choices of 'pikoctl mcp browser'.
type browserFlags struct {
	id, preset, browser, artifacts, profile string
	headless, noSandbox, yes, dryRun        bool
}

// browserNames are looked up in PATH when --browser is not given.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

func (a *app) newBrowserCmd() *cobra.Command {
	var f browserFlags
	cmd := &cobra.Command{
		Use:   "browser ENTRYPOINT [flags] [-- SERVER_ARGS...]",
		Short: "Add or update the browser server: a browser MCP server with a profile of its own",
		Long: `browser adds (or replaces) the server "browser" (--id) running the browser MCP
server ENTRYPOINT: its executable (an absolute path or a name in PATH) or an
npm package spec run with npx (@playwright/mcp@0.0.83, chrome-devtools-mcp@1.11.0).
Naming it is your decision to trust that program.

The browser runs with a profile of its own under pikod's state directory
(--profile; never your own browser profile), the browser binary you name
(--browser, default the first of chromium, chromium-browser, google-chrome
found in PATH), headless with --headless (else it opens windows on your
display), and an artifactDirectory (--artifact-directory) where it writes
snapshots, screenshots and downloads. Every file a completed call reports
there is imported as a retained source linked to the call's receipt.

For @playwright/mcp and chrome-devtools-mcp a narrow set of tools (navigate,
snapshot, click, type, screenshot, wait, tabs...) is delegated as
autonomousTools; the rest (running code, uploading files, filling forms,
network bodies...) stays approval-required. Any other ENTRYPOINT gets no
delegated tools (--preset generic). The review lists both sets and each
widens: line; you confirm it at the terminal (or with --yes after reading
it). Running as root, Chromium needs --no-sandbox, which is then added (and
said); as anyone else it is added only if you pass it.

Hand-off: when a page needs you (a login, a CAPTCHA, a payment), the agent
pauses the server ('pikoctl mcp pause browser --reason ...'); you use the
browser window (headed) and give it back with 'pikoctl mcp resume browser'.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runBrowser(cmd.Context(), f, args[0], args[1:])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.id, "id", "browser", "the server id")
	fl.StringVar(&f.preset, "preset", "", "playwright, chrome-devtools or generic (default: recognised from ENTRYPOINT)")
	fl.StringVar(&f.browser, "browser", "", "the browser executable (default: chromium, chromium-browser or google-chrome from PATH)")
	fl.BoolVar(&f.headless, "headless", false, "run the browser without windows")
	fl.BoolVar(&f.noSandbox, "no-sandbox", false, "run Chromium without its sandbox (added anyway when pikoctl runs as root, which Chromium requires)")
	fl.StringVar(&f.artifacts, "artifact-directory", "", "where the browser writes captures (default STATE/browser/ID/artifacts)")
	fl.StringVar(&f.profile, "profile", "", "the browser profile directory (default STATE/browser/ID/profile)")
	fl.BoolVar(&f.yes, "yes", false, "save without asking (after reading the review)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "show the review and validate, save nothing")
	return cmd
}

// browserPlan is the server entry 'mcp browser' saves, with what the
// review says about it.
type browserPlan struct {
	srv     contracts.ServerSettings
	preset  contracts.BrowserPreset
	known   bool
	browser string
	notes   []string
}

func (a *app) runBrowser(ctx context.Context, f browserFlags, entry string, extra []string) error {
	var hello contracts.HelloResult
	if err := a.call(ctx, contracts.MethodHello, contracts.HelloParams{APIVersion: contracts.APIVersion, ClientVersion: version}, &hello); err != nil {
		return err
	}
	a.warnAPI(hello)
	plan, err := a.planBrowser(f, entry, extra, hello.StateDir)
	if err != nil {
		return err
	}
	cur, rev, err := a.currentSettings(ctx)
	if err != nil {
		return err
	}
	next := &contracts.MCPSettings{Servers: slices.Clone(cur.Servers), Retention: cur.Retention}
	if i := serverIndex(next, plan.srv.ID); i >= 0 {
		plan.srv.Enabled = next.Servers[i].Enabled
		next.Servers[i] = plan.srv
	} else {
		next.Servers = append(next.Servers, plan.srv)
	}
	w := &errWriter{w: a.stdout}
	if a.jsonOut {
		w = &errWriter{w: a.stderr}
	}
	writeBrowserPlan(w, plan)
	if w.err != nil {
		return w.err
	}
	// The daemon's dry run: every problem, and what the save widens.
	if err := a.saveSettings(ctx, next, rev, true); err != nil {
		return err
	}
	if f.dryRun {
		fmt.Fprintln(w, "\nnothing was saved (--dry-run)")
		return nil
	}
	if !f.yes {
		if !a.stdinIsTerminal() {
			return contracts.WithHint(errors.New("stdin is not the terminal: saving the browser preset needs you to confirm it at the terminal (nothing was saved)"),
				"run it yourself in your terminal, or add --yes once you have read the review")
		}
		tty, err := a.openTTY()
		if err != nil {
			return err
		}
		answer, err := tty.Ask(fmt.Sprintf("Save server %q with these grants? (y/N): ", plan.srv.ID))
		tty.Close()
		if err != nil {
			return err
		}
		if s := strings.ToLower(strings.TrimSpace(answer)); s != "y" && s != "yes" {
			fmt.Fprintln(a.stdout, "not confirmed: nothing was saved")
			return nil
		}
	}
	for _, dir := range []string{plan.srv.ArtifactDirectory, browserProfile(plan)} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	// The review above listed what the save widens; say only the outcome.
	params := contracts.ConfigureParams{Extension: contracts.ExtensionMCP, Settings: next.Canonical(), ExpectRevision: rev}
	var raw json.RawMessage
	if err := a.call(ctx, contracts.MethodConfigure, params, &raw); err != nil {
		return err
	}
	if a.jsonOut {
		return printRaw(a.stdout, raw)
	}
	var res contracts.ConfigureResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decoding the extensions.configure result: %w", err)
	}
	fmt.Fprintf(a.stdout, "saved mcp settings: revision %d (server %q, %d grants widened as reviewed); connect it with 'pikoctl mcp connect %s'\n",
		res.Revision, plan.srv.ID, len(res.Widened), plan.srv.ID)
	return nil
}

// browserProfile returns the profile directory the plan's args name.
func browserProfile(p *browserPlan) string {
	for i, arg := range p.srv.Args {
		for _, flag := range []string{"--user-data-dir", "--userDataDir"} {
			if arg == flag && i+1 < len(p.srv.Args) {
				return p.srv.Args[i+1]
			}
		}
	}
	return ""
}

// planBrowser builds the server entry for entry with the flags.
func (a *app) planBrowser(f browserFlags, entry string, extra []string, stateDir string) (*browserPlan, error) {
	p := &browserPlan{}
	switch {
	case f.preset == "":
		p.preset, p.known = contracts.MatchBrowserPreset(entry)
		if !p.known && filepath.IsAbs(entry) {
			if real, err := filepath.EvalSymlinks(entry); err == nil {
				p.preset, p.known = contracts.MatchBrowserPreset(real)
			}
		}
	case f.preset == contracts.BrowserGeneric:
	default:
		var ok bool
		if p.preset, ok = contracts.FindBrowserPreset(f.preset); !ok {
			return nil, usageErrorf("--preset %s: use %s, %s or %s", f.preset, contracts.BrowserPlaywright, contracts.BrowserChromeDevTools, contracts.BrowserGeneric)
		}
		p.known = true
	}
	presetName := contracts.BrowserGeneric
	if p.known {
		presetName = p.preset.Name
	}
	base := filepath.Join(stateDir, "browser", f.id)
	art := f.artifacts
	if art == "" {
		art = filepath.Join(base, "artifacts")
	}
	profile := f.profile
	if profile == "" {
		profile = filepath.Join(base, "profile")
	}
	for _, d := range []*string{&art, &profile} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, err
		}
		*d = abs
	}
	if own := ownersBrowserProfile(profile, a.getenv("HOME")); own != "" {
		return nil, usageErrorf("--profile %s is inside your own browser profile (%s): the preset uses a profile of its own", profile, own)
	}
	if p.known {
		bin, err := findBrowser(f.browser, a.getenv("PATH"))
		if err != nil {
			return nil, err
		}
		p.browser = bin
	}

	s := contracts.ServerSettings{ID: f.id, Transport: contracts.TransportStdio, Cwd: art, ArtifactDirectory: art,
		Browser: &contracts.BrowserSettings{Preset: presetName}}
	if name := contracts.NPMPackageName(entry); name != "" && (strings.Contains(entry, "@") || !onPATH(entry, a.getenv("PATH"))) {
		s.Command, s.Args = "npx", []string{"-y", entry}
	} else {
		s.Command = entry
	}
	noSandbox := f.noSandbox
	if os.Getuid() == 0 && p.known && !noSandbox {
		noSandbox = true
		p.notes = append(p.notes, "--no-sandbox added: pikoctl runs as root, where Chromium refuses to start with its sandbox")
	}
	switch presetName {
	case contracts.BrowserPlaywright:
		s.Args = append(s.Args, "--user-data-dir", profile, "--output-dir", art, "--file-paths", "absolute",
			"--executable-path", p.browser)
		if f.headless {
			s.Args = append(s.Args, "--headless")
		}
		if noSandbox {
			s.Args = append(s.Args, "--no-sandbox")
		}
	case contracts.BrowserChromeDevTools:
		s.Args = append(s.Args, "--userDataDir", profile, "--executablePath", p.browser, "--workspace", art,
			"--no-usage-statistics", "--no-performance-crux")
		if f.headless {
			s.Args = append(s.Args, "--headless")
		}
		if noSandbox {
			s.Args = append(s.Args, "--chromeArg=--no-sandbox")
		}
	default:
		p.notes = append(p.notes, "pikod does not know this server's tools: none is delegated, every call needs your approval, and its profile and browser flags are the server's own (pass them after --)")
	}
	s.Args = append(s.Args, extra...)
	if p.known {
		tools := slices.Clone(p.preset.Tools)
		s.Tools = &tools
		s.AutonomousTools = slices.Clone(p.preset.Autonomous)
	}
	if !f.headless {
		env := map[string]string{}
		for _, k := range []string{"DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY"} {
			if v := a.getenv(k); v != "" {
				env[k] = v
			}
		}
		if w := env["WAYLAND_DISPLAY"]; w != "" && !filepath.IsAbs(w) && a.getenv("XDG_RUNTIME_DIR") != "" {
			env["WAYLAND_DISPLAY"] = filepath.Join(a.getenv("XDG_RUNTIME_DIR"), w)
		}
		if env["DISPLAY"] == "" && env["WAYLAND_DISPLAY"] == "" && p.known {
			return nil, usageErrorf("no display (DISPLAY or WAYLAND_DISPLAY) for a browser with windows: run it from your desktop session, or pass --headless")
		}
		if len(env) > 0 {
			s.Env = env
		}
	}
	p.srv = s
	return p, nil
}

// writeBrowserPlan prints the review of the browser entry.
func writeBrowserPlan(w *errWriter, p *browserPlan) {
	s := &p.srv
	if p.known {
		fmt.Fprintf(w, "browser preset %s (%s; tool names as of version %s) as server %q\n", p.preset.Name, p.preset.Package, p.preset.Version, s.ID)
	} else {
		fmt.Fprintf(w, "browser server %q: an entry point pikod does not know (preset generic)\n", s.ID)
	}
	fmt.Fprintf(w, "  command:   %s\n", clean(strings.Join(append([]string{s.Command}, s.Args...), " ")))
	if p.browser != "" {
		fmt.Fprintf(w, "  browser:   %s\n", clean(p.browser))
	}
	if prof := browserProfile(p); prof != "" {
		fmt.Fprintf(w, "  profile:   %s (its own, kept across reconnects; not your browser's profile)\n", clean(prof))
	}
	fmt.Fprintf(w, "  artifacts: %s (snapshots, screenshots, downloads; each file a call reports is imported as a source)\n", clean(s.ArtifactDirectory))
	if len(s.Env) > 0 {
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "  env:       %s (your display)\n", clean(strings.Join(keys, ", ")))
	}
	for _, n := range p.notes {
		fmt.Fprintf(w, "  note:      %s\n", clean(n))
	}
	if s.Tools != nil {
		var gated []string
		for _, t := range *s.Tools {
			if !slices.Contains(s.AutonomousTools, t) {
				gated = append(gated, t)
			}
		}
		fmt.Fprintf(w, "  run without approval (autonomousTools): %s\n", clean(strings.Join(s.AutonomousTools, ", ")))
		fmt.Fprintf(w, "  need your approval: %s\n", clean(strings.Join(gated, ", ")))
		fmt.Fprintln(w, "  (a tool the server adds later is not selected)")
	} else {
		fmt.Fprintln(w, "  every tool needs your approval")
	}
}

// findBrowser returns the browser executable: flag (absolute, or a name
// in path), else the first of browserNames in path.
func findBrowser(flag, path string) (string, error) {
	names := browserNames
	if flag != "" {
		if filepath.IsAbs(flag) {
			if fi, err := os.Stat(flag); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
				return "", usageErrorf("--browser %s is not an executable file", flag)
			}
			return flag, nil
		}
		names = []string{flag}
	}
	for _, n := range names {
		if p := lookBrowserIn(n, path); p != "" {
			return p, nil
		}
	}
	if flag != "" {
		return "", usageErrorf("--browser %s is not found in PATH: give its absolute path", flag)
	}
	return "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNoBrowser,
		"no browser found in PATH (looked for %s)", strings.Join(browserNames, ", ")),
		"install one (Debian: apt-get install chromium) or name it with --browser PATH")
}

// lookBrowserIn finds name in the absolute entries of path.
func lookBrowserIn(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func onPATH(name, path string) bool {
	if strings.ContainsRune(name, '/') {
		_, err := exec.LookPath(name)
		return err == nil
	}
	return lookBrowserIn(name, path) != ""
}

// ownersBrowserProfile returns the owner's own browser profile directory
// that dir is in (or is), or "".
func ownersBrowserProfile(dir, home string) string {
	if home == "" {
		return ""
	}
	for _, rel := range []string{".config/google-chrome", ".config/chromium", ".config/google-chrome-beta",
		".config/BraveSoftware", ".config/microsoft-edge", "Library/Application Support/Google/Chrome",
		"Library/Application Support/Chromium", "snap/chromium"} {
		own := filepath.Join(home, rel)
		if dir == own || strings.HasPrefix(dir, own+"/") {
			return own
		}
	}
	return ""
}
