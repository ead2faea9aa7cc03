package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// serverCmd builds a command that calls method with {"server": SERVER} and
// prints the result with human (or raw with --json).
func (a *app) serverCmd(use, short, method string, result any, human func(*errWriter) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " SERVER",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if printed, err := a.callOrPrint(cmd.Context(), method, contracts.ServerParams{Server: args[0]}, result); printed || err != nil {
				return err
			}
			return human(&errWriter{w: a.stdout})
		},
	}
}

func (a *app) newConnectionCmds() []*cobra.Command {
	var conn contracts.ConnectResult
	var disc contracts.DisconnectResult
	var ping contracts.PingResult
	var cat contracts.CatalogResult
	return []*cobra.Command{
		a.subscribeCmd(contracts.ResourceOpSubscribe, "Hear of changes to a server's resource (events of kind resource)"),
		a.subscribeCmd(contracts.ResourceOpUnsubscribe, "Stop hearing of changes to a server's resource"),
		a.serverCmd("connect", "Connect a server now (a failed one is tried again)", contracts.MethodMCPConnect, &conn,
			func(w *errWriter) error {
				writeServerDetail(w, conn.Server)
				return w.err
			}),
		a.serverCmd("disconnect", "Disconnect a server and stop its processes", contracts.MethodMCPDisconnect, &disc,
			func(w *errWriter) error {
				if disc.WasConnected {
					fmt.Fprintf(w, "disconnected %s\n", clean(disc.Server))
				} else {
					fmt.Fprintf(w, "%s was not connected\n", clean(disc.Server))
				}
				return w.err
			}),
		a.newReconnectCmd(),
		a.serverCmd("ping", "Make one round trip to a server", contracts.MethodMCPPing, &ping,
			func(w *errWriter) error {
				fmt.Fprintf(w, "%s answered in %d ms (protocol %s)\n", clean(ping.Server), ping.RoundTripMs, clean(ping.ProtocolVersion))
				return w.err
			}),
		a.serverCmd("catalog", "List a server's tools, resources, templates and prompts", contracts.MethodMCPCatalog, &cat,
			func(w *errWriter) error {
				tw := a.tableOut()
				tw.err = w.err
				return writeCatalog(tw, &cat)
			}),
	}
}

