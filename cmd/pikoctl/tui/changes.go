package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

// Settings changes made from the panes (a tool's grant, adding or
// removing a server) are composed here as pikoctl's one-server commands
// compose them: read extensions.settings, change one entry, and send the
// whole object to extensions.configure with the revision that was read.
// The console first sends it as a dry run and shows what pikod says it
// does (added, changed, removed, every grant it widens); only y saves it,
// with the same expectRevision, so a save made meanwhile is refused
// rather than overwritten.

// changeState is one proposed settings change on screen.
type changeState struct {
	// title says what the change is ("grant fx/echo read").
	title string
	// notes say what it means, shown above pikod's verdict.
	notes []string
	// text is the whole settings object to save; base the revision it was
	// made from.
	text []byte
	base uint64
	// dry is pikod's dry-run verdict; problems why it refused.
	dry      *contracts.ConfigureResult
	problems []string
	saving   bool
}

type (
	proposedMsg struct {
		title string
		text  []byte
		base  uint64
		res   contracts.ConfigureResult
		err   error
	}
	changeSavedMsg struct {
		title string
		res   contracts.ConfigureResult
		err   error
	}
)

// propose reads the settings, applies change to them and asks pikod for a
// dry run; the answer opens the confirmation. change runs off the event
// loop and must not touch the model.
func (m *model) propose(title string, notes []string, change func(*contracts.MCPSettings) error) tea.Cmd {
	m.change = &changeState{title: title, notes: notes}
	m.setFlash("", false)
	return func() tea.Msg {
		var cur contracts.SettingsResult
		if err := m.call(contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &cur); err != nil {
			return proposedMsg{title: title, err: fmt.Errorf("reading the settings: %w", err)}
		}
		var s contracts.MCPSettings
		if len(cur.Settings) > 0 && string(cur.Settings) != "null" {
			if err := json.Unmarshal(cur.Settings, &s); err != nil {
				return proposedMsg{title: title, err: fmt.Errorf("decoding the saved settings: %w", err)}
			}
		}
		if err := change(&s); err != nil {
			return proposedMsg{title: title, err: err}
		}
		text := s.Canonical()
		var res contracts.ConfigureResult
		err := m.call(contracts.MethodConfigure, contracts.ConfigureParams{
			Extension: contracts.ExtensionMCP, Settings: text, ExpectRevision: cur.Revision, DryRun: true,
		}, &res)
		return proposedMsg{title: title, text: text, base: cur.Revision, res: res, err: err}
	}
}

func (m *model) proposed(msg proposedMsg) tea.Cmd {
	c := m.change
	if c == nil || c.title != msg.title || c.dry != nil || c.problems != nil {
		return nil // left, or an answer to another proposal
	}
	if msg.err != nil {
		c.problems = problemsOf(msg.err)
		m.setFlash("nothing was saved: esc closes", true)
		return nil
	}
	res := msg.res
	c.dry, c.text, c.base = &res, msg.text, msg.base
	if res.Unchanged {
		m.setFlash("the settings already say so: nothing to save (esc closes)", false)
	} else {
		m.setFlash("checked by pikod, not saved yet: y saves, esc leaves the settings as they are", false)
	}
	return nil
}

// changeKey handles a key while a proposed change is on screen.
func (m *model) changeKey(msg tea.KeyMsg) tea.Cmd {
	c := m.change
	switch {
	case msg.Type == tea.KeyCtrlC:
		return tea.Quit
	case c.saving:
		return nil
	case msg.Type == tea.KeyEsc || msg.String() == "n":
		m.change = nil
		m.setFlash("nothing was saved: the settings are as they were", false)
		return nil
	case msg.String() == "y" && c.dry != nil && !c.dry.Unchanged:
		c.saving = true
		m.setFlash("saving...", false)
		text, base, title := c.text, c.base, c.title
		return func() tea.Msg {
			var res contracts.ConfigureResult
			err := m.call(contracts.MethodConfigure, contracts.ConfigureParams{
				Extension: contracts.ExtensionMCP, Settings: text, ExpectRevision: base,
			}, &res)
			return changeSavedMsg{title: title, res: res, err: err}
		}
	}
	return nil
}

