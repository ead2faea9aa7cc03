package tests

// Interop suite: pikod against the official MCP reference servers from npm
// (pinned in tests/interop/package-lock.json, installed by
// `make interop-deps`), over stdio, Streamable HTTP and legacy HTTP+SSE.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// interopSkipEnv names the variable that, set to 1, skips the interop suite
// on machines without node. Nothing else skips it: missing packages fail.
const interopSkipEnv = "PIKO_SKIP_INTEROP"

// everythingTools are the tools server-everything offers every client:
// tools/index.js registerTools, plus simulate-research-query, which
// registerConditionalTools adds whatever the client's capabilities (it
// registers the others only for clients declaring them).
var everythingTools = []string{
	"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
	"get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
	"toggle-simulated-logging", "toggle-subscriber-updates", "trigger-long-running-operation",
	"simulate-research-query",
}

// everythingConditionalTools need roots, sampling or elicitation, none of
// which the default settings offer.
var everythingConditionalTools = []string{
	"get-roots-list", "trigger-sampling-request", "trigger-elicitation-request",
	"trigger-sampling-request-async", "trigger-elicitation-request-async", "trigger-url-elicitation",
}

// interopCase is one reference server as pikod should see it.
type interopCase struct {
	id       string
	settings map[string]any
	// serverName is the name the server reports in initialize.
	serverName string
	// tools must all be in the catalog, absentTools none; minTools is a
	// floor taken from the package source.
	tools       []string
	absentTools []string
	minTools    int
	// resources, templates and prompts are URIs, URI templates and names
	// that must be listed; the min* fields are floors.
	resources    []string
	templates    []string
	prompts      []string
	minResources int
	minTemplates int
	minPrompts   int
	// docsDir, for server-everything, holds the files its static
	// resources serve: every resource, template and prompt it lists is
	// read, expanded and got (checkEverythingOffer).
	docsDir string
}

func TestInterop(t *testing.T) {
	dir := interopDir(t)
	bin := func(name string) string { return filepath.Join(dir, "node_modules", ".bin", name) }
	everything := bin("mcp-server-everything")

	// The HTTP servers are started before the daemon so their cleanup runs
	// after the daemon's: pikod closes its sessions against live servers.
	httpSrv := startEverythingHTTP(t, everything, "streamableHttp")
	sseSrv := startEverythingHTTP(t, everything, "sse")

	allowed := t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "hello.txt"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")

	everythingCase := func(id string, settings map[string]any) interopCase {
		return interopCase{
			id:          id,
			settings:    settings,
			serverName:  "mcp-servers/everything",
			tools:       everythingTools,
			absentTools: everythingConditionalTools,
			minTools:    len(everythingTools),
			// One static resource per file of dist/docs (seven in this
			// release), two templates, four prompts.
			resources:    []string{"demo://resource/static/document/instructions.md"},
			templates:    []string{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"},
			prompts:      []string{"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"},
			minResources: 5,
			minTemplates: 2,
			minPrompts:   4,
			docsDir:      filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "docs"),
		}
	}
	cases := []interopCase{
		everythingCase("everything-stdio", map[string]any{
			"transport": "stdio", "command": everything, "args": []string{"stdio"},
		}),
		everythingCase("everything-http", map[string]any{
			"transport": "http", "url": httpSrv.url("/mcp"), "allowPrivateNetwork": true,
		}),
		everythingCase("everything-sse", map[string]any{
			"transport": "sse", "url": sseSrv.url("/sse"), "allowPrivateNetwork": true,
		}),
		{
			id: "filesystem",
			settings: map[string]any{
				"transport": "stdio", "command": bin("mcp-server-filesystem"), "args": []string{allowed},
			},
			serverName: "secure-filesystem-server",
			tools: []string{"read_file", "read_text_file", "read_multiple_files", "write_file", "edit_file",
				"list_directory", "directory_tree", "search_files", "get_file_info", "list_allowed_directories"},
			minTools: 14,
		},
		{
			id: "memory",
			settings: map[string]any{
				"transport": "stdio", "command": bin("mcp-server-memory"),
				"env": map[string]string{"MEMORY_FILE_PATH": memFile},
			},
			serverName: "memory-server",
			tools: []string{"create_entities", "create_relations", "add_observations", "delete_entities",
				"read_graph", "search_nodes", "open_nodes"},
			minTools:     9,
			resources:    []string{"memory://knowledge-graph"},
			minResources: 1,
		},
	}

	servers := make([]map[string]any, 0, len(cases))
	for _, c := range cases {
		// Enabled, but configure connects nothing: each subtest connects
		// its own server.
		s := map[string]any{"id": c.id}
		for k, v := range c.settings {
			s[k] = v
		}
		servers = append(servers, s)
	}
	settings, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t)
	d.call(t, contracts.MethodConfigure, map[string]any{"extension": "mcp", "settings": json.RawMessage(settings)})

	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			t.Parallel()
			checkInteropServer(t, d, c)
		})
	}
}

