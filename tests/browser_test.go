package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// chromiumBin returns Debian's chromium after checking that it starts
// headless here (the only reason a browser test may skip: scripts/test-deps
// installs it, so CI never does).
func chromiumBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("chromium is not installed (%v): the browser tests need Debian's chromium (apt-get install chromium; scripts/test-deps installs it as root)", err)
	}
	tmp, err := os.MkdirTemp("/tmp", "pkc-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--user-data-dir=" + filepath.Join(tmp, "p"), "--dump-dom", "data:text/html,<p>pikod-ok</p>"}
	if os.Getuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(minimalEnv(tmp), "TMPDIR="+tmp)
	detach(cmd)
	out, err := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("pikod-ok")) {
		t.Skipf("chromium cannot run headless here (%v): %s", err, lastLines(string(out), 5))
	}
	return bin
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pageSite is the fixture web site on 127.0.0.1: a page that sets a
// persistent cookie on the first visit and says whether the visitor came
// back with it, and a form whose submissions it counts.
type pageSite struct {
	url string
	// mu guards submits.
	mu      sync.Mutex
	submits []string
}

func startPageSite(t *testing.T) *pageSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &pageSite{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		visit := "first visit"
		if c, err := r.Cookie("visitor"); err == nil {
			visit = "returning visitor " + c.Value
		} else {
			http.SetCookie(w, &http.Cookie{Name: "visitor", Value: "v1", Path: "/", MaxAge: 86400})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Fixture shop</title><link rel="icon" href="data:,"></head>
<body><h1>Fixture shop</h1><p id="visit">%s</p>
<form method="post" action="/submit"><label>Query <input name="q"></label><button type="submit">Send</button></form>
</body></html>`, visit)
	})
	mux.HandleFunc("/submit", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.submits = append(s.submits, r.PostForm.Get("q"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Thanks</title><link rel="icon" href="data:,"><p>submitted</p>`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return s
}

func (s *pageSite) submitted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.submits...)
}

// readSourceInWindows reads a retained source whole, in windows of n
// characters, and checks that it took more than one when it is longer.
func readSourceInWindows(t *testing.T, d *daemon, id string, n int64) string {
	t.Helper()
	var text strings.Builder
	windows := 0
	for off := int64(0); ; {
		var w contracts.SourceReadResult
		d.callInto(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: id, Offset: off, Length: n}, &w)
		windows++
		text.WriteString(w.Text)
		off += int64(len([]rune(w.Text)))
		if w.EOF || w.Text == "" {
			if w.Total > n && windows < 2 {
				t.Errorf("source %s of %d characters read in %d window of %d", id, w.Total, windows, n)
			}
			return text.String()
		}
	}
}

// captureOf returns the capture of res whose file name matches suffix.
func captureOf(t *testing.T, res contracts.CallResult, what, suffix string) contracts.Capture {
	t.Helper()
	for _, c := range res.Captures {
		if strings.HasSuffix(c.Path, suffix) && c.SourceID != "" {
			return c
		}
	}
	t.Fatalf("%s: no capture ending in %q among %+v (content %s)", what, suffix, res.Captures, res.Content)
	return contracts.Capture{}
}

// procsWith lists the pids of live processes whose command line contains s.
func procsWith(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue // a zombie holds nothing
			}
		}
		out = append(out, e.Name())
	}
	return out
}

// browserInstance starts pikod with a state directory outside /tmp (an
// artifactDirectory may not be there) and a fixture site, and returns the
// pinned playwright-mcp and chromium.
func browserInstance(t *testing.T) (d *daemon, site *pageSite, state, entry, chromium string) {
	t.Helper()
	dir := interopDir(t)
	chromium = chromiumBin(t)
	entry = filepath.Join(dir, "node_modules", ".bin", "playwright-mcp")
	site = startPageSite(t)
	state = filepath.Join(privateDir(t), "state")
	d = startDaemon(t, withStateDir(state))
	return d, site, state, entry, chromium
}

