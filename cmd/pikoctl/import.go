package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// 'pikoctl mcp import' reads another client's MCP configuration and adds
// its servers. It runs on the client, composed of extensions.settings,
// extensions.configure and extensions.secret: the reference reserves the
// method name extensions.mcp.import for importing a receipt's artifact, so
// the configuration import is not a method of its own.

// Import formats.
const (
	formatMCPServers = "mcpServers (Claude Desktop, Cursor)"
	formatVSCode     = "VS Code (servers, inputs)"
	formatCodex      = "Codex ([mcp_servers] TOML)"
)

// importPlan is what an import would do.
type importPlan struct {
	Format  string
	Servers []importedServer
}

// importedServer is one entry of the foreign file mapped to a pikod server.
type importedServer struct {
	// Name is the entry's name in the file; Settings.ID the pikod id.
	Name     string
	Settings contracts.ServerSettings
	// Secrets are the credential fields (env.NAME, headers.NAME) kept out
	// of the settings, to be stored in the vault.
	Secrets []importSecret
	// Unsupported lists the fields not imported, with why.
	Unsupported []string
	// Notes are assumptions made while mapping.
	Notes []string
	// Skipped, when set, says why the entry is not imported at all.
	Skipped string
}

// importSecret is one credential field. Template is its value with
// ${input:ID} and ${env:NAME} references; a template without references
// is a literal value from the file.
type importSecret struct {
	Kind, Name string // "env" or "headers", and the variable or header name
	Template   string
	Refs       []string // the references in Template, in order
}

func (s importSecret) field() string { return s.Kind + "." + s.Name }

// refRE finds ${input:ID} and ${env:NAME} references (VS Code's syntax;
// Codex env_vars and bearer_token_env_var are mapped to it).
var refRE = regexp.MustCompile(`\$\{(input|env):([^}]+)\}`)

// otherVarRE finds any other ${...} variable, which pikod cannot expand.
var otherVarRE = regexp.MustCompile(`\$\{[^}]*\}`)

// vscodeInput is one entry of VS Code's "inputs".
type vscodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

