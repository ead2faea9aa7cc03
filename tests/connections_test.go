package tests

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Connection suites: the daemon supervises the fixture MCP server
// (tests/fixtures/mcpfixture) over stdio, Streamable HTTP and SSE; every
// assertion is made through the socket, /proc and the files the fixture
// writes.

// fixedTools is how many tools the fixture always has besides the
// generated tool-NNNN ones: echo, add, env, sleep, count, crash, big,
// spawn, notify-list-changed (see the fixture's doc comment).
const fixedTools = 9

// legacyVersions are the protocol versions of the initialize era.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const modernVersion = "2026-07-28"

// modelName is the shape of every model-facing tool name.
var modelName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// srv is one server entry of the mcp settings.
type srv map[string]any

// stdioFixture is a stdio server entry running the fixture with args.
func stdioFixture(id string, args ...string) srv {
	if args == nil {
		args = []string{}
	}
	return srv{"id": id, "transport": "stdio", "command": fixtureBin, "args": args, "timeoutMs": 10000}
}

// remoteFixture is an http or sse server entry for a fixture on loopback.
func remoteFixture(id, transport, url string) srv {
	return srv{"id": id, "transport": transport, "url": url, "allowPrivateNetwork": true, "timeoutMs": 10000}
}

// with returns a copy of s with more fields set.
func (s srv) with(kv ...any) srv {
	out := srv{}
	for k, v := range s {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// mcpSettings encodes a settings object holding servers.
func mcpSettings(t testing.TB, servers ...srv) string {
	t.Helper()
	if servers == nil {
		servers = []srv{}
	}
	b, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		t.Fatalf("encoding settings: %v", err)
	}
	return string(b)
}

// connectServer connects id and returns its status; it must succeed.
func connectServer(t testing.TB, d *daemon, id string) contracts.ServerStatus {
	t.Helper()
	var res contracts.ConnectResult
	d.callInto(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: id}, &res)
	if res.Server.State != contracts.StateConnected {
		t.Fatalf("connect %q answered state %q, want connected: %+v", id, res.Server.State, res.Server)
	}
	return res.Server
}

// connectFails connects id, which must fail, and returns the wire error.
func connectFails(t testing.TB, d *daemon, id string) *contracts.Error {
	t.Helper()
	return d.callErr(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: id})
}

// catalogOf returns id's catalog.
func catalogOf(t testing.TB, d *daemon, id string) contracts.CatalogResult {
	t.Helper()
	var res contracts.CatalogResult
	d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: id}, &res)
	return res
}

// randomHex returns n random bytes in hex.
func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// environOf reads one variable of a running process's environment.
func environOf(t testing.TB, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading the environment of pid %d: %v", pid, err)
	}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("pid %d has no %s", pid, name)
	return ""
}

// spawnedPids reads the fixture's --pid-file: the "group", "setsid" and
// "orphan" pids of its first start.
func spawnedPids(t testing.TB, path string) (group, setsid, orphan int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the fixture's pid file: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		kind, num, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("pid file line %q: %v", line, err)
		}
		switch {
		case kind == "group" && group == 0:
			group = pid
		case kind == "setsid" && setsid == 0:
			setsid = pid
		case kind == "orphan" && orphan == 0:
			orphan = pid
		}
	}
	if group == 0 || setsid == 0 || orphan == 0 {
		t.Fatalf("pid file %s lacks a group, setsid or orphan line:\n%s", path, b)
	}
	return group, setsid, orphan
}

// serverTree is one stdio server's processes as a test sees them: the
// leader, a grandchild in its group, an escapee in a session of its own,
// and an orphan double-forked away from the tree.
type serverTree struct {
	id                                  string
	leader, grandchild, escapee, orphan procStat
	home                                string
}

