package tui

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/pikod/pikod/contracts"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "  files   npx -y pkg ", want: []string{"files", "npx", "-y", "pkg"}},
		{in: `a "b c" 'd "e"' f\ g`, want: []string{"a", "b c", `d "e"`, "f g"}},
		{in: `a "x\"y\\z"`, want: []string{"a", `x"y\z`}},
		{in: `a ""`, want: []string{"a", ""}},
		{in: "$HOME ~ *", want: []string{"$HOME", "~", "*"}}, // nothing is expanded
		{in: `a "b`, err: true},
		{in: `a b\`, err: true},
	} {
		got, err := splitWords(tc.in)
		if (err != nil) != tc.err || (!tc.err && !slices.Equal(got, tc.want)) {
			t.Errorf("splitWords(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseAddLine(t *testing.T) {
	no := false
	for _, tc := range []struct {
		in   string
		want contracts.ServerSettings
		err  string
	}{
		{in: "seq npx -y @modelcontextprotocol/server-sequential-thinking",
			want: contracts.ServerSettings{ID: "seq", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-sequential-thinking"}}},
		{in: "fx /bin/fx", want: contracts.ServerSettings{ID: "fx", Transport: "stdio", Command: "/bin/fx"}},
		{in: "learn https://learn.example.com/mcp", want: contracts.ServerSettings{ID: "learn", Transport: "http", URL: "https://learn.example.com/mcp"}},
		{in: "--transport sse --oauth old https://old.example/sse",
			want: contracts.ServerSettings{ID: "old", Transport: "sse", URL: "https://old.example/sse", OAuth: &contracts.OAuthSettings{}}},
		{in: "--allow-private-network --disabled lan http://192.168.1.2:8080/mcp",
			want: contracts.ServerSettings{ID: "lan", Transport: "http", URL: "http://192.168.1.2:8080/mcp", AllowPrivateNetwork: true, Enabled: &no}},
		// A URL among a program's arguments is an argument.
		{in: "get curl https://x.example", want: contracts.ServerSettings{ID: "get", Transport: "stdio", Command: "curl", Args: []string{"https://x.example"}}},
		{in: "", err: "type the server's NAME"},
		{in: "files", err: "files needs the command to run"},
		{in: "--transport http web", err: "takes one URL after its name, not 0 words"},
		{in: "--transport ftp x y", err: `--transport must be stdio, http or sse, not "ftp"`},
		{in: "--oauth fx /bin/fx", err: "--oauth and --allow-private-network are for http and sse servers"},
		{in: "-e TOKEN=x fx /bin/fx", err: "unknown flag -e"},
	} {
		got, err := parseAddLine(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAddLine(%q) = %+v, %v; want the error %q", tc.in, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("parseAddLine(%q): %v", tc.in, err)
		default:
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("parseAddLine(%q) = %s, want %s", tc.in, g, w)
			}
		}
	}
}

// TestApplyGrant: the console's grant changes are ChangeGrant's
// (contracts), and a refusal says where the console edits the tools list.
func TestApplyGrant(t *testing.T) {
	s := contracts.ServerSettings{ID: "fx", AutonomousTools: []string{"echo"}}
	if err := applyGrant(&s, "echo", grantRead); err != nil || !slices.Equal(s.ReadOnlyTools, []string{"echo"}) || s.AutonomousTools != nil {
		t.Errorf("read: %+v (%v), want echo read-only only", s, err)
	}
	for _, op := range []string{grantAutonomous, grantDeselect} {
		s := contracts.ServerSettings{ID: "fx"}
		if err := applyGrant(&s, "echo", op); err == nil || !strings.Contains(err.Error(), "selects every tool") || !strings.Contains(err.Error(), "4, then e") {
			t.Errorf("%s without a tools list: %v, want the refusal and what to do in the console", op, err)
		}
	}
}

func TestSaveSummary(t *testing.T) {
	for _, tc := range []struct {
		res  contracts.ConfigureResult
		want string
	}{
		{contracts.ConfigureResult{Revision: 4, Unchanged: true}, "settings unchanged (revision 4)"},
		{contracts.ConfigureResult{Revision: 5, Changed: []string{"fx", "gh"}, Live: []string{"fx"}, Disconnected: []string{"gh"}},
			"settings saved: revision 5; disconnected gh; applied live: fx (nothing restarted)"},
		{contracts.ConfigureResult{Revision: 6, Added: []string{"files"}, Removed: []string{"old"}},
			"settings saved: revision 6; added files (c connects it); removed old"},
	} {
		if got := saveSummary(tc.res); got != tc.want {
			t.Errorf("saveSummary(%+v) = %q, want %q", tc.res, got, tc.want)
		}
	}
}

// TestCredentialOffer: after a save that adds servers, the console opens
// the credentials form of each one without stored credentials, once
// status and settings show the save; esc goes on to the next.
func TestCredentialOffer(t *testing.T) {
	m := testModel(t)
	st := sampleStatus()
	st.Revision = 3
	m.Update(statusMsg{res: st})
	m.Update(settingsMsg{res: contracts.SettingsResult{Revision: 3, Settings: json.RawMessage(`{"servers":[]}`)}})
	m.Update(changeSavedMsg{}) // not the change on screen: ignored
	m.change = &changeState{title: "add server a", dry: &contracts.ConfigureResult{}}
	m.Update(changeSavedMsg{title: "add server a", res: contracts.ConfigureResult{Revision: 4, Added: []string{"a", "b", "c"}}})
	if m.change != nil || m.creds != nil || !strings.Contains(m.flash, "added a, b, c (c connects it)") {
		t.Fatalf("after the save: change open %v, form open %v, flash %q", m.change != nil, m.creds != nil, m.flash)
	}
	st.Revision = 4
	st.Servers = append(st.Servers,
		contracts.ServerStatus{ID: "a", Transport: "stdio", State: contracts.StateIdle, Credentials: "none"},
		contracts.ServerStatus{ID: "b", Transport: "http", State: contracts.StateIdle, Credentials: "stored", CredentialFields: []string{"headers.Authorization"}},
		contracts.ServerStatus{ID: "c", Transport: "http", State: contracts.StateIdle, Credentials: "reenter"})
	m.Update(statusMsg{res: st})
	if m.creds != nil {
		t.Fatal("the form opened before the settings of the save were read")
	}
	m.Update(settingsMsg{res: contracts.SettingsResult{Revision: 4, Settings: json.RawMessage(`{"servers":[]}`)}})
	if m.creds == nil || m.creds.server != "a" || !m.creds.offered {
		t.Fatalf("no credentials form offered for a: %+v", m.creds)
	}
	if s := m.View(); !strings.Contains(s, "a was just added") {
		t.Errorf("the offered form does not say why it opened:\n%s", s)
	}
	keys(m, "esc")
	// b has stored credentials: skipped; c stored for another identity.
	if m.creds == nil || m.creds.server != "c" {
		t.Fatalf("after esc the next form is %+v, want c's", m.creds)
	}
	keys(m, "esc")
	if m.creds != nil || len(m.offerCreds) != 0 || !strings.Contains(m.flash, "no credentials entered for c") {
		t.Errorf("after the last offer: form %v, queue %q, flash %q", m.creds != nil, m.offerCreds, m.flash)
	}
}

func sampleCatalogAll() contracts.CatalogResult {
	c := sampleCatalog()
	c.Resources = []json.RawMessage{
		json.RawMessage(`{"uri":"file:///readme.md","name":"readme","title":"Read me","mimeType":"text/markdown","size":1234,"description":"The project's \u001b[31mread me\u001b[0m."}`),
		json.RawMessage(`{"uri":"mem://notes"}`),
	}
	c.ResourceTemplates = []json.RawMessage{json.RawMessage(`{"uriTemplate":"logs://{date}","name":"logs","description":"A day's log."}`)}
	c.Prompts = []json.RawMessage{json.RawMessage(`{"name":"greet","description":"Greet someone.","arguments":[{"name":"who","required":true,"description":"whom to greet"},{"name":"tone"}]}`)}
	return c
}

// TestTeaCatalogKinds: the catalog lists resources, templates and prompts
// after the tools; t narrows it to one kind; enter reads one whole, the
// server's text sanitized.
func TestTeaCatalogKinds(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	tm.Send(catalogMsg{server: "fx", res: sampleCatalogAll()})
	pressKeys(tm, "2")
	waitDrawn(t, tm, "fx/greet")
	pressKeys(tm, "t", "t")
	waitDrawn(t, tm, "resources only · every connected server")
	pressKeys(tm, "enter")
	waitDrawn(t, tm, "pikoctl mcp read fx file:///readme.md")
	s := finalScreen(t, tm)
	for _, want := range []string{"uri:         file:///readme.md", "mime type:   text/markdown", "size:        1234 bytes", `The project's \u{001B}[31mread me`} {
		if !strings.Contains(s, want) {
			t.Errorf("the resource view lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("a server's escape sequence reached the screen: %q", s)
	}
}

// TestCatalogRows: every kind in the list, a prompt's arguments, and no
// grant for what is not a tool.
func TestCatalogRows(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.Update(catalogMsg{server: "fx", res: sampleCatalogAll()})
	keys(m, "2")
	s := golden(t, m, "catalog_kinds")
	for _, want := range []string{"3 tools · every connected server · 2 resources, 1 template, 1 prompt",
		"fx/readme", "resource   file:///readme.md  Read me", "fx/mem://notes", "fx/logs", "template   logs://{date}  A day's log.", "fx/greet", "prompt     Greet someone."} {
		if !strings.Contains(s, want) {
			t.Errorf("the catalog lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("a server's escape sequence reached the screen: %q", s)
	}
	keys(m, "G")
	keys(m, "e")
	if m.grantFor != nil || !strings.Contains(m.flash, "grants are for tools") {
		t.Errorf("e on a prompt: chooser %v, flash %q", m.grantFor != nil, m.flash)
	}
	keys(m, "enter")
	s = strings.Join(m.body(), "\n")
	if !strings.Contains(s, "who                  required whom to greet") || !strings.Contains(s, "tone                 optional") {
		t.Errorf("the prompt view lacks its arguments:\n%s", s)
	}
	if _, cmd := m.Update(keyMsg("r")); cmd != nil || m.run != nil {
		t.Error("r on a prompt opened a call")
	}
	keys(m, "esc", "g", "e")
	if m.grantFor == nil || m.grantFor.Name != "echo" {
		t.Fatalf("e on echo did not open its grant chooser")
	}
	golden(t, m, "grant_chooser")
	keys(m, "esc")
	if m.grantFor != nil {
		t.Error("esc did not close the chooser")
	}
}

// TestChangeScreen: a proposal shows pikod's dry run and every widens
// line before y; answers to another proposal are ignored; a refused save
// keeps the screen with the reason.
func TestChangeScreen(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	m.change = &changeState{title: "read fx/echo", notes: []string{"now: selected, every call needs your approval"}}
	hostile := &changeState{title: "read fx/e\x1b]0;owned\ax", notes: []string{"then: \x1b[2Jgone"}}
	m.change, hostile = hostile, m.change
	if s := m.View(); strings.Contains(s, "\x1b") {
		t.Errorf("a server's escape sequence in a tool name reached the change screen: %q", s)
	}
	m.change = hostile
	if _, cmd := m.Update(keyMsg("y")); cmd != nil {
		t.Error("y before the dry run answered saved something")
	}
	m.Update(proposedMsg{title: "remove server web", res: contracts.ConfigureResult{Revision: 9}})
	if m.change.dry != nil {
		t.Fatal("an answer to another proposal was taken")
	}
	m.Update(proposedMsg{title: "read fx/echo", base: 3, text: []byte(`{"servers":[]}`), res: contracts.ConfigureResult{Revision: 4, DryRun: true,
		Changed: []string{"fx"}, Widened: []string{`fx: tool "echo" now runs without approval (readOnlyTools)`}}})
	s := golden(t, m, "change_dryrun")
	for _, want := range []string{"Change the settings: read fx/echo", "pikod checked it: saving makes revision 4 (from 3)", `WIDENS: fx: tool "echo" now runs`, "y saves it"} {
		if !strings.Contains(s, want) {
			t.Errorf("the change screen lacks %q:\n%s", want, s)
		}
	}
	if _, cmd := m.Update(keyMsg("y")); cmd == nil || !m.change.saving {
		t.Fatal("y after the dry run did not save")
	}
	m.Update(changeSavedMsg{title: "read fx/echo", err: &contracts.Error{Code: 1, Message: "settings are at revision 5, not 3",
		Data: &contracts.ErrorData{Reason: "revision_moved", Hint: "read them again"}}})
	s = strings.Join(m.body(), "\n")
	if m.change == nil || !strings.Contains(s, "settings are at revision 5, not 3") || !strings.Contains(s, "esc, then make the change") {
		t.Errorf("a refused save:\n%s", s)
	}
	if _, cmd := m.Update(keyMsg("y")); cmd != nil {
		t.Error("y after a refused save sent it again")
	}
	keys(m, "esc")
	if m.change != nil || !strings.Contains(m.flash, "nothing was saved") {
		t.Errorf("esc: change open %v, flash %q", m.change != nil, m.flash)
	}
}

// TestTeaChangeNoColor: the new screens keep NO_COLOR (not one attribute).
func TestTeaChangeNoColor(t *testing.T) {
	tm := startTea(t, Options{NoColor: true})
	tm.Send(statusMsg{res: sampleStatus()})
	pressKeys(tm, "a")
	var out bytes.Buffer
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		out.Write(b)
		return bytes.Contains(b, []byte("Add a server"))
	}, teatest.WithDuration(waitLong))
	if m := sgr.Find(out.Bytes()); m != nil {
		t.Errorf("with NoColor the add screen wrote %q", m)
	}
	tm.Quit()
	tm.WaitFinished(t, teatest.WithFinalTimeout(waitLong))
}
