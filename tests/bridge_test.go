package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// The bridge tests drive 'pikoctl mcp serve' with MCP clients nobody here
// wrote: the official TypeScript SDK client (tests/interop/bridge-driver.mjs),
// the official Go SDK client (tests/fixtures/gosdkclient) and the MCP
// Inspector CLI, against a real pikod and real fixture servers.

// hostDriver is one MCP client driving a bridge, line by line.
type hostDriver struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// lines receives every line the driver prints.
	mu     sync.Mutex
	seq    int
	byseq  map[int]chan map[string]any
	events chan map[string]any
	done   chan struct{}
	stderr testsupport.Buffer
}

// startHost starts a driver (argv) whose client runs pikoctl mcp serve
// on d with extra flags.
func startHost(t testing.TB, d *daemon, argv []string, flags ...string) *hostDriver {
	t.Helper()
	args := append(append(slices.Clone(argv), pikoctlBin, "--socket", d.socket, "mcp", "serve"), flags...)
	h := &hostDriver{t: t, byseq: map[int]chan map[string]any{}, events: make(chan map[string]any, 256), done: make(chan struct{})}
	h.cmd = exec.Command(args[0], args[1:]...)
	h.cmd.Env = append(minimalEnv(t.TempDir()), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	detach(h.cmd)
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			seq, hasSeq := m["seq"].(float64)
			if !hasSeq || m["event"] != nil {
				select {
				case h.events <- m:
				default:
				}
				if !hasSeq {
					continue
				}
			}
			h.mu.Lock()
			ch := h.byseq[int(seq)]
			h.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() {
		h.stdin.Close()
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			_ = h.cmd.Process.Kill()
		}
		_ = h.cmd.Wait()
		if strings.Contains(h.stderr.String(), "DATA RACE") {
			t.Errorf("race in the bridge:\n%s", h.stderr.String())
		}
	})
	return h
}

// send sends a command and returns the channel of its lines.
func (h *hostDriver) send(cmd map[string]any) (int, chan map[string]any) {
	h.t.Helper()
	h.mu.Lock()
	h.seq++
	seq := h.seq
	ch := make(chan map[string]any, 64)
	h.byseq[seq] = ch
	h.mu.Unlock()
	cmd["seq"] = seq
	b, _ := json.Marshal(cmd)
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		h.t.Fatalf("writing to the host driver: %v", err)
	}
	return seq, ch
}

// next waits for the next line of a command (progress or its answer).
func (h *hostDriver) next(ch chan map[string]any) map[string]any {
	h.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-h.done:
		h.t.Fatalf("the host driver ended; stderr:\n%s", h.stderr.String())
	case <-time.After(90 * time.Second):
		h.t.Fatalf("no answer from the host driver; stderr:\n%s", h.stderr.String())
	}
	return nil
}

// answer waits for the final answer of a command, skipping progress.
func (h *hostDriver) answer(ch chan map[string]any) map[string]any {
	h.t.Helper()
	for {
		m := h.next(ch)
		if m["event"] == nil {
			return m
		}
	}
}

// do sends a command and returns its answer, failing on an error.
func (h *hostDriver) do(cmd map[string]any) map[string]any {
	h.t.Helper()
	_, ch := h.send(cmd)
	m := h.answer(ch)
	if e, ok := m["error"]; ok {
		h.t.Fatalf("%v: error %v; bridge stderr:\n%s", cmd["op"], e, h.stderr.String())
	}
	return m
}

// waitEvent waits for an asynchronous event named name.
func (h *hostDriver) waitEvent(name string) map[string]any {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case m := <-h.events:
			if m["event"] == name {
				return m
			}
		case <-deadline:
			h.t.Fatalf("no %s event; stderr:\n%s", name, h.stderr.String())
		}
	}
}

// toolsOf returns the tools of a listTools answer by name.
func toolsOf(m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := m["tools"].([]any)
	for _, x := range list {
		t := x.(map[string]any)
		out[t["name"].(string)] = t
	}
	return out
}