// readTree records a connected spawn-children server's processes and
// makes sure each is killed at the end of the test.
func readTree(t testing.TB, d *daemon, id, pidFile string) serverTree {
	t.Helper()
	st := serverStatus(t, d, id)
	if st.PID == 0 || st.PGID != st.PID {
		t.Fatalf("status of %q: pid %d pgid %d, want a group leader", id, st.PID, st.PGID)
	}
	tr := serverTree{id: id, leader: trackProc(t, st.PID)}
	group, setsid, orphan := spawnedPids(t, pidFile)
	tr.grandchild = trackProc(t, group)
	tr.escapee = trackProc(t, setsid)
	tr.orphan = trackProc(t, orphan)
	tr.home = environOf(t, st.PID, "HOME")
	if tr.leader.pgid != st.PID || tr.grandchild.pgid != st.PID {
		t.Fatalf("%q: leader pgid %d, grandchild pgid %d, want both %d", id, tr.leader.pgid, tr.grandchild.pgid, st.PID)
	}
	if tr.escapee.pgid == st.PID {
		t.Fatalf("%q: the setsid child %d is still in group %d", id, tr.escapee.pid, st.PID)
	}
	// The double fork left the orphan to pikod, the subreaper: no scan of
	// the server's tree can find it there.
	if pikod := d.current().pid(); tr.orphan.ppid != pikod || tr.orphan.pgid == st.PID {
		t.Fatalf("%q: orphan %d has parent %d and group %d; want re-parented to pikod %d, outside group %d",
			id, tr.orphan.pid, tr.orphan.ppid, tr.orphan.pgid, pikod, st.PID)
	}
	if rel, err := filepath.Rel(filepath.Join(d.stateDir, "run"), tr.home); err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%q: HOME %q is not under STATE/run", id, tr.home)
	}
	// The escapee left the group, so only pikod's scan (first after 200 ms,
	// then every second) can know it; it logs each one it records. Waiting
	// for that line rather than for time makes the later checks mean
	// "pikod cleans up what it knows about".
	d.waitLog(t, "left its group", fmt.Sprintf(`"pid":%d,`, tr.escapee.pid))
	return tr
}

// assertGone checks that nothing of tr runs any more: leader, grandchild,
// escapee, any member of the group, and the disposable home.
func (tr serverTree) assertGone(t testing.TB) {
	t.Helper()
	for _, p := range []struct {
		what string
		st   procStat
	}{{"leader", tr.leader}, {"group grandchild", tr.grandchild}, {"setsid escapee", tr.escapee}, {"double-forked orphan", tr.orphan}} {
		if p.st.running() {
			t.Errorf("%q: %s %d still runs", tr.id, p.what, p.st.pid)
		}
	}
	if left := groupRunning(t, tr.leader.pid); len(left) > 0 {
		t.Errorf("%q: group %d still has running members %+v", tr.id, tr.leader.pid, left)
	}
	if _, err := os.Stat(tr.home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%q: disposable home %s still exists (stat: %v)", tr.id, tr.home, err)
	}
}

func (tr serverTree) assertRunning(t testing.TB, leader bool) {
	t.Helper()
	if leader && !tr.leader.running() {
		t.Errorf("%q: leader %d is gone already", tr.id, tr.leader.pid)
	}
	if !tr.grandchild.running() || !tr.escapee.running() || !tr.orphan.running() {
		t.Errorf("%q: grandchild %d running %v, escapee %d running %v, orphan %d running %v; want all still running",
			tr.id, tr.grandchild.pid, tr.grandchild.running(), tr.escapee.pid, tr.escapee.running(), tr.orphan.pid, tr.orphan.running())
	}
}