// TestBrowserPlaywright runs the browser preset with the pinned
// @playwright/mcp and Debian's chromium against a fixture site: the
// preset's review and its grants, autonomous navigation and snapshots
// with receipts, captures read back in windows, a form fill held for the
// owner's approval, the hand-off, the profile kept across reconnects (and
// not the owner's), and nothing left running after a disconnect.
func TestBrowserPlaywright(t *testing.T) {
	d, site, state, entry, chromium := browserInstance(t)

	// Without a terminal and without --yes nothing is saved.
	if _, stderr, code := runCtlNoTTY(t, d, "", "mcp", "browser", entry, "--headless", "--browser", chromium); code == 0 || !strings.Contains(stderr, "nothing was saved") {
		t.Errorf("mcp browser from a pipe without --yes: exit %d, stderr:\n%s", code, stderr)
	}
	out, stderr, code := runCtl(t, d, "", "mcp", "browser", entry, "--headless", "--browser", chromium, "--yes")
	if code != 0 {
		t.Fatalf("pikoctl mcp browser: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"browser preset playwright", `widens: server "browser": "browser_navigate" runs without approval (autonomousTools)`,
		"need your approval: ", "browser_fill_form", "browser_evaluate", "saved mcp settings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp browser output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"browser_fill_form" runs without approval`) || strings.Contains(out, `"browser_evaluate" runs without approval`) {
		t.Errorf("mcp browser delegates form filling or code:\n%s", out)
	}
	var set contracts.SettingsResult
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &set)
	var cfg contracts.MCPSettings
	if err := json.Unmarshal(set.Settings, &cfg); err != nil || len(cfg.Servers) != 1 {
		t.Fatalf("settings after mcp browser: %s (%v)", set.Settings, err)
	}
	b := cfg.Servers[0]
	profile := filepath.Join(state, "browser", "browser", "profile")
	art := filepath.Join(state, "browser", "browser", "artifacts")
	if b.Browser == nil || b.Browser.Preset != contracts.BrowserPlaywright || b.ArtifactDirectory != art ||
		!strings.Contains(strings.Join(b.Args, " "), "--user-data-dir "+profile) {
		t.Fatalf("browser settings: %+v", b)
	}
	for _, p := range []string{profile, art} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want a 0700 directory", p, err)
		}
	}

	// An entry point pikod does not know gets no delegated tools.
	out, stderr, code = runCtl(t, d, "", "mcp", "browser", "--id", "other", "/bin/cat", "--headless", "--yes")
	if code != 0 || !strings.Contains(out, "preset generic") || strings.Contains(out, "runs without approval") {
		t.Errorf("mcp browser with an unknown entry point: exit %d\n%s%s", code, out, stderr)
	}
	d.callInto(t, contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &set)
	_ = json.Unmarshal(set.Settings, &cfg)
	if o := cfg.Servers[1]; o.ID != "other" || len(o.AutonomousTools) != 0 || o.Tools != nil || o.Browser == nil || o.Browser.Preset != contracts.BrowserGeneric {
		t.Errorf("unknown entry point saved as %+v, want preset generic and no grant", o)
	}

	connectServer(t, d, "browser")
	call := func(tool, args string) contracts.CallResult {
		t.Helper()
		res := callTool(t, d, "browser", tool, args)
		if res.Status != contracts.CallCompleted {
			t.Fatalf("%s %s: %+v", tool, args, res)
		}
		if res.ReceiptKind != contracts.ReceiptAutonomous || res.ReceiptID == "" {
			t.Errorf("%s: receipt %q kind %q, want an mcp_autonomous receipt", tool, res.ReceiptID, res.ReceiptKind)
		}
		return res
	}

	// Navigation runs autonomously; its snapshot is a file, imported.
	nav := call("browser_navigate", fmt.Sprintf(`{"url":%q}`, site.url+"/"))
	snap := captureOf(t, nav, "navigate", ".yml")
	if !strings.HasPrefix(snap.Path, art+"/") || snap.Encoding != "text" || len(snap.SHA256) != 64 {
		t.Errorf("navigate's snapshot capture: %+v", snap)
	}
	if text := readSourceInWindows(t, d, snap.SourceID, 32); !strings.Contains(text, "first visit") || !strings.Contains(text, "Fixture shop") {
		t.Errorf("the first snapshot does not show the first visit:\n%s", text)
	}
	if bytes.Contains(nav.Content, []byte("first visit")) {
		t.Errorf("navigate's preview carries the page itself: %s", nav.Content)
	}
	// A snapshot into a file, and a screenshot (its schema needs scale).
	sn := call("browser_snapshot", `{"filename":"shop.yml"}`)
	shop := captureOf(t, sn, "snapshot", "/shop.yml")
	if text := readSourceInWindows(t, d, shop.SourceID, 64); !strings.Contains(text, "Query") || !strings.Contains(text, `button "Send"`) {
		t.Errorf("snapshot source lacks the form:\n%s", text)
	}
	shot := captureOf(t, call("browser_take_screenshot", `{"type":"png","scale":"css"}`), "screenshot", ".png")
	png, err := base64.StdEncoding.DecodeString(readSourceInWindows(t, d, shot.SourceID, 4096))
	if shot.Encoding != "base64" || err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || int64(len(png)) != shot.Size {
		t.Errorf("screenshot capture %+v decodes to %d bytes (%v), want the PNG", shot, len(png), err)
	}
	// The capture names the receipt it came from.
	var rec contracts.ReceiptsResult
	d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{ID: nav.ReceiptID}, &rec)
	if len(rec.Receipts) != 1 || rec.Receipts[0].Tool != "browser_navigate" || rec.Receipts[0].Kind != contracts.ReceiptAutonomous {
		t.Errorf("navigate's receipt: %+v", rec.Receipts)
	}

	// Filling the form is not delegated: it waits for the owner.
	fill := prepare(t, d, "browser", "browser_fill_form",
		`{"fields":[{"name":"Query","type":"textbox","target":"input[name=q]","value":"blue shoes"}]}`)
	if got := site.submitted(); len(got) != 0 {
		t.Fatalf("form submitted before any approval: %q", got)
	}
	ap := startApprover(t)
	o := ap.approve(d, fill.ActionID, fill.Digest)
	if o.Result == nil || o.Result.Status != contracts.CallCompleted || o.Result.ReceiptKind != contracts.ReceiptApproved {
		t.Fatalf("approving the form fill at the terminal: %s", o)
	}
	call("browser_click", `{"element":"Send button","target":"button[type=submit]"}`)
	if got := site.submitted(); len(got) != 1 || got[0] != "blue shoes" {
		t.Errorf("submissions after the approved fill and the click: %q, want [blue shoes]", got)
	}

	// Hand-off: the agent pauses with a reason; calls are held; only the
	// terminal resumes.
	var pr contracts.PauseResult
	d.callInto(t, contracts.MethodMCPPause, contracts.PauseParams{Server: "browser", Reason: "owner signs in"}, &pr)
	held := callTool(t, d, "browser", "browser_navigate", fmt.Sprintf(`{"url":%q}`, site.url+"/"))
	if held.Status != contracts.CallApprovalRequired || !strings.Contains(held.Held, "owner signs in") {
		t.Errorf("navigate while paused: %+v, want held with the reason", held)
	}
	if st := serverStatus(t, d, "browser"); st.State != contracts.StatePaused || st.Pause == nil || st.Pause.Reason != "owner signs in" {
		t.Errorf("status while paused: %+v", st)
	}
	if e := d.callErr(t, contracts.MethodMCPResume, contracts.ResumeParams{Server: "browser"}); e.Reason() != "terminal_required" {
		t.Errorf("resume without a terminal: %v", e)
	}
	p := ctlTTY(t, d, "mcp", "resume", "browser")
	p.waitFor(t, "to keep it paused: ")
	p.typeLine(t, "browser")
	if out, code := p.wait(t); code != 0 || !strings.Contains(out, "resumed browser") {
		t.Fatalf("resume at the terminal: exit %d\n%s", code, out)
	}

	// Disconnect: the browser is closed first (its cookies saved), and
	// nothing of it keeps running.
	st := serverStatus(t, d, "browser")
	if len(procsWith(profile)) == 0 {
		t.Fatalf("no process runs with the profile %s while connected (server pid %d)", profile, st.PID)
	}
	var dr contracts.DisconnectResult
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "browser"}, &dr)
	poll(t, "every browser process to end", func() bool { return len(procsWith(profile)) == 0 }, func() string { return strings.Join(procsWith(profile), " ") })
	if left := procsWith(entry); len(left) != 0 {
		t.Errorf("processes of playwright-mcp left after disconnect: %v", left)
	}

	// The next connect finds the cookie in the same profile.
	connectServer(t, d, "browser")
	again := captureOf(t, call("browser_navigate", fmt.Sprintf(`{"url":%q}`, site.url+"/")), "navigate again", ".yml")
	if text := readSourceInWindows(t, d, again.SourceID, 1<<16); !strings.Contains(text, "returning visitor v1") {
		t.Errorf("after a reconnect the site does not see its cookie:\n%s", text)
	}
	// The profile is pikod's, not the owner's.
	home := ""
	for _, e := range d.env {
		if v, ok := strings.CutPrefix(e, "HOME="); ok {
			home = v
		}
	}
	for _, own := range []string{".config/chromium", ".config/google-chrome"} {
		if _, err := os.Stat(filepath.Join(home, own)); err == nil {
			t.Errorf("the browser wrote the owner's profile %s", filepath.Join(home, own))
		}
	}
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "browser"}, &dr)
	poll(t, "every browser process to end", func() bool { return len(procsWith(profile)) == 0 }, func() string { return strings.Join(procsWith(profile), " ") })
}