// checkInteropServer connects one server, checks its status, catalog and
// ping, then disconnects it and checks that its process group is gone.
func checkInteropServer(t *testing.T, d *daemon, c interopCase) {
	stdio := c.settings["transport"] == contracts.TransportStdio
	srv := contracts.ServerParams{Server: c.id}

	var conn contracts.ConnectResult
	res, err := d.tryCall(t, contracts.MethodMCPConnect, srv)
	if err != nil {
		st := interopStatus(t, d, c.id)
		t.Fatalf("connect: %v\nlastError: %s\nstderr tail:\n%s", err, st.LastError, st.StderrTail)
	}
	if err := json.Unmarshal(res, &conn); err != nil {
		t.Fatalf("decoding connect result %s: %v", res, err)
	}
	checkInteropStatus(t, "connect", conn.Server, c, stdio)

	var cat contracts.CatalogResult
	d.callInto(t, contracts.MethodMCPCatalog, srv, &cat)
	checkInteropCatalog(t, cat, c)

	var ping contracts.PingResult
	d.callInto(t, contracts.MethodMCPPing, srv, &ping)
	if ping.Server != c.id || ping.ProtocolVersion != conn.Server.ProtocolVersion {
		t.Errorf("ping = %+v, want server %q and protocol %s", ping, c.id, conn.Server.ProtocolVersion)
	}

	if c.docsDir != "" {
		checkEverythingOffer(t, d, c, cat)
	}

	st := interopStatus(t, d, c.id)
	checkInteropStatus(t, "status", st, c, stdio)
	if !st.CatalogComplete || st.ToolCount < c.minTools {
		t.Errorf("status: catalogComplete %v with %d tools, want complete with at least %d (problem %q)",
			st.CatalogComplete, st.ToolCount, c.minTools, st.CatalogProblem)
	}
	if st.ToolCount != len(cat.Tools) || st.PromptCount != len(cat.Prompts) {
		t.Errorf("status counts %d tools, %d prompts; the catalog has %d and %d",
			st.ToolCount, st.PromptCount, len(cat.Tools), len(cat.Prompts))
	}

	pgid := st.PGID
	if stdio {
		// The check after disconnect means something only if the group
		// is alive now.
		if live := processGroupMembers(t, pgid); !slices.Contains(live, st.PID) {
			t.Fatalf("pid %d is not among the live members %v of process group %d while connected", st.PID, live, pgid)
		}
	}

	var disc contracts.DisconnectResult
	d.callInto(t, contracts.MethodMCPDisconnect, srv, &disc)
	if disc.Server != c.id || !disc.WasConnected {
		t.Errorf("disconnect = %+v, want server %q and wasConnected", disc, c.id)
	}
	if st := interopStatus(t, d, c.id); st.State == contracts.StateConnected || st.PID != 0 {
		t.Errorf("after disconnect: state %q, pid %d; want not connected and no pid", st.State, st.PID)
	}
	if stdio {
		// Disconnect returns once the group is stopped and reaped.
		if left := processGroupMembers(t, pgid); len(left) > 0 {
			t.Errorf("after disconnect, processes %v of the server's group %d remain", left, pgid)
		}
	}
}

