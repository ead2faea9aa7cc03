package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// 'pikoctl mcp install HOST' writes an entry running 'pikoctl mcp serve'
// into an MCP host's own configuration file, and 'pikoctl mcp uninstall
// HOST' takes it out again. Both run on the client and edit the host's
// file as text (hostconf.go); only --replace-imported asks pikod, for its
// settings. docs/hosts.md describes every host.

// hostSpec is one MCP host and where its configuration lives.
type hostSpec struct {
	name, title string
	// format: 'j' JSON, 'c' JSONC (comments, trailing commas), 't' TOML.
	format byte
	// container is the key holding the named servers.
	container string
	// entryType is the "type" the host's entries carry ("" for none).
	entryType string
	// project is the file for --scope project, relative to the current
	// directory ("" when the host has no project configuration).
	project string
	user    func(a *app) (string, error)
}

var installHosts = []hostSpec{
	{name: "claude-code", title: "Claude Code", format: 'j', container: "mcpServers", entryType: "stdio", project: ".mcp.json",
		user: func(a *app) (string, error) { return a.inHome(".claude.json") }},
	{name: "claude-desktop", title: "Claude Desktop", format: 'j', container: "mcpServers",
		user: func(a *app) (string, error) {
			return a.appConfigFile("Claude", "claude_desktop_config.json")
		}},
	{name: "cursor", title: "Cursor", format: 'j', container: "mcpServers", project: filepath.Join(".cursor", "mcp.json"),
		user: func(a *app) (string, error) { return a.inHome(".cursor", "mcp.json") }},
	{name: "vscode", title: "VS Code", format: 'c', container: "servers", entryType: "stdio", project: filepath.Join(".vscode", "mcp.json"),
		user: func(a *app) (string, error) { return a.appConfigFile(filepath.Join("Code", "User"), "mcp.json") }},
	{name: "codex", title: "Codex", format: 't', container: "mcp_servers", project: filepath.Join(".codex", "config.toml"),
		user: func(a *app) (string, error) {
			if d := a.getenv("CODEX_HOME"); d != "" {
				abs, err := filepath.Abs(d)
				if err != nil {
					return "", fmt.Errorf("resolving CODEX_HOME: %w", err)
				}
				return filepath.Join(abs, "config.toml"), nil
			}
			return a.inHome(".codex", "config.toml")
		}},
}

func hostNames() []string {
	var names []string
	for _, h := range installHosts {
		names = append(names, h.name)
	}
	return names
}

func lookupHost(name string) (*hostSpec, error) {
	for i := range installHosts {
		if installHosts[i].name == name {
			return &installHosts[i], nil
		}
	}
	return nil, usageErrorf("unknown host %q: choose one of %s", name, strings.Join(hostNames(), ", "))
}

func (a *app) inHome(parts ...string) (string, error) {
	home, err := a.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{home}, parts...)...), nil
}

// appConfigFile is a desktop application's per-user configuration file:
// ~/Library/Application Support/DIR/FILE on macOS, $XDG_CONFIG_HOME/DIR/FILE
// (default ~/.config) on Linux.
func (a *app) appConfigFile(dir, file string) (string, error) {
	switch a.goos {
	case "darwin":
		return a.inHome("Library", "Application Support", dir, file)
	case "linux":
		if x := a.getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			return filepath.Join(x, dir, file), nil
		}
		return a.inHome(".config", dir, file)
	}
	return "", contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsupportedOS,
		"finding the configuration file on %s: only linux and darwin are supported", a.goos)
}

// hostPath is the configuration file of h for scope.
func (a *app) hostPath(h *hostSpec, scope string) (string, error) {
	switch scope {
	case "user":
		return h.user(a)
	case "project":
		if h.project == "" {
			return "", usageErrorf("%s has no project configuration: use --scope user", h.name)
		}
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the current directory for --scope project: %w", err)
		}
		return filepath.Join(wd, h.project), nil
	}
	return "", usageErrorf("--scope %q: use user or project", scope)
}