// TestProcessCleanup checks that every process a stdio server started, in
// its group, escaped from it with setsid, or double-forked away from its
// tree, ends on disconnect, on a clean daemon stop, and after a SIGKILLed
// daemon once the next one starts; and that disconnecting one server ends
// nothing of another. One server exits on SIGTERM, the other ignores it
// (only SIGKILL ends it).
func TestProcessCleanup(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"disconnect", "sigterm", "sigkill-restart"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t)
			dir := t.TempDir()
			pidFiles := map[string]string{"term": filepath.Join(dir, "term.pids"), "stubborn": filepath.Join(dir, "stubborn.pids")}
			configureMCP(t, d, mcpSettings(t,
				stdioFixture("term", "--spawn-children", "--pid-file", pidFiles["term"]),
				stdioFixture("stubborn", "--spawn-children", "--pid-file", pidFiles["stubborn"], "--ignore-sigterm"),
			))
			var trees []serverTree
			for _, id := range []string{"term", "stubborn"} {
				connectServer(t, d, id)
				trees = append(trees, readTree(t, d, id, pidFiles[id]))
			}

			switch how {
			case "disconnect":
				for i, tr := range trees {
					var res contracts.DisconnectResult
					d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: tr.id}, &res)
					if !res.WasConnected {
						t.Errorf("disconnect %q: wasConnected false", tr.id)
					}
					if st := serverStatus(t, d, tr.id); st.State != contracts.StateIdle || st.PID != 0 {
						t.Errorf("after disconnect %q: state %q pid %d, want idle and no pid", tr.id, st.State, st.PID)
					}
					// Disconnect returns once the group is stopped.
					tr.assertGone(t)
					// What belongs to a server still connected stays.
					for _, other := range trees[i+1:] {
						other.assertRunning(t, true)
					}
				}
			case "sigterm":
				d.stopWith(t, syscall.SIGTERM) // asserts exit 0
				for _, tr := range trees {
					tr.assertGone(t)
				}
			case "sigkill-restart":
				d.kill9()
				// The "term" leader exits when its stdin ends; everything
				// else outlives the daemon until the next one reaps it.
				trees[0].assertRunning(t, false)
				trees[1].assertRunning(t, true)
				d.restart()
				// Orphans are reaped before the socket serves: no wait.
				for _, tr := range trees {
					tr.assertGone(t)
				}
			}
		})
	}
}

// TestChildEnvironment checks that a stdio server gets exactly the scrubbed
// environment plus its configured env, and nothing of pikod's own.
func TestChildEnvironment(t *testing.T) {
	t.Parallel()
	canary := "canary-" + randomHex(t, 8)
	d := startDaemon(t, withEnv("PIKO_TEST_CANARY="+canary, "SOME_TOKEN="+canary))
	configureMCP(t, d, mcpSettings(t, stdioFixture("envy", "--print-env").with("env", map[string]string{"FOO": "bar"})))
	connectServer(t, d, "envy")
	st := serverStatus(t, d, "envy")

	env := map[string]string{}
	for line := range strings.SplitSeq(st.StderrTail, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) {
			env[k] = v
		}
	}
	home := env["HOME"]
	if rel, err := filepath.Rel(filepath.Join(d.stateDir, "run"), home); home == "" || err != nil || strings.HasPrefix(rel, "..") || rel == "." {
		t.Fatalf("HOME %q is not a disposable dir under STATE/run; stderr tail:\n%s", home, st.StderrTail)
	}
	// pikod hands its own PATH on, less relative entries.
	var daemonPATH string
	for _, kv := range d.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			daemonPATH = v
		}
	}
	var absPath []string
	for _, dir := range filepath.SplitList(daemonPATH) {
		if filepath.IsAbs(dir) {
			absPath = append(absPath, dir)
		}
	}
	want := map[string]string{
		"PATH":            strings.Join(absPath, string(filepath.ListSeparator)),
		"HOME":            home,
		"LANG":            "C.UTF-8",
		"LC_ALL":          "C.UTF-8",
		"TMPDIR":          filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		// The cache persists per server under the state dir; HOME does not.
		"XDG_CACHE_HOME":   filepath.Join(d.stateDir, "cache", "envy"),
		"npm_config_cache": filepath.Join(d.stateDir, "cache", "envy", "npm"),
		"UV_CACHE_DIR":     filepath.Join(d.stateDir, "cache", "envy", "uv"),
		"XDG_DATA_HOME":    filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME":   filepath.Join(home, ".local/state"),
		"XDG_RUNTIME_DIR":  filepath.Join(home, "run"),
		"FOO":              "bar",
	}
	// The server's mark: random, its own (pikod finds its processes by it).
	if mark := env["PIKOD_SERVER_MARK"]; !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(mark) {
		t.Errorf("child PIKOD_SERVER_MARK = %q, want 32 hex digits", mark)
	} else {
		want["PIKOD_SERVER_MARK"] = mark
	}
	if len(env) != len(want) {
		t.Errorf("child environment has %d variables, want %d:\ngot  %v\nwant %v", len(env), len(want), env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("child %s = %q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		if _, ok := want[k]; !ok {
			t.Errorf("child has unexpected variable %s", k)
		}
	}
	if strings.Contains(st.StderrTail, canary) {
		t.Errorf("the daemon's canary reached the child:\n%s", st.StderrTail)
	}
	for _, sub := range []string{"tmp", ".config", ".cache", ".local/share", ".local/state", "run"} {
		fi, err := os.Stat(filepath.Join(home, sub))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s/%s: %v (mode %v), want a 0700 directory", home, sub, err, fi)
		}
	}
}

