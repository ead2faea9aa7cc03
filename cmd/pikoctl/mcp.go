package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newMCPCmd() *cobra.Command {
	mcp := groupCmd("mcp", "Configure MCP servers and show their state")
	mcp.AddCommand(a.newMCPConfigureCmd(), a.newMCPConfigCmd(), a.newMCPStatusCmd())
	mcp.AddCommand(a.newConnectionCmds()...)
	mcp.AddCommand(a.newCallCmds()...)
	mcp.AddCommand(a.newRequestCmds()...)
	mcp.AddCommand(a.newResourceCmds()...)
	mcp.AddCommand(a.newSkillCmds()...)
	mcp.AddCommand(a.newTaskCmds()...)
	mcp.AddCommand(a.newReceiptsCmds()...)
	mcp.AddCommand(a.newTrustCmds()...)
	mcp.AddCommand(a.newSecretCmd())
	mcp.AddCommand(a.newEventCmds()...)
	mcp.AddCommand(a.newAuthCmds()...)
	mcp.AddCommand(a.newServerEditCmds()...)
	mcp.AddCommand(a.newToolCmd(), a.newSearchCmd(), a.newImportCmd())
	mcp.AddCommand(a.newPauseCmds()...)
	mcp.AddCommand(a.newArtifactCmd(), a.newServeCmd(), a.newBrowserCmd(), a.newBrowserRemoteCmd())
	mcp.AddCommand(a.newInstallCmds()...)
	return mcp
}