func writeCatalog(w *errWriter, c *contracts.CatalogResult) error {
	if c.Complete {
		fmt.Fprintf(w, "%s: %d tools, %d resources, %d resource templates, %d prompts (complete)\n",
			clean(c.Server), len(c.Tools), len(c.Resources), len(c.ResourceTemplates), len(c.Prompts))
	} else {
		fmt.Fprintf(w, "%s: INCOMPLETE catalog (%s): %d tools, %d resources, %d resource templates, %d prompts so far\n",
			clean(c.Server), clean(c.Problem), len(c.Tools), len(c.Resources), len(c.ResourceTemplates), len(c.Prompts))
	}
	if len(c.Tools) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nTOOL\tNAME\tGRANT\tDESCRIPTION")
		for _, t := range c.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(w.clip(t.OriginalName, 40)), cell(t.Name), cell(grantCell(t)),
				cell(w.clip(firstLine(t.Description), 60)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(c.Excluded) > 0 {
		fmt.Fprintln(w, "\nLEFT OUT (cannot be called on this connection)")
		for _, e := range c.Excluded {
			fmt.Fprintf(w, "  %s  %s\n", cell(clip(e.Name, 40)), clip(e.Reason, 200))
		}
	}
	for _, l := range []struct {
		title string
		items []json.RawMessage
		key   string
	}{{"RESOURCES", c.Resources, "uri"}, {"RESOURCE TEMPLATES", c.ResourceTemplates, "uriTemplate"}, {"PROMPTS", c.Prompts, "name"}} {
		if len(l.items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", l.title)
		for _, it := range l.items {
			var m map[string]any
			_ = json.Unmarshal(it, &m)
			id, _ := m[l.key].(string)
			name, _ := m["name"].(string)
			if l.key == "name" {
				desc, _ := m["description"].(string)
				name = firstLine(desc)
			}
			fmt.Fprintf(w, "  %s  %s\n", cell(clip(id, 80)), clip(name, 60))
		}
	}
	return w.err
}

// grantCell shows a tool's grant, and a suspended one with why, and
// whether it runs as a task (creating one always needs approval).
func grantCell(t contracts.CatalogTool) string {
	g := t.Grant
	switch t.Pin {
	case contracts.PinChanged:
		g += " (" + t.SuspendedGrant + " suspended: definition changed)"
	case contracts.PinUnchecked:
		g += " (" + t.SuspendedGrant + " suspended: pin unreadable)"
	}
	switch t.TaskSupport {
	case "required":
		g += ", task only (approval)"
	case "optional":
		g += ", task optional"
	}
	return g
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// writeServerDetail prints one server's full status.
func writeServerDetail(w *errWriter, s contracts.ServerStatus) {
	fmt.Fprintf(w, "server:     %s\n", clean(s.ID))
	fmt.Fprintf(w, "state:      %s\n", clean(s.State))
	if s.Pause != nil {
		line := "since " + clean(s.Pause.Since) + ", connection " + clean(s.ConnectionState)
		if s.Pause.Reason != "" {
			line += ": " + clean(s.Pause.Reason)
		}
		fmt.Fprintf(w, "paused:     %s (every new call is held for the owner)\n", line)
	}
	fmt.Fprintf(w, "transport:  %s\n", clean(s.Transport))
	fmt.Fprintf(w, "enabled:    %s\n", yesNo(s.Enabled))
	if s.ProtocolVersion != "" {
		if s.Negotiated != "" {
			fmt.Fprintf(w, "protocol:   %s (%s)\n", clean(s.ProtocolVersion), clean(s.Negotiated))
		} else {
			fmt.Fprintf(w, "protocol:   %s\n", clean(s.ProtocolVersion))
		}
	}
	if s.ServerInfo != nil {
		fmt.Fprintf(w, "server is:  %s %s\n", clean(s.ServerInfo.Name), clean(s.ServerInfo.Version))
	}
	if s.PID != 0 {
		fmt.Fprintf(w, "pid:        %d (process group %d)\n", s.PID, s.PGID)
	}
	if s.ConnectedSince != "" {
		fmt.Fprintf(w, "connected:  since %s (generation %d)\n", clean(s.ConnectedSince), s.Generation)
	}
	if s.State == contracts.StateConnected || s.ConnectionState == contracts.StateConnected {
		fmt.Fprintf(w, "catalog:    %d tools, %d resources, %d templates, %d prompts", s.ToolCount, s.ResourceCount, s.TemplateCount, s.PromptCount)
		if s.CatalogComplete {
			fmt.Fprintln(w, " (complete)")
		} else {
			fmt.Fprintf(w, " (INCOMPLETE: %s)\n", clean(s.CatalogProblem))
		}
	}
	if len(s.ChangedTools) > 0 {
		fmt.Fprintf(w, "definition changed: %s (grants suspended until 'pikoctl mcp trust %s'; see 'pikoctl mcp diff %s')\n",
			clean(strings.Join(s.ChangedTools, ", ")), clean(s.ID), clean(s.ID))
	}
	if s.Credentials != "" {
		line := clean(s.Credentials)
		switch s.Credentials {
		case "reenter":
			line += " (stored for another command, arguments or URL: enter them again with 'pikoctl mcp secret " + clean(s.ID) + "')"
		case "unknown":
			line += " (the vault is locked or not answering)"
		}
		if s.CredentialGeneration > 0 {
			line += fmt.Sprintf(", generation %d", s.CredentialGeneration)
		}
		if s.ReconnectRequired {
			line += "; CHANGED since it connected: calls are refused until 'pikoctl mcp reconnect " + clean(s.ID) + "'"
		}
		fmt.Fprintf(w, "credentials: %s\n", line)
	}
	if o := s.OAuth; o != nil {
		writeOAuthStatus(w, s.ID, o)
	}
	if s.ExitStatus != "" {
		fmt.Fprintf(w, "last exit:  %s\n", clean(s.ExitStatus))
	}
	if s.LastError != "" {
		fmt.Fprintf(w, "last error: %s\n", clean(s.LastError))
	}
	for _, u := range s.Subscriptions {
		fmt.Fprintf(w, "subscribed: %s\n", clip(u, 200))
	}
	if d := s.Dropped; d != nil {
		fmt.Fprintf(w, "dropped:    %d notifications, %d log messages (over the server's budgets)\n", d.Notifications, d.LogMessages)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note:       %s\n", clean(n))
	}
	if s.StderrTail != "" {
		fmt.Fprintln(w, "stderr (last lines):")
		for _, line := range strings.Split(strings.TrimRight(s.StderrTail, "\n"), "\n") {
			fmt.Fprintf(w, "  | %s\n", clean(line))
		}
	}
}

// writeOAuthStatus prints a server's OAuth state.
func writeOAuthStatus(w *errWriter, id string, o *contracts.OAuthStatus) {
	line := clean(o.GrantType) + ", grant " + clean(o.Grant)
	switch o.Grant {
	case "none":
		line += " (sign in with 'pikoctl mcp auth " + clean(id) + "')"
	case "stale":
		line += " (made for other settings: not used; sign in again with 'pikoctl mcp auth " + clean(id) + "')"
	case "unknown":
		line += " (the vault is locked or not answering)"
	}
	fmt.Fprintf(w, "oauth:      %s\n", line)
	if g := o.Info; g != nil {
		writeGrant(w, "  ", g)
	}
	if p := o.Pending; p != nil {
		fmt.Fprintf(w, "  sign-in pending until %s ('pikoctl mcp auth %s --wait', or 'pikoctl mcp cancel %s')\n", clean(p.ExpiresAt), clean(id), clean(id))
	}
	if o.RequiredScope != "" {
		fmt.Fprintf(w, "  the server asks for scope: %s\n", clean(o.RequiredScope))
	}
}

// subscribeCmd builds subscribe and unsubscribe: extensions.mcp.resource
// with that op.
func (a *app) subscribeCmd(op, short string) *cobra.Command {
	return &cobra.Command{
		Use:   op + " SERVER URI",
		Short: short,
		Long: short + `.

The URI goes to the server exactly as given (pikod never fetches it). A
subscription lasts as long as the server's connection; each update
arrives as an extensions.mcp.event of kind "resource" to the socket
connections that watch. The server must offer subscriptions, and its
"resources" setting must not be false.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := contracts.ResourceSubscribeParams{Server: args[0], Op: op, URI: args[1]}
			var res contracts.ResourceSubscribeResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPResource, params, &res); printed || err != nil {
				return err
			}
			w := &errWriter{w: a.stdout}
			switch {
			case res.Subscribed && res.Changed:
				fmt.Fprintf(w, "subscribed %s to %s\n", clean(res.Server), clip(res.URI, 200))
			case res.Subscribed:
				fmt.Fprintf(w, "%s was already subscribed to %s\n", clean(res.Server), clip(res.URI, 200))
			case res.Changed:
				fmt.Fprintf(w, "unsubscribed %s from %s\n", clean(res.Server), clip(res.URI, 200))
			default:
				fmt.Fprintf(w, "%s was not subscribed to %s\n", clean(res.Server), clip(res.URI, 200))
			}
			return w.err
		},
	}
}

// newReconnectCmd disconnects and connects a server: a fresh process (or
// HTTP session) and catalog, with the current settings and credentials.
func (a *app) newReconnectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reconnect SERVER",
		Short: "Disconnect a server (stopping its processes) and connect it again",
		Long: `reconnect is disconnect followed by connect: the server starts afresh with
the current settings and credentials. Prepared actions bound to the old
connection become stale, as after any reconnect.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var disc contracts.DisconnectResult
			if err := c.Call(cmd.Context(), contracts.MethodMCPDisconnect, contracts.ServerParams{Server: args[0]}, &disc); err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.Call(cmd.Context(), contracts.MethodMCPConnect, contracts.ServerParams{Server: args[0]}, &raw); err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			var conn contracts.ConnectResult
			if err := json.Unmarshal(raw, &conn); err != nil {
				return fmt.Errorf("decoding the %s result: %w", contracts.MethodMCPConnect, err)
			}
			w := &errWriter{w: a.stdout}
			writeServerDetail(w, conn.Server)
			return w.err
		},
	}
}