// TestProtocolModes checks the protocol era each combination of fixture
// protocol and settings protocol ends up in, over stdio, HTTP and SSE.
func TestProtocolModes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	httpURL := map[string]string{}
	for _, p := range []string{"legacy", "modern", "both"} {
		httpURL[p] = startFixtureServer(t, "http", "127.0.0.1:0", "--protocol", p).url
	}
	sse := startFixtureServer(t, "sse", "127.0.0.1:0", "--protocol", "legacy")
	pin := func(v string) map[string]string { return map[string]string{"pin": v} }

	cases := []struct {
		entry srv
		// want is the protocol version; "legacy" accepts any legacy one.
		want string
		// reason, when set, is the expected error reason of connect.
		reason string
		// message parts the error must contain.
		message []string
	}{
		{entry: stdioFixture("stdio-default", "--protocol", "both"), want: "legacy"},
		{entry: stdioFixture("stdio-legacy", "--protocol", "both").with("protocol", "legacy"), want: "legacy"},
		{entry: stdioFixture("stdio-auto-both", "--protocol", "both").with("protocol", "auto"), want: modernVersion},
		{entry: stdioFixture("stdio-auto-modern", "--protocol", "modern").with("protocol", "auto"), want: modernVersion},
		{entry: stdioFixture("stdio-auto-legacy", "--protocol", "legacy").with("protocol", "auto"), want: "legacy"},
		{entry: stdioFixture("stdio-pin-modern-legacy", "--protocol", "legacy").with("protocol", pin(modernVersion)),
			reason: "protocol_mismatch", message: []string{modernVersion, "server/discover is not implemented"}},
		{entry: stdioFixture("stdio-pin-2025", "--protocol", "both").with("protocol", pin("2025-06-18")), want: "2025-06-18"},
		{entry: stdioFixture("stdio-pin-modern", "--protocol", "both").with("protocol", pin(modernVersion)), want: modernVersion},
		{entry: stdioFixture("stdio-legacy-modern", "--protocol", "modern").with("protocol", "legacy"), reason: "connect_failed"},
		{entry: stdioFixture("stdio-no-discover", "--ignore-discover").with("protocol", "auto"), want: "legacy"},
		{entry: remoteFixture("http-default-both", "http", httpURL["both"]), want: modernVersion},
		{entry: remoteFixture("http-default-modern", "http", httpURL["modern"]), want: modernVersion},
		{entry: remoteFixture("http-default-legacy", "http", httpURL["legacy"]), want: "legacy"},
		{entry: remoteFixture("http-legacy-both", "http", httpURL["both"]).with("protocol", "legacy"), want: "legacy"},
		{entry: remoteFixture("http-pin-modern-legacy", "http", httpURL["legacy"]).with("protocol", pin(modernVersion)),
			reason: "protocol_mismatch", message: []string{modernVersion, "server/discover is not implemented"}},
		{entry: remoteFixture("http-pin-2025", "http", httpURL["both"]).with("protocol", pin("2025-06-18")), want: "2025-06-18"},
		{entry: remoteFixture("sse", "sse", sse.url), want: "legacy"},
	}
	var entries []srv
	for _, c := range cases {
		entries = append(entries, c.entry)
	}
	configureMCP(t, d, mcpSettings(t, entries...))

	// Connect all at once: each case is independent, and the
	// --ignore-discover case waits out the discover probe.
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = callSocket(d.socket, contracts.MethodMCPConnect, contracts.ServerParams{Server: c.entry["id"].(string)}, nil)
		}()
	}
	wg.Wait()

	for i, c := range cases {
		id := c.entry["id"].(string)
		st := serverStatus(t, d, id)
		if c.reason != "" {
			var we *contracts.Error
			if !errors.As(errs[i], &we) {
				t.Errorf("%s: connect error %v, want reason %s", id, errs[i], c.reason)
				continue
			}
			if we.Reason() != c.reason {
				t.Errorf("%s: connect error reason %q (%s), want %q", id, we.Reason(), we.Message, c.reason)
			}
			for _, part := range c.message {
				if !strings.Contains(we.Message, part) {
					t.Errorf("%s: connect error %q does not name %q", id, we.Message, part)
				}
			}
			if st.State != contracts.StateFailed || st.LastError == "" {
				t.Errorf("%s: state %q lastError %q, want failed with an error", id, st.State, st.LastError)
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("%s: connect: %v", id, errs[i])
			continue
		}
		if st.State != contracts.StateConnected {
			t.Errorf("%s: state %q, want connected", id, st.State)
		}
		got := st.ProtocolVersion
		if c.want == "legacy" {
			if !slices.Contains(legacyVersions, got) {
				t.Errorf("%s: protocolVersion %q, want a legacy version %v", id, got, legacyVersions)
			}
		} else if got != c.want {
			t.Errorf("%s: protocolVersion %q, want %q", id, got, c.want)
		}
		if slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, "server-to-client requests") }) {
			t.Errorf("%s: notes %q: server requests are answered on every transport now", id, st.Notes)
		}
		if !st.CatalogComplete || st.ToolCount != fixedTools+3 {
			t.Errorf("%s: catalog complete %v with %d tools, want complete with %d", id, st.CatalogComplete, st.ToolCount, fixedTools+3)
		}
		var ping contracts.PingResult
		d.callInto(t, contracts.MethodMCPPing, contracts.ServerParams{Server: id}, &ping)
		if ping.ProtocolVersion != got {
			t.Errorf("%s: ping protocolVersion %q, status %q", id, ping.ProtocolVersion, got)
		}
	}
}