// hostEntry is one named server of a host file.
type hostEntry struct {
	Name string
	// Raw is the entry's text: the JSON value, or the TOML tables.
	Raw string
	// Value is the decoded entry, compared to tell "unchanged".
	Value    any
	Command  string
	Args     []string
	Editable bool // false: a TOML inline table or dotted keys
	isBridge bool
}

// hostEditor is a host file being edited (hostconf.go).
type hostEditor interface {
	entries() ([]hostEntry, error)
	set(name, command string, args []string) error
	want(name, command string, args []string) any
	restore(name, raw string) error
	remove(name string) error
	bytes() []byte
	// imported maps an entry as 'mcp import' would.
	imported(e hostEntry) importedServer
}

type jsonHostEditor struct {
	*jsonEditor
	h *hostSpec
}

// jsonBridge is the bridge entry of a JSON host, in the order written.
type jsonBridge struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func (ed jsonHostEditor) value(command string, args []string) jsonBridge {
	return jsonBridge{Type: ed.h.entryType, Command: command, Args: args}
}

func (ed jsonHostEditor) set(name, command string, args []string) error {
	return ed.jsonEditor.set(name, ed.value(command, args))
}

func (ed jsonHostEditor) want(_, command string, args []string) any {
	v, _ := decodeJSONValue([]byte(compactJSON(ed.value(command, args))))
	return v
}

func (ed jsonHostEditor) imported(e hostEntry) importedServer {
	raw, err := stripJSONC([]byte(e.Raw))
	if err != nil {
		return importedServer{Name: e.Name, Skipped: err.Error()}
	}
	return mapJSONEntry(e.Name, raw, ed.h.format == 'c')
}

type tomlHostEditor struct{ *tomlEditor }

func (ed tomlHostEditor) want(name, command string, args []string) any {
	doc, _ := decodeTOML([]byte(tomlBlock(name, command, args, "\n")))
	servers, _ := doc["mcp_servers"].(map[string]any)
	return servers[name]
}

func (ed tomlHostEditor) imported(e hostEntry) importedServer { return mapCodex(e.Name, e.Value) }

func (h *hostSpec) formatName() string {
	switch h.format {
	case 'c':
		return "JSONC"
	case 't':
		return "TOML"
	}
	return "JSON"
}

// openEditor parses src as h's file. A file that does not parse is an
// error naming the line and column; nothing is written.
func (h *hostSpec) openEditor(path string, src []byte) (hostEditor, []hostEntry, error) {
	var (
		ed  hostEditor
		err error
	)
	if h.format == 't' {
		var t *tomlEditor
		if t, err = newTOMLEditor(src); err == nil {
			ed = tomlHostEditor{t}
		}
	} else {
		var j *jsonEditor
		if j, err = newJSONEditor(src, h.format == 'c', h.container); err == nil {
			ed = jsonHostEditor{j, h}
		}
	}
	if err != nil {
		return nil, nil, contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidHostFile,
			"cannot edit %s (%s's %s configuration): %v; nothing was written", path, h.title, h.formatName(), err),
			"fix the file (or move it away to start a new one) and run the command again")
	}
	ents, err := ed.entries()
	if err != nil {
		return nil, nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidHostFile, "reading %s: %v; nothing was written", path, err)
	}
	for i := range ents {
		ents[i].isBridge = isBridgeEntry(ents[i].Command, ents[i].Args)
	}
	return ed, ents, nil
}

func findEntry(ents []hostEntry, name string) *hostEntry {
	for i := range ents {
		if ents[i].Name == name {
			return &ents[i]
		}
	}
	return nil
}

// installOptions are the flags of install and uninstall.
type installOptions struct {
	scope           string
	dryRun          bool
	name            string
	force           bool
	replaceImported bool
}

func (o *installOptions) flags(cmd *cobra.Command, install bool) {
	f := cmd.Flags()
	f.StringVar(&o.scope, "scope", "user", "user (your own configuration) or project (the current directory's)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would change and write nothing")
	f.StringVar(&o.name, "name", "pikod", "the entry's name in the host's configuration")
	if install {
		f.BoolVar(&o.force, "force", false, "replace an entry of the same name that is not pikod's bridge")
		f.BoolVar(&o.replaceImported, "replace-imported", false, "also remove the entries 'mcp import' brought into pikod (uninstall restores them)")
	}
}

