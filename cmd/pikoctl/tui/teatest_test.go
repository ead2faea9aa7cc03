package tui

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/pikod/pikod/contracts"
)

// The teatest tests run the console in a real tea.Program (teatest's, on an
// 80x24 terminal made of buffers): key presses and the daemon's answers go
// through the program's event loop, the program's renderer draws every
// frame, and the screen the program ends on is compared with
// testdata/TestTea*.golden (go test -update rewrites them).
//
// The daemon's answers are sent as the messages the console's requests
// return; the commands the console returns (requests to the daemon, the
// refresh tick, the cursor's blink) are not run, so every run draws the
// same screens. tests/tui_test.go runs the console against a real pikod on
// a pseudo-terminal.

// fed is the console's model as these tests run it: Update hands every
// message to the model and drops the command it returns, except after the
// key named in run (one that sends nothing to the daemon); Init starts
// nothing.
type fed struct {
	m   *model
	run string
}

func (f fed) Init() tea.Cmd { return nil }

func (f fed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.m.Update(msg)
	if k, ok := msg.(tea.KeyMsg); ok && f.run != "" && k.String() == f.run {
		return f, cmd
	}
	return f, nil
}

func (f fed) View() string { return f.m.View() }

// waitLong bounds how long a screen may take to be drawn on a busy
// machine; it is not a speed assertion.
const waitLong = 20 * time.Second

// startTea runs the console with o in a teatest program on an 80x24
// terminal.
func startTea(t *testing.T, o Options) *teatest.TestModel {
	t.Helper()
	o.Instance = "default"
	return teatest.NewTestModel(t, fed{m: newModel(nil, o)}, teatest.WithInitialTermSize(80, 24))
}

func pressKeys(tm *teatest.TestModel, ks ...string) {
	for _, k := range ks {
		tm.Send(keyMsg(k))
	}
}

// waitDrawn waits until the program has written want to the terminal.
func waitDrawn(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(waitLong), teatest.WithCheckInterval(10*time.Millisecond))
}

// finalScreen quits the program and returns the screen it ended on,
// checked to fit the 80x24 terminal and compared with the test's golden
// file.
func finalScreen(t *testing.T, tm *teatest.TestModel) string {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(waitLong)).(fed)
	if !ok {
		t.Fatal("the program ended without its model")
	}
	screen := fm.m.View()
	lines := strings.Split(screen, "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines on a 24-line terminal", len(lines))
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d columns on an 80-column terminal: %q", i+1, w, l)
		}
	}
	teatest.RequireEqualOutput(t, []byte(screen))
	return screen
}

func TestTeaServers(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	waitDrawn(t, tm, "reading status...")
	tm.Send(statusMsg{res: sampleStatus()})
	waitDrawn(t, tm, "> fx")
	pressKeys(tm, "down")
	waitDrawn(t, tm, "> web")
	s := finalScreen(t, tm)
	for _, want := range []string{"needs_auth", "pikoctl mcp auth web", "old"} {
		if !strings.Contains(s, want) {
			t.Errorf("the servers pane lacks %q:\n%s", want, s)
		}
	}
}

func TestTeaCatalogSearch(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	tm.Send(catalogMsg{server: "fx", res: sampleCatalog()})
	pressKeys(tm, "2")
	waitDrawn(t, tm, "Sleep a while")
	pressKeys(tm, "/")
	tm.Type("nonce")
	waitDrawn(t, tm, "searching...")
	tm.Send(searchMsg{query: "nonce", res: contracts.SearchResult{Query: "nonce", Searched: []string{"fx"}, NotSearched: []string{"web"},
		Results: []contracts.SearchHit{
			{Server: "fx", Tool: "count", Name: "mcp_fx_count", Description: "Count a nonce in the call log.", Grant: "approval", Score: 1.234},
			{Server: "fx", Tool: "sleep", Name: "mcp_fx_sleep", Title: "Sleep a while", Grant: "not_selected", Score: 0.5},
		}}})
	waitDrawn(t, tm, "1.234 fx/count")
	pressKeys(tm, "enter")
	s := finalScreen(t, tm)
	if !strings.Contains(s, " 0.500 fx/sleep") || strings.Contains(s, "fx/echo") || !strings.Contains(s, "not connected: web") {
		t.Errorf("searching nonce should rank count then sleep and name the server not searched:\n%s", s)
	}
}