// resultText joins the text blocks of a call answer's result.
func resultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if blk, ok := c.(map[string]any); ok {
			if s, ok := blk["text"].(string); ok {
				b.WriteString(s)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func isErrorResult(m map[string]any) bool {
	res, _ := m["result"].(map[string]any)
	v, _ := res["isError"].(bool)
	return v
}

var actionInText = regexp.MustCompile(`action (act_[A-Za-z0-9_-]+)`)

// actionFrom finds the action id in a progress message or result text.
func actionFrom(t testing.TB, s string) string {
	t.Helper()
	m := actionInText.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no action id in %q", s)
	}
	return m[1]
}

// bridgeSetup is a daemon with two fixture servers for the bridge tests:
// fx exposes every tool (echo, sleep, big and notify-list-changed read-only,
// count and the rest approval-gated), two selects only echo.
func bridgeSetup(t *testing.T) (d *daemon, callLog string, names map[string]string) {
	t.Helper()
	callLog = filepath.Join(t.TempDir(), "calls.log")
	d = startDaemon(t)
	fx := stdioFixture("fx", "--call-log", callLog, "--completions", "--log-tool").with(
		"readOnlyTools", []string{"echo", "sleep", "big", "notify-list-changed", "log"})
	two := stdioFixture("two", "--name", "two").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"})
	configureMCP(t, d, mcpSettings(t, fx, two))
	connectServer(t, d, "fx")
	names = map[string]string{}
	for _, id := range []string{"fx", "two"} {
		var cat contracts.CatalogResult
		d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: id}, &cat)
		for _, tl := range cat.Tools {
			names[id+"/"+tl.OriginalName] = tl.Name
		}
	}
	return d, callLog, names
}

// reviewOf returns an action's review.
func reviewOf(t testing.TB, d *daemon, id string) contracts.ActionReview {
	t.Helper()
	var rv contracts.ActionReview
	d.callInto(t, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: id}, &rv)
	return rv
}

func tsHost(t *testing.T) []string {
	dir := interopDir(t)
	return []string{"node", filepath.Join(dir, "bridge-driver.mjs")}
}