func (m *model) changeSaved(msg changeSavedMsg) tea.Cmd {
	c := m.change
	if c == nil || c.title != msg.title {
		return nil
	}
	if msg.err != nil {
		c.saving, c.dry = false, nil
		c.problems = problemsOf(msg.err)
		var ce *contracts.Error
		if errors.As(msg.err, &ce) && ce.Reason() == contracts.ReasonRevisionMoved {
			c.problems = append(c.problems, "the settings were saved by someone else meanwhile: esc, then make the change again (it is read afresh)")
		}
		m.setFlash("nothing was saved: esc closes", true)
		return nil
	}
	m.change = nil
	return m.saved(msg.res)
}

// saved takes in a save made from the console (a pane's change or the
// settings editor): says what it did, reads what it changed again and
// offers the credentials of the servers it added.
func (m *model) saved(res contracts.ConfigureResult) tea.Cmd {
	m.setFlash(saveSummary(res), false)
	cmds := []tea.Cmd{m.loadSettings(), m.loadStatus()}
	for _, id := range append(slices.Clone(res.Changed), res.Live...) {
		if s, ok := findServer(m.status, id); ok && connected(s) {
			cmds = append(cmds, m.loadCatalog(id))
		}
	}
	if len(res.Added) > 0 && !res.DryRun {
		m.offerCreds = append(m.offerCreds, res.Added...)
		m.offerRev = res.Revision
	}
	return tea.Batch(cmds...)
}

// saveSummary is one line for a save: the revision, what was
// disconnected, what applied live, what was added or removed.
func saveSummary(res contracts.ConfigureResult) string {
	if res.Unchanged {
		return fmt.Sprintf("settings unchanged (revision %d)", res.Revision)
	}
	parts := []string{fmt.Sprintf("settings saved: revision %d", res.Revision)}
	list := func(ids []string) string { return strings.Join(ids, ", ") }
	if len(res.Disconnected) > 0 {
		parts = append(parts, "disconnected "+list(res.Disconnected))
	}
	if len(res.Live) > 0 {
		parts = append(parts, "applied live: "+list(res.Live)+" (nothing restarted)")
	}
	if len(res.Added) > 0 {
		parts = append(parts, "added "+list(res.Added)+" (c connects it)")
	}
	if len(res.Removed) > 0 {
		parts = append(parts, "removed "+list(res.Removed))
	}
	return strings.Join(parts, "; ")
}

// changeBody draws the proposed change and pikod's verdict.
func (m *model) changeBody() []string {
	c := m.change
	w := max(m.width, 20)
	wrap := func(s string) []string { return strings.Split(ansi.Wrap(s, w, " "), "\n") }
	out := []string{m.st.title.Render("Change the settings: " + safe(c.title)), ""}
	for _, n := range c.notes {
		// A tool's name comes from its server: sanitized like the rest.
		for _, l := range strings.Split(safeLines(n), "\n") {
			out = append(out, wrap(l)...)
		}
	}
	if len(c.notes) > 0 {
		out = append(out, "")
	}
	switch {
	case len(c.problems) > 0:
		out = append(out, m.st.bad.Render("NOT SAVED: pikod refused the change:"))
		for _, p := range c.problems {
			for _, l := range wrap("  - " + safe(p)) {
				out = append(out, m.st.bad.Render(l))
			}
		}
		out = append(out, "", "esc closes")
	case c.dry == nil:
		out = append(out, "checking the change with pikod (a dry run: nothing is saved)...")
	case c.dry.Unchanged:
		out = append(out, fmt.Sprintf("the settings (revision %d) already say so: nothing to save", c.dry.Revision), "", "esc closes")
	default:
		d := c.dry
		out = append(out, m.st.good.Render(fmt.Sprintf("pikod checked it: saving makes revision %d (from %d)", d.Revision, c.base)))
		for _, l := range []struct {
			what string
			ids  []string
		}{{"added", d.Added}, {"changed", d.Changed}, {"removed", d.Removed}} {
			if len(l.ids) > 0 {
				out = append(out, fmt.Sprintf("  %s: %s", l.what, safe(strings.Join(l.ids, ", "))))
			}
		}
		for _, wd := range d.Widened {
			for _, l := range wrap("  WIDENS: " + safe(wd)) {
				out = append(out, m.st.warn.Render(l))
			}
		}
		if len(d.Widened) == 0 {
			out = append(out, "  it widens nothing")
		}
		out = append(out, "")
		if c.saving {
			out = append(out, "saving...")
		} else {
			out = append(out, m.st.title.Render("y saves it")+" · esc leaves the settings as they are")
		}
	}
	return out
}