// TestBrowserBridge is an agent (the official TypeScript SDK client) using
// the browser through pikoctl mcp serve: it browses the fixture site, reads
// the snapshot capture a window at a time, and its form fill waits for the
// owner, who approves it at a terminal. The exchange is logged as a
// transcript (go test -v).
func TestBrowserBridge(t *testing.T) {
	d, site, _, entry, chromium := browserInstance(t)
	if out, stderr, code := runCtl(t, d, "", "mcp", "browser", entry, "--headless", "--browser", chromium, "--yes"); code != 0 {
		t.Fatalf("pikoctl mcp browser: exit %d\n%s%s", code, out, stderr)
	}
	connectServer(t, d, "browser")
	h := startHost(t, d, tsHost(t))
	h.do(map[string]any{"op": "init"})
	names := map[string]string{}
	for name, tl := range toolsOf(h.do(map[string]any{"op": "listTools"})) {
		meta, _ := tl["_meta"].(map[string]any)
		if orig, ok := meta["io.pikod/tool"].(string); ok {
			names[orig] = name
		}
	}
	if names["browser_navigate"] == "" || names["browser_fill_form"] == "" {
		t.Fatalf("the agent does not see the browser's tools: %v", names)
	}
	say := func(format string, args ...any) { t.Logf("transcript: "+format, args...) }

	args := map[string]any{"url": site.url + "/"}
	say("agent -> tools/call %s %v", names["browser_navigate"], args)
	nav := h.do(map[string]any{"op": "call", "name": names["browser_navigate"], "arguments": args})
	text := resultText(nav)
	say("pikod -> %s", text)
	if isErrorResult(nav) || !strings.Contains(text, "pikod: the capture ") {
		t.Fatalf("navigate through the bridge: %v", nav)
	}
	var snapURI string
	res, _ := nav["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	caps, _ := meta["io.pikod/captures"].([]any)
	for _, c := range caps {
		m := c.(map[string]any)
		if strings.HasSuffix(m["path"].(string), ".yml") {
			snapURI = "pikod://source/" + m["sourceId"].(string)
		}
	}
	if snapURI == "" {
		t.Fatalf("no snapshot capture in the result's _meta: %v", meta)
	}
	// The snapshot, a window at a time.
	var snapshot strings.Builder
	uri := snapURI + "?offset=0&length=64"
	for i := 0; uri != "" && i < 64; i++ {
		say("agent -> resources/read %s", uri)
		r := h.do(map[string]any{"op": "read", "uri": uri})
		contents, _ := r["contents"].([]any)
		if len(contents) != 2 {
			t.Fatalf("a window read answered %v", r)
		}
		w := contents[0].(map[string]any)["text"].(string)
		note := contents[1].(map[string]any)["text"].(string)
		say("pikod -> %q; %s", w, note)
		snapshot.WriteString(w)
		uri = ""
		if _, next, ok := strings.Cut(note, "the next window is "); ok {
			uri = next
		}
	}
	if !strings.Contains(snapshot.String(), "first visit") || !strings.Contains(snapshot.String(), "Fixture shop") {
		t.Errorf("the snapshot read in windows:\n%s", snapshot.String())
	}

	// The form fill waits for the owner.
	fill := map[string]any{"fields": []any{map[string]any{"name": "Query", "type": "textbox", "target": "input[name=q]", "value": "red hat"}}}
	say("agent -> tools/call %s %v", names["browser_fill_form"], fill)
	_, ch := h.send(map[string]any{"op": "call", "name": names["browser_fill_form"], "arguments": fill, "progress": true})
	first := h.next(ch)
	msg, _ := first["message"].(string)
	say("pikod -> progress: %s", msg)
	if first["event"] != "progress" || !strings.Contains(msg, "pikoctl mcp approve") {
		t.Fatalf("the form fill did not wait for the owner: %v", first)
	}
	id := actionFrom(t, msg)
	rv := reviewOf(t, d, id)
	say("owner -> pikoctl mcp approve %s (at the terminal)", id)
	ap := startApprover(t)
	if o := ap.approve(d, id, rv.Digest); o.Result == nil || o.Result.Status != contracts.CallCompleted {
		t.Fatalf("approving at the terminal: %s", o)
	}
	done := h.answer(ch)
	say("pikod -> %s", resultText(done))
	if isErrorResult(done) {
		t.Errorf("the approved fill answered %v", done)
	}
	click := map[string]any{"element": "Send", "target": "button[type=submit]"}
	say("agent -> tools/call %s %v", names["browser_click"], click)
	say("pikod -> %s", resultText(h.do(map[string]any{"op": "call", "name": names["browser_click"], "arguments": click})))
	if got := site.submitted(); len(got) != 1 || got[0] != "red hat" {
		t.Errorf("submissions: %q, want [red hat]", got)
	}
	h.do(map[string]any{"op": "close"})
	var dr contracts.DisconnectResult
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "browser"}, &dr)
}

