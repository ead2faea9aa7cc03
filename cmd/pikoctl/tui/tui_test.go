package tui

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
)

// updating reports -update. The flag is defined by teatest's golden
// package (linked by teatest_test.go); one -update rewrites both kinds of
// golden screen.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// The golden tests drive the model as the program would: a window size,
// the daemon's answers as messages, key presses; then compare the screen
// with testdata/NAME.golden. Commands the model returns (requests to the
// daemon) are not run here; tests/tui_test.go runs the real thing.

func testModel(t *testing.T) *model {
	t.Helper()
	m := newModel(nil, Options{Instance: "default", NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	return m
}

// keyMsg is the key press named k ("enter", "esc", "down", "tab", or the
// runes typed).
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func keys(m *model, ks ...string) {
	for _, k := range ks {
		m.Update(keyMsg(k))
	}
}

func typeText(m *model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// golden compares the screen with testdata/name.golden and checks it fits
// the window.
func golden(t *testing.T, m *model, name string) string {
	t.Helper()
	screen := m.View()
	lines := strings.Split(screen, "\n")
	if len(lines) > m.height {
		t.Errorf("%s: %d lines on a %d-line terminal", name, len(lines), m.height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Errorf("%s: line %d is %d columns on a %d-column terminal: %q", name, i+1, w, m.width, l)
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
		return screen
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != screen {
		t.Errorf("%s: the screen differs from %s\n--- got:\n%s\n--- want:\n%s", name, path, screen, want)
	}
	return screen
}

func sampleStatus() contracts.StatusResult {
	return contracts.StatusResult{
		Revision: 3,
		Vault:    contracts.VaultStatus{Backend: "file"},
		Servers: []contracts.ServerStatus{
			{ID: "fx", Enabled: true, Transport: "stdio", State: contracts.StateConnected, ProtocolVersion: "2025-06-18",
				Negotiated: "initialize", ServerInfo: &contracts.ServerInfo{Name: "mcpfixture", Version: "1.0.0"},
				PID: 4242, ToolCount: 3, CatalogComplete: true, Generation: 1, Credentials: "none"},
			{ID: "web", Enabled: true, Transport: "http", State: contracts.StateNeedsAuth,
				LastError: "the server answered 401: sign in with 'pikoctl mcp auth web'",
				OAuth:     &contracts.OAuthStatus{GrantType: "authorization_code", Grant: "none"}},
			{ID: "old", Enabled: false, Transport: "stdio", State: contracts.StateDisabled},
		},
	}
}

func sampleCatalog() contracts.CatalogResult {
	return contracts.CatalogResult{Server: "fx", Complete: true, Tools: []contracts.CatalogTool{
		{Name: "echo", Server: "fx", OriginalName: "echo", Description: "Echo the message back.\nSecond line.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"what to echo"},"times":{"type":"integer"}},"required":["message"]}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`), Selected: true, Grant: "read", Digest: "sha256:0123456789abcdef"},
		{Name: "count", Server: "fx", OriginalName: "count", Description: "Count a nonce in the call log.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"nonce":{"type":"string"}}}`), Selected: true, Grant: "approval", Digest: "sha256:feedface"},
		{Name: "sleep", Server: "fx", OriginalName: "sleep", Title: "Sleep a while",
			InputSchema: json.RawMessage(`{"type":"object"}`), Selected: false, Grant: "approval", Digest: "sha256:abad1dea"},
	}}
}

func TestServersScreen(t *testing.T) {
	m := testModel(t)
	golden(t, m, "loading")
	m.Update(statusMsg{res: sampleStatus()})
	golden(t, m, "servers")
	// The cursor moves to the server that needs a sign-in: its detail
	// shows the whole error.
	keys(m, "down")
	s := golden(t, m, "servers_web")
	if !strings.Contains(s, "> web") {
		t.Errorf("the cursor is not on web:\n%s", s)
	}
}

func TestServerKeysStartOperations(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	for _, tc := range []struct{ key, flash string }{
		{"c", "connecting fx..."},
		{"d", "disconnecting fx..."},
		{"r", "reconnecting fx..."},
	} {
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(tc.key)})
		if cmd == nil || m.flash != tc.flash {
			t.Errorf("key %s: flash %q, command %v; want %q and a request", tc.key, m.flash, cmd != nil, tc.flash)
		}
	}
	// Sign-in is for http and sse servers only.
	keys(m, "s")
	if m.auth != nil || !strings.Contains(m.flash, "stdio server") {
		t.Errorf("s on a stdio server: auth %v, flash %q", m.auth, m.flash)
	}
}

func TestCatalogSearchAndSchema(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.Update(catalogMsg{server: "fx", res: sampleCatalog()})
	keys(m, "2")
	golden(t, m, "catalog")
	keys(m, "/")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n")})
	if cmd == nil {
		t.Fatal("typing a query started no search")
	}
	typeText(m, "once")
	if s := m.View(); !strings.Contains(s, "searching...") {
		t.Errorf("before the search answers the pane should say so:\n%s", s)
	}
	// An answer to an older query is ignored; the current one is shown
	// ranked, with score and server.
	m.Update(searchMsg{query: "non", res: contracts.SearchResult{Query: "non", Results: []contracts.SearchHit{
		{Server: "fx", Tool: "echo", Name: "mcp_fx_echo", Grant: "read", Score: 9}}}})
	m.Update(searchMsg{query: "nonce", res: contracts.SearchResult{Query: "nonce", Searched: []string{"fx"}, NotSearched: []string{"web"},
		Results: []contracts.SearchHit{
			{Server: "fx", Tool: "count", Name: "mcp_fx_count", Description: "Count a nonce in the call log.", Grant: "approval", Score: 1.234},
			{Server: "fx", Tool: "sleep", Name: "mcp_fx_sleep", Title: "Sleep a while", Grant: "not_selected", Score: 0.5},
		}}})
	s := golden(t, m, "catalog_search")
	if !strings.Contains(s, " 1.234 fx/count") || !strings.Contains(s, " 0.500 fx/sleep") || strings.Contains(s, "fx/echo") {
		t.Errorf("searching nonce should list count then sleep with their scores:\n%s", s)
	}
	if !strings.Contains(s, "not connected: web") {
		t.Errorf("the search should name the servers it could not search:\n%s", s)
	}
	keys(m, "enter", "enter")
	if m.schema == nil || m.schemaOf != "fx/count" {
		t.Errorf("enter on the first hit should show count's schema, shows %q", m.schemaOf)
	}
	keys(m, "esc", "esc")
	if got := len(m.tools()); got != 3 {
		t.Errorf("esc cleared the search but %d tools are listed, want 3", got)
	}
	keys(m, "enter")
	s = golden(t, m, "schema")
	for _, want := range []string{"grant:  read", "message              string       required what to echo", "times                integer      optional", `"readOnlyHint": true`} {
		if !strings.Contains(s, want) {
			t.Errorf("the schema view lacks %q:\n%s", want, s)
		}
	}
	keys(m, "esc")
	if m.schema != nil {
		t.Error("esc did not close the schema view")
	}
}

func TestActionsReview(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.Update(actionsMsg{res: contracts.ActionsListResult{Actions: []contracts.ActionSummary{
		{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count", Caller: testCaller},
		{ID: "act_00", State: contracts.ActionCompleted, Server: "fx", Tool: "count"},
	}}})
	keys(m, "3")
	golden(t, m, "actions")
	// The daemon's review opens the review screen; approving it hands the
	// terminal over (a command), rejecting a finished one is refused.
	m.Update(reviewMsg{res: contracts.ActionReview{
		ActionSummary: contracts.ActionSummary{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count", CreatedAt: "2026-12-01T18:00:00Z", ExpiresAt: "2026-12-01T18:15:00Z",
			Caller: testCaller},
		ToolName: "count", ArgumentsText: "{\n  \"nonce\": \"n1\"\n}", Digest: "sha256:00112233445566778899aabbccddeeff",
	}})
	golden(t, m, "review")
	// The review reads as pikoctl mcp review prints it: on a screen wide
	// enough, line for line the same.
	m.width = 300
	if got, want := m.reviewText(*m.review), strings.Join(render.Review(*m.review), "\n")+"\n"; got != want {
		t.Errorf("the console's review differs from pikoctl mcp review's:\n got %q\nwant %q", got, want)
	}
	m.width = 80
	m.opts.Approve = nil
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a")})
	if cmd == nil {
		t.Fatal("a on a prepared action returned no command")
	}
	if msg, ok := cmd().(opMsg); !ok || msg.err == nil {
		t.Errorf("approving without an approver: %#v, want an error", msg)
	}
	m.review.State = contracts.ActionCompleted
	keys(m, "a")
	if !strings.Contains(m.flash, "cannot be approved") {
		t.Errorf("a on a completed action: flash %q", m.flash)
	}
}

func TestSettingsEditProblemsInPlace(t *testing.T) {
	m := testModel(t)
	m.Update(settingsMsg{res: contracts.SettingsResult{Extension: "mcp", Revision: 3,
		Settings: json.RawMessage(`{"servers":[{"id":"fx","transport":"stdio","command":"/bin/fx"}]}`)}})
	keys(m, "4")
	golden(t, m, "settings")

	// Not JSON: said where, and the text is kept. (e writes the file the
	// editor would open; the editor itself is not run here.)
	t.Setenv("TMPDIR", t.TempDir())
	keys(m, "e")
	bad := []byte("{\"servers\":[\n  {\"id\":\"fx\",}\n]}\n")
	m.Update(editedMsg{text: bad})
	// Settings read again meanwhile (ctrl+r) do not move the revision the
	// draft will be saved against.
	m.Update(settingsMsg{res: contracts.SettingsResult{Extension: "mcp", Revision: 9, Settings: json.RawMessage(`{"servers":[]}`)}})
	if m.base != 3 {
		t.Errorf("the draft's base revision is %d after a reload, want 3", m.base)
	}
	s := golden(t, m, "settings_notjson")
	if !strings.Contains(s, "line 2, column") || !strings.Contains(s, `{"id":"fx",}`) {
		t.Errorf("the JSON error is not shown in place with the edited text:\n%s", s)
	}

	// Refused by the daemon: every problem listed above the edited text.
	edited := []byte(`{"servers":[{"id":"Bad Id","transport":"stdio"}]}`)
	m.Update(editedMsg{text: edited})
	m.Update(configureMsg{dryRun: true, err: &contracts.Error{Code: 1, Message: "invalid settings", Data: &contracts.ErrorData{
		Reason: "invalid_settings",
		Problems: []contracts.Problem{
			{Server: "Bad Id", Field: "id", Message: "must match ^[a-z][a-z0-9-]{0,31}$"},
			{Server: "Bad Id", Field: "command", Message: "is required for stdio"},
		}}}})
	s = golden(t, m, "settings_problems")
	for _, want := range []string{"NOT SAVED", "must match", "is required for stdio", `"Bad Id"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the refused settings screen lacks %q:\n%s", want, s)
		}
	}
	// y does nothing until a dry run passed.
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}); cmd != nil {
		t.Error("y saved settings the daemon refused")
	}
	// A passing dry run shows what saving widens, and y saves it with
	// the revision the text was edited from.
	m.Update(configureMsg{dryRun: true, res: contracts.ConfigureResult{Revision: 4, DryRun: true, Changed: []string{"fx"},
		Widened: []string{`fx: tool "count" now runs without approval (autonomousTools)`}}})
	golden(t, m, "settings_dryrun")
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}); cmd == nil {
		t.Error("y after a passing dry run sent nothing")
	}
	m.Update(configureMsg{res: contracts.ConfigureResult{Revision: 4, Changed: []string{"fx"}, Disconnected: []string{"fx"}}})
	if m.draft != nil || !strings.Contains(m.flash, "settings saved: revision 4; disconnected fx") {
		t.Errorf("after saving: draft %q, flash %q", m.draft, m.flash)
	}
}

func TestAuthScreen(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	keys(m, "down", "s")
	if m.auth == nil || m.auth.server != "web" {
		t.Fatalf("s on web started no sign-in: %+v", m.auth)
	}
	link := "https://auth.example.com/authorize?response_type=code&client_id=pikod&code_challenge=abcdefghijklmnopqrstuvwxyz0123456789&state=xyz"
	_, cmd := m.Update(authMsg{server: "web", res: contracts.AuthResult{Server: "web", Status: contracts.AuthPending, FlowID: "f1",
		AuthorizationURL: link, RedirectURI: "http://127.0.0.1:40000/callback", ExpiresAt: "2026-12-01T18:25:00Z"}})
	if cmd == nil {
		t.Fatal("a pending sign-in does not wait")
	}
	s := golden(t, m, "auth_pending")
	if !strings.Contains(strings.ReplaceAll(s, "\n", ""), link) {
		t.Errorf("the link is not shown whole:\n%s", s)
	}
	m.Update(authMsg{server: "web", waited: true, res: contracts.AuthResult{Server: "web", Status: contracts.AuthAuthorized, State: contracts.StateConnected,
		Grant: &contracts.OAuthGrantInfo{GrantType: "authorization_code", Issuer: "https://auth.example.com", Scope: "mcp"}}})
	golden(t, m, "auth_done")
	keys(m, "esc")
	if m.auth != nil {
		t.Error("esc did not close the finished sign-in")
	}

	// A failed sign-in says why.
	keys(m, "s")
	m.Update(authMsg{server: "web", err: errors.New("discovery found no authorization server")})
	if s := m.View(); !strings.Contains(s, "sign-in failed: discovery found no authorization server") {
		t.Errorf("the failure is not shown:\n%s", s)
	}
}

func TestLogPaneFollowsEvents(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	keys(m, "5")
	golden(t, m, "log_empty")
	for i, ev := range []contracts.EventParams{
		{Seq: 1, Kind: contracts.EventState, Server: "fx", Time: "2026-12-01T18:00:01.5Z", Data: json.RawMessage(`{"state":"connecting"}`)},
		{Seq: 2, Kind: contracts.EventState, Server: "fx", Time: "2026-12-01T18:00:02Z", Data: json.RawMessage(`{"state":"connected"}`)},
		{Seq: 3, Kind: contracts.EventLog, Server: "fx", Time: "2026-12-01T18:00:03Z", Data: json.RawMessage(`{"id":1,"time":"x","level":"info","logger":"fixture","data":"hello \u001b[31mred"}`)},
		{Seq: 5, Kind: contracts.EventCatalog, Server: "fx", Time: "2026-12-01T18:00:04Z", Dropped: 1, Data: json.RawMessage(`{"lists":["tools"],"complete":true,"counts":{"tools":4}}`)},
	} {
		_, cmd := m.Update(eventMsg{ev: ev})
		if (ev.Kind == contracts.EventLog) != (cmd == nil) {
			t.Errorf("event %d (%s): refresh command %v", i, ev.Kind, cmd != nil)
		}
	}
	s := golden(t, m, "log")
	if strings.Contains(s, "\x1b") {
		t.Errorf("a server's escape sequence reached the screen:\n%q", s)
	}
	// Many events: the pane follows the newest.
	for i := range 40 {
		m.Update(eventMsg{ev: contracts.EventParams{Seq: uint64(10 + i), Kind: contracts.EventLog, Server: "fx", Time: "2026-12-01T18:01:00Z",
			Data: json.RawMessage(`{"id":2,"level":"debug","data":"line ` + string(rune('A'+i%26)) + `"}`)}})
	}
	if s := m.View(); !strings.Contains(s, "line "+string(rune('A'+39%26))) {
		t.Errorf("the log pane does not show the newest event:\n%s", s)
	}
}

func TestHelpAndSmallWindow(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	keys(m, "?")
	golden(t, m, "help")
	// Every pane fits an 80x24 terminal and a smaller one.
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 60, Height: 16}} {
		m.Update(size)
		m.Update(catalogMsg{server: "fx", res: sampleCatalog()})
		for p := range paneNames {
			keys(m, string(rune('1'+p)))
			lines := strings.Split(m.View(), "\n")
			if len(lines) != size.Height {
				t.Errorf("%dx%d pane %s: %d lines", size.Width, size.Height, paneNames[p], len(lines))
			}
			for _, l := range lines {
				if ansi.StringWidth(l) > size.Width {
					t.Errorf("%dx%d pane %s: line wider than the window: %q", size.Width, size.Height, paneNames[p], l)
				}
			}
		}
	}
}

func TestNoColor(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	if s := m.View(); strings.Contains(s, "\x1b[") {
		t.Errorf("NO_COLOR screen has escape sequences: %q", s)
	}
	m.st = newStyles(termenv.ANSI256)
	if s := m.View(); !strings.Contains(s, "\x1b[") {
		t.Errorf("the colour screen has no colour: %q", s)
	}
}

func sampleRequests() []contracts.ServerRequestInfo {
	return []contracts.ServerRequestInfo{
		{ID: "req_02", Server: "fx", Method: "elicitation/create", Kind: contracts.RequestKindElicitation, Mode: contracts.ElicitForm,
			State: contracts.RequestPending, Message: "what is your name?", Tool: "ask", CreatedAt: "2026-12-01T18:00:00Z", ExpiresAt: "2026-12-01T18:10:00Z"},
		{ID: "req_01", Server: "ev", Method: "sampling/createMessage", Kind: contracts.RequestKindSampling,
			State: contracts.RequestDeclined, Message: "write a haiku", CreatedAt: "2026-12-01T17:00:00Z", ExpiresAt: "2026-12-01T17:10:00Z"},
	}
}

func TestRequestsPane(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	keys(m, "6")
	if s := m.View(); !strings.Contains(s, "no server requests") {
		t.Errorf("an empty requests pane should say what appears there:\n%s", s)
	}
	m.Update(requestsMsg{res: contracts.RequestsResult{Requests: sampleRequests()}})
	s := golden(t, m, "requests")
	if !strings.Contains(s, "6 requests(1)") || !strings.Contains(s, "what is your name?") {
		t.Errorf("the requests pane should count the pending request and list its message:\n%s", s)
	}
	// A request event reads the list again, and is logged readably.
	_, cmd := m.Update(eventMsg{ev: contracts.EventParams{Kind: contracts.EventRequest, Server: "fx", Time: "2026-12-01T18:01:02Z",
		Data: json.RawMessage(`{"id":"req_03","method":"elicitation/create","state":"pending","message":"your email?"}`)}})
	if cmd == nil {
		t.Error("a request event did not read the requests again")
	}
	if l := m.logLines[len(m.logLines)-1]; !strings.Contains(l, `req_03, a question (elicitation), waits for you: "your email?"; 6 answers it`) {
		t.Errorf("the request event's log line: %q", l)
	}
	// Enter reads the request whole; a hands the terminal to respond, x to
	// respond --decline.
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if cmd == nil {
		t.Fatal("enter on a request did not read it")
	}
	full := sampleRequests()[0]
	full.Schema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"your name"}},"required":["name"]}`)
	m.Update(requestReadMsg{res: full})
	s = golden(t, m, "request")
	for _, want := range []string{"request:   req_02 (pending)", "the server asks:", "what is your name?", "name                 string       required your name", "a answer", "x decline"} {
		if !strings.Contains(s, want) {
			t.Errorf("the request view lacks %q:\n%s", want, s)
		}
	}
	var got []string
	m.opts.Respond = func(id string, decline bool) *exec.Cmd {
		got = append(got, fmt.Sprintf("%s %v", id, decline))
		return exec.Command("true")
	}
	if _, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a")}); cmd == nil {
		t.Fatal("a on a pending request returned no command")
	}
	// While respond has the terminal no key acts: x waits for its outcome.
	if _, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")}); cmd != nil {
		t.Fatal("x during the hand-off to respond acted before respond ended")
	}
	m.Update(respondedMsg{id: "req_02"})
	if m.request != nil || !strings.Contains(m.flash, "request req_02 answered") {
		t.Errorf("after respond: view open %v, flash %q", m.request != nil, m.flash)
	}
	m.Update(requestReadMsg{res: full})
	if _, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")}); cmd == nil {
		t.Fatal("x on a pending request returned no command")
	}
	if strings.Join(got, ",") != "req_02 false,req_02 true" {
		t.Errorf("respond commands built: %q, want answer then decline of req_02", got)
	}
	m.Update(respondedMsg{id: "req_02", decline: true})
	// The re-read an event started while respond ran does not reopen it.
	answered := full
	answered.State = contracts.RequestAnswered
	m.Update(requestReadMsg{res: answered, refresh: true})
	if m.request != nil {
		t.Error("a late re-read reopened the request the owner had left")
	}
	// A decided request is not answered again.
	keys(m, "down")
	m.Update(requestReadMsg{res: sampleRequests()[1]})
	keys(m, "a")
	if !strings.Contains(m.flash, "is declined and cannot be answered again") {
		t.Errorf("a on a declined request: flash %q", m.flash)
	}
}

func TestCredentialForm(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.Update(settingsMsg{res: contracts.SettingsResult{Revision: 3, Settings: json.RawMessage(
		`{"servers":[{"id":"fx","transport":"stdio","command":"/bin/fx"},{"id":"web","transport":"http","url":"https://web.example/mcp","oauth":{"clientId":"c1"}}]}`)}})
	keys(m, "v")
	if m.creds == nil || m.creds.server != "fx" {
		t.Fatal("v on a server did not open its credential form")
	}
	// Every value blank: nothing is sent.
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlS})
	if cmd != nil || m.creds != nil || !strings.Contains(m.flash, "unchanged") {
		t.Errorf("storing a blank form: cmd %v, form open %v, flash %q; want nothing sent", cmd != nil, m.creds != nil, m.flash)
	}

	keys(m, "v")
	typeText(m, "API_TOKEN")
	keys(m, "tab")
	typeText(m, "s3cr3t-canary-value")
	keys(m, "tab", "tab")
	typeText(m, "lonely-value") // a value without a name
	s := golden(t, m, "credentials")
	if strings.Contains(s, "s3cr3t") || strings.Contains(s, "lonely") {
		t.Fatalf("a credential value is on the screen:\n%s", s)
	}
	if !strings.Contains(s, "API_TOKEN") || !strings.Contains(s, strings.Repeat("*", len("s3cr3t-canary-value"))) {
		t.Errorf("the form should show the name and a masked value:\n%s", s)
	}
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyCtrlS})
	if cmd != nil || m.creds == nil || !strings.Contains(m.flash, "row 2 has a value but no env name") || strings.Contains(m.flash, "lonely") {
		t.Errorf("a value without a name: cmd %v, flash %q; want it refused in place", cmd != nil, m.flash)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyShiftTab})
	m.Update(tea.KeyMsg{Type: tea.KeyTab})
	// Clear the lonely value: only the filled row is sent.
	for range len("lonely-value") {
		m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	}
	creds, err := m.creds.credentials()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(creds)
	if string(b) != `{"env":{"API_TOKEN":"s3cr3t-canary-value"}}` {
		t.Errorf("credentials sent: %s", b)
	}
	keys(m, "esc")
	if m.creds != nil || !strings.Contains(m.flash, "nothing was sent") {
		t.Errorf("esc: form open %v, flash %q", m.creds != nil, m.flash)
	}

	// An http server with oauth: header rows (Authorization first) and the
	// client secret; blank header rows are left out.
	keys(m, "down", "v")
	if m.creds == nil || m.creds.server != "web" {
		t.Fatal("v on web did not open its form")
	}
	s = golden(t, m, "credentials_http")
	if !strings.Contains(s, "Authorization") || !strings.Contains(s, "client secret") {
		t.Errorf("the http form should offer Authorization and the OAuth client secret:\n%s", s)
	}
	for range 4 {
		m.Update(tea.KeyMsg{Type: tea.KeyTab})
	}
	typeText(m, "client-secret-1")
	creds, err = m.creds.credentials()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(creds); string(b) != `{"oauthClientSecret":"client-secret-1"}` {
		t.Errorf("credentials sent: %s", b)
	}
	// web has stored credentials: the form names the stored fields (never
	// values) and says blank rows keep them; one store sends (a merge:
	// there is nothing to confirm).
	m.creds.stored, m.creds.fields = "stored", []string{"headers.X-Api-Key", "oauthClientSecret"}
	body := strings.Join(m.credBody(), "\n")
	if !strings.Contains(body, "Stored: headers.X-Api-Key, oauthClientSecret") || !strings.Contains(body, "blank rows keep what is stored") {
		t.Errorf("the form over stored credentials should name them and say blank keeps them:\n%s", body)
	}
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlS}); cmd == nil || m.creds != nil {
		t.Errorf("storing over stored credentials: cmd %v, flash %q; want it sent at once", cmd != nil, m.flash)
	}
	m.Update(secretMsg{server: "web", res: contracts.SecretResult{Server: "web", Fields: []string{"headers.X-Api-Key", "oauthClientSecret"},
		Unchanged: true, Generation: 1}})
	if !strings.Contains(m.flash, "nothing changed") {
		t.Errorf("after a merge that changed nothing: flash %q", m.flash)
	}
	m.Update(secretMsg{server: "web", res: contracts.SecretResult{Server: "web", Fields: []string{"oauthClientSecret"}, Generation: 2, ReconnectRequired: true}})
	if !strings.Contains(m.flash, "stored oauthClientSecret for web (generation 2)") {
		t.Errorf("after storing: flash %q", m.flash)
	}
}

