package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

// credForm is the masked credential entry of one server: rows of a name
// (plain: an environment variable or header name, not a secret) and a
// value (masked), plus the OAuth client secret when the server's settings
// configure OAuth. What is sent is merged into the server's stored
// credentials (extensions.secret with merge): the rows with a value
// replace or add those fields, blank rows send nothing and the stored
// fields not named stay; when every value is blank nothing is sent.
// Credentials stored for another identity (reenter) are replaced instead:
// a merge cannot keep them.
type credForm struct {
	server    string
	transport string
	// stored is the server's credential state from status (none, stored,
	// reenter, unknown).
	stored string
	// fields names the stored fields (env.NAME, headers.NAME, ...) from
	// status; never values.
	fields []string
	rows   []credRow
	focus  int
	// offered: the console opened the form itself, for a server a save
	// just added.
	offered bool
}

// credRow is one field: kind is env, headers or oauthClientSecret (which
// has no name input).
type credRow struct {
	kind  string
	name  textinput.Model
	value textinput.Model
}

// credRowsEnv and credRowsHeaders are how many name/value rows the form
// offers.
const (
	credRowsEnv     = 3
	credRowsHeaders = 2
)

func (m *model) newCredForm(s contracts.ServerStatus) *credForm {
	f := &credForm{server: s.ID, transport: s.Transport, stored: s.Credentials, fields: s.CredentialFields}
	nameInput := func(prefill string) textinput.Model {
		in := textinput.New()
		in.Prompt = ""
		in.CharLimit = 128
		in.Placeholder = "NAME"
		in.SetValue(prefill)
		in.PromptStyle, in.TextStyle, in.PlaceholderStyle = m.st.plain, m.st.plain, m.st.dim
		in.Cursor.Style = m.st.plain
		return in
	}
	valueInput := func() textinput.Model {
		in := textinput.New()
		in.Prompt = ""
		in.CharLimit = 8192
		in.Width = 30
		in.EchoMode = textinput.EchoPassword
		in.EchoCharacter = '*'
		in.Placeholder = "(blank: not sent)"
		in.PromptStyle, in.TextStyle, in.PlaceholderStyle = m.st.plain, m.st.plain, m.st.dim
		in.Cursor.Style = m.st.plain
		return in
	}
	if s.Transport == "stdio" {
		for range credRowsEnv {
			f.rows = append(f.rows, credRow{kind: "env", name: nameInput(""), value: valueInput()})
		}
	} else {
		for i := range credRowsHeaders {
			prefill := ""
			if i == 0 {
				prefill = "Authorization"
			}
			f.rows = append(f.rows, credRow{kind: "headers", name: nameInput(prefill), value: valueInput()})
		}
		if m.serverHasOAuth(s.ID) {
			f.rows = append(f.rows, credRow{kind: "oauthClientSecret", value: valueInput()})
		}
	}
	f.setFocus(0)
	return f
}

// serverHasOAuth reports whether the saved settings configure OAuth for
// the server (so an OAuth client secret may be stored).
func (m *model) serverHasOAuth(id string) bool {
	var s struct {
		Servers []struct {
			ID    string          `json:"id"`
			OAuth json.RawMessage `json:"oauth"`
		} `json:"servers"`
	}
	if json.Unmarshal(m.settings.Settings, &s) != nil {
		return false
	}
	for _, srv := range s.Servers {
		if srv.ID == id {
			return len(srv.OAuth) > 0 && string(srv.OAuth) != "null"
		}
	}
	return false
}

// inputs is the number of focusable inputs.
func (f *credForm) inputs() int {
	n := 0
	for _, r := range f.rows {
		if r.kind == "oauthClientSecret" {
			n++
		} else {
			n += 2
		}
	}
	return n
}

// at returns the input with focus index i.
func (f *credForm) at(i int) *textinput.Model {
	for r := range f.rows {
		row := &f.rows[r]
		if row.kind == "oauthClientSecret" {
			if i == 0 {
				return &row.value
			}
			i--
			continue
		}
		if i == 0 {
			return &row.name
		}
		if i == 1 {
			return &row.value
		}
		i -= 2
	}
	return nil
}

func (f *credForm) setFocus(i int) tea.Cmd {
	n := f.inputs()
	f.focus = (i%n + n) % n
	var cmd tea.Cmd
	for j := range n {
		in := f.at(j)
		if j == f.focus {
			cmd = in.Focus()
		} else {
			in.Blur()
		}
	}
	return cmd
}

