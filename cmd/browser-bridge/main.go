// Command browser-bridge runs a browser MCP server on a desktop for a
// pikod elsewhere: 'init' makes its config directory (a self-signed ECDSA
// key and certificate, a random token, the browser server to run), 'serve'
// runs that server against the owner's Chrome (a CDP endpoint on loopback)
// or a dedicated profile and exposes only the preset's tools (and those
// allowed at init) over Streamable HTTP with TLS on loopback, requiring the
// token; 'pair' prints the pairing JSON for 'pikoctl mcp browser-remote -'.
//
// It needs no pikod and knows nothing of pikod's: no socket, no vault, no
// settings. It imports contracts for the presets and the pairing shape
// only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/pikod/pikod/contracts"
)

var version = "dev"

const usage = `usage:
  browser-bridge init --entry ENTRYPOINT [--cdp-endpoint URL | --profile DIR] [flags] [-- SERVER_ARGS...]
  browser-bridge serve [--dir DIR] [--cdp-endpoint URL]
  browser-bridge pair [--dir DIR]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "init":
		err = runInit(args[1:], stdout, stderr)
	case "serve":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = runServe(ctx, args[1:], stdout, stderr)
		stop()
	case "pair":
		err = runPair(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "browser-bridge", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "browser-bridge:", err)
		return 1
	}
	return 0
}

// listFlag is a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// browserNames are looked up in PATH for a dedicated profile.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

func runInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dir, entry, preset, cdp, profile, browser, listen string
		headless, noSandbox, force                        bool
		allow, origins                                    listFlag
	)
	fs.StringVar(&dir, "dir", defaultDir(), "the config directory")
	fs.StringVar(&entry, "entry", "", "the browser MCP server: its executable, or an npm spec run with npx (@playwright/mcp@0.0.83)")
	fs.StringVar(&preset, "preset", "", "playwright, chrome-devtools or generic (default: recognised from --entry)")
	fs.Var(&allow, "allow-tool", "a tool to expose beyond the preset's list (repeatable, or comma-separated)")
	fs.StringVar(&cdp, "cdp-endpoint", "", "your Chrome's remote debugging URL on loopback (http://127.0.0.1:9222)")
	fs.StringVar(&profile, "profile", "", "a dedicated profile directory (default DIR/profile, when no --cdp-endpoint)")
	fs.StringVar(&browser, "browser", "", "the browser executable for a dedicated profile (default chromium or google-chrome from PATH)")
	fs.BoolVar(&headless, "headless", false, "run the dedicated browser without windows")
	fs.BoolVar(&noSandbox, "no-sandbox", false, "run Chromium without its sandbox (added when run as root, which Chromium requires)")
	fs.StringVar(&listen, "listen", "127.0.0.1:8765", "the loopback address and port to serve")
	fs.Var(&origins, "allow-origin", "an Origin header value to accept (repeatable; requests without Origin are accepted)")
	fs.BoolVar(&force, "force", false, "replace an existing key, certificate and token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	extra := fs.Args()
	if entry == "" {
		return errors.New("init: --entry is required (the browser MCP server to run)")
	}
	if err := checkLoopbackListen(listen); err != nil {
		return err
	}
	var p contracts.BrowserPreset
	known := false
	switch preset {
	case "":
		p, known = contracts.MatchBrowserPreset(entry)
		if !known && filepath.IsAbs(entry) {
			if real, err := filepath.EvalSymlinks(entry); err == nil {
				p, known = contracts.MatchBrowserPreset(real)
			}
		}
	case contracts.BrowserGeneric:
	default:
		if p, known = contracts.FindBrowserPreset(preset); !known {
			return fmt.Errorf("init: --preset %s: use %s, %s or %s", preset, contracts.BrowserPlaywright, contracts.BrowserChromeDevTools, contracts.BrowserGeneric)
		}
	}
	cfg := config{Listen: listen, Preset: contracts.BrowserGeneric, AllowTools: allow, AllowedOrigins: origins, Headless: headless}
	if known {
		cfg.Preset = p.Name
	}
	if !known && len(allow) == 0 {
		return errors.New("init: the bridge does not know this server's tools: name the ones to expose with --allow-tool (or give --preset)")
	}
	if name := contracts.NPMPackageName(entry); name != "" && strings.Contains(entry, "@") {
		cfg.Command, cfg.Args = "npx", []string{"-y", entry}
	} else {
		cfg.Command = entry
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	dir = abs
	if cdp != "" {
		if err := checkCDPEndpoint(cdp); err != nil {
			return err
		}
		if profile != "" {
			return errors.New("init: give --cdp-endpoint (your Chrome) or --profile (a dedicated one), not both")
		}
		cfg.CDPEndpoint = cdp
	} else if cfg.Preset != contracts.BrowserGeneric {
		if profile == "" {
			profile = filepath.Join(dir, "profile")
		}
		if profile, err = filepath.Abs(profile); err != nil {
			return err
		}
		cfg.Profile = profile
		bin := browser
		if bin == "" {
			for _, n := range browserNames {
				if path, err := exec.LookPath(n); err == nil {
					bin = path
					break
				}
			}
		}
		if bin == "" {
			return errors.New("init: no browser found in PATH for a dedicated profile: name it with --browser, or use your Chrome with --cdp-endpoint")
		}
		if noSandbox || os.Getuid() == 0 {
			noSandbox = true
		}
		switch cfg.Preset {
		case contracts.BrowserPlaywright:
			cfg.Args = append(cfg.Args, "--user-data-dir", profile, "--executable-path", bin)
			if headless {
				cfg.Args = append(cfg.Args, "--headless")
			}
			if noSandbox {
				cfg.Args = append(cfg.Args, "--no-sandbox")
			}
		case contracts.BrowserChromeDevTools:
			cfg.Args = append(cfg.Args, "--userDataDir", profile, "--executablePath", bin)
			if headless {
				cfg.Args = append(cfg.Args, "--headless")
			}
			if noSandbox {
				cfg.Args = append(cfg.Args, "--chromeArg=--no-sandbox")
			}
		}
	}
	if cfg.Preset == contracts.BrowserChromeDevTools {
		cfg.Args = append(cfg.Args, "--no-usage-statistics", "--no-performance-crux")
	}
	cfg.Args = append(cfg.Args, extra...)

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("making %s private: %w", dir, err)
	}
	if cfg.Profile != "" {
		if err := os.MkdirAll(cfg.Profile, 0o700); err != nil {
			return fmt.Errorf("creating the profile %s: %w", cfg.Profile, err)
		}
	}
	certPEM, keyPEM, err := newIdentity()
	if err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	cb, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{keyFile, keyPEM}, {certFile, certPEM}, {tokenFile, []byte(token + "\n")}} {
		if err := writePrivate(dir, f.name, f.b, force); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if err := writePrivate(dir, configFile, append(cb, '\n'), true); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	st, err := load(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "initialised %s: preset %s, %d tools exposed, serving %s\n", dir, cfg.Preset, len(cfg.tools()), cfg.url())
	if cfg.CDPEndpoint != "" {
		fmt.Fprintf(stdout, "  browser: your Chrome at %s\n", cfg.CDPEndpoint)
	} else if cfg.Profile != "" {
		fmt.Fprintf(stdout, "  browser: a dedicated profile %s\n", cfg.Profile)
	}
	if len(allow) > 0 {
		fmt.Fprintf(stdout, "  allowed beyond the preset: %s\n", strings.Join(allow, ", "))
	}
	fmt.Fprintf(stdout, "  certificate key fingerprint: %s\nnext: browser-bridge serve, then browser-bridge pair | pikoctl mcp browser-remote - (on pikod's machine)\n", st.pin)
	return nil
}

func runPair(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", defaultDir(), "the config directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := load(*dir)
	if err != nil {
		return err
	}
	p := contracts.BrowserPairing{Version: contracts.BrowserPairingVersion, URL: st.cfg.url(), Token: st.token,
		Fingerprint: st.pin, Preset: st.cfg.Preset, Tools: st.cfg.tools()}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && stdout == io.Writer(os.Stdout) {
		fmt.Fprintln(stderr, "browser-bridge: the pairing below holds the bridge's token: pipe it to 'pikoctl mcp browser-remote -' rather than copying it into a file or a chat")
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	clear(b)
	return err
}

// exposed reports whether the bridge exposes tool.
func (c *config) exposed(tool string) bool { return slices.Contains(c.tools(), tool) }