// checkInteropStatus checks the connected-state fields of st.
func checkInteropStatus(t *testing.T, what string, st contracts.ServerStatus, c interopCase, stdio bool) {
	t.Helper()
	if st.ID != c.id || st.State != contracts.StateConnected {
		t.Errorf("%s: server %q in state %q, want %q connected (lastError %q)", what, st.ID, st.State, c.id, st.LastError)
	}
	if st.Transport != c.settings["transport"] {
		t.Errorf("%s: transport %q, want %q", what, st.Transport, c.settings["transport"])
	}
	// The reference servers speak the legacy era only: under auto (http)
	// pikod must fall back to it.
	if !slices.Contains(contracts.ProtocolVersions, st.ProtocolVersion) || st.ProtocolVersion == contracts.ProtocolVersions[0] {
		t.Errorf("%s: protocolVersion %q, want a legacy version from %v", what, st.ProtocolVersion, contracts.ProtocolVersions[1:])
	}
	if st.ServerInfo == nil || st.ServerInfo.Name != c.serverName {
		t.Errorf("%s: serverInfo %+v, want name %q", what, st.ServerInfo, c.serverName)
	}
	if stdio && (st.PID <= 0 || st.PGID != st.PID) {
		t.Errorf("%s: pid %d pgid %d, want a group led by the server process", what, st.PID, st.PGID)
	}
	if !stdio && (st.PID != 0 || st.PGID != 0) {
		t.Errorf("%s: pid %d pgid %d for a remote server, want none", what, st.PID, st.PGID)
	}
	if st.ConnectedSince == "" || st.Generation == 0 {
		t.Errorf("%s: connectedSince %q generation %d, want both set", what, st.ConnectedSince, st.Generation)
	}
}

var (
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	digestRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkInteropCatalog checks that cat is complete and lists what c expects.
func checkInteropCatalog(t *testing.T, cat contracts.CatalogResult, c interopCase) {
	t.Helper()
	if !cat.Complete || cat.Problem != "" {
		t.Errorf("catalog complete=%v problem %q, want complete", cat.Complete, cat.Problem)
	}
	if cat.Server != c.id {
		t.Errorf("catalog server %q, want %q", cat.Server, c.id)
	}
	tools := map[string]contracts.CatalogTool{}
	names := map[string]string{}
	for _, tool := range cat.Tools {
		if prev, dup := names[tool.Name]; dup {
			t.Errorf("tools %q and %q share the name %q", prev, tool.OriginalName, tool.Name)
		}
		names[tool.Name] = tool.OriginalName
		tools[tool.OriginalName] = tool
		if !toolNameRE.MatchString(tool.Name) || !strings.HasPrefix(tool.Name, "mcp_") {
			t.Errorf("tool %q has model-facing name %q, want mcp_... of [A-Za-z0-9_-], at most 64", tool.OriginalName, tool.Name)
		}
		if tool.Server != c.id || !digestRE.MatchString(tool.Digest) || len(tool.InputSchema) == 0 {
			t.Errorf("tool %q: server %q digest %q schema %s; want server %q, a SHA-256 hex digest and the input schema",
				tool.OriginalName, tool.Server, tool.Digest, tool.InputSchema, c.id)
		}
		// No tools list in the settings: everything is selected and needs
		// approval.
		if !tool.Selected || tool.Grant != contracts.GrantApproval {
			t.Errorf("tool %q: selected %v grant %q, want selected with grant approval", tool.OriginalName, tool.Selected, tool.Grant)
		}
	}
	if len(cat.Tools) < c.minTools {
		t.Errorf("catalog has %d tools, want at least %d: %v", len(cat.Tools), c.minTools, slices.Sorted(maps.Keys(tools)))
	}
	for _, name := range c.tools {
		if _, ok := tools[name]; !ok {
			t.Errorf("catalog lacks tool %q; it has %v", name, slices.Sorted(maps.Keys(tools)))
		}
	}
	for _, name := range c.absentTools {
		if _, ok := tools[name]; ok {
			t.Errorf("catalog has tool %q, which the server offers only to clients declaring a capability the settings do not enable", name)
		}
	}

	checkListed(t, "resources", cat.Resources, "uri", c.resources, c.minResources)
	checkListed(t, "resource templates", cat.ResourceTemplates, "uriTemplate", c.templates, c.minTemplates)
	checkListed(t, "prompts", cat.Prompts, "name", c.prompts, c.minPrompts)
}

// checkListed checks that items, decoded as objects, hold each of want in
// their key field and number at least min. A server without the feature
// must list nothing (min 0, no want).
func checkListed(t *testing.T, what string, items []json.RawMessage, key string, want []string, min int) {
	t.Helper()
	var got []string
	for _, raw := range items {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Errorf("%s: item %s is not an object: %v", what, raw, err)
			continue
		}
		s, _ := obj[key].(string)
		got = append(got, s)
	}
	if len(got) < min {
		t.Errorf("catalog has %d %s, want at least %d: %v", len(got), what, min, got)
	}
	if min == 0 && len(want) == 0 && len(got) > 0 {
		t.Errorf("catalog has %s %v from a server that offers none", what, got)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("catalog lacks %s %q; it has %v", what, w, got)
		}
	}
}