// toolNames returns the model-facing names and the digest of each
// original name.
func toolNames(cat contracts.CatalogResult) (names []string, digests map[string]string) {
	digests = map[string]string{}
	for _, tool := range cat.Tools {
		names = append(names, tool.Name)
		digests[tool.OriginalName] = tool.Name + " " + tool.Digest
	}
	slices.Sort(names)
	return names, digests
}

// TestCatalogs checks complete discovery over many pages, model-facing
// names, stability across reconnects and restarts, and grants.
func TestCatalogs(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("paged", "--tools", "1000", "--page-size", "20"),
		stdioFixture("awkward", "--long-names"),
		stdioFixture("granted").with("tools", []string{"echo", "add", "count"}, "readOnlyTools", []string{"echo"}, "autonomousTools", []string{"add"}),
		stdioFixture("none").with("tools", []string{}),
	))

	t.Run("paged", func(t *testing.T) {
		cat := catalogOf(t, d, "paged")
		if !cat.Complete || cat.Problem != "" {
			t.Fatalf("catalog complete %v problem %q, want complete", cat.Complete, cat.Problem)
		}
		if want := 1000 + fixedTools; len(cat.Tools) != want {
			t.Fatalf("%d tools, want %d", len(cat.Tools), want)
		}
		seen := map[string]bool{}
		for _, tool := range cat.Tools {
			if seen[tool.Name] {
				t.Errorf("name %q appears twice", tool.Name)
			}
			seen[tool.Name] = true
			if !modelName.MatchString(tool.Name) {
				t.Errorf("name %q does not match %s", tool.Name, modelName)
			}
			if tool.Server != "paged" || tool.Digest == "" || !tool.Selected || tool.Grant != contracts.GrantApproval {
				t.Errorf("tool %+v: want server paged, a digest, selected, grant approval", tool)
			}
		}
		if st := serverStatus(t, d, "paged"); st.ToolCount != 1000+fixedTools || !st.CatalogComplete {
			t.Errorf("status: toolCount %d complete %v", st.ToolCount, st.CatalogComplete)
		}
		if len(cat.Resources) != 2 || len(cat.ResourceTemplates) != 2 || len(cat.Prompts) != 2 {
			t.Errorf("resources %d templates %d prompts %d, want 2 each", len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts))
		}

		names, digests := toolNames(cat)
		d.call(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "paged"})
		again, againDigests := toolNames(catalogOf(t, d, "paged"))
		if !slices.Equal(names, again) || len(digests) != len(againDigests) {
			t.Fatalf("names differ after reconnect")
		}
		for k, v := range digests {
			if againDigests[k] != v {
				t.Errorf("after reconnect %q: %q, was %q", k, againDigests[k], v)
			}
		}
		d.restart()
		restarted, restartedDigests := toolNames(catalogOf(t, d, "paged"))
		if !slices.Equal(names, restarted) {
			t.Fatalf("names differ after a daemon restart")
		}
		for k, v := range digests {
			if restartedDigests[k] != v {
				t.Errorf("after restart %q: %q, was %q", k, restartedDigests[k], v)
			}
		}
	})

	t.Run("long names", func(t *testing.T) {
		cat := catalogOf(t, d, "awkward")
		// Each of these is sanitised or truncated, so it gets a hash of its
		// original; "a_b" is valid as it is and must not take the name
		// "a.b" sanitises to.
		awkward := []string{"long-name-" + strings.Repeat("x", 70), "name with spaces", "dotted.tool.name",
			"slash/tool/name", "ünïcødé-tøøl-名前", "a.b"}
		if want := fixedTools + 3 + len(awkward) + 1; len(cat.Tools) != want || !cat.Complete {
			t.Fatalf("%d tools (complete %v), want %d", len(cat.Tools), cat.Complete, want)
		}
		byOrig := map[string]string{}
		seen := map[string]bool{}
		for _, tool := range cat.Tools {
			if seen[tool.Name] {
				t.Errorf("name %q appears twice", tool.Name)
			}
			seen[tool.Name] = true
			if !modelName.MatchString(tool.Name) {
				t.Errorf("name %q (of %q) does not match %s", tool.Name, tool.OriginalName, modelName)
			}
			byOrig[tool.OriginalName] = tool.Name
		}
		hashed := regexp.MustCompile(`_[0-9a-f]{10,}$`)
		for _, orig := range awkward {
			name, ok := byOrig[orig]
			if !ok {
				t.Errorf("tool %q missing from the catalog", orig)
				continue
			}
			if !hashed.MatchString(name) || !strings.HasPrefix(name, "mcp_awkward_") {
				t.Errorf("%q is named %q, want mcp_awkward_... with a hashed suffix", orig, name)
			}
		}
		if ab := byOrig["a_b"]; ab == "" || ab == byOrig["a.b"] || !strings.HasPrefix(ab, "mcp_awkward_a_b") {
			t.Errorf(`"a_b" is named %q and "a.b" %q: want distinct names`, ab, byOrig["a.b"])
		}
		if byOrig["echo"] != "mcp_awkward_echo" || byOrig["tool-0001"] != "mcp_awkward_tool-0001" {
			t.Errorf("plain names changed: echo %q, tool-0001 %q", byOrig["echo"], byOrig["tool-0001"])
		}
	})

	t.Run("grants", func(t *testing.T) {
		want := map[string]struct {
			selected bool
			grant    string
		}{"echo": {true, contracts.GrantRead}, "add": {true, contracts.GrantAutonomous}, "count": {true, contracts.GrantApproval}}
		cat := catalogOf(t, d, "granted")
		if len(cat.Tools) != fixedTools+3 {
			t.Fatalf("%d tools, want %d", len(cat.Tools), fixedTools+3)
		}
		for _, tool := range cat.Tools {
			w, ok := want[tool.OriginalName]
			if !ok {
				w.grant = contracts.GrantNotSelected
			}
			if tool.Selected != w.selected || tool.Grant != w.grant {
				t.Errorf("%s: selected %v grant %q, want %v %q", tool.OriginalName, tool.Selected, tool.Grant, w.selected, w.grant)
			}
		}
		none := catalogOf(t, d, "none")
		if len(none.Tools) != fixedTools+3 {
			t.Fatalf("tools []: %d tools listed, want all %d (discovery only)", len(none.Tools), fixedTools+3)
		}
		for _, tool := range none.Tools {
			if tool.Selected || tool.Grant != contracts.GrantNotSelected {
				t.Errorf("tools []: %s selected %v grant %q, want not selected", tool.OriginalName, tool.Selected, tool.Grant)
			}
		}
	})
}