// Grants, as 'pikoctl mcp grant' (--read, --autonomous, --select) and
// 'pikoctl mcp revoke' (--deselect) change them (contracts.GrantChange).
const (
	grantRead       = string(contracts.GrantChangeRead)
	grantAutonomous = string(contracts.GrantChangeAutonomous)
	grantSelect     = string(contracts.GrantChangeSelect)
	grantRevoke     = string(contracts.GrantChangeRevoke)
	grantDeselect   = string(contracts.GrantChangeDeselect)
)

var grantChoices = []struct{ key, op, what string }{
	{"r", grantRead, "no approval, an mcp_read receipt (readOnlyTools)"},
	{"a", grantAutonomous, "no approval, an mcp_autonomous receipt (needs a tools list)"},
	{"s", grantSelect, "selected; each call needs your approval"},
	{"x", grantRevoke, "read/autonomous grant removed: each call needs approval"},
	{"d", grantDeselect, "out of the tools list: it cannot be called at all"},
}

// applyGrant changes tool's grant in s exactly as the CLI does
// (ServerSettings.ChangeGrant); a change that needs a tools list says
// where the console edits it.
func applyGrant(s *contracts.ServerSettings, tool, op string) error {
	err := s.ChangeGrant(tool, contracts.GrantChange(op))
	if err != nil && contracts.ToError(err).Reason() == contracts.ReasonToolsRequired {
		return fmt.Errorf("%s: list the tools to select in the settings (4, then e: \"tools\": [...]), then change the grant again", errText(err))
	}
	return err
}

// changeServer returns a change that applies f to server id's entry.
func changeServer(id string, f func(*contracts.ServerSettings) error) func(*contracts.MCPSettings) error {
	return func(s *contracts.MCPSettings) error {
		i := slices.IndexFunc(s.Servers, func(e contracts.ServerSettings) bool { return e.ID == id })
		if i < 0 {
			return fmt.Errorf("no server %q is configured (it was removed meanwhile?): ctrl+r reads everything again", id)
		}
		return f(&s.Servers[i])
	}
}

// grantKey handles a key while the grant chooser is open.
func (m *model) grantKey(msg tea.KeyMsg) tea.Cmd {
	t := *m.grantFor
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if msg.Type == tea.KeyEsc {
		m.grantFor = nil
		m.setFlash("the grant is as it was", false)
		return nil
	}
	for _, c := range grantChoices {
		if msg.String() == c.key {
			m.grantFor = nil
			tool, op := toolName(t), c.op
			title := fmt.Sprintf("%s %s/%s", op, t.Server, tool)
			notes := []string{"now: " + grantWords(t), "then: " + c.what}
			return m.propose(title, notes, changeServer(t.Server, func(s *contracts.ServerSettings) error {
				return applyGrant(s, tool, op)
			}))
		}
	}
	return nil
}

// toolName is the server's own name of a tool (what the settings list).
func toolName(t contracts.CatalogTool) string {
	if t.OriginalName != "" {
		return t.OriginalName
	}
	return t.Name
}

// grantWords says a tool's grant as the catalog reports it.
func grantWords(t contracts.CatalogTool) string {
	switch {
	case !t.Selected:
		return "not selected (the tools list leaves it out)"
	case t.SuspendedGrant != "":
		return t.SuspendedGrant + ", suspended until trusted (the definition changed)"
	case t.Grant == contracts.GrantRead:
		return "read: runs without approval"
	case t.Grant == contracts.GrantAutonomous:
		return "autonomous: runs without approval"
	}
	return "selected, every call needs your approval"
}

