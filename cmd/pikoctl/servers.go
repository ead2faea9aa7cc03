package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// The one-server commands (add, remove, enable, disable, grant, revoke,
// edit) are composed on the client: read extensions.settings, change one
// entry, send the whole object to extensions.configure with the revision
// that was read. The daemon validates exactly as for 'configure', a save
// made in between fails with revision_moved instead of being overwritten,
// and the result (including every widened grant) is printed the same way.

// currentSettings reads the saved mcp settings and their revision.
func (a *app) currentSettings(ctx context.Context) (*contracts.MCPSettings, uint64, error) {
	var res contracts.SettingsResult
	if err := a.call(ctx, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &res); err != nil {
		return nil, 0, err
	}
	var s contracts.MCPSettings
	if err := json.Unmarshal(res.Settings, &s); err != nil {
		return nil, 0, fmt.Errorf("decoding the saved settings: %w", err)
	}
	return &s, res.Revision, nil
}

// saveSettings sends s to extensions.configure, checked against rev, and
// prints the result.
func (a *app) saveSettings(ctx context.Context, s *contracts.MCPSettings, rev uint64, dryRun bool) error {
	params := contracts.ConfigureParams{
		Extension:      contracts.ExtensionMCP,
		Settings:       s.Canonical(),
		DryRun:         dryRun,
		ExpectRevision: rev,
	}
	var raw json.RawMessage
	if err := a.call(ctx, contracts.MethodConfigure, params, &raw); err != nil {
		return err
	}
	return a.printConfigureResult(raw)
}

// changeServer reads the settings, applies change to the entry of id and
// saves the result checked against the revision read.
func (a *app) changeServer(ctx context.Context, id string, dryRun bool, change func(*contracts.ServerSettings) error) error {
	s, rev, err := a.currentSettings(ctx)
	if err != nil {
		return err
	}
	i := serverIndex(s, id)
	if i < 0 {
		return serverNotFound(id)
	}
	if err := change(&s.Servers[i]); err != nil {
		return err
	}
	return a.saveSettings(ctx, s, rev, dryRun)
}

func serverIndex(s *contracts.MCPSettings, id string) int {
	return slices.IndexFunc(s.Servers, func(e contracts.ServerSettings) bool { return e.ID == id })
}

func serverNotFound(id string) error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", id),
		"'pikoctl mcp status' lists the configured servers; add one with 'pikoctl mcp add'")
}

func (a *app) newServerEditCmds() []*cobra.Command {
	return []*cobra.Command{
		a.newAddCmd(), a.newRemoveCmd(),
		a.newEnableCmd("enable", true), a.newEnableCmd("disable", false),
		a.newGrantCmd(), a.newRevokeCmd(), a.newEditCmd(),
	}
}

// addFlags are the fields 'mcp add' sets besides the transport.
type addFlags struct {
	stdio, disabled, allowPrivate, oauth, dryRun bool
	httpURL, sseURL, cwd, protocol               string
	transport, url                               string
	env, headers, roots                          []string
	tools, readOnly, autonomous                  []string
	toolsSet                                     bool
	timeoutMs, maxBytes                          int
}