func TestRunCallWithProgress(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.Update(catalogMsg{server: "fx", res: sampleCatalog()})
	keys(m, "2", "enter", "r")
	if m.run == nil || m.run.tool.Name != "echo" {
		t.Fatal("r in the schema view did not open the call view for echo")
	}
	// Not an object: refused in place, nothing called.
	m.run.args.SetValue(`["x"]`)
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter}); cmd != nil || !strings.Contains(m.flash, "not one JSON object") || m.run.running {
		t.Errorf("array arguments: cmd %v, flash %q", cmd != nil, m.flash)
	}
	m.run.args.SetValue(`{"message":"hi"}`)
	golden(t, m, "call_args")
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter}); cmd == nil || !m.run.running {
		t.Fatal("enter with an object did not start the call")
	}
	m.Update(progressMsg{p: contracts.ProgressParams{Server: "fx", Tool: "echo", Progress: 3, Total: 10, Message: "step 3"}})
	s := golden(t, m, "call_running")
	if !strings.Contains(s, "] 3/10") || !strings.Contains(s, "step 3") || !strings.Contains(s, "x cancel the call") {
		t.Errorf("the running call should show its progress:\n%s", s)
	}
	keys(m, "x")
	if !m.run.cancelled || !strings.Contains(m.View(), "cancelling") {
		t.Error("x did not cancel the running call")
	}
	m.Update(runDoneMsg{res: contracts.CallResult{Status: contracts.CallCompleted, Server: "fx", Tool: "echo",
		Content: json.RawMessage(`[{"type":"text","text":"hi"}]`), ReceiptID: "rcpt_01", ReceiptKind: contracts.ReceiptRead}})
	s = golden(t, m, "call_done")
	if !strings.Contains(s, "status: completed, receipt rcpt_01 (mcp_read)") || !strings.Contains(s, "\nhi") {
		t.Errorf("the finished call should show its status, receipt and content:\n%s", s)
	}
	keys(m, "esc")
	if m.run != nil {
		t.Error("esc did not close the finished call")
	}
}

// testCaller is who asked for the fixture action: a bridge's connection.
var testCaller = contracts.Caller{PID: 4242, Executable: "/home/me/.local/bin/pikoctl",
	Client: contracts.ClientInfo{Name: "claude-code", Version: "2.1.0"}, Via: "pikoctl mcp serve"}