func (o *installOptions) check() error {
	if strings.TrimSpace(o.name) == "" || strings.ContainsAny(o.name, "\x00\n\r") {
		return usageErrorf("--name %q: give the entry a non-empty one-line name", o.name)
	}
	return nil
}

func (a *app) newInstallCmds() []*cobra.Command {
	var iopts, uopts installOptions
	hosts := strings.Join(hostNames(), ", ")
	install := &cobra.Command{
		Use:   "install HOST [--scope user|project] [--dry-run] [--name NAME] [--replace-imported] [--force]",
		Short: "Add pikod (pikoctl mcp serve) to an MCP host's configuration: " + hosts,
		Long: `install writes an entry running this pikoctl's 'mcp serve' (by its absolute
path, with --instance or --socket when given) into the host's own
configuration file, in the host's format:

  claude-code     ~/.claude.json (user), .mcp.json (project)
  claude-desktop  claude_desktop_config.json in the Claude config directory (user only)
  cursor          ~/.cursor/mcp.json (user), .cursor/mcp.json (project)
  vscode          mcp.json in the Code user directory (user), .vscode/mcp.json (project)
  codex           $CODEX_HOME/config.toml, default ~/.codex/config.toml (user),
                  .codex/config.toml (project)

Only that entry changes: every other entry, key and comment stays as it was.
A copy of the file is saved next to it first (FILE.pikoctl-backup-TIME), and
the file is replaced atomically. Installing again replaces the entry, or says
"unchanged". An entry of the same name that is not pikod's bridge is left
alone unless --force.

--replace-imported also removes the entries that 'pikoctl mcp import' brought
into pikod (those matching a configured server), so the host reaches them
only through pikod; they are kept in FILE.pikoctl-removed.json and
'pikoctl mcp uninstall' puts them back. See docs/hosts.md.`,
		Example: `  pikoctl mcp install claude-code --dry-run
  pikoctl mcp install cursor --scope project
  pikoctl --instance work mcp install codex --name pikod-work --replace-imported`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runInstall(cmd.Context(), args[0], iopts)
		},
	}
	iopts.flags(install, true)
	uninstall := &cobra.Command{
		Use:   "uninstall HOST [--scope user|project] [--dry-run] [--name NAME]",
		Short: "Remove pikod's entry from an MCP host's configuration and restore what install replaced",
		Long: `uninstall removes the entry 'pikoctl mcp install' wrote (only if it runs
'pikoctl mcp serve') and puts back the entries that install --replace-imported
removed, from FILE.pikoctl-removed.json. A copy of the file is saved next to
it first; every other entry and comment stays as it was.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runUninstall(cmd.Context(), args[0], uopts)
		},
	}
	uopts.flags(uninstall, false)
	return []*cobra.Command{install, uninstall}
}

// bridgeCommand is the command and arguments a host runs to reach this
// daemon: this pikoctl by its resolved absolute path, 'mcp serve', and the
// instance or socket when given (the host does not share the shell's
// environment).
func (a *app) bridgeCommand() (string, []string, []string, error) {
	exe, err := a.executable()
	if err != nil {
		return "", nil, nil, fmt.Errorf("finding the pikoctl binary to write into the host's configuration: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", nil, nil, fmt.Errorf("finding the pikoctl binary: %w", err)
	}
	var notes []string
	if strings.Contains(exe, "go-build") {
		notes = append(notes, "this pikoctl runs from a temporary 'go run' build, which will disappear: install pikoctl (make build) and run install with that binary")
	}
	args := []string{"mcp", "serve"}
	if a.instanceFlag != "" || a.getenv(contracts.EnvInstance) != "" {
		inst, err := contracts.ResolveInstance(a.instanceFlag, a.getenv)
		if err != nil {
			return "", nil, nil, &usageError{err: err}
		}
		args = append(args, "--instance", inst)
	}
	sock := a.socketFlag
	if sock == "" {
		sock = a.getenv(contracts.EnvSocket)
	}
	if sock != "" {
		abs, err := filepath.Abs(sock)
		if err != nil {
			return "", nil, nil, fmt.Errorf("resolving --socket: %w", err)
		}
		args = append(args, "--socket", abs)
	}
	return exe, args, notes, nil
}

// hostFile is a host configuration file as read.
type hostFile struct {
	path    string // the file edited (a symlink's target)
	link    string // the symlink named, if any
	src     []byte
	existed bool
	mode    fs.FileMode
}

func readHostFile(path string, project bool) (*hostFile, error) {
	f := &hostFile{path: path, mode: 0o600}
	if project {
		f.mode = 0o644
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("following the link %s: %w", path, err)
		}
		f.link, f.path = path, target
	}
	fi, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", f.path, err)
	case !fi.Mode().IsRegular():
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidHostFile, "%s is not a regular file", f.path)
	}
	if f.src, err = os.ReadFile(f.path); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.path, err)
	}
	f.existed, f.mode = true, fi.Mode().Perm()
	return f, nil
}

// backup copies the file next to itself, with its mode, and returns the
// copy's path.
func (f *hostFile) backup(now time.Time) (string, error) {
	base := f.path + ".pikoctl-backup-" + now.UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		p := base
		if n > 1 {
			p = fmt.Sprintf("%s-%d", base, n)
		}
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backing up %s: %w; nothing was written", f.path, err)
		}
		_, err = out.Write(f.src)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			return "", fmt.Errorf("backing up %s: %w; nothing was written", f.path, err)
		}
		return p, nil
	}
}

// write replaces the file atomically (a temporary file in the same
// directory, renamed over it) with the same mode. The file is read again
// just before: if the host changed it meanwhile, nothing is written.
func (f *hostFile) write(data []byte, dirMode fs.FileMode) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".pikoctl-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // a no-op after the rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(f.mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	now, rerr := os.ReadFile(f.path)
	if f.existed && (rerr != nil || !bytes.Equal(now, f.src)) || !f.existed && rerr == nil {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonHostFileChanged,
			"%s changed while pikoctl was editing it (the host may have written it): nothing was written; run the command again", f.path)
	}
	if err := os.Rename(name, f.path); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// removedRecord is FILE.pikoctl-removed.json: the entries install
// --replace-imported took out of FILE, as they were written, so that
// uninstall can put them back.
type removedRecord struct {
	Note    string         `json:"note"`
	Host    string         `json:"host"`
	File    string         `json:"file"`
	Removed []removedEntry `json:"removed"`
}

type removedEntry struct {
	Name string `json:"name"`
	// Bridge is the --name of the install that removed it.
	Bridge string `json:"bridge"`
	// Server is the pikod server its imported form matched.
	Server string `json:"server"`
	// Text is the entry as it was in the file: the JSON value, or the
	// TOML tables.
	Text      string    `json:"text"`
	RemovedAt time.Time `json:"removedAt"`
}

func recordPath(file string) string { return file + ".pikoctl-removed.json" }

func readRecord(path string) (*removedRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &removedRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r removedRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidRecord,
			"%s is not a record pikoctl wrote (%v): fix or remove it; nothing was written", path, err)
	}
	return &r, nil
}

// writeRecord saves r (0600: the entries may hold credentials), or removes
// the file when r holds nothing.
func writeRecord(path string, r *removedRecord) error {
	if len(r.Removed) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
		return nil
	}
	r.Note = "Written by 'pikoctl mcp install --replace-imported': the entries it removed from the file, as they were. 'pikoctl mcp uninstall' puts them back and removes them from here."
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f := &hostFile{path: path, mode: 0o600}
	if old, err := os.ReadFile(path); err == nil {
		f.src, f.existed = old, true
	}
	return f.write(append(b, '\n'), 0o700)
}

// installChange is one change to a host file.
type installChange struct {
	Action string `json:"action"` // add, replace, remove, restore, keep
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

// installReport is what install and uninstall did (or, with --dry-run,
// would do); --json prints it.
type installReport struct {
	Host      string          `json:"host"`
	Scope     string          `json:"scope"`
	File      string          `json:"file"`
	DryRun    bool            `json:"dryRun"`
	Unchanged bool            `json:"unchanged"`
	Changes   []installChange `json:"changes"`
	Notes     []string        `json:"notes,omitempty"`
	Diff      string          `json:"diff,omitempty"`
	Backup    string          `json:"backup,omitempty"`
	Record    string          `json:"record,omitempty"`
	Written   bool            `json:"written"`
}

// installTarget is the host named hostName and the path of its
// configuration file for o's scope, once o's flags are checked.
func (a *app) installTarget(hostName string, o installOptions) (*hostSpec, string, error) {
	h, err := lookupHost(hostName)
	if err != nil {
		return nil, "", err
	}
	if err := o.check(); err != nil {
		return nil, "", err
	}
	path, err := a.hostPath(h, o.scope)
	if err != nil {
		return nil, "", err
	}
	return h, path, nil
}

func (a *app) runInstall(ctx context.Context, hostName string, o installOptions) error {
	h, path, err := a.installTarget(hostName, o)
	if err != nil {
		return err
	}
	command, args, notes, err := a.bridgeCommand()
	if err != nil {
		return err
	}
	f, err := readHostFile(path, o.scope == "project")
	if err != nil {
		return err
	}
	ed, ents, err := h.openEditor(f.path, f.src)
	if err != nil {
		return err
	}
	rep := &installReport{Host: h.name, Scope: o.scope, File: f.path, DryRun: o.dryRun, Notes: notes}
	if f.link != "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a link: its target %s is edited", f.link, f.path))
	}
	what := strings.Join(append([]string{command}, args...), " ")
	switch cur := findEntry(ents, o.name); {
	case cur == nil:
		rep.Changes = append(rep.Changes, installChange{"add", o.name, what})
	case !cur.isBridge && !o.force:
		return contracts.WithHint(contracts.Errorf(contracts.ErrAlreadyExists, contracts.ReasonEntryExists,
			"%s already has a server named %q that is not pikod's bridge (it runs %s): nothing was written",
			f.path, o.name, clip(describeEntry(*cur), 120)),
			"choose another name with --name, or replace that entry with --force (the backup keeps it)")
	case reflect.DeepEqual(cur.Value, ed.want(o.name, command, args)):
		rep.Changes = append(rep.Changes, installChange{"keep", o.name, what + " (unchanged)"})
	case !cur.isBridge:
		rep.Changes = append(rep.Changes, installChange{"replace", o.name, what + " (replacing " + clip(describeEntry(*cur), 80) + ", --force)"})
	default:
		rep.Changes = append(rep.Changes, installChange{"replace", o.name, what})
	}
	if rep.Changes[0].Action != "keep" {
		if err := ed.set(o.name, command, args); err != nil {
			return fmt.Errorf("adding %q to %s: %w", o.name, f.path, err)
		}
	}
	var removed []removedEntry
	if o.replaceImported {
		cur, _, err := a.currentSettings(ctx)
		if err != nil {
			return fmt.Errorf("reading pikod's settings for --replace-imported (nothing was written): %w", err)
		}
		for _, e := range ents {
			if e.Name == o.name || e.isBridge {
				continue
			}
			s := ed.imported(e)
			if s.Skipped != "" {
				continue
			}
			id := sameServer(cur, &s.Settings)
			if id == "" {
				continue
			}
			if !e.Editable {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%q matches pikod's %s but is written inline, which pikoctl does not edit: remove it by hand", e.Name, id))
				continue
			}
			if err := ed.remove(e.Name); err != nil {
				return fmt.Errorf("removing %q from %s: %w", e.Name, f.path, err)
			}
			detail := "imported into pikod as " + id
			if srv := cur.Servers[serverIndex(cur, id)]; !srv.IsEnabled() {
				detail += " (disabled in pikod: 'pikoctl mcp enable " + id + "' lets the host reach it)"
			}
			rep.Changes = append(rep.Changes, installChange{"remove", e.Name, detail})
			removed = append(removed, removedEntry{Name: e.Name, Bridge: o.name, Server: id, Text: e.Raw, RemovedAt: time.Now().UTC()})
		}
	}
	next := ed.bytes()
	if bytes.Equal(next, f.src) && f.existed {
		rep.Unchanged = true
		return a.printInstallReport(rep, h)
	}
	rep.Diff = fileDiff(f.src, next, credentialValues(ed, ents))
	if len(removed) > 0 {
		rep.Record = recordPath(f.path)
	}
	if o.dryRun {
		return a.printInstallReport(rep, h)
	}
	if f.existed {
		if rep.Backup, err = f.backup(time.Now()); err != nil {
			return err
		}
	}
	var oldRecord *removedRecord
	if len(removed) > 0 {
		// The record first: the entries are never only in the backup.
		rec, err := readRecord(rep.Record)
		if err != nil {
			return err
		}
		oldRecord = &removedRecord{Host: rec.Host, File: rec.File, Removed: slices.Clone(rec.Removed)}
		rec.Host, rec.File = h.name, f.path
		rec.Removed = append(rec.Removed, removed...)
		if err := writeRecord(rep.Record, rec); err != nil {
			return fmt.Errorf("recording the removed entries (nothing was written to %s): %w", f.path, err)
		}
	}
	if err := f.write(next, dirModeFor(o.scope)); err != nil {
		if oldRecord != nil {
			_ = writeRecord(rep.Record, oldRecord)
		}
		return err
	}
	rep.Written = true
	return a.printInstallReport(rep, h)
}

func dirModeFor(scope string) fs.FileMode {
	if scope == "project" {
		return 0o755
	}
	return 0o700
}

func (a *app) runUninstall(_ context.Context, hostName string, o installOptions) error {
	h, path, err := a.installTarget(hostName, o)
	if err != nil {
		return err
	}
	f, err := readHostFile(path, o.scope == "project")
	if err != nil {
		return err
	}
	rep := &installReport{Host: h.name, Scope: o.scope, File: f.path, DryRun: o.dryRun}
	rec, err := readRecord(recordPath(f.path))
	if err != nil {
		return err
	}
	var mine []removedEntry
	for _, r := range rec.Removed {
		if r.Bridge == o.name {
			mine = append(mine, r)
		}
	}
	if !f.existed && len(mine) == 0 {
		rep.Unchanged = true
		rep.Notes = append(rep.Notes, f.path+" does not exist: nothing to uninstall")
		return a.printInstallReport(rep, h)
	}
	ed, ents, err := h.openEditor(f.path, f.src)
	if err != nil {
		return err
	}
	if cur := findEntry(ents, o.name); cur != nil {
		if !cur.isBridge {
			return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNotBridge,
				"%q in %s is not pikod's bridge (it runs %s): nothing was removed", o.name, f.path, clip(describeEntry(*cur), 120)),
				"name the bridge's entry with --name")
		}
		if err := ed.remove(o.name); err != nil {
			return fmt.Errorf("removing %q from %s: %w", o.name, f.path, err)
		}
		rep.Changes = append(rep.Changes, installChange{"remove", o.name, clip(describeEntry(*cur), 120)})
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no entry named %q in %s", o.name, f.path))
	}
	for _, r := range mine {
		if findEntry(ents, r.Name) != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%q is in the file again: the recorded copy is dropped, the file's is kept", r.Name))
			continue
		}
		if err := ed.restore(r.Name, r.Text); err != nil {
			return fmt.Errorf("restoring %q into %s (recorded in %s; nothing was written): %w", r.Name, f.path, recordPath(f.path), err)
		}
		rep.Changes = append(rep.Changes, installChange{"restore", r.Name, "removed by install --replace-imported (pikod's " + r.Server + ")"})
	}
	next := ed.bytes()
	if len(mine) > 0 {
		rep.Record = recordPath(f.path)
	}
	if bytes.Equal(next, f.src) && f.existed && len(mine) == 0 {
		rep.Unchanged = true
		return a.printInstallReport(rep, h)
	}
	after, _ := h.openEditorQuiet(next)
	rep.Diff = fileDiff(f.src, next, credentialValues(ed, append(slices.Clone(ents), after...)))
	if o.dryRun {
		return a.printInstallReport(rep, h)
	}
	if f.existed && !bytes.Equal(next, f.src) {
		if rep.Backup, err = f.backup(time.Now()); err != nil {
			return err
		}
	}
	if !bytes.Equal(next, f.src) || !f.existed {
		if err := f.write(next, dirModeFor(o.scope)); err != nil {
			return err
		}
		rep.Written = true
	}
	if len(mine) > 0 {
		rec.Removed = slices.DeleteFunc(rec.Removed, func(r removedEntry) bool { return r.Bridge == o.name })
		if err := writeRecord(rep.Record, rec); err != nil {
			return fmt.Errorf("updating %s (the entries are restored; remove it by hand): %w", rep.Record, err)
		}
	}
	return a.printInstallReport(rep, h)
}

// openEditorQuiet lists the entries of src, nil if it does not parse.
func (h *hostSpec) openEditorQuiet(src []byte) ([]hostEntry, error) {
	_, ents, err := h.openEditor("", src)
	return ents, err
}

// describeEntry is what an entry runs, for messages.
func describeEntry(e hostEntry) string {
	if e.Command != "" {
		return strings.Join(append([]string{e.Command}, e.Args...), " ")
	}
	if m, ok := e.Value.(map[string]any); ok {
		if u, ok := m["url"].(string); ok {
			return u
		}
	}
	return "an entry without a command"
}

// credentialValues are the credential values written in the entries (as
// 'mcp import' finds them), kept out of the printed diff.
func credentialValues(ed hostEditor, ents []hostEntry) []string {
	var hide []string
	for _, e := range ents {
		s := ed.imported(e)
		for _, sec := range s.Secrets {
			if len(sec.Refs) == 0 && len(sec.Template) >= 4 {
				hide = append(hide, sec.Template)
				if q := compactJSON(sec.Template); len(q) > 2 {
					hide = append(hide, q[1:len(q)-1]) // as escaped in JSON
				}
			}
		}
	}
	return hide
}

func (a *app) printInstallReport(rep *installReport, h *hostSpec) error {
	if a.jsonOut {
		return printIndentedJSON(a.stdout, rep)
	}
	w := &errWriter{w: a.stdout}
	fmt.Fprintf(w, "%s (%s scope): %s\n", h.title, rep.Scope, clean(rep.File))
	for _, c := range rep.Changes {
		fmt.Fprintf(w, "  %s %q: %s\n", c.Action, clean(c.Name), clean(c.Detail))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", clean(n))
	}
	switch {
	case rep.Unchanged:
		fmt.Fprintln(w, "unchanged: nothing was written")
	case rep.DryRun:
		fmt.Fprintf(w, "--- %s\n+++ %s (after)\n%s", clean(rep.File), clean(rep.File), rep.Diff)
		if rep.Record != "" {
			fmt.Fprintf(w, "the removed entries would be recorded in %s\n", clean(rep.Record))
		}
		fmt.Fprintln(w, "dry run: nothing was written (without --dry-run a backup is made first)")
	default:
		if rep.Backup != "" {
			fmt.Fprintf(w, "backup: %s\n", clean(rep.Backup))
		}
		if rep.Record != "" {
			fmt.Fprintf(w, "removed entries recorded in %s ('pikoctl mcp uninstall %s' restores them)\n", clean(rep.Record), h.name)
		}
		if rep.Written {
			fmt.Fprintf(w, "wrote %s\n", clean(rep.File))
			fmt.Fprintf(w, "restart %s (or reload its MCP servers) to apply\n", h.title)
		}
	}
	return w.err
}