func (a *app) newAddCmd() *cobra.Command {
	var f addFlags
	cmd := &cobra.Command{
		Use:   "add NAME [flags] [--] COMMAND [ARGS...] | add --transport http|sse NAME URL",
		Short: "Add one server to the settings",
		Long: `add appends one server entry to the mcp settings and saves them the way
'configure' does: validated strictly, checked against the revision it read,
with the same report (added, widens). It takes the shapes of 'claude mcp add'
and 'codex mcp add': a local program by default, whose command and arguments
follow the name (flags after the command belong to the command), or a remote
endpoint with --transport:

  pikoctl mcp add seq npx -y @modelcontextprotocol/server-sequential-thinking
  pikoctl mcp add gh -e GITHUB_PERSONAL_ACCESS_TOKEN=ghp_... -- docker run -i --rm ghcr.io/github/github-mcp-server
  pikoctl mcp add --transport http learn https://learn.example.com/mcp --header 'X-Team: blue'
  pikoctl mcp add files --read-only read_text_file -- npx -y @modelcontextprotocol/server-filesystem /srv/docs

The older forms still work: add ID --stdio [--] CMD..., add ID --http URL,
add ID --sse URL, --url URL.

Nothing is granted unless you say so (--read-only TOOL, --autonomous TOOL:
each is a widens: line). Values of -e and --header that look like
credentials (by name or shape) go to the vault, never into the settings,
and add says so; the rest stay in the settings.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flags after the name and before the command are ours; the
			// first word that is not one of them starts the command.
			if err := cmd.Flags().Parse(args[1:]); err != nil {
				return usageErrorf("%v", err)
			}
			rest := cmd.Flags().Args()
			if f.remote() && len(rest) > 1 {
				// A remote server's URL may come before more flags.
				if err := cmd.Flags().Parse(rest[1:]); err != nil {
					return usageErrorf("%v", err)
				}
				rest = append([]string{rest[0]}, cmd.Flags().Args()...)
			}
			args = append([]string{args[0]}, rest...)
			f.toolsSet = cmd.Flags().Changed("tools")
			srv, secrets, err := f.server(args)
			if err != nil {
				return err
			}
			s, rev, err := a.currentSettings(cmd.Context())
			if err != nil {
				return err
			}
			if serverIndex(s, srv.ID) >= 0 {
				return contracts.WithHint(
					contracts.Errorf(contracts.ErrAlreadyExists, contracts.ReasonServerExists, "server %q is already configured", srv.ID),
					"change it with 'pikoctl mcp edit "+srv.ID+"', or remove it first with 'pikoctl mcp remove "+srv.ID+"'")
			}
			s.Servers = append(s.Servers, srv)
			if err := a.saveSettings(cmd.Context(), s, rev, f.dryRun); err != nil {
				return err
			}
			return a.storeAddedSecrets(cmd.Context(), srv.ID, secrets, f.dryRun)
		},
	}
	// Flags before the name are cobra's; the rest are parsed above.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVarP(&f.transport, "transport", "t", "", "stdio (default), http or sse")
	fl.StringVar(&f.url, "url", "", "the endpoint URL (http, sse; or as the argument after the name)")
	fl.BoolVar(&f.stdio, "stdio", false, "run a local program (the default): CMD and ARGS follow the name")
	fl.StringVar(&f.httpURL, "http", "", "a Streamable HTTP endpoint URL (same as --transport http --url URL)")
	fl.StringVar(&f.sseURL, "sse", "", "a legacy HTTP+SSE endpoint URL (same as --transport sse --url URL)")
	fl.StringVar(&f.cwd, "cwd", "", "absolute working directory (stdio)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "an environment variable NAME=VALUE (stdio, repeatable); credentials go to the vault")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "a request header 'Name: value' or NAME=VALUE (http, sse, repeatable); credentials go to the vault")
	fl.BoolVar(&f.allowPrivate, "allow-private-network", false, "let the URL be http or resolve to a private address (http, sse)")
	fl.BoolVar(&f.oauth, "oauth", false, "sign in with OAuth (discovery and registration; http, sse)")
	fl.StringSliceVar(&f.tools, "tools", nil, "select only these tools, comma-separated (default: all; \"\" for none)")
	fl.StringArrayVar(&f.readOnly, "read-only", nil, "grant TOOL as read-only: it runs without approval (repeatable)")
	fl.StringArrayVar(&f.autonomous, "autonomous", nil, "grant TOOL as autonomous: it runs without approval (repeatable; needs --tools)")
	fl.StringArrayVar(&f.roots, "root", nil, "a file:// root offered to the server (repeatable)")
	fl.IntVar(&f.timeoutMs, "timeout-ms", 0, fmt.Sprintf("per-request timeout, %d..%d (default %d)", contracts.MinTimeoutMs, contracts.MaxTimeoutMs, contracts.DefaultTimeoutMs))
	fl.IntVar(&f.maxBytes, "max-bytes", 0, fmt.Sprintf("message and result cap, %d..%d (default %d)", contracts.MinMaxBytes, contracts.MaxMaxBytes, contracts.DefaultMaxBytes))
	fl.StringVar(&f.protocol, "protocol", "", "legacy, auto or a protocol version to pin")
	fl.BoolVar(&f.disabled, "disabled", false, "add it disabled (it does not connect at daemon start)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "validate and report the change without saving")
	return cmd
}

// remote reports whether the flags name a remote transport.
func (f *addFlags) remote() bool {
	return f.httpURL != "" || f.sseURL != "" || f.url != "" || f.transport == contracts.TransportHTTP || f.transport == contracts.TransportSSE
}

// transportOf resolves the transport and URL the flags and arguments
// give; rest is what follows the name.
func (f *addFlags) transportOf(name string, rest []string) (transport, url string, cmdArgs []string, err error) {
	var picked []string
	if f.stdio {
		picked = append(picked, contracts.TransportStdio)
	}
	if f.httpURL != "" {
		picked, url = append(picked, contracts.TransportHTTP), f.httpURL
	}
	if f.sseURL != "" {
		picked, url = append(picked, contracts.TransportSSE), f.sseURL
	}
	if f.transport != "" {
		if !slices.Contains([]string{contracts.TransportStdio, contracts.TransportHTTP, contracts.TransportSSE}, f.transport) {
			return "", "", nil, usageErrorf("--transport must be stdio, http or sse, not %q", f.transport)
		}
		picked = append(picked, f.transport)
	}
	slices.Sort(picked)
	picked = slices.Compact(picked)
	switch len(picked) {
	case 0:
		transport = contracts.TransportStdio
		if f.url != "" {
			transport = contracts.TransportHTTP
		}
	case 1:
		transport = picked[0]
	default:
		return "", "", nil, usageErrorf("the transport is given twice (%s): say it once", strings.Join(picked, ", "))
	}
	if f.url != "" {
		if url != "" && url != f.url {
			return "", "", nil, usageErrorf("two URLs given (%q and %q)", url, f.url)
		}
		url = f.url
	}
	if transport == contracts.TransportStdio {
		if url != "" {
			return "", "", nil, usageErrorf("a URL is for --transport http or sse, not a local program")
		}
		if len(rest) == 0 {
			return "", "", nil, usageErrorf("add %s needs the command to run: add %s [--] COMMAND [ARGS...] (or --transport http %s URL)", name, name, name)
		}
		return transport, "", rest, nil
	}
	if url == "" && len(rest) > 0 {
		url, rest = rest[0], rest[1:]
	}
	if url == "" {
		return "", "", nil, usageErrorf("--transport %s needs the URL: add --transport %s %s URL", transport, transport, name)
	}
	if len(rest) > 0 {
		// Not echoed: they may hold a credential.
		return "", "", nil, usageErrorf("%d unexpected arguments after the URL (only a local program takes a command)", len(rest))
	}
	return transport, url, nil, nil
}

// server builds the entry from the flags and the positional arguments,
// and the credential fields (env, headers) that go to the vault instead
// of the settings.
func (f *addFlags) server(args []string) (contracts.ServerSettings, map[string]map[string]string, error) {
	srv := contracts.ServerSettings{ID: args[0]}
	transport, url, cmdArgs, err := f.transportOf(args[0], args[1:])
	if err != nil {
		return srv, nil, err
	}
	srv.Transport, srv.URL = transport, url
	if transport == contracts.TransportStdio {
		srv.Command, srv.Args = cmdArgs[0], cmdArgs[1:]
		if len(srv.Args) == 0 {
			srv.Args = nil
		}
	}
	env, err := kvMap("--env", f.env)
	if err != nil {
		return srv, nil, err
	}
	headers, err := headerMap(f.headers)
	if err != nil {
		return srv, nil, err
	}
	if transport == contracts.TransportStdio && len(headers) > 0 {
		return srv, nil, usageErrorf("--header is for http and sse servers")
	}
	if transport != contracts.TransportStdio && len(env) > 0 {
		return srv, nil, usageErrorf("-e/--env is for local programs (stdio)")
	}
	// Credentials (by name or shape) go to the vault, as import files them.
	split := importedServer{Settings: srv}
	split.splitValues("env", env)
	split.splitValues("headers", headers)
	srv = split.Settings
	secrets := map[string]map[string]string{}
	for _, sec := range split.Secrets {
		if secrets[sec.Kind] == nil {
			secrets[sec.Kind] = map[string]string{}
		}
		secrets[sec.Kind][sec.Name] = sec.Template
	}
	srv.Cwd = f.cwd
	srv.AllowPrivateNetwork = f.allowPrivate
	if f.oauth {
		srv.OAuth = &contracts.OAuthSettings{}
	}
	if f.toolsSet {
		tools := []string{}
		for _, t := range f.tools {
			if t = strings.TrimSpace(t); t != "" {
				tools = append(tools, t)
			}
		}
		srv.Tools = &tools
	}
	srv.ReadOnlyTools, srv.AutonomousTools = f.readOnly, f.autonomous
	for _, r := range f.roots {
		srv.Roots = append(srv.Roots, contracts.Root{URI: r})
	}
	srv.TimeoutMs, srv.MaxBytes = f.timeoutMs, f.maxBytes
	if f.protocol != "" {
		p := &contracts.Protocol{Pin: f.protocol}
		if f.protocol == contracts.ProtocolLegacy || f.protocol == contracts.ProtocolAuto {
			p = &contracts.Protocol{Mode: f.protocol}
		}
		srv.Protocol = p
	}
	if f.disabled {
		no := false
		srv.Enabled = &no
	}
	return srv, secrets, nil
}

// headerMap reads --header values as 'Name: value' (curl's and claude's
// form) or NAME=VALUE.
func headerMap(hs []string) (map[string]string, error) {
	var kvs []string
	for _, h := range hs {
		colon, eq := strings.Index(h, ":"), strings.Index(h, "=")
		if colon > 0 && (eq < 0 || colon < eq) {
			kvs = append(kvs, strings.TrimSpace(h[:colon])+"="+strings.TrimSpace(h[colon+1:]))
			continue
		}
		kvs = append(kvs, h)
	}
	return kvMap("--header", kvs)
}

// storeAddedSecrets stores the credential fields add kept out of the
// settings, merged into what the vault holds for the server.
func (a *app) storeAddedSecrets(ctx context.Context, id string, secrets map[string]map[string]string, dryRun bool) error {
	if len(secrets) == 0 {
		return nil
	}
	var fields []string
	creds := map[string]any{}
	for kind, vals := range secrets {
		creds[kind] = vals
		for k := range vals {
			fields = append(fields, kind+"."+k)
		}
	}
	slices.Sort(fields)
	if dryRun {
		fmt.Fprintf(a.stderr, "would store %s for %s in the vault (credentials never go into the settings)\n", clean(strings.Join(fields, ", ")), clean(id))
		return nil
	}
	var res contracts.SecretResult
	if err := a.call(ctx, contracts.MethodSecret, contracts.SecretParams{Server: id, Credentials: creds, Merge: true}, &res); err != nil {
		return fmt.Errorf("the server is saved, but storing its credentials failed: %w (store them with 'pikoctl mcp secret %s')", err, id)
	}
	fmt.Fprintf(a.stderr, "stored %s for %s in the vault, not in the settings\n", clean(strings.Join(fields, ", ")), clean(id))
	return nil
}

// kvMap turns repeated NAME=VALUE flags into a map (nil for none).
func kvMap(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("%s: want NAME=VALUE", flag)
		}
		if _, dup := out[k]; dup {
			return nil, usageErrorf("%s: %q is given twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}

func (a *app) newRemoveCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove one server from the settings (it is disconnected)",
		Long: `remove deletes one server entry and saves the settings (validated, checked
against the revision it read). The server is disconnected. Its stored
credentials stay in the vault until you clear them ('pikoctl mcp secret ID'
with {}); receipts and actions stay in the ledger.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, rev, err := a.currentSettings(cmd.Context())
			if err != nil {
				return err
			}
			i := serverIndex(s, args[0])
			if i < 0 {
				return serverNotFound(args[0])
			}
			s.Servers = slices.Delete(s.Servers, i, i+1)
			return a.saveSettings(cmd.Context(), s, rev, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and report the change without saving")
	return cmd
}

func (a *app) newEnableCmd(use string, enable bool) *cobra.Command {
	var dryRun bool
	short := "Enable a server: it connects at daemon start"
	if !enable {
		short = "Disable a server: it is disconnected and does not connect until enabled"
	}
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.changeServer(cmd.Context(), args[0], dryRun, func(s *contracts.ServerSettings) error {
				if enable {
					s.Enabled = nil // the default
				} else {
					no := false
					s.Enabled = &no
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and report the change without saving")
	return cmd
}

func (a *app) newGrantCmd() *cobra.Command {
	var read, autonomous, sel, allReadOnly, yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "grant SERVER TOOL... --read|--autonomous|--select",
		Short: "Grant tools: run without approval (--read, --autonomous) or only select them (--select)",
		Long: `grant changes how tools of SERVER may run, and saves the settings the way
'configure' does (the report names each grant it widens):

  --read           readOnlyTools: runs without approval, with an mcp_read
                   receipt
  --autonomous     autonomousTools: runs without approval, with an
                   mcp_autonomous receipt (needs an explicit tools list)
  --select         selected but approval-required (removes a read or
                   autonomous grant)
  --all-read-only  with --read and no TOOL: every tool whose annotations
                   claim readOnlyHint. A server's claim is not a guarantee:
                   the tools are listed and you confirm them at the
                   terminal (or with --yes).

With an explicit tools list, each TOOL is added to it. A grant covers the
tool's definition as it is when you save; a changed definition suspends it
until 'pikoctl mcp trust'. A grant applies to the running server at once
("applied live"): nothing restarts, and its prepared actions stay
approvable.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{read, autonomous, sel} {
				if b {
					n++
				}
			}
			if n != 1 {
				return usageErrorf("give exactly one of --read, --autonomous or --select")
			}
			server, tools := args[0], args[1:]
			if allReadOnly {
				if !read || len(tools) > 0 {
					return usageErrorf("--all-read-only goes with --read and no TOOL: it grants the tools that claim readOnlyHint")
				}
				var err error
				if tools, err = a.claimedReadOnly(cmd.Context(), server, yes); err != nil || tools == nil {
					return err
				}
			}
			if len(tools) == 0 {
				return usageErrorf("name at least one TOOL (or give --read --all-read-only)")
			}
			change := contracts.GrantChangeSelect
			switch {
			case read:
				change = contracts.GrantChangeRead
			case autonomous:
				change = contracts.GrantChangeAutonomous
			}
			return a.changeServer(cmd.Context(), server, dryRun, func(s *contracts.ServerSettings) error {
				return changeGrants(s, tools, change, "then grant again")
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&read, "read", false, "run without approval, as a read (readOnlyTools)")
	fl.BoolVar(&autonomous, "autonomous", false, "run without approval (autonomousTools)")
	fl.BoolVar(&sel, "select", false, "select them, approval required")
	fl.BoolVar(&allReadOnly, "all-read-only", false, "with --read: the tools whose annotations claim readOnlyHint, listed for you to confirm")
	fl.BoolVar(&yes, "yes", false, "with --all-read-only: confirm the listed tools without asking")
	fl.BoolVar(&dryRun, "dry-run", false, "validate and report the change without saving")
	return cmd
}

// claimedReadOnly lists the selected tools of server whose annotations
// claim readOnlyHint and are not read-granted yet, and has the owner
// confirm them: at the terminal, or by --yes. It returns nil (and says so)
// when there is nothing to grant or the owner declines.
func (a *app) claimedReadOnly(ctx context.Context, server string, yes bool) ([]string, error) {
	var cat contracts.CatalogResult
	if err := a.call(ctx, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: server}, &cat); err != nil {
		return nil, err
	}
	var tools []string
	for _, t := range cat.Tools {
		var hints struct {
			ReadOnlyHint bool `json:"readOnlyHint"`
		}
		if json.Unmarshal(t.Annotations, &hints) == nil && hints.ReadOnlyHint && t.Selected && t.Grant != contracts.GrantRead {
			tools = append(tools, t.OriginalName)
		}
	}
	if len(tools) == 0 {
		fmt.Fprintf(a.stdout, "server %q has no tool claiming readOnlyHint that is not granted --read already: nothing to grant\n", server)
		return nil, nil
	}
	fmt.Fprintf(a.stderr, "These %d tools of %q claim readOnlyHint (the server's claim, not a guarantee: each will run without approval):\n", len(tools), server)
	for _, t := range tools {
		fmt.Fprintf(a.stderr, "  %s\n", clean(t))
	}
	if !cat.Complete {
		fmt.Fprintf(a.stderr, "(the catalog is incomplete: %s)\n", clean(cat.Problem))
	}
	if yes {
		return tools, nil
	}
	if !a.stdinIsTerminal() {
		return nil, contracts.WithHint(errors.New("stdin is not the terminal: confirming these grants needs you at the terminal (nothing was changed)"),
			"run it yourself in your terminal, or add --yes once you have read the list")
	}
	tty, err := a.openTTY()
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	answer, err := tty.Ask(fmt.Sprintf("Grant these %d tools --read? (y/N): ", len(tools)))
	if err != nil {
		return nil, err
	}
	if s := strings.ToLower(strings.TrimSpace(answer)); s != "y" && s != "yes" {
		fmt.Fprintln(a.stdout, "not confirmed: nothing was changed")
		return nil, nil
	}
	return tools, nil
}

func (a *app) newRevokeCmd() *cobra.Command {
	var deselect, dryRun bool
	cmd := &cobra.Command{
		Use:   "revoke SERVER TOOL... [--deselect]",
		Short: "Take back tools' grants: every call needs approval again",
		Long: `revoke removes each TOOL from readOnlyTools and autonomousTools, so each of
its calls becomes a prepared action again. With --deselect it is also
removed from the tools list and cannot be called at all (needs an explicit
list); its prepared actions become stale. The change applies to the
running server at once: nothing restarts.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tools := args[1:]
			change := contracts.GrantChangeRevoke
			if deselect {
				change = contracts.GrantChangeDeselect
			}
			return a.changeServer(cmd.Context(), args[0], dryRun, func(s *contracts.ServerSettings) error {
				return changeGrants(s, tools, change, "")
			})
		},
	}
	cmd.Flags().BoolVar(&deselect, "deselect", false, "also remove them from the tools list")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and report the change without saving")
	return cmd
}

// changeGrants applies change to each of tools in s
// (ServerSettings.ChangeGrant); a change that needs a tools list s lacks
// says where to write one and, with then, what to do after.
func changeGrants(s *contracts.ServerSettings, tools []string, change contracts.GrantChange, then string) error {
	for _, tool := range tools {
		if err := s.ChangeGrant(tool, change); err != nil {
			hint := "list the tools to select in 'pikoctl mcp edit " + s.ID + "' (\"tools\": [...])"
			if then != "" {
				hint += ", " + then
			}
			return contracts.WithHint(err, hint)
		}
	}
	return nil
}

func (a *app) newEditCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "edit [SERVER] [--from FILE]",
		Short: "Edit the settings (or one server's entry) in $EDITOR, validated before saving",
		Long: `edit writes the settings, or only SERVER's entry, to a private temporary
file, opens it in $VISUAL or $EDITOR (default vi), and saves what you wrote
the way 'configure' does, checked against the revision it read. If pikod
refuses it, the problems are shown and, at a terminal, you are asked to edit
again with your text kept; otherwise the file is kept and named so nothing is
lost. If someone saved the settings in between (revision_moved), your text is
kept in the named file.

--from FILE starts from FILE instead of the saved settings: the file edit
kept (the whole settings, or one server's entry; which one is read from
the file, or given as SERVER), or any file of that shape. The editor opens
on a copy of it and the save is checked against the current revision, so
a kept text is applied on top of whatever was saved since.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return a.edit(cmd.Context(), id, from)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "start from this file (one that edit kept) instead of the saved settings")
	return cmd
}

// editRetry is the command that edits the kept file at path again.
func editRetry(id, path string) string {
	if id != "" {
		return "pikoctl mcp edit " + render.ShellArg(id) + " --from " + render.ShellArg(path)
	}
	return "pikoctl mcp edit --from " + render.ShellArg(path)
}

// editFrom reads the text --from names and which entry it is: the whole
// settings (id "") or one server's. id is the SERVER given, if any.
func (a *app) editFrom(s *contracts.MCPSettings, id, from string) (string, []byte, error) {
	if from == "-" {
		return "", nil, usageErrorf("--from needs a file: the editor opens a copy of it")
	}
	text, err := os.ReadFile(from)
	if err != nil {
		return "", nil, fmt.Errorf("reading --from %s: %w", from, err)
	}
	var shape struct {
		Servers json.RawMessage `json:"servers"`
		ID      *string         `json:"id"`
	}
	// A file that is not valid JSON is still edited: the editor is the
	// place to fix it. Its shape then comes from SERVER: without one it
	// is the whole settings, as edit names the file it keeps.
	valid := json.Unmarshal(text, &shape) == nil
	whole := valid && len(shape.Servers) > 0
	switch {
	case id != "" && whole:
		return "", nil, contracts.WithHint(fmt.Errorf("%s holds the whole settings, not the entry of %s", from, id),
			"edit it as the whole settings: '"+editRetry("", from)+"'")
	case id != "" || whole || !valid:
	case shape.ID != nil && serverIndex(s, *shape.ID) >= 0:
		id = *shape.ID
	case shape.ID != nil:
		return "", nil, contracts.WithHint(fmt.Errorf("%s holds the entry of server %q, which is not configured", from, *shape.ID),
			"say which entry it replaces: 'pikoctl mcp edit SERVER --from "+render.ShellArg(from)+"', or add it with 'pikoctl mcp add'")
	default:
		return "", nil, contracts.WithHint(fmt.Errorf("%s holds neither the whole settings ({\"servers\":[...]}) nor a server's entry", from),
			"if it is one server's entry, say which: 'pikoctl mcp edit SERVER --from "+render.ShellArg(from)+"'")
	}
	if id != "" && serverIndex(s, id) < 0 {
		return "", nil, serverNotFound(id)
	}
	return id, text, nil
}

// edit runs the edit loop for the whole settings (id "") or one entry,
// starting from the saved settings or from the file from.
func (a *app) edit(ctx context.Context, id, from string) error {
	s, rev, err := a.currentSettings(ctx)
	if err != nil {
		return err
	}
	var start []byte
	if from != "" {
		if id, start, err = a.editFrom(s, id, from); err != nil {
			return err
		}
	}
	var orig []byte
	if id == "" {
		orig, err = indentJSON(s.Canonical())
	} else {
		i := serverIndex(s, id)
		if i < 0 {
			return serverNotFound(id)
		}
		one := contracts.MCPSettings{Servers: []contracts.ServerSettings{s.Servers[i]}}
		var wrapper struct {
			Servers []json.RawMessage `json:"servers"`
		}
		if err = json.Unmarshal(one.Canonical(), &wrapper); err == nil {
			orig, err = indentJSON(wrapper.Servers[0])
		}
	}
	if err != nil {
		return fmt.Errorf("formatting the settings: %w", err)
	}
	if start == nil {
		start = orig
	}
	dir, err := os.MkdirTemp("", "pikoctl-edit-")
	if err != nil {
		return fmt.Errorf("creating a private temporary directory: %w", err)
	}
	name := "mcp-settings.json"
	if id != "" {
		name = "mcp-server-" + id + ".json"
	}
	path := filepath.Join(dir, name)
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	if err := os.WriteFile(path, start, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	kept := func() string {
		keep = true
		return "nothing was saved; your text is kept in " + path + ": edit and save it again with '" + editRetry(id, path) + "'"
	}
	for {
		if err := a.runEditor(ctx, path); err != nil {
			keep = true
			return fmt.Errorf("%w (your text is kept in %s: edit it again with '%s')", err, path, editRetry(id, path))
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if bytes.Equal(bytes.TrimSpace(text), bytes.TrimSpace(orig)) {
			fmt.Fprintln(a.stdout, "no changes: nothing was saved")
			return nil
		}
		next, err := editedSettings(s, id, text)
		if err == nil {
			err = a.saveRaw(ctx, next, rev)
		}
		if err == nil {
			a.removeKeptEdit(from)
			return nil
		}
		var ce *contracts.Error
		moved := errors.As(err, &ce) && ce.Reason() == contracts.ReasonRevisionMoved
		if moved || !a.stdinIsTerminal() {
			// Said here: report prints a daemon error's own hint only.
			fmt.Fprintln(a.stderr, kept())
			if moved && id == "" {
				fmt.Fprintln(a.stderr, "it holds the whole settings as you read them: compare with 'pikoctl mcp config' so the other change is not undone")
			}
			return err
		}
		a.report(err, "pikoctl mcp edit")
		tty, terr := a.openTTY()
		if terr != nil {
			fmt.Fprintln(a.stderr, kept())
			return &statusExit{code: exitFailure, msg: "edit abandoned"}
		}
		ans, aerr := tty.Ask("edit again? [Y/n] ")
		tty.Close()
		if errors.Is(aerr, errInterrupted) {
			return &promptCancelled{what: kept()}
		}
		if aerr != nil || strings.HasPrefix(strings.ToLower(strings.TrimSpace(ans)), "n") {
			fmt.Fprintln(a.stderr, kept())
			return &statusExit{code: exitFailure, msg: "edit abandoned"}
		}
	}
}

// removeKeptEdit removes the file an earlier edit kept, once its text is
// saved: only a file in a directory edit made (pikoctl-edit-* in the
// temporary directory), with nothing else in it.
func (a *app) removeKeptEdit(from string) {
	if from == "" {
		return
	}
	abs, err := filepath.Abs(from)
	if err != nil {
		return
	}
	dir := filepath.Dir(abs)
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), "pikoctl-edit-") {
		return
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 1 && entries[0].Name() == filepath.Base(abs) {
		_ = os.RemoveAll(dir)
	}
}

// editedSettings turns the edited text into the settings object to send:
// the whole text, or the other entries plus the edited one.
func editedSettings(s *contracts.MCPSettings, id string, text []byte) (json.RawMessage, error) {
	obj, err := jsonObject(text, "the edited file")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return obj, nil
	}
	var servers []json.RawMessage
	var whole struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(s.Canonical(), &whole); err != nil {
		return nil, err
	}
	for i, e := range s.Servers {
		if e.ID == id {
			servers = append(servers, obj)
		} else {
			servers = append(servers, whole.Servers[i])
		}
	}
	return json.Marshal(map[string]any{"servers": servers})
}

// saveRaw sends settings as they are to extensions.configure.
func (a *app) saveRaw(ctx context.Context, settings json.RawMessage, rev uint64) error {
	var raw json.RawMessage
	params := contracts.ConfigureParams{Extension: contracts.ExtensionMCP, Settings: settings, ExpectRevision: rev}
	if err := a.call(ctx, contracts.MethodConfigure, params, &raw); err != nil {
		return err
	}
	return a.printConfigureResult(raw)
}

// runEditor runs $VISUAL or $EDITOR (split at spaces, no shell) on path
// with pikoctl's own terminal.
func (a *app) runEditor(ctx context.Context, path string) error {
	ed := a.getenv("VISUAL")
	if ed == "" {
		ed = a.getenv("EDITOR")
	}
	if ed == "" {
		ed = "vi"
	}
	argv := strings.Fields(ed)
	c := exec.CommandContext(ctx, argv[0], append(argv[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if f, ok := a.stdin.(*os.File); ok {
		c.Stdin = f
	}
	if err := c.Run(); err != nil {
		return fmt.Errorf("running the editor %q: %w", argv[0], err)
	}
	return nil
}

func indentJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