func (a *app) newMCPConfigureCmd() *cobra.Command {
	var (
		dryRun         bool
		expectRevision uint64
	)
	cmd := &cobra.Command{
		Use:   "configure FILE|-",
		Short: "Replace the mcp settings with a JSON file (or stdin)",
		Long: `configure replaces the whole mcp settings object ({"servers":[...]}) with the
content of FILE, or of stdin for "-". pikod validates it strictly and saves
nothing if anything is wrong, listing every problem. 'pikoctl mcp config'
prints the current settings in the same form. The output of 'pikoctl --json
mcp config' ({"extension","revision","settings",...}) is accepted too: its
settings are saved only if the stored revision is still the one it names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.readFileArg(args[0])
			if err != nil {
				return err
			}
			if err := foreignSettings(args[0], in); err != nil {
				return err
			}
			what := "the settings in " + clean(args[0])
			if args[0] == "-" {
				what = "the settings on stdin"
			}
			settings, err := jsonObject(in, what)
			if err != nil {
				return err
			}
			if inner, rev, ok := unwrapSettingsResult(settings); ok {
				// 'pikoctl --json mcp config' output: its settings, saved
				// only if nobody changed them since it was read.
				settings = inner
				if expectRevision == 0 {
					expectRevision = rev
				}
			}
			params := contracts.ConfigureParams{
				Extension:      contracts.ExtensionMCP,
				Settings:       settings,
				DryRun:         dryRun,
				ExpectRevision: expectRevision,
			}
			var raw json.RawMessage
			if err := a.call(cmd.Context(), contracts.MethodConfigure, params, &raw); err != nil {
				return err
			}
			return a.printConfigureResult(raw)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and report the changes without saving")
	cmd.Flags().Uint64Var(&expectRevision, "expect-revision", 0, "fail unless the stored revision is this one (0: don't check)")
	return cmd
}

// foreignSettings refuses another client's MCP configuration (Claude
// Desktop's or Cursor's mcpServers, VS Code's servers, Codex's TOML), which
// configure would only reject field by field, and names the command that
// reads it: import.
func foreignSettings(name string, in []byte) error {
	plan, _, err := parseImport(name, in)
	if err != nil {
		return nil
	}
	what, how := clean(name), "add its servers with 'pikoctl mcp import "+clean(render.ShellArg(name))+"'"
	if name == "-" {
		what, how = "stdin", "pipe it to 'pikoctl mcp import -' instead to add its servers"
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonForeignSettings,
		"%s holds another client's MCP configuration (%s), not pikod settings ({\"servers\":[...]}): nothing was saved", what, plan.Format),
		how+" (a dry run that shows what would be added; --apply saves them)")
}

// printConfigureResult prints an extensions.configure result: raw with
// --json, else the outcome and one line per added, changed, removed and
// disconnected list and per widened grant.
func (a *app) printConfigureResult(raw json.RawMessage) error {
	if a.jsonOut {
		return printRaw(a.stdout, raw)
	}
	var res contracts.ConfigureResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decoding the extensions.configure result: %w", err)
	}
	switch {
	case res.DryRun && res.Unchanged:
		fmt.Fprintf(a.stdout, "dry run: mcp settings unchanged: revision %d\n", res.Revision)
	case res.DryRun:
		fmt.Fprintf(a.stdout, "dry run: mcp settings are valid and would be saved as revision %d\n", res.Revision)
	case res.Unchanged:
		fmt.Fprintf(a.stdout, "mcp settings unchanged: revision %d\n", res.Revision)
	default:
		fmt.Fprintf(a.stdout, "saved mcp settings: revision %d\n", res.Revision)
	}
	for _, l := range []struct {
		label string
		ids   []string
	}{
		{"added", res.Added},
		{"changed", res.Changed},
		{"removed", res.Removed},
		{"disconnected", res.Disconnected},
	} {
		if len(l.ids) > 0 {
			fmt.Fprintf(a.stdout, "  %s: %s\n", l.label, clean(strings.Join(l.ids, ", ")))
		}
	}
	if len(res.Live) > 0 {
		fmt.Fprintf(a.stdout, "  applied live: %s (connection kept, nothing restarted; prepared actions of selected tools stay approvable)\n",
			clean(strings.Join(res.Live, ", ")))
	}
	for _, w := range res.Widened {
		fmt.Fprintf(a.stdout, "  widens: %s\n", clean(w))
	}
	return nil
}

// unwrapSettingsResult recognises an extensions.settings result (what
// 'pikoctl --json mcp config' prints) and returns its settings and
// revision, so that output can be fed back to configure as it is.
func unwrapSettingsResult(obj json.RawMessage) (json.RawMessage, uint64, bool) {
	var r struct {
		Extension *string         `json:"extension"`
		Revision  *uint64         `json:"revision"`
		Settings  json.RawMessage `json:"settings"`
		UpdatedAt *string         `json:"updatedAt"`
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(obj, &keys) != nil || json.Unmarshal(obj, &r) != nil {
		return nil, 0, false
	}
	for k := range keys {
		switch k {
		case "extension", "revision", "settings", "updatedAt":
		default:
			return nil, 0, false
		}
	}
	if r.Extension == nil || *r.Extension != contracts.ExtensionMCP || r.Revision == nil || len(r.Settings) == 0 {
		return nil, 0, false
	}
	return r.Settings, *r.Revision, true
}

// readFileArg reads the file named by arg, or stdin for "-".
func (a *app) readFileArg(arg string) ([]byte, error) {
	if arg == "-" {
		return readInput(a.stdin, "stdin")
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, fmt.Errorf("opening the settings file: %w", err)
	}
	defer f.Close()
	return readInput(f, arg)
}

func (a *app) newMCPConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the saved mcp settings, ready to edit and pass to configure",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := contracts.SettingsParams{Extension: contracts.ExtensionMCP}
			var res contracts.SettingsResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodSettings, params, &res); printed || err != nil {
				return err
			}
			var out bytes.Buffer
			if err := json.Indent(&out, res.Settings, "", "  "); err != nil {
				return fmt.Errorf("formatting the settings: %w", err)
			}
			out.WriteByte('\n')
			_, err := a.stdout.Write(out.Bytes())
			return err
		},
	}
}

// maxErrorWidth bounds the LAST ERROR column; 'pikoctl --json mcp status'
// has the whole text.
const maxErrorWidth = 60

func (a *app) newMCPStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status [SERVER]",
		Short: "Show the state of every configured server (or of one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var params contracts.StatusParams
			if len(args) == 1 {
				params.Server = args[0]
			}
			var res contracts.StatusResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPStatus, params, &res); printed || err != nil {
				return err
			}
			if params.Server != "" && len(res.Servers) == 1 {
				w := &errWriter{w: a.stdout}
				writeServerDetail(w, res.Servers[0])
				return w.err
			}
			return writeStatus(a.tableOut(), &res)
		},
	}
}

// writeStatus prints res as a table followed by the vault line.
func writeStatus(w *errWriter, res *contracts.StatusResult) error {
	if len(res.Servers) == 0 {
		fmt.Fprintln(w, "no servers configured (see 'pikoctl mcp configure')")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tENABLED\tPROTOCOL\tPID\tTOOLS\tLAST ERROR")
		for _, s := range res.Servers {
			state := s.State
			if s.Pause != nil && s.ConnectionState != "" {
				state += " (" + s.ConnectionState + ")"
			}
			if len(s.ChangedTools) > 0 {
				state += " (definition changed)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				cell(s.ID), cell(state), cell(s.Transport), yesNo(s.Enabled),
				cell(s.ProtocolVersion), pidCell(s.PID), toolsCell(s), cell(w.clip(s.LastError, maxErrorWidth)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, s := range res.Servers {
			if len(s.ChangedTools) > 0 {
				fmt.Fprintf(w, "%s: definition changed: %s (grants suspended; see 'pikoctl mcp diff %s')\n",
					clean(s.ID), clean(strings.Join(s.ChangedTools, ", ")), clean(s.ID))
			}
		}
	}
	if res.Vault.Backend != "" {
		line := "vault: " + clean(res.Vault.Backend)
		if res.Vault.Note != "" {
			line += " (" + clean(res.Vault.Note) + ")"
		}
		fmt.Fprintln(w, line)
		if res.Vault.Warning != "" {
			fmt.Fprintln(w, "vault warning: "+clean(res.Vault.Warning))
		}
	}
	fmt.Fprintln(w, approvalsLine(res.Approvals))
	return w.err
}

// approvalsLine describes the owner approval gate.
func approvalsLine(st contracts.ApprovalsStatus) string {
	line := "approvals: terminal checks, no passphrase"
	if st.PassphraseSet {
		line = "approvals: terminal checks and passphrase"
	}
	if st.Failures > 0 {
		line += fmt.Sprintf("; %d wrong passphrase(s)", st.Failures)
	}
	if st.LockedUntil != "" {
		line += "; locked until " + clean(st.LockedUntil)
	}
	return line
}

// errWriter remembers the first write error so the table code can print
// freely and report once.
type errWriter struct {
	w   io.Writer
	err error
	// wide (--wide) turns clipping off; now is when relative ages count
	// from (zero: time.Now()).
	wide bool
	now  time.Time
}

func (b *errWriter) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.w.Write(p)
	b.err = err
	return n, err
}

// cell makes a daemon-supplied value safe for one table cell: no controls,
// no tabs that would split the cell, "-" for empty.
func cell(s string) string {
	s = clean(s)
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func pidCell(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// toolsCell shows the tool count, marked with "?" when the catalog is known
// to be incomplete, and "-" before the first catalog.
func toolsCell(s contracts.ServerStatus) string {
	switch {
	case s.State != contracts.StateConnected && s.ConnectionState != contracts.StateConnected && s.ToolCount == 0 && !s.CatalogComplete:
		return "-"
	case !s.CatalogComplete:
		return strconv.Itoa(s.ToolCount) + "?"
	}
	return strconv.Itoa(s.ToolCount)
}