func (m *model) grantBody() []string {
	t := *m.grantFor
	out := []string{m.st.title.Render("Grant of " + safe(t.Server+"/"+toolName(t))), "", "now: " + safe(grantWords(t)), ""}
	for _, c := range grantChoices {
		out = append(out, fmt.Sprintf("  %s  %-10s  %s", m.st.title.Render(c.key), c.op, c.what))
	}
	return append(out, "", "pikod checks it first (a dry run): you read what it widens, then y saves it.",
		"A grant covers the definition as it is now and applies to the running server.")
}

// removeServer proposes removing server id.
func (m *model) removeServer(id string) tea.Cmd {
	notes := []string{"It is disconnected. Its stored credentials stay in the vault (clear them with 'pikoctl mcp secret " + id + "' and {}); its receipts and actions stay in the ledger."}
	return m.propose("remove server "+id, notes, func(s *contracts.MCPSettings) error {
		i := slices.IndexFunc(s.Servers, func(e contracts.ServerSettings) bool { return e.ID == id })
		if i < 0 {
			return fmt.Errorf("no server %q is configured (it was removed meanwhile?)", id)
		}
		s.Servers = slices.Delete(s.Servers, i, i+1)
		return nil
	})
}

// confirmState is a yes/no question before an operation that needs no
// dry run (signing out).
type confirmState struct {
	lines []string
	yes   tea.Cmd
	// no is said when the owner answers anything but y.
	no string
}

func (m *model) confirmKey(msg tea.KeyMsg) tea.Cmd {
	c := m.confirm
	m.confirm = nil
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if msg.String() == "y" {
		return c.yes
	}
	m.setFlash(c.no, false)
	return nil
}

// logout asks, then removes the server's local OAuth state
// (extensions.mcp.logout), as 'pikoctl mcp logout'.
func (m *model) logout(s contracts.ServerStatus) tea.Cmd {
	if s.Transport == contracts.TransportStdio {
		m.setFlash(s.ID+" is a stdio server: OAuth sign-out is for http and sse servers", true)
		return nil
	}
	id := s.ID
	m.confirm = &confirmState{
		lines: []string{
			m.st.title.Render("Sign out of " + safe(id) + "?"), "",
			"Its OAuth tokens and registered client are removed from the vault, a pending",
			"sign-in is cancelled and the connection is closed. The authorization server may",
			"still remember your consent; credentials entered with v stay.",
			"", m.st.title.Render("y signs out") + " · any other key keeps everything",
		},
		no: "still signed in to " + id + ": nothing was removed",
		yes: func() tea.Msg {
			var res contracts.LogoutResult
			if err := m.call(contracts.MethodMCPLogout, contracts.ServerParams{Server: id}, &res); err != nil {
				return opMsg{err: fmt.Errorf("signing out of %s: %w", id, err)}
			}
			text := "signed out of " + id + ": its OAuth tokens and registered client are removed"
			if !res.Removed {
				text = id + " had no OAuth tokens or registered client to remove"
			}
			if res.CancelledFlow {
				text += "; the pending sign-in was cancelled"
			}
			if res.WasConnected {
				text += "; the connection was closed"
			}
			return opMsg{text: text}
		},
	}
	return nil
}

// nextOffer opens the credentials form of the next server a save added,
// once the status and settings show it and nothing else is on screen.
func (m *model) nextOffer() tea.Cmd {
	for len(m.offerCreds) > 0 {
		if m.modal() || m.status.Revision < m.offerRev || m.settings.Revision < m.offerRev {
			return nil
		}
		id := m.offerCreds[0]
		m.offerCreds = m.offerCreds[1:]
		s, ok := findServer(m.status, id)
		switch {
		case !ok || s.Credentials == "stored":
			continue
		case s.Credentials == "unknown":
			m.setFlash("the vault is locked: unlock it, then v on "+id+" enters its credentials", true)
			continue
		}
		m.creds = m.newCredForm(s)
		m.creds.offered = true
		return m.creds.setFocus(0)
	}
	return nil
}

// modal reports whether something other than a pane has the screen.
func (m *model) modal() bool {
	return m.creds != nil || m.run != nil || m.auth != nil || m.change != nil || m.confirm != nil ||
		m.grantFor != nil || m.adding != nil || m.handingOff
}