func TestTeaActionsReview(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	tm.Send(actionsMsg{res: contracts.ActionsListResult{Actions: []contracts.ActionSummary{
		{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count", Caller: testCaller},
		{ID: "act_00", State: contracts.ActionCompleted, Server: "fx", Tool: "count"},
	}}})
	pressKeys(tm, "3")
	waitDrawn(t, tm, "act_00")
	tm.Send(reviewMsg{res: contracts.ActionReview{
		ActionSummary: contracts.ActionSummary{ID: "act_01", State: contracts.ActionPrepared, Server: "fx", Tool: "count", CreatedAt: "2026-12-01T18:00:00Z", ExpiresAt: "2026-12-01T18:15:00Z",
			Caller: testCaller},
		ToolName: "count", ArgumentsText: "{\n  \"nonce\": \"n1\"\n}", Digest: "sha256:00112233445566778899aabbccddeeff",
	}})
	waitDrawn(t, tm, "sha256:00112233445566778899aabbccddeeff")
	s := finalScreen(t, tm)
	if !strings.Contains(s, `"nonce": "n1"`) || !strings.Contains(s, "3 actions(1)") {
		t.Errorf("the review should show the arguments and count the prepared action:\n%s", s)
	}
}

func TestTeaRequests(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	pressKeys(tm, "6")
	waitDrawn(t, tm, "no server requests")
	tm.Send(requestsMsg{res: contracts.RequestsResult{Requests: sampleRequests()}})
	waitDrawn(t, tm, "what is your name?")
	s := finalScreen(t, tm)
	if !strings.Contains(s, "6 requests(1)") || !strings.Contains(s, "write a haiku") {
		t.Errorf("the requests pane should count the pending request and list both:\n%s", s)
	}
}

func TestTeaHelp(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	waitDrawn(t, tm, "> fx")
	pressKeys(tm, "?")
	waitDrawn(t, tm, "credentials")
	finalScreen(t, tm)
}

// sgr matches a Select Graphic Rendition sequence (colour, bold, faint...).
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// TestTeaNoColor reads everything the program wrote to the terminal: with
// NoColor (NO_COLOR or --no-color) not one colour or attribute, and the
// same screens drawn in colour otherwise.
func TestTeaNoColor(t *testing.T) {
	drive := func(tm *teatest.TestModel) []byte {
		var out bytes.Buffer
		tm.Send(statusMsg{res: sampleStatus()})
		tm.Send(catalogMsg{server: "fx", res: sampleCatalog()})
		pressKeys(tm, "down", "2", "?")
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			out.Reset()
			out.Write(b) // b is all read so far
			return bytes.Contains(out.Bytes(), []byte("less help"))
		}, teatest.WithDuration(waitLong), teatest.WithCheckInterval(10*time.Millisecond))
		if err := tm.Quit(); err != nil {
			t.Fatal(err)
		}
		tm.WaitFinished(t, teatest.WithFinalTimeout(waitLong))
		rest := new(bytes.Buffer)
		if _, err := rest.ReadFrom(tm.Output()); err != nil {
			t.Fatal(err)
		}
		return append(out.Bytes(), rest.Bytes()...)
	}
	plain := drive(startTea(t, Options{NoColor: true}))
	if m := sgr.Find(plain); m != nil {
		t.Errorf("with NoColor the program wrote %q to the terminal", m)
	}

	o := Options{Instance: "default"}
	m := newModel(nil, o)
	m.st = newStyles(termenv.ANSI256) // a colour terminal
	colour := drive(teatest.NewTestModel(t, fed{m: m}, teatest.WithInitialTermSize(80, 24)))
	if sgr.Find(colour) == nil {
		t.Error("on a colour terminal the program wrote no colour (the NoColor check above proves nothing)")
	}
}

// TestTeaQuit: q ends the program, from a pane and from help, and the
// program gives the terminal back (the cursor shown again).
func TestTeaQuit(t *testing.T) {
	for _, ks := range [][]string{{"q"}, {"2", "?", "q"}} {
		tm := teatest.NewTestModel(t, fed{m: newModel(nil, Options{Instance: "default", NoColor: true}), run: "q"}, teatest.WithInitialTermSize(80, 24))
		tm.Send(statusMsg{res: sampleStatus()})
		pressKeys(tm, ks...)
		tm.WaitFinished(t, teatest.WithFinalTimeout(waitLong))
		out := new(bytes.Buffer)
		if _, err := out.ReadFrom(tm.Output()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out.Bytes(), []byte(ansi.ShowCursor)) {
			t.Errorf("keys %q: the program ended without showing the cursor again: %q", ks, out.Bytes())
		}
	}
}