// TestBridgeTypeScriptClient runs one session of the official TypeScript
// SDK client over pikoctl mcp serve: what it sees, a read call, calls that
// wait for the owner (approved at a pseudo-terminal, rejected, cancelled),
// a cancelled running call, list_changed, resources, templates, prompts,
// completion, a truncated result read whole, owner methods refused, and
// the bridge ending with its stdin.
func TestBridgeTypeScriptClient(t *testing.T) {
	host := tsHost(t)
	d, callLog, names := bridgeSetup(t)
	h := startHost(t, d, host, "--wait-max", "2m")

	init := h.do(map[string]any{"op": "init"})
	caps, _ := init["capabilities"].(map[string]any)
	if info, _ := init["serverInfo"].(map[string]any); info["name"] != "pikod" {
		t.Errorf("serverInfo = %v, want pikod", init["serverInfo"])
	}
	for _, c := range []string{"tools", "resources", "prompts", "completions"} {
		if caps[c] == nil {
			t.Errorf("capabilities lack %s: %v", c, caps)
		}
	}
	if r, _ := caps["resources"].(map[string]any); r["subscribe"] != true {
		t.Errorf("resources capability does not offer subscribe: %v", caps["resources"])
	}

	t.Run("tools as the catalog has them", func(t *testing.T) {
		tools := toolsOf(h.do(map[string]any{"op": "listTools"}))
		for _, want := range []string{"fx/echo", "fx/count", "fx/sleep", "two/echo"} {
			tl, ok := tools[names[want]]
			if !ok {
				t.Errorf("tools/list lacks %s (%s): %v", want, names[want], slices.Collect(mapsKeys(tools)))
				continue
			}
			meta, _ := tl["_meta"].(map[string]any)
			server, tool, _ := strings.Cut(want, "/")
			if meta["io.pikod/server"] != server || meta["io.pikod/tool"] != tool {
				t.Errorf("%s _meta = %v", want, meta)
			}
		}
		if tl := tools[names["fx/echo"]]; tl["outputSchema"] == nil || tl["inputSchema"] == nil {
			t.Errorf("echo lacks its schemas: %v", tl)
		}
		if _, ok := tools[names["two/add"]]; ok || names["two/add"] == "" {
			t.Errorf("two/add is not selected and must not be listed (name %q)", names["two/add"])
		}
		if _, ok := tools["pikod_action_status"]; !ok {
			t.Errorf("pikod_action_status is missing")
		}
		for n := range tools {
			for _, owner := range []string{"approve", "reject", "respond", "resume", "trust", "configure", "secret", "logout", "passphrase"} {
				if strings.Contains(n, owner) {
					t.Errorf("tool %q looks like an owner method", n)
				}
			}
		}
	})

	t.Run("read call", func(t *testing.T) {
		m := h.do(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "hello bridge"}})
		res := m["result"].(map[string]any)
		if sc, _ := res["structuredContent"].(map[string]any); sc["text"] != "hello bridge" {
			t.Errorf("structuredContent = %v", res["structuredContent"])
		}
		meta, _ := res["_meta"].(map[string]any)
		if meta["io.pikod/status"] != "completed" || meta["io.pikod/receiptId"] == nil {
			t.Errorf("result _meta = %v", meta)
		}
	})

	t.Run("approved at a terminal", func(t *testing.T) {
		a := startApprover(t)
		nonce := "n-" + randomToken(t, 8)
		_, ch := h.send(map[string]any{"op": "call", "name": names["fx/count"], "arguments": map[string]any{"nonce": nonce}, "progress": true})
		first := h.next(ch)
		if first["event"] != "progress" {
			t.Fatalf("first line = %v, want progress", first)
		}
		msg, _ := first["message"].(string)
		id := actionFrom(t, msg)
		if !strings.Contains(msg, "pikoctl mcp approve "+id) {
			t.Errorf("progress message lacks the owner's command: %q", msg)
		}
		rv := reviewOf(t, d, id)
		if !strings.Contains(msg, rv.Digest[len(rv.Digest)-6:]) {
			t.Errorf("progress message lacks the digest's last 6 characters: %q", msg)
		}
		if data, _ := os.ReadFile(callLog); strings.Contains(string(data), nonce) {
			t.Fatalf("the call reached the server before approval")
		}
		if o := a.approve(d, id, rv.Digest); o.Error != nil {
			t.Fatalf("approving: %s", o)
		}
		m := h.answer(ch)
		if isErrorResult(m) || !strings.Contains(resultText(m), nonce) {
			t.Errorf("approved call answered %v", m)
		}
		if data, _ := os.ReadFile(callLog); !strings.Contains(string(data), nonce) {
			t.Errorf("the approved call never reached the server")
		}
		// Who asked: the bridge process, for the host it declared.
		rv = reviewOf(t, d, id)
		var rec contracts.ReceiptsResult
		d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{ID: rv.ReceiptID}, &rec)
		for what, c := range map[string]contracts.Caller{"action": rv.Caller, "receipt": rec.Receipts[0].Caller} {
			if c.Executable != pikoctlBin || c.PID == 0 || c.Client.Name != "ts-sdk-test-host" || c.Client.Version != "9.8.7" || c.Via != "pikoctl mcp serve" {
				t.Errorf("the %s's caller = %+v, want pikoctl (%s) for ts-sdk-test-host 9.8.7 via pikoctl mcp serve", what, c, pikoctlBin)
			}
		}
	})

	t.Run("rejected", func(t *testing.T) {
		nonce := "r-" + randomToken(t, 8)
		_, ch := h.send(map[string]any{"op": "call", "name": names["fx/count"], "arguments": map[string]any{"nonce": nonce}, "progress": true})
		id := actionFrom(t, h.next(ch)["message"].(string))
		rv := reviewOf(t, d, id)
		d.call(t, contracts.MethodMCPActionsApprove, contracts.ApproveParams{ActionID: id, Digest: rv.Digest, Decision: contracts.DecisionReject})
		m := h.answer(ch)
		if !isErrorResult(m) || !strings.Contains(resultText(m), "rejected") || !strings.Contains(resultText(m), "nothing was sent") {
			t.Errorf("rejected call answered %v", m)
		}
		if data, _ := os.ReadFile(callLog); strings.Contains(string(data), nonce) {
			t.Errorf("a rejected call reached the server")
		}
	})

	t.Run("host cancels a waiting call", func(t *testing.T) {
		_, ch := h.send(map[string]any{"op": "call", "name": names["fx/count"], "arguments": map[string]any{"nonce": "c"}, "progress": true, "cancelAfterProgress": 1})
		id := actionFrom(t, h.next(ch)["message"].(string))
		if m := h.answer(ch); m["error"] == nil {
			t.Errorf("a cancelled call answered %v", m)
		}
		time.Sleep(300 * time.Millisecond)
		if rv := reviewOf(t, d, id); rv.State != contracts.ActionPrepared {
			t.Errorf("after the host cancelled, the action is %s, want prepared for the owner", rv.State)
		}
	})

	t.Run("host cancels a running call", func(t *testing.T) {
		_, ch := h.send(map[string]any{"op": "call", "name": names["fx/sleep"], "arguments": map[string]any{"ms": 60000}, "progress": true, "cancelAfterProgress": 1})
		if m := h.answer(ch); m["error"] == nil {
			t.Errorf("a cancelled running call answered %v", m)
		}
		// pikod's verdict is in its receipt: the call went out, so its
		// outcome is not completed.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var res contracts.ReceiptsResult
			d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Server: "fx", Limit: 5}, &res)
			if i := slices.IndexFunc(res.Receipts, func(r contracts.ReceiptInfo) bool { return r.Tool == "sleep" }); i >= 0 {
				if res.Receipts[i].Status == contracts.CallCompleted {
					t.Errorf("the cancelled sleep's receipt says completed")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no receipt for the cancelled sleep")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("log messages relayed", func(t *testing.T) {
		text := "log-" + randomToken(t, 8)
		h.do(map[string]any{"op": "call", "name": names["fx/log"], "arguments": map[string]any{"level": "error", "text": text}})
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m := <-h.events:
				if m["event"] == "message" && strings.Contains(fmt.Sprint(m["data"]), text) {
					if m["level"] != "error" {
						t.Errorf("relayed log message level %v, want error", m["level"])
					}
					return
				}
			case <-deadline:
				t.Fatalf("the server's log message never reached the host")
			}
		}
	})

	t.Run("list_changed", func(t *testing.T) {
		h.do(map[string]any{"op": "call", "name": names["fx/notify-list-changed"]})
		h.waitEvent("tools/list_changed")
		deadline := time.Now().Add(30 * time.Second)
		for {
			if tools := toolsOf(h.do(map[string]any{"op": "listTools"})); slices.ContainsFunc(slices.Collect(mapsKeys(tools)), func(n string) bool { return strings.Contains(n, "late-tool") }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("late-tool never listed")
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("resources, templates, prompts, completion", func(t *testing.T) {
		res := h.do(map[string]any{"op": "listResources"})
		list, _ := res["resources"].([]any)
		if len(list) == 0 {
			t.Fatalf("no resources: %v", res)
		}
		uri := list[0].(map[string]any)["uri"].(string)
		read := h.do(map[string]any{"op": "read", "uri": uri})
		if contents, _ := read["contents"].([]any); len(contents) == 0 {
			t.Errorf("reading %s gave %v", uri, read)
		}
		tpl := h.do(map[string]any{"op": "listTemplates"})
		tlist, _ := tpl["resourceTemplates"].([]any)
		var fixtureTpl string
		sawSource := false
		for _, x := range tlist {
			u := x.(map[string]any)["uriTemplate"].(string)
			if strings.HasPrefix(u, "pikod://source/") {
				sawSource = true
			} else if fixtureTpl == "" {
				fixtureTpl = u
			}
		}
		if !sawSource || fixtureTpl == "" {
			t.Errorf("templates = %v", tlist)
		}
		pr := h.do(map[string]any{"op": "listPrompts"})
		plist, _ := pr["prompts"].([]any)
		if len(plist) == 0 {
			t.Fatalf("no prompts: %v", pr)
		}
		p0 := plist[0].(map[string]any)
		args := map[string]any{}
		if pa, _ := p0["arguments"].([]any); len(pa) > 0 {
			for _, a := range pa {
				args[a.(map[string]any)["name"].(string)] = "x"
			}
		}
		got := h.do(map[string]any{"op": "getPrompt", "name": p0["name"], "arguments": args})
		if msgs, _ := got["messages"].([]any); len(msgs) == 0 || !strings.Contains(fmt.Sprint(got["description"]), "evidence") {
			t.Errorf("prompt answered %v", got)
		}
		if pa, _ := p0["arguments"].([]any); len(pa) > 0 {
			arg := pa[0].(map[string]any)["name"]
			c := h.do(map[string]any{"op": "complete", "ref": map[string]any{"type": "ref/prompt", "name": p0["name"]}, "argument": map[string]any{"name": arg, "value": ""}})
			if comp, _ := c["completion"].(map[string]any); comp == nil {
				t.Errorf("completion answered %v", c)
			}
		}
	})

	t.Run("truncated result read whole", func(t *testing.T) {
		m := h.do(map[string]any{"op": "call", "name": names["fx/big"], "arguments": map[string]any{"bytes": 300000}})
		res := m["result"].(map[string]any)
		var link string
		for _, c := range res["content"].([]any) {
			if blk := c.(map[string]any); blk["type"] == "resource_link" {
				link, _ = blk["uri"].(string)
			}
		}
		if !strings.HasPrefix(link, "pikod://source/") {
			t.Fatalf("a 300,000-byte result has no resource_link to its source: %v", res["content"])
		}
		read := h.do(map[string]any{"op": "read", "uri": link})
		contents, _ := read["contents"].([]any)
		if len(contents) != 1 || !strings.Contains(contents[0].(map[string]any)["text"].(string), strings.Repeat("x", 300000)) {
			t.Errorf("reading %s did not give the whole result", link)
		}
	})

	t.Run("no owner method", func(t *testing.T) {
		// The driver's raw requests work: ping is answered.
		h.do(map[string]any{"op": "raw", "method": "ping"})
		for _, method := range append(slices.Clone(contracts.Methods), "approve", "actions/approve", "requests/respond", "trust", "configure", "secret", "auth", "logout") {
			if m := (func() map[string]any {
				_, ch := h.send(map[string]any{"op": "raw", "method": method})
				return h.answer(ch)
			})(); m["error"] == nil {
				t.Errorf("the bridge answered %s: %v", method, m)
			}
		}
		m := h.do(map[string]any{"op": "call", "name": "pikod_action_status", "arguments": map[string]any{"actionId": "act_nope"}})
		if !isErrorResult(m) {
			t.Errorf("pikod_action_status of an unknown action answered %v", m)
		}
	})

	t.Run("stdin closed leaves nothing", func(t *testing.T) {
		pid := bridgePid(t, h)
		h.stdin.Close()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the host driver did not end")
		}
		deadline := time.Now().Add(20 * time.Second)
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("pikoctl mcp serve (pid %d) outlived its stdin", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// bridgePid finds the pikoctl mcp serve child of a host driver.
func bridgePid(t testing.TB, h *hostDriver) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == fmt.Sprint(h.cmd.Process.Pid) {
			if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmdline), "serve") {
				return pid
			}
		}
	}
	t.Fatalf("no pikoctl mcp serve child of the host driver")
	return 0
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestBridgeReturnAndSearch uses --approval return --tools search: the host
// finds a tool with pikod_search_tools, calls it with pikod_call_tool, gets
// the action id at once, and reads the outcome with pikod_action_status
// after the owner approves.
func TestBridgeReturnAndSearch(t *testing.T) {
	host := tsHost(t)
	d, callLog, names := bridgeSetup(t)
	h := startHost(t, d, host, "--approval", "return", "--tools", "search")
	h.do(map[string]any{"op": "init"})
	tools := toolsOf(h.do(map[string]any{"op": "listTools"}))
	if len(tools) != 3 || tools["pikod_search_tools"] == nil || tools["pikod_call_tool"] == nil || tools["pikod_action_status"] == nil {
		t.Fatalf("search mode lists %v", slices.Collect(mapsKeys(tools)))
	}
	found := h.do(map[string]any{"op": "call", "name": "pikod_search_tools", "arguments": map[string]any{"query": "how many tool calls nonce"}})
	if !strings.Contains(resultText(found), names["fx/count"]) {
		t.Fatalf("search for count found:\n%s", resultText(found))
	}
	if strings.Contains(resultText(found), `"`+names["two/add"]+`"`) {
		t.Errorf("search lists a tool that is not selected")
	}
	read := h.do(map[string]any{"op": "call", "name": "pikod_call_tool", "arguments": map[string]any{"name": names["fx/echo"], "arguments": map[string]any{"text": "via search"}}})
	if !strings.Contains(resultText(read), "via search") {
		t.Errorf("pikod_call_tool of echo answered %v", read)
	}
	nonce := "s-" + randomToken(t, 8)
	m := h.do(map[string]any{"op": "call", "name": "pikod_call_tool", "arguments": map[string]any{"name": names["fx/count"], "arguments": map[string]any{"nonce": nonce}}})
	if !isErrorResult(m) || !strings.Contains(resultText(m), "pikoctl mcp approve") {
		t.Fatalf("return mode answered %v", m)
	}
	id := actionFrom(t, resultText(m))
	st := h.do(map[string]any{"op": "call", "name": "pikod_action_status", "arguments": map[string]any{"actionId": id}})
	if !strings.Contains(resultText(st), "waits for the owner") {
		t.Errorf("status of a prepared action: %s", resultText(st))
	}
	a := startApprover(t)
	if o := a.approve(d, id, reviewOf(t, d, id).Digest); o.Error != nil {
		t.Fatalf("approving: %s", o)
	}
	st = h.do(map[string]any{"op": "call", "name": "pikod_action_status", "arguments": map[string]any{"actionId": id}})
	if isErrorResult(st) || !strings.Contains(resultText(st), nonce) {
		t.Errorf("status after approval: %v", st)
	}
	if data, _ := os.ReadFile(callLog); !strings.Contains(string(data), nonce) {
		t.Errorf("the approved call never reached the server")
	}
}

// TestBridgeGoSDKClient runs the official Go SDK client over the bridge:
// tools, a read call, and a call approved at a terminal while it waits
// with progress.
func TestBridgeGoSDKClient(t *testing.T) {
	d, callLog, names := bridgeSetup(t)
	h := startHost(t, d, []string{gosdkClientBin})
	if init := h.do(map[string]any{"op": "init"}); fmt.Sprint(init["serverInfo"]) == "" {
		t.Fatalf("init answered %v", init)
	}
	tools := toolsOf(h.do(map[string]any{"op": "listTools"}))
	if tools[names["fx/echo"]] == nil || tools[names["fx/count"]] == nil {
		t.Fatalf("tools/list: %v", slices.Collect(mapsKeys(tools)))
	}
	m := h.do(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "go sdk"}})
	if !strings.Contains(resultText(m), "go sdk") {
		t.Errorf("read call answered %v", m)
	}
	a := startApprover(t)
	nonce := "g-" + randomToken(t, 8)
	_, ch := h.send(map[string]any{"op": "call", "name": names["fx/count"], "arguments": map[string]any{"nonce": nonce}, "progress": true})
	first := h.next(ch)
	id := actionFrom(t, fmt.Sprint(first["message"]))
	if o := a.approve(d, id, reviewOf(t, d, id).Digest); o.Error != nil {
		t.Fatalf("approving: %s", o)
	}
	if m := h.answer(ch); isErrorResult(m) || !strings.Contains(resultText(m), nonce) {
		t.Errorf("approved call answered %v", m)
	}
	if data, _ := os.ReadFile(callLog); !strings.Contains(string(data), nonce) {
		t.Errorf("the approved call never reached the server")
	}
}

// TestBridgeInspectorCLI lists and calls tools over the bridge with the
// MCP Inspector CLI, one process per request as people use it.
func TestBridgeInspectorCLI(t *testing.T) {
	dir := interopDir(t)
	d, _, names := bridgeSetup(t)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "index.js")
	run := func(serveFlags []string, args ...string) string {
		t.Helper()
		// The command goes before the flags, its own arguments after --.
		argv := append([]string{cli, pikoctlBin}, args...)
		argv = append(argv, "--", "--socket", d.socket, "mcp", "serve")
		argv = append(argv, serveFlags...)
		cmd := exec.Command("node", argv...)
		// The CLI looks for its package.json relative to the working
		// directory.
		cmd.Dir = filepath.Dir(cli)
		cmd.Env = append(minimalEnv(t.TempDir()), "DBUS_SESSION_BUS_ADDRESS=disabled:")
		detach(cmd)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return string(out)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(run(nil, "--method", "tools/list")), &list); err != nil {
		t.Fatalf("tools/list output: %v", err)
	}
	if !slices.ContainsFunc(list.Tools, func(x struct {
		Name string `json:"name"`
	}) bool {
		return x.Name == names["fx/echo"]
	}) {
		t.Errorf("the inspector's tools/list lacks %s: %+v", names["fx/echo"], list.Tools)
	}
	out := run(nil, "--method", "tools/call", "--tool-name", names["fx/echo"], "--tool-arg", "text=from the inspector")
	if !strings.Contains(out, "from the inspector") {
		t.Errorf("the inspector's tools/call answered:\n%s", out)
	}
	// A one-shot client cannot wait for the owner: --approval return.
	out = run([]string{"--approval", "return"}, "--method", "tools/call", "--tool-name", names["fx/count"], "--tool-arg", "nonce=insp")
	if !strings.Contains(out, "pikoctl mcp approve act_") || !strings.Contains(out, `"isError": true`) {
		t.Errorf("an ungranted call through the inspector answered:\n%s", out)
	}
}