func (a *app) newImportCmd() *cobra.Command {
	var (
		apply        bool
		allowHooks   bool
		only         []string
		allowPrivate []string
	)
	cmd := &cobra.Command{
		Use:   "import FILE [--apply] [--only NAME,...] [--allow-env-hooks] [--allow-private-network NAME,...]",
		Short: "Add the servers of a Claude Desktop, Cursor, VS Code or Codex configuration",
		Long: `import reads another client's MCP configuration and adds its servers to the
pikod settings. It understands:

  mcpServers              Claude Desktop (claude_desktop_config.json), Cursor (.cursor/mcp.json)
  servers + inputs        VS Code (.vscode/mcp.json, or "mcp" in settings.json; comments
                          and trailing commas are fine)
  [mcp_servers.NAME]      Codex (~/.codex/config.toml)

Without --apply it is a dry run: it prints each entry mapped to a pikod server
(ids made valid and unique), the fields it cannot import, the credentials it
would move to the vault, and pikod's validation of the result. Nothing is
saved. With --apply the servers are saved (checked against the revision
read), then the credentials are stored in the vault: values written in the
file (at a terminal each is confirmed with Enter, or replaced by what you
type, echo off; without one they are stored as written); ${input:ID} and
${env:NAME} references (and Codex env_vars,
bearer_token_env_var, env_http_headers) are asked for at the terminal with
echo off. Credential values are never written to the settings or printed.
Nothing is granted: every tool starts approval-required.

The review shows everything that would be saved: each command whole, its
args, cwd, every env name (credential values masked) and header. An entry
setting a loader or interpreter hook (LD_PRELOAD, LD_LIBRARY_PATH, DYLD_*,
NODE_OPTIONS, PYTHONPATH, PYTHONSTARTUP, PERL5OPT, RUBYOPT, BASH_ENV, ...)
is flagged, and --apply refuses to save it without --allow-env-hooks.

A remote entry whose URL is plain http or on this machine or a private
network (http://127.0.0.1:8080/mcp) is skipped, as pikod would refuse it;
--allow-private-network NAME sets allowPrivateNetwork on that entry (names
as in the file), shown in the review and in its widens: line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.readFileArg(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cur, rev, err := a.currentSettings(ctx)
			if err != nil {
				return err
			}
			plan, inputs, err := parseImport(args[0], in)
			if err != nil {
				return err
			}
			if err := allowPrivateNetwork(plan, allowPrivate, args[0]); err != nil {
				return err
			}
			if len(only) > 0 {
				plan.Servers = slices.DeleteFunc(plan.Servers, func(s importedServer) bool { return !slices.Contains(only, s.Name) })
				if len(plan.Servers) == 0 {
					return usageErrorf("--only %s: no such entry in %s", strings.Join(only, ","), args[0])
				}
			}
			assignIDs(plan, cur)
			validateImported(plan)
			next := &contracts.MCPSettings{Servers: slices.Clone(cur.Servers)}
			for _, s := range plan.Servers {
				if s.Skipped == "" {
					next.Servers = append(next.Servers, s.Settings)
				}
			}
			// With --json, stdout carries only the configure result.
			w := &errWriter{w: a.stdout}
			if a.jsonOut {
				w = &errWriter{w: a.stderr}
			}
			writeImportPlan(w, plan, inputs)
			if w.err != nil {
				return w.err
			}
			if len(next.Servers) == len(cur.Servers) {
				return errors.New("nothing to import: every entry was skipped")
			}
			if apply && !allowHooks {
				var hooked []string
				for _, s := range plan.Servers {
					if s.Skipped == "" && len(s.envHooks()) > 0 {
						hooked = append(hooked, fmt.Sprintf("%s (%s)", s.Name, strings.Join(s.envHooks(), ", ")))
					}
				}
				if len(hooked) > 0 {
					return contracts.WithHint(fmt.Errorf("not saved: %s set loader or interpreter hooks that run other code inside the server",
						clean(strings.Join(hooked, "; "))),
						"read the review above; if you trust them, run again with --allow-env-hooks, or leave those entries out with --only")
				}
			}
			if err := a.saveSettings(ctx, next, rev, !apply); err != nil {
				return err
			}
			if !apply {
				fmt.Fprintln(w, "\nnothing was saved: run again with --apply to add these servers")
				return nil
			}
			return a.storeImportedSecrets(ctx, plan, inputs)
		},
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "save the servers and store their credentials (default: dry run)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "import only these entries (names as in the file)")
	cmd.Flags().StringSliceVar(&allowPrivate, "allow-private-network", nil, "let these entries' URLs be http or on this machine or a private network (names as in the file)")
	cmd.Flags().BoolVar(&allowHooks, "allow-env-hooks", false, "save entries whose env sets loader or interpreter hooks (LD_PRELOAD, NODE_OPTIONS, ...) after reading the review")
	return cmd
}

// allowPrivateNetwork sets allowPrivateNetwork on the remote entries
// named (names as in file); a name that is not a remote entry of the file
// is a usage error.
func allowPrivateNetwork(plan *importPlan, names []string, file string) error {
	for _, name := range names {
		i := slices.IndexFunc(plan.Servers, func(s importedServer) bool { return s.Name == name })
		switch {
		case i < 0:
			return usageErrorf("--allow-private-network %s: no such entry in %s", name, file)
		case plan.Servers[i].Skipped != "":
			// Said in the review with the reason.
		case plan.Servers[i].Settings.Transport == contracts.TransportStdio:
			return usageErrorf("--allow-private-network %s: the entry runs a local program; allowPrivateNetwork is for http and sse servers", name)
		default:
			plan.Servers[i].Settings.AllowPrivateNetwork = true
		}
	}
	return nil
}

// parseImport detects the format of in and maps its entries.
func parseImport(name string, in []byte) (*importPlan, map[string]vscodeInput, error) {
	if strings.EqualFold(filepath.Ext(name), ".toml") || !looksJSON(in) {
		var doc map[string]any
		if _, err := toml.Decode(string(in), &doc); err != nil {
			return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport,
				"%s is neither JSON nor TOML: %v", name, err)
		}
		servers, ok := doc["mcp_servers"].(map[string]any)
		if !ok {
			return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport,
				"%s has no [mcp_servers] table (a Codex config.toml names each server [mcp_servers.NAME])", name)
		}
		plan := &importPlan{Format: formatCodex}
		for _, k := range sortedKeys(servers) {
			plan.Servers = append(plan.Servers, mapCodex(k, servers[k]))
		}
		return plan, nil, nil
	}
	clean, err := stripJSONC(in)
	if err != nil {
		return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport, "reading %s: %v", name, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(clean, &doc); err != nil {
		return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport, "reading %s: %v", name, err)
	}
	format := formatMCPServers
	raw, ok := doc["mcpServers"]
	var rawInputs json.RawMessage
	if !ok {
		format = formatVSCode
		if m, isMCP := doc["mcp"]; isMCP {
			// VS Code's user settings.json holds the same under "mcp".
			var inner map[string]json.RawMessage
			if json.Unmarshal(m, &inner) == nil {
				doc = inner
			}
		}
		raw, ok = doc["servers"]
		rawInputs = doc["inputs"]
	}
	if !ok {
		return nil, nil, contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport,
			"%s has neither \"mcpServers\" nor \"servers\"", name),
			"import reads Claude Desktop and Cursor (mcpServers), VS Code (servers) and Codex ([mcp_servers] TOML) files")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport, "reading %s: the servers are not an object of named entries", name)
	}
	inputs := map[string]vscodeInput{}
	if len(rawInputs) > 0 {
		var list []vscodeInput
		if err := json.Unmarshal(rawInputs, &list); err != nil {
			return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidImport, "reading %s: \"inputs\" is not a list of inputs", name)
		}
		for _, in := range list {
			inputs[in.ID] = in
		}
	}
	plan := &importPlan{Format: format}
	for _, k := range sortedKeys(entries) {
		plan.Servers = append(plan.Servers, mapJSONEntry(k, entries[k], format == formatVSCode))
	}
	return plan, inputs, nil
}

func looksJSON(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && (t[0] == '{' || bytes.HasPrefix(t, []byte("//")) || bytes.HasPrefix(t, []byte("/*")))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonEntry is one server of an mcpServers or VS Code servers object.
type jsonEntry struct {
	Type     string            `json:"type"`
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
}

// jsonKnown are the entry fields mapJSONEntry maps.
var jsonKnown = map[string]bool{"type": true, "command": true, "args": true, "env": true, "cwd": true, "url": true, "headers": true, "disabled": true}

// grantFields are other clients' auto-approval lists: never imported.
var grantFields = map[string]bool{"autoApprove": true, "alwaysAllow": true, "trust": true, "autoApproveTools": true}

func mapJSONEntry(name string, raw json.RawMessage, vscode bool) importedServer {
	out := importedServer{Name: name}
	var e jsonEntry
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		out.Skipped = "the entry is not a JSON object"
		return out
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		out.Skipped = "the entry has a field of the wrong type: " + err.Error()
		return out
	}
	if isBridgeEntry(e.Command, e.Args) {
		out.Skipped = bridgeSkipReason
		return out
	}
	for _, k := range sortedKeys(fields) {
		switch {
		case jsonKnown[k]:
		case grantFields[k]:
			out.Unsupported = append(out.Unsupported, k+" (grants are never imported: every tool starts approval-required)")
		case k == "envFile":
			out.Unsupported = append(out.Unsupported, k+" (pikod reads no env files: put the variables in env, secrets in the vault)")
		default:
			out.Unsupported = append(out.Unsupported, k)
		}
	}
	transport := strings.ToLower(e.Type)
	switch transport {
	case "", "stdio", "local":
		switch {
		case e.Command != "":
			transport = contracts.TransportStdio
		case e.URL != "":
			transport = contracts.TransportHTTP
			out.Notes = append(out.Notes, "no type given: url taken as Streamable HTTP (use 'pikoctl mcp edit' for legacy SSE)")
		default:
			out.Skipped = "neither command nor url"
			return out
		}
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		transport = contracts.TransportHTTP
	case "sse":
		transport = contracts.TransportSSE
	default:
		out.Skipped = fmt.Sprintf("type %q is not one pikod speaks (stdio, http, sse)", e.Type)
		return out
	}
	s := contracts.ServerSettings{Transport: transport}
	if e.Disabled {
		no := false
		s.Enabled = &no
	}
	if transport == contracts.TransportStdio {
		s.Command, s.Args, s.Cwd = e.Command, e.Args, e.Cwd
		if e.URL != "" || len(e.Headers) > 0 {
			out.Unsupported = append(out.Unsupported, "url/headers (not used by a stdio server)")
		}
	} else {
		s.URL = e.URL
		if e.Command != "" || len(e.Args) > 0 || len(e.Env) > 0 {
			out.Unsupported = append(out.Unsupported, "command/args/env (not used by a remote server)")
		}
	}
	out.Settings = s
	if transport == contracts.TransportStdio {
		out.splitValues("env", e.Env)
	} else {
		out.splitValues("headers", e.Headers)
	}
	if vscode && e.Cwd == "${workspaceFolder}" {
		out.Settings.Cwd = ""
		out.Notes = append(out.Notes, "cwd ${workspaceFolder} dropped: the server runs in its own directory (set an absolute cwd with 'pikoctl mcp edit')")
	}
	out.checkVariables()
	return out
}

// splitValues files env or header values: credentials (by name, value or
// reference) become vault secrets, the rest stays in the settings.
func (s *importedServer) splitValues(kind string, vals map[string]string) {
	for _, k := range sortedKeys(vals) {
		v := vals[k]
		refs := refRE.FindAllString(v, -1)
		secret := len(refs) > 0
		if !secret {
			if kind == "env" {
				secret = contracts.SecretLookingEnv(k, v)
			} else {
				secret = contracts.SecretLookingHeader(k, v)
			}
		}
		if secret {
			s.Secrets = append(s.Secrets, importSecret{Kind: kind, Name: k, Template: v, Refs: refs})
			continue
		}
		if kind == "env" {
			if s.Settings.Env == nil {
				s.Settings.Env = map[string]string{}
			}
			s.Settings.Env[k] = v
		} else {
			if s.Settings.Headers == nil {
				s.Settings.Headers = map[string]string{}
			}
			s.Settings.Headers[k] = v
		}
	}
}

// checkVariables skips an entry whose command, arguments, cwd or url use
// variables pikod cannot expand (it runs programs without a shell and
// expands nothing).
func (s *importedServer) checkVariables() {
	if s.Skipped != "" {
		return
	}
	check := func(field, v string) bool {
		if m := otherVarRE.FindString(v); m != "" {
			s.Skipped = fmt.Sprintf("%s uses %s, which pikod cannot expand (it runs programs without a shell): edit the file or add the server with 'pikoctl mcp add'", field, m)
			return true
		}
		return false
	}
	if check("command", s.Settings.Command) || check("cwd", s.Settings.Cwd) || check("url", s.Settings.URL) {
		return
	}
	for i, a := range s.Settings.Args {
		if check(fmt.Sprintf("args[%d]", i), a) {
			return
		}
	}
	for k, v := range s.Settings.Env {
		if check("env."+k, v) {
			return
		}
	}
	for k, v := range s.Settings.Headers {
		if check("headers."+k, v) {
			return
		}
	}
}

// codexKnown are the Codex server fields mapCodex maps.
var codexKnown = map[string]bool{
	"command": true, "args": true, "env": true, "env_vars": true, "cwd": true, "url": true,
	"bearer_token_env_var": true, "http_headers": true, "env_http_headers": true,
	"enabled": true, "tool_timeout_sec": true, "enabled_tools": true,
}

func mapCodex(name string, v any) importedServer {
	out := importedServer{Name: name}
	m, ok := v.(map[string]any)
	if !ok {
		out.Skipped = "the entry is not a table"
		return out
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	strs := func(k string) []string {
		var list []string
		if arr, ok := m[k].([]any); ok {
			for _, x := range arr {
				if s, ok := x.(string); ok {
					list = append(list, s)
				}
			}
		}
		return list
	}
	strMap := func(k string) map[string]string {
		var mm map[string]string
		if t, ok := m[k].(map[string]any); ok {
			mm = map[string]string{}
			for kk, vv := range t {
				if s, ok := vv.(string); ok {
					mm[kk] = s
				}
			}
		}
		return mm
	}
	if isBridgeEntry(str("command"), strs("args")) {
		out.Skipped = bridgeSkipReason
		return out
	}
	for _, k := range sortedKeys(m) {
		switch {
		case codexKnown[k]:
		case k == "disabled_tools":
			out.Unsupported = append(out.Unsupported, k+" (pikod selects tools by an allow list: list the tools to keep in \"tools\")")
		case k == "startup_timeout_sec" || k == "startup_timeout_ms":
			out.Unsupported = append(out.Unsupported, k+" (pikod bounds each request with timeoutMs)")
		default:
			out.Unsupported = append(out.Unsupported, k)
		}
	}
	s := contracts.ServerSettings{}
	switch {
	case str("command") != "":
		s.Transport, s.Command, s.Args, s.Cwd = contracts.TransportStdio, str("command"), strs("args"), str("cwd")
	case str("url") != "":
		s.Transport, s.URL = contracts.TransportHTTP, str("url")
	default:
		out.Skipped = "neither command nor url"
		return out
	}
	if e, ok := m["enabled"].(bool); ok && !e {
		no := false
		s.Enabled = &no
	}
	switch t := m["tool_timeout_sec"].(type) {
	case int64:
		s.TimeoutMs = int(t) * 1000
	case float64:
		s.TimeoutMs = int(t * 1000)
	}
	if s.TimeoutMs != 0 && (s.TimeoutMs < contracts.MinTimeoutMs || s.TimeoutMs > contracts.MaxTimeoutMs) {
		out.Unsupported = append(out.Unsupported, fmt.Sprintf("tool_timeout_sec (%d ms is outside pikod's %d..%d; the default applies)", s.TimeoutMs, contracts.MinTimeoutMs, contracts.MaxTimeoutMs))
		s.TimeoutMs = 0
	}
	if _, ok := m["enabled_tools"]; ok {
		tools := strs("enabled_tools")
		if tools == nil {
			tools = []string{}
		}
		s.Tools = &tools
		out.Notes = append(out.Notes, "enabled_tools became the tools list (selected, still approval-required)")
	}
	out.Settings = s
	if s.Transport == contracts.TransportStdio {
		env := strMap("env")
		if env == nil {
			env = map[string]string{}
		}
		for _, name := range strs("env_vars") {
			if _, set := env[name]; !set {
				env[name] = "${env:" + name + "}"
			}
		}
		out.splitValues("env", env)
	} else {
		hdrs := strMap("http_headers")
		if hdrs == nil {
			hdrs = map[string]string{}
		}
		if b := str("bearer_token_env_var"); b != "" {
			hdrs["Authorization"] = "Bearer ${env:" + b + "}"
		}
		for h, envName := range strMap("env_http_headers") {
			hdrs[h] = "${env:" + envName + "}"
		}
		out.splitValues("headers", hdrs)
		if len(strMap("env")) > 0 {
			out.Unsupported = append(out.Unsupported, "env (not used by a remote server)")
		}
	}
	out.checkVariables()
	return out
}

// assignIDs gives every entry a valid pikod id not used by the current
// settings or an earlier entry: lowercase, [a-z0-9-], a letter first, at
// most 32 characters, "-2", "-3"... on a clash.
func assignIDs(plan *importPlan, cur *contracts.MCPSettings) {
	used := map[string]bool{}
	for _, s := range cur.Servers {
		used[s.ID] = true
	}
	for i := range plan.Servers {
		if plan.Servers[i].Skipped == "" {
			if id := sameServer(cur, &plan.Servers[i].Settings); id != "" {
				plan.Servers[i].Skipped = "already configured as " + id
			}
		}
		base := idFromName(plan.Servers[i].Name)
		id := base
		for n := 2; used[id]; n++ {
			suffix := fmt.Sprintf("-%d", n)
			id = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "-") + suffix
		}
		used[id] = true
		plan.Servers[i].Settings.ID = id
	}
}

// sameServer returns the id of a configured server that runs the same
// program with the same arguments, or talks to the same URL: importing a
// file twice adds nothing twice.
func sameServer(cur *contracts.MCPSettings, s *contracts.ServerSettings) string {
	for _, c := range cur.Servers {
		if c.Transport != s.Transport {
			continue
		}
		if s.Transport == contracts.TransportStdio && c.Command == s.Command && slices.Equal(c.Args, s.Args) ||
			s.Transport != contracts.TransportStdio && c.URL == s.URL {
			return c.ID
		}
	}
	return ""
}

func idFromName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-")
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = "mcp-" + id
	}
	if len(id) > 32 {
		id = id[:32]
	}
	return strings.TrimRight(id, "-")
}

// validateImported checks each entry alone with the settings validator,
// so one bad entry is skipped with its problems rather than failing all.
func validateImported(plan *importPlan) {
	for i := range plan.Servers {
		s := &plan.Servers[i]
		if s.Skipped != "" {
			continue
		}
		one := contracts.MCPSettings{Servers: []contracts.ServerSettings{s.Settings}}
		if _, err := contracts.ParseMCPSettings(one.Canonical()); err != nil {
			var ps contracts.Problems
			if errors.As(err, &ps) {
				var msgs []string
				for _, p := range ps {
					msgs = append(msgs, p.Error())
				}
				s.Skipped = "pikod would refuse it: " + strings.Join(msgs, "; ")
				if s.Settings.Transport != contracts.TransportStdio && !s.Settings.AllowPrivateNetwork &&
					strings.Contains(s.Skipped, "allowPrivateNetwork") {
					s.Skipped += "; to import it for an endpoint you trust, run again with --allow-private-network " + render.ShellArg(s.Name)
				}
			} else {
				s.Skipped = "pikod would refuse it: " + err.Error()
			}
		}
	}
}

// writeImportPlan prints the mapping, never a credential value.
func writeImportPlan(w *errWriter, plan *importPlan, inputs map[string]vscodeInput) {
	fmt.Fprintf(w, "format: %s\n", plan.Format)
	for _, s := range plan.Servers {
		fmt.Fprintf(w, "\n%s", clean(s.Name))
		if s.Skipped != "" {
			fmt.Fprintf(w, ": SKIPPED: %s\n", clean(s.Skipped))
			continue
		}
		st := s.Settings
		fmt.Fprintf(w, " -> %s (%s)\n", clean(st.ID), st.Transport)
		// Everything that would be saved, whole: what runs, where, with
		// which environment (secret values stay masked).
		if st.Transport == contracts.TransportStdio {
			fmt.Fprintf(w, "  command: %s\n", clean(st.Command))
			if len(st.Args) > 0 {
				args, _ := json.Marshal(st.Args)
				fmt.Fprintf(w, "  args: %s\n", clean(string(args)))
			}
			if st.Cwd != "" {
				fmt.Fprintf(w, "  cwd: %s\n", clean(st.Cwd))
			}
		} else {
			fmt.Fprintf(w, "  url: %s\n", clean(st.URL))
			if st.AllowPrivateNetwork {
				fmt.Fprintln(w, "  allowPrivateNetwork: yes (--allow-private-network): the URL may be http, on this machine or on a private network")
			}
			for _, k := range sortedKeys(st.Headers) {
				fmt.Fprintf(w, "  header: %s: %s\n", clean(k), clean(st.Headers[k]))
			}
		}
		for _, k := range sortedKeys(st.Env) {
			fmt.Fprintf(w, "  env: %s=%s\n", clean(k), clean(st.Env[k]))
		}
		for _, sec := range s.Secrets {
			if sec.Kind == "env" {
				fmt.Fprintf(w, "  env: %s=(a credential, to the vault, not shown)\n", clean(sec.Name))
			}
		}
		for _, h := range s.envHooks() {
			fmt.Fprintf(w, "  WARNING: env %s is a loader or interpreter hook: it runs other code inside the server; saving it needs --allow-env-hooks\n", clean(h))
		}
		if !st.IsEnabled() {
			fmt.Fprintln(w, "  disabled (as in the file)")
		}
		for _, sec := range s.Secrets {
			if len(sec.Refs) == 0 {
				fmt.Fprintf(w, "  to the vault: %s (value from the file, not shown)\n", clean(sec.field()))
				continue
			}
			var asks []string
			for _, r := range sec.Refs {
				asks = append(asks, refPrompt(r, inputs))
			}
			fmt.Fprintf(w, "  to the vault: %s (asked at the terminal: %s)\n", clean(sec.field()), clean(strings.Join(asks, "; ")))
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  note: %s\n", clean(n))
		}
		for _, u := range s.Unsupported {
			fmt.Fprintf(w, "  not imported: %s\n", clean(u))
		}
	}
	fmt.Fprintln(w, "\nnothing is granted: every tool starts approval-required ('pikoctl mcp grant' changes that)")
	fmt.Fprintln(w)
}

// envHookNames are environment variables that make a program load or run
// other code (dynamic loader preloads and paths, interpreter start-up
// options and files); envHookPrefixes the families of them.
var (
	envHookNames = []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "NODE_OPTIONS", "NODE_PATH",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
		"BASH_ENV", "ENV", "ZDOTDIR", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GIT_SSH_COMMAND",
		"GCONV_PATH", "MALLOC_CONF", "ELECTRON_RUN_AS_NODE"}
	envHookPrefixes = []string{"DYLD_", "LD_"}
)

// isEnvHook reports whether an environment variable named name makes the
// server's program load or run other code.
func isEnvHook(name string) bool {
	up := strings.ToUpper(name)
	if slices.Contains(envHookNames, up) {
		return true
	}
	for _, p := range envHookPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return false
}

// envHooks lists the entry's environment variables (settings and
// credentials alike) that are loader or interpreter hooks.
func (s *importedServer) envHooks() []string {
	var out []string
	for _, k := range sortedKeys(s.Settings.Env) {
		if isEnvHook(k) {
			out = append(out, k)
		}
	}
	for _, sec := range s.Secrets {
		if sec.Kind == "env" && isEnvHook(sec.Name) && !slices.Contains(out, sec.Name) {
			out = append(out, sec.Name)
		}
	}
	return out
}

// refPrompt describes one reference for the owner.
func refPrompt(ref string, inputs map[string]vscodeInput) string {
	m := refRE.FindStringSubmatch(ref)
	if m == nil {
		return ref
	}
	if m[1] == "env" {
		return "the value of $" + m[2] + " (" + ref + ")"
	}
	if in, ok := inputs[m[2]]; ok && in.Description != "" {
		return in.Description + " (" + ref + ")"
	}
	return ref
}

// storeImportedSecrets stores each saved server's credentials: literal
// values from the file, references asked at the terminal. What cannot be
// stored is named with the command that stores it.
func (a *app) storeImportedSecrets(ctx context.Context, plan *importPlan, inputs map[string]vscodeInput) error {
	answers := map[string]string{} // one answer per reference, reused across servers
	var (
		tty    ttyIO
		noTTY  bool
		getTTY = func() ttyIO {
			if tty == nil && !noTTY {
				t, err := a.openTTY()
				if err != nil {
					noTTY = true
					return nil
				}
				tty = t
			}
			return tty
		}
	)
	defer func() {
		if tty != nil {
			tty.Close()
		}
	}()
	var missing []string
	for i, s := range plan.Servers {
		if s.Skipped != "" || len(s.Secrets) == 0 {
			continue
		}
		// askErr is a failed question: a Ctrl-C says what is saved and
		// what is left to store.
		askErr := func(err error) error {
			if errors.Is(err, errInterrupted) {
				var left []string
				for _, r := range plan.Servers[i:] {
					if r.Skipped == "" && len(r.Secrets) > 0 {
						left = append(left, r.Settings.ID)
					}
				}
				return &promptCancelled{what: fmt.Sprintf("the servers are saved, but the credentials of %s were not stored: store them with 'pikoctl mcp secret SERVER'",
					strings.Join(left, ", "))}
			}
			return fmt.Errorf("reading a credential at the terminal: %w", err)
		}
		creds := map[string]map[string]string{}
		var left []string
		for _, sec := range s.Secrets {
			val := sec.Template
			ok := val != "" // an empty value in the file has nothing to store
			if !ok {
				left = append(left, sec.field())
				continue
			}
			if len(sec.Refs) == 0 {
				// A value written in the file: confirmed at the terminal,
				// where the owner may also type another (Enter keeps it).
				if t := getTTY(); t != nil {
					v, err := t.AskHidden(fmt.Sprintf("%s for %s: Enter stores the value from the file, or type another (hidden): ", sec.field(), s.Settings.ID))
					if err != nil {
						return askErr(err)
					}
					if v != "" {
						val = v
					}
				}
			}
			for _, r := range sec.Refs {
				ans, seen := answers[r]
				if !seen {
					t := getTTY()
					if t == nil {
						ok = false
						break
					}
					v, err := t.AskHidden(fmt.Sprintf("%s for %s %s (hidden; empty skips): ", refPrompt(r, inputs), s.Settings.ID, sec.field()))
					if err != nil {
						return askErr(err)
					}
					ans = v
					answers[r] = ans
				}
				if ans == "" {
					ok = false
					break
				}
				val = strings.ReplaceAll(val, r, ans)
			}
			if !ok {
				left = append(left, sec.field())
				continue
			}
			if creds[sec.Kind] == nil {
				creds[sec.Kind] = map[string]string{}
			}
			creds[sec.Kind][sec.Name] = val
		}
		if len(creds) > 0 {
			obj := map[string]any{}
			for k, v := range creds {
				obj[k] = v
			}
			var res contracts.SecretResult
			if err := a.call(ctx, contracts.MethodSecret, contracts.SecretParams{Extension: contracts.ExtensionMCP, Server: s.Settings.ID, Credentials: obj}, &res); err != nil {
				return fmt.Errorf("storing the credentials of %s (the server is saved; store them with 'pikoctl mcp secret %s'): %w", s.Settings.ID, s.Settings.ID, err)
			}
			fmt.Fprintf(a.stdout, "stored %s for %s in the vault\n", clean(strings.Join(res.Fields, ", ")), clean(res.Server))
			if res.Warning != "" {
				fmt.Fprintf(a.stderr, "warning: %s\n", clean(res.Warning))
			}
		}
		if len(left) > 0 {
			missing = append(missing, fmt.Sprintf("%s: %s", s.Settings.ID, strings.Join(left, ", ")))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintln(a.stdout, "not stored (no answer at a terminal); store them with 'pikoctl mcp secret SERVER' as one JSON object including the stored ones:")
		for _, m := range missing {
			fmt.Fprintf(a.stdout, "  %s\n", clean(m))
		}
	}
	return nil
}

// stripJSONC turns JSON with comments and trailing commas (VS Code's
// JSONC) into JSON: // and /* */ comments outside strings are removed,
// and a comma followed only by whitespace before } or ] is dropped.
func stripJSONC(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			j := i + 1
			for ; j < len(in); j++ {
				if in[j] == '\\' {
					j++
					continue
				}
				if in[j] == '"' {
					break
				}
			}
			if j >= len(in) {
				return nil, errors.New("a string is not closed")
			}
			out = append(out, in[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
			if i < len(in) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			end := bytes.Index(in[i+2:], []byte("*/"))
			if end < 0 {
				return nil, errors.New("a /* comment is not closed")
			}
			out = append(out, ' ')
			i += 2 + end + 1
		case c == '}' || c == ']':
			// Drop a trailing comma (and the whitespace after it).
			k := len(out) - 1
			for k >= 0 && (out[k] == ' ' || out[k] == '\t' || out[k] == '\n' || out[k] == '\r') {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out = append(out[:k], out[k+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