// TestBrowserChromeDevTools runs the chrome-devtools-mcp preset (pinned
// 1.11.0) headless with Debian's chromium: its own tool names delegated
// and gated, snapshot and screenshot captures, the profile kept across a
// reconnect, and nothing left running after a disconnect.
func TestBrowserChromeDevTools(t *testing.T) {
	d, site, state, _, chromium := browserInstance(t)
	entry := filepath.Join(interopDir(t), "node_modules", ".bin", "chrome-devtools-mcp")
	out, stderr, code := runCtl(t, d, "", "mcp", "browser", entry, "--id", "cdp", "--headless", "--browser", chromium, "--yes")
	if code != 0 || !strings.Contains(out, "browser preset chrome-devtools") {
		t.Fatalf("pikoctl mcp browser chrome-devtools-mcp: exit %d\n%s%s", code, out, stderr)
	}
	profile := filepath.Join(state, "browser", "cdp", "profile")
	connectServer(t, d, "cdp")
	call := func(tool, args string) contracts.CallResult {
		t.Helper()
		res := callTool(t, d, "cdp", tool, args)
		if res.Status != contracts.CallCompleted || res.ReceiptKind != contracts.ReceiptAutonomous {
			t.Fatalf("%s %s: %+v, want completed with an mcp_autonomous receipt", tool, args, res)
		}
		return res
	}
	visit := func() string {
		t.Helper()
		call("list_pages", `{}`)
		call("navigate_page", fmt.Sprintf(`{"pageId":1,"type":"url","url":%q}`, site.url+"/"))
		snap := captureOf(t, call("take_snapshot", `{"pageId":1,"filePath":"snap.txt"}`), "take_snapshot", "/snap.txt")
		return readSourceInWindows(t, d, snap.SourceID, 48)
	}
	if text := visit(); !strings.Contains(text, "first visit") {
		t.Errorf("first snapshot:\n%s", text)
	}
	shot := captureOf(t, call("take_screenshot", `{"pageId":1,"filePath":"shot.png"}`), "take_screenshot", "/shot.png")
	if png, err := base64.StdEncoding.DecodeString(readSourceInWindows(t, d, shot.SourceID, 1<<16)); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot capture %+v is not the PNG (%v)", shot, err)
	}
	prepare(t, d, "cdp", "fill", `{"pageId":1,"uid":"1_4","value":"x"}`)
	prepare(t, d, "cdp", "evaluate_script", `{"pageId":1,"function":"() => document.cookie"}`)

	var dr contracts.DisconnectResult
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "cdp"}, &dr)
	poll(t, "every browser process to end", func() bool { return len(procsWith(profile)) == 0 }, func() string { return strings.Join(procsWith(profile), " ") })
	connectServer(t, d, "cdp")
	if text := visit(); !strings.Contains(text, "returning visitor v1") {
		t.Errorf("after a reconnect the site does not see its cookie:\n%s", text)
	}
	d.callInto(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "cdp"}, &dr)
	poll(t, "every browser process to end", func() bool { return len(procsWith(profile)) == 0 }, func() string { return strings.Join(procsWith(profile), " ") })
}