// TestBridgeDaemonRestart restarts pikod under a live bridge: the bridge
// reconnects, and the host's next calls work without a new session.
func TestBridgeDaemonRestart(t *testing.T) {
	host := tsHost(t)
	d, _, names := bridgeSetup(t)
	h := startHost(t, d, host)
	h.do(map[string]any{"op": "init"})
	h.do(map[string]any{"op": "listTools"})
	h.do(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "before"}})
	d.stop(t)
	// While pikod is down, a call says so and that nothing was sent.
	_, ch := h.send(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "down"}})
	if m := h.answer(ch); m["error"] == nil && !(isErrorResult(m) && strings.Contains(resultText(m), "not reachable")) {
		t.Errorf("a call while pikod is down answered %v", m)
	}
	d.start(t)
	m := h.do(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "after restart"}})
	if !strings.Contains(resultText(m), "after restart") {
		t.Errorf("after pikod restarted, the call answered %v", m)
	}
}

// TestBridgeNoDaemon: with pikod not running, initialize fails saying how
// to start it, and stderr says the same.
func TestBridgeNoDaemon(t *testing.T) {
	host := tsHost(t)
	d := newInstance(t)
	h := startHost(t, d, host)
	_, ch := h.send(map[string]any{"op": "init"})
	m := h.answer(ch)
	if e := fmt.Sprint(m["error"]); !strings.Contains(e, "not reachable") || !strings.Contains(e, "start it with") {
		t.Errorf("initialize without pikod answered %v", m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.stderr.String(), "start it with") {
		if time.Now().After(deadline) {
			t.Fatalf("stderr does not say how to start pikod:\n%s", h.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBridgeHTTP serves the bridge over Streamable HTTP on loopback: no
// token, a wrong token, a foreign Host or Origin are refused; the
// TypeScript SDK's HTTP client with the token lists and calls tools.
func TestBridgeHTTP(t *testing.T) {
	dir := interopDir(t)
	d, _, names := bridgeSetup(t)
	cmd := exec.Command(pikoctlBin, "--socket", d.socket, "mcp", "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(minimalEnv(t.TempDir()), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	detach(cmd)
	var stderr testsupport.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	var url, token string
	for sc.Scan() && (url == "" || token == "") {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "pikoctl mcp serve: "); ok {
			url = u
		}
		if tok, ok := strings.CutPrefix(line, "Authorization: Bearer "); ok {
			token = tok
		}
	}
	if url == "" || token == "" {
		t.Fatalf("no URL and token on stdout; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), token) {
		t.Errorf("the token is on stderr")
	}
	post := func(mutate func(*http.Request)) int {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		mutate(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for what, mutate := range map[string]func(*http.Request){
		"no token":       func(r *http.Request) { r.Header.Del("Authorization") },
		"wrong token":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("a", len(token))) },
		"foreign Host":   func(r *http.Request) { r.Host = "evil.example:80" },
		"foreign Origin": func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
	} {
		if code := post(mutate); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 401 or 403", what, code)
		}
	}
	if code := post(func(*http.Request) {}); code == http.StatusUnauthorized || code == http.StatusForbidden {
		// A ping before initialize may be refused by the MCP layer, but
		// never by the guard.
		t.Errorf("with the token: status %d", code)
	}
	h := startHost(t, d, []string{"node", filepath.Join(dir, "bridge-driver.mjs"), "--http", url, token})
	_ = h // the driver's argv ends with pikoctl ... serve, which --http ignores
	h.do(map[string]any{"op": "init"})
	tools := toolsOf(h.do(map[string]any{"op": "listTools"}))
	if tools[names["fx/echo"]] == nil {
		t.Fatalf("tools over http: %v", slices.Collect(mapsKeys(tools)))
	}
	m := h.do(map[string]any{"op": "call", "name": names["fx/echo"], "arguments": map[string]any{"text": "over http"}})
	if !strings.Contains(resultText(m), "over http") {
		t.Errorf("call over http answered %v", m)
	}
}