// credentials is what the form sends: only the rows with a value; nil
// when every value is blank. A value without a name is an error (it
// names the row, never the value).
func (f *credForm) credentials() (map[string]any, error) {
	out := map[string]any{}
	named := map[string]map[string]string{}
	for i, r := range f.rows {
		v := r.value.Value()
		if v == "" {
			continue
		}
		if r.kind == "oauthClientSecret" {
			out["oauthClientSecret"] = v
			continue
		}
		name := strings.TrimSpace(r.name.Value())
		if name == "" {
			return nil, fmt.Errorf("row %d has a value but no %s name: type the name, or clear the value", i+1, r.kind)
		}
		if named[r.kind] == nil {
			named[r.kind] = map[string]string{}
		}
		if _, dup := named[r.kind][name]; dup {
			return nil, fmt.Errorf("%s %s is given twice: keep one", r.kind, name)
		}
		named[r.kind][name] = v
	}
	for k, v := range named {
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// credKey handles a key while the credential form is open.
func (m *model) credKey(msg tea.KeyMsg) tea.Cmd {
	f := m.creds
	switch msg.Type {
	case tea.KeyEsc:
		m.creds = nil
		if f.offered {
			m.setFlash("no credentials entered for "+f.server+": v on the servers pane enters them later", false)
			return nil
		}
		m.setFlash("credentials not changed: nothing was sent", false)
		return nil
	case tea.KeyCtrlC:
		return tea.Quit
	case tea.KeyTab, tea.KeyDown:
		return f.setFocus(f.focus + 1)
	case tea.KeyShiftTab, tea.KeyUp:
		return f.setFocus(f.focus - 1)
	case tea.KeyEnter:
		if f.focus < f.inputs()-1 {
			return f.setFocus(f.focus + 1)
		}
		return m.submitCreds()
	case tea.KeyCtrlS:
		return m.submitCreds()
	}
	in := f.at(f.focus)
	var cmd tea.Cmd
	*in, cmd = in.Update(msg)
	return cmd
}

// submitCreds sends the form (or nothing, when every value is blank) and
// closes it; the values leave the screen's state at once.
func (m *model) submitCreds() tea.Cmd {
	f := m.creds
	creds, err := f.credentials()
	if err != nil {
		m.setFlash(err.Error(), true)
		return nil
	}
	m.creds = nil
	if creds == nil {
		m.setFlash("nothing entered: the stored credentials of "+f.server+" are unchanged", false)
		return nil
	}
	server := f.server
	// Merge keeps the stored fields the form does not name; credentials
	// stored for another identity cannot be kept, so those are replaced.
	merge := f.stored != "reenter"
	m.setFlash("storing the credentials of "+server+"...", false)
	return func() tea.Msg {
		var res contracts.SecretResult
		err := m.call(contracts.MethodSecret, contracts.SecretParams{Extension: contracts.ExtensionMCP, Server: server,
			Credentials: creds, Merge: merge}, &res)
		return secretMsg{server: server, res: res, err: err}
	}
}

// secretMsg is the answer to extensions.secret.
type secretMsg struct {
	server string
	res    contracts.SecretResult
	err    error
}

func (m *model) secretStored(msg secretMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash("storing the credentials of "+msg.server+": "+errText(msg.err), true)
		return nil
	}
	r := msg.res
	if r.Unchanged {
		m.setFlash(fmt.Sprintf("nothing changed: the credentials of %s are as stored (generation %d)", r.Server, r.Generation), false)
		return nil
	}
	text := fmt.Sprintf("stored %s for %s (generation %d)", strings.Join(r.Fields, ", "), r.Server, r.Generation)
	if r.ReconnectRequired {
		text += "; r reconnects to use them"
	}
	if r.Warning != "" {
		text += "; warning: " + r.Warning
	}
	m.setFlash(text, r.Warning != "")
	return m.loadStatus()
}

// credBody draws the form: names in the clear, values masked.
func (m *model) credBody() []string {
	f := m.creds
	out := []string{m.st.title.Render("Credentials of " + safe(f.server) + " (" + safe(f.transport) + ")"), ""}
	if f.offered {
		out = append(out, safe(f.server)+" was just added. Enter what it needs (a token, a key), or esc if nothing.")
	}
	switch f.stored {
	case "stored":
		out = append(out, ansi.Truncate("Stored: "+safe(strings.Join(f.fields, ", ")), 78, "…"))
		out = append(out, "A value you enter replaces or adds that field; blank rows keep what is stored.")
	case "reenter":
		out = append(out, "Stored credentials belong to an earlier command, URL or directory: enter them again.")
		out = append(out, "What you enter replaces them all.")
	default:
		out = append(out, "Enter the credentials pikod passes to this server; blank values are not sent.")
	}
	out = append(out, "Values are masked and go only to the vault (extensions.secret).", "")
	idx := 0
	mark := func(i int) string {
		if f.focus == i {
			return m.st.sel.Render(">")
		}
		return " "
	}
	for _, r := range f.rows {
		if r.kind == "oauthClientSecret" {
			out = append(out, fmt.Sprintf("%s %-8s %-24s %s %s", mark(idx), "oauth", "client secret", mark(idx), r.value.View()))
			idx++
			continue
		}
		kind := "env"
		if r.kind == "headers" {
			kind = "header"
		}
		out = append(out, fmt.Sprintf("%s %-8s %s %s %s", mark(idx), kind, padTo(r.name.View(), 24), mark(idx+1), r.value.View()))

		idx += 2
	}
	return out
}

// padTo pads a rendered input to n columns.
func padTo(s string, n int) string {
	s = ansi.Truncate(s, n, "…")
	w := ansi.StringWidth(s)
	if w >= n {
		return s
	}
	return s + strings.Repeat(" ", n-w)
}