// startCount counts the daemon's "server process started" log lines for id:
// one per fixture process it spawned.
func startCount(t testing.TB, d *daemon, id string) int {
	t.Helper()
	return len(d.logLines(t, "server process started", fmt.Sprintf(`"server":%q`, id)))
}

// TestLifecycle checks when connections are made, shared, kept and ended.
func TestLifecycle(t *testing.T) {
	t.Parallel()

	t.Run("connect at start without delaying the socket", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		configureMCP(t, d, mcpSettings(t, stdioFixture("slow", "--init-delay", "3s")))
		if st := serverStatus(t, d, "slow"); st.State != contracts.StateIdle {
			t.Fatalf("configure alone made the server %q, want idle", st.State)
		}
		d.restart() // waits only for system.hello
		// The background connect may not have begun when hello answers.
		st := waitServer(t, d, "slow", "to leave idle", func(st contracts.ServerStatus) bool { return st.State != contracts.StateIdle })
		if st.State != contracts.StateConnecting {
			t.Fatalf("right after start the server is %q, want connecting (the init delay is 3s)", st.State)
		}
		waitServer(t, d, "slow", "to connect", func(st contracts.ServerStatus) bool { return st.State == contracts.StateConnected })
	})

	t.Run("concurrent first callers share one setup", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		marker := "shared-" + randomHex(t, 6)
		configureMCP(t, d, mcpSettings(t, stdioFixture("shared", "--init-delay", "500ms", "--name", marker)))
		const callers = 10
		results := make([]contracts.CatalogResult, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = callSocket(d.socket, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "shared"}, &results[i])
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("caller %d: %v", i, err)
			}
			if len(results[i].Tools) != fixedTools+3 || results[i].DiscoveredAt != results[0].DiscoveredAt {
				t.Errorf("caller %d got %d tools discovered at %s; caller 0 at %s", i, len(results[i].Tools), results[i].DiscoveredAt, results[0].DiscoveredAt)
			}
		}
		procs := procsWithArg(t, marker)
		for _, p := range procs {
			trackProc(t, p.pid)
		}
		st := serverStatus(t, d, "shared")
		if len(procs) != 1 || procs[0].pid != st.PID {
			t.Errorf("fixture processes %+v, want exactly one, the server's pid %d", procs, st.PID)
		}
		if n := startCount(t, d, "shared"); n != 1 {
			t.Errorf("the daemon started %d processes for the server, want 1", n)
		}
		if st.State != contracts.StateConnected || st.Generation == 0 {
			t.Errorf("state %q generation %d, want connected with a generation", st.State, st.Generation)
		}
	})

	t.Run("failed stays failed until connect", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		marker := "hang-" + randomHex(t, 6)
		configureMCP(t, d, mcpSettings(t, stdioFixture("hang", "--hang-init", "--name", marker).with("timeoutMs", 1000)))
		e := connectFails(t, d, "hang")
		if e.Code != 1006 || e.Reason() != "connect_failed" || !strings.Contains(e.Message, "timeoutMs") {
			t.Errorf("connect error %d %q %q, want 1006 connect_failed naming timeoutMs", e.Code, e.Reason(), e.Message)
		}
		for range 2 {
			st := serverStatus(t, d, "hang")
			if st.State != contracts.StateFailed || !strings.Contains(st.LastError, "timeoutMs") || st.PID != 0 {
				t.Errorf("status %+v, want failed, a lastError naming timeoutMs, no pid", st)
			}
		}
		if left := procsWithArg(t, marker); len(left) != 0 {
			t.Errorf("the failed server's process still runs: %+v", left)
		}
		if n := startCount(t, d, "hang"); n != 1 {
			t.Errorf("%d process starts after one failed connect, want 1", n)
		}
		connectFails(t, d, "hang")
		if n := startCount(t, d, "hang"); n != 2 {
			t.Errorf("%d process starts after an explicit connect, want 2", n)
		}
	})

	t.Run("configure disconnects only changed servers", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		a, b := stdioFixture("alpha"), stdioFixture("beta")
		configureMCP(t, d, mcpSettings(t, a, b))
		stA, stB := connectServer(t, d, "alpha"), connectServer(t, d, "beta")
		leaderA := trackProc(t, stA.PID)
		trackProc(t, stB.PID)
		res := configureMCP(t, d, mcpSettings(t, a.with("env", map[string]string{"CHANGED": "1"}), b))
		if !slices.Equal(res.Changed, []string{"alpha"}) || !slices.Equal(res.Disconnected, []string{"alpha"}) {
			t.Errorf("configure: changed %v disconnected %v, want [alpha] both", res.Changed, res.Disconnected)
		}
		if st := serverStatus(t, d, "alpha"); st.State != contracts.StateIdle || st.PID != 0 {
			t.Errorf("alpha after configure: state %q pid %d, want idle", st.State, st.PID)
		}
		if leaderA.running() || len(groupRunning(t, leaderA.pid)) > 0 {
			t.Errorf("alpha's process group %d still runs", leaderA.pid)
		}
		if st := serverStatus(t, d, "beta"); st.State != contracts.StateConnected || st.PID != stB.PID || st.Generation != stB.Generation {
			t.Errorf("beta after configure: state %q pid %d generation %d, want connected, pid %d generation %d",
				st.State, st.PID, st.Generation, stB.PID, stB.Generation)
		}
	})
}

