package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newBrowserRemoteCmd() *cobra.Command {
	var (
		id          string
		yes, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "browser-remote - [--id ID] [--yes] [--dry-run]",
		Short: "Pair with a desktop browser bridge: pairing JSON on stdin, the token to the vault, its certificate pinned",
		Long: `browser-remote reads the private pairing JSON that 'browser-bridge pair' printed
on your desktop from stdin (never from an argument) and adds or replaces the
server "browser-remote" (--id): a Streamable HTTP server at the bridge's
https URL, its TLS certificate pinned (tlsPin: the fingerprint of the
pairing; any other peer is refused), and the bridge's token stored in the
vault as its Authorization header, never in the settings.

The bridge's tools are selected; the ones of the preset's narrow set
(navigate, snapshot, click, type, screenshot...) run without approval, every
other one (those the desktop's owner allowed beyond the preset included)
needs your approval. The review lists them with the daemon's widens: lines;
you confirm it at your terminal, or with --yes after reading it.

  browser-bridge pair | ssh me@laptop ... | pikoctl mcp browser-remote -
  pikoctl mcp browser-remote - < /dev/stdin   (paste it, then Ctrl-D)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "-" {
				return usageErrorf("browser-remote reads the pairing from stdin: run 'pikoctl mcp browser-remote -' (a pairing in a file or an argument would leave its token behind)")
			}
			return a.runBrowserRemote(cmd.Context(), id, yes, dryRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&id, "id", contracts.BrowserRemoteID, "the server id")
	fl.BoolVar(&yes, "yes", false, "save without asking (after reading the review)")
	fl.BoolVar(&dryRun, "dry-run", false, "show the review and validate, save nothing (the token is not stored)")
	return cmd
}

func (a *app) runBrowserRemote(ctx context.Context, id string, yes, dryRun bool) error {
	raw, err := readInput(a.stdin, "the pairing on stdin")
	if err != nil {
		return err
	}
	pairing, err := contracts.ParseBrowserPairing(raw)
	clear(raw)
	if err != nil {
		return contracts.WithHint(err, "pipe the JSON 'browser-bridge pair' printed, unchanged")
	}
	srv := remoteServer(id, pairing)
	cur, rev, err := a.currentSettings(ctx)
	if err != nil {
		return err
	}
	next := &contracts.MCPSettings{Servers: slices.Clone(cur.Servers), Retention: cur.Retention}
	if i := serverIndex(next, srv.ID); i >= 0 {
		srv.Enabled = next.Servers[i].Enabled
		next.Servers[i] = srv
	} else {
		next.Servers = append(next.Servers, srv)
	}
	w := &errWriter{w: a.stdout}
	if a.jsonOut {
		w = &errWriter{w: a.stderr}
	}
	writeRemotePlan(w, &srv, pairing)
	if w.err != nil {
		return w.err
	}
	if err := a.saveSettings(ctx, next, rev, true); err != nil {
		return err
	}
	if dryRun {
		fmt.Fprintln(w, "\nnothing was saved and no token stored (--dry-run)")
		return nil
	}
	if !yes {
		// stdin carried the pairing: the answer comes from the terminal.
		tty, err := a.openTTY()
		if err != nil {
			return contracts.WithHint(errors.New("no terminal to confirm at: pairing a browser bridge needs you to confirm the review (nothing was saved, no token stored)"),
				"run it yourself in your terminal, or add --yes once you have read the review")
		}
		answer, err := tty.Ask(fmt.Sprintf("Save server %q with this pin and these grants? (y/N): ", srv.ID))
		tty.Close()
		if err != nil {
			return err
		}
		if s := strings.ToLower(strings.TrimSpace(answer)); s != "y" && s != "yes" {
			fmt.Fprintln(a.stdout, "not confirmed: nothing was saved, no token stored")
			return nil
		}
	}
	params := contracts.ConfigureParams{Extension: contracts.ExtensionMCP, Settings: next.Canonical(), ExpectRevision: rev}
	var res contracts.ConfigureResult
	if err := a.call(ctx, contracts.MethodConfigure, params, &res); err != nil {
		return err
	}
	// The token goes to the vault only after the entry it is bound to
	// (the URL and the pin) is saved.
	creds := map[string]any{"headers": map[string]string{"Authorization": "Bearer " + pairing.Token}}
	var sec contracts.SecretResult
	if err := a.call(ctx, contracts.MethodSecret, contracts.SecretParams{Extension: contracts.ExtensionMCP, Server: srv.ID, Credentials: creds}, &sec); err != nil {
		return fmt.Errorf("storing the bridge's token in the vault (the settings are saved, revision %d; pair again): %w", res.Revision, err)
	}
	if a.jsonOut {
		return printIndentedJSON(a.stdout, map[string]any{"configure": res, "secret": sec})
	}
	fmt.Fprintf(a.stdout, "saved mcp settings: revision %d (server %q pinned to %s, %d grants widened as reviewed); the token is in the vault (%s)\n",
		res.Revision, srv.ID, srv.TLSPin, len(res.Widened), strings.Join(sec.Fields, ", "))
	fmt.Fprintf(a.stdout, "connect it with 'pikoctl mcp connect %s'\n", srv.ID)
	return nil
}

// remoteServer is the entry of a paired bridge: https to its URL, the
// fingerprint pinned, private addresses allowed only for a loopback or
// private host (the bridge listens on loopback; a tunnel's near end is
// loopback too), the bridge's tools selected and the preset's narrow set
// delegated.
func remoteServer(id string, p contracts.BrowserPairing) contracts.ServerSettings {
	s := contracts.ServerSettings{ID: id, Transport: contracts.TransportHTTP, URL: p.URL, TLSPin: strings.ToLower(p.Fingerprint)}
	if u, err := url.Parse(p.URL); err == nil {
		host := u.Hostname()
		if ip, err := netip.ParseAddr(host); (err == nil && (ip.IsLoopback() || ip.IsPrivate())) || strings.EqualFold(host, "localhost") {
			s.AllowPrivateNetwork = true
		}
	}
	tools := slices.Clone(p.Tools)
	slices.Sort(tools)
	s.Tools = &tools
	s.AutonomousTools = p.Delegated()
	return s
}

// writeRemotePlan prints the review of a paired bridge's entry.
func writeRemotePlan(w *errWriter, s *contracts.ServerSettings, p contracts.BrowserPairing) {
	if preset, ok := contracts.FindBrowserPreset(p.Preset); ok {
		fmt.Fprintf(w, "browser bridge (preset %s, %s; tool names as of version %s) as server %q\n", preset.Name, preset.Package, preset.Version, s.ID)
	} else {
		fmt.Fprintf(w, "browser bridge with a server pikod does not know (preset generic) as server %q\n", s.ID)
	}
	fmt.Fprintf(w, "  url:       %s\n", clean(s.URL))
	fmt.Fprintf(w, "  tls pin:   %s (any other certificate is refused)\n", clean(s.TLSPin))
	fmt.Fprintln(w, "  token:     stored in the vault as the Authorization header, never in the settings")
	var gated []string
	for _, t := range *s.Tools {
		if !slices.Contains(s.AutonomousTools, t) {
			gated = append(gated, t)
		}
	}
	delegated := strings.Join(s.AutonomousTools, ", ")
	if delegated == "" {
		delegated = "none"
	}
	fmt.Fprintf(w, "  run without approval (autonomousTools): %s\n", clean(delegated))
	if len(gated) > 0 {
		fmt.Fprintf(w, "  need your approval: %s\n", clean(strings.Join(gated, ", ")))
	}
	fmt.Fprintln(w, "  (the bridge exposes only these; a tool it adds later is not selected)")
}