// interopStatus returns one server's status.
func interopStatus(t *testing.T, d *daemon, id string) contracts.ServerStatus {
	t.Helper()
	var st contracts.StatusResult
	d.callInto(t, contracts.MethodMCPStatus, contracts.StatusParams{Server: id}, &st)
	if len(st.Servers) != 1 || st.Servers[0].ID != id {
		t.Fatalf("status of %q lists %+v, want that one server", id, st.Servers)
	}
	return st.Servers[0]
}

// interopDir returns the absolute tests/interop directory after checking
// that node is on PATH and that node_modules holds the pinned versions. A
// missing or stale install fails the test: CI must never pass by skipping.
func interopDir(t *testing.T) string {
	t.Helper()
	if os.Getenv(interopSkipEnv) == "1" {
		t.Skipf("%s=1: interop tests with the npm reference servers skipped", interopSkipEnv)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("finding the module root: %v", err)
	}
	dir := filepath.Join(root, "tests", "interop")
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): install node and npm (Debian: apt-get install nodejs npm), then run `make interop-deps`; or set %s=1 to skip", err, interopSkipEnv)
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSONFile(filepath.Join(dir, "package.json"), &manifest); err != nil {
		t.Fatalf("reading the interop manifest: %v", err)
	}
	if len(manifest.Dependencies) == 0 {
		t.Fatalf("%s/package.json pins no packages", dir)
	}
	for name, pin := range manifest.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		err := readJSONFile(filepath.Join(dir, "node_modules", name, "package.json"), &installed)
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.Fatalf("%s is not installed in %s/node_modules: run `make interop-deps` (or set %s=1 to skip)", name, dir, interopSkipEnv)
		case err != nil:
			t.Fatalf("reading the installed %s: %v; run `make interop-deps`", name, err)
		case installed.Version != pin:
			t.Fatalf("%s %s is installed but package.json pins %s: run `make interop-deps`", name, installed.Version, pin)
		}
	}
	return dir
}

func readJSONFile(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

// processGroupMembers lists the live processes of group pgid from /proc.
// Zombies are left out: they have exited and only wait for a parent (which
// for an orphan may be a PID 1 that never reaps).
func processGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	if pgid <= 0 {
		t.Fatalf("no process group to check (pgid %d)", pgid)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// everythingHTTP is a server-everything process serving HTTP on a loopback
// port, in its own process group.
type everythingHTTP struct {
	cmd    *exec.Cmd
	port   int
	output testsupport.Buffer
	done   chan struct{}
}

func (s *everythingHTTP) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.port, path)
}

// startEverythingHTTP runs server-everything with transport (streamableHttp
// or sse) on a free port and waits until it says it listens. The whole
// group is killed at the end of the test.
func startEverythingHTTP(t *testing.T, bin, transport string) *everythingHTTP {
	t.Helper()
	// Another process may take the port between our probe and the server's
	// bind; the server then exits saying so, and we try another port.
	for attempt := 1; ; attempt++ {
		s, err := tryEverythingHTTP(t, bin, transport)
		if err == nil {
			return s
		}
		if attempt == 3 || !strings.Contains(err.Error(), "already in use") {
			t.Fatalf("starting server-everything %s: %v", transport, err)
		}
	}
}

func tryEverythingHTTP(t *testing.T, bin, transport string) (*everythingHTTP, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s := &everythingHTTP{port: port, done: make(chan struct{})}
	s.cmd = exec.Command(bin, transport)
	s.cmd.Env = append(minimalEnv(t.TempDir()), "PORT="+strconv.Itoa(port))
	s.cmd.Stdout = w
	s.cmd.Stderr = w
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	w.Close()
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		// Kill the whole group: node may have started helpers.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	})

	// Both transports print "... on port N" once listening.
	marker := fmt.Sprintf("on port %d", port)
	ready, eof := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(eof)
		defer r.Close()
		sc := bufio.NewScanner(r)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(&s.output, sc.Text())
			if !signalled && strings.Contains(sc.Text(), marker) && !strings.Contains(sc.Text(), "in use") {
				signalled = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		// The output is complete once the pipe reaches EOF; a helper the
		// server left behind could hold it open.
		select {
		case <-eof:
		case <-time.After(stopTimeout):
		}
		return nil, fmt.Errorf("it exited before listening on port %d; output:\n%s", port, s.output.String())
	case <-time.After(readyTimeout):
		return nil, fmt.Errorf("it did not listen on port %d within %v; output:\n%s", port, readyTimeout, s.output.String())
	}
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