// TestStdioFaults checks hostile stdout and stderr.
func TestStdioFaults(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("huge", "--oversized-line", "2000000").with("maxBytes", 1000000),
		stdioFixture("noisy", "--garbage-stdout"),
		stdioFixture("colour", "--stderr-lines", "3"),
	))

	// The oversized line comes after the handshake, so the connect itself
	// may win or lose the race with it; either way the server ends failed.
	_ = callSocket(d.socket, contracts.MethodMCPConnect, contracts.ServerParams{Server: "huge"}, nil)
	st := waitServer(t, d, "huge", "to fail", func(st contracts.ServerStatus) bool { return st.State == contracts.StateFailed })
	if !strings.Contains(st.LastError, "maxBytes") {
		t.Errorf("lastError %q does not mention maxBytes", st.LastError)
	}

	connectServer(t, d, "noisy")
	if cat := catalogOf(t, d, "noisy"); !cat.Complete || len(cat.Tools) != fixedTools+3 {
		t.Errorf("noisy: catalog complete %v with %d tools", cat.Complete, len(cat.Tools))
	}

	connectServer(t, d, "colour")
	tail := serverStatus(t, d, "colour").StderrTail
	// Escape sequences lose their effect: ESC and BEL are shown as text.
	for _, want := range []string{`stderr line 1: \u{001B}[31mred\u{001B}[0m`, `\u{001B}]0;title set by fixture\u{0007}`, "stderr line 3", "link"} {
		if !strings.Contains(tail, want) {
			t.Errorf("stderr tail lacks %q:\n%q", want, tail)
		}
	}
	if strings.ContainsAny(tail, "\x1b\x07\u009b\u009d") {
		t.Errorf("stderr tail keeps escape sequences:\n%q", tail)
	}
}
