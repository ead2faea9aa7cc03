package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

// layout sizes the scrolling views to the window.
func (m *model) layout() {
	h := m.bodyHeight()
	for _, vp := range []*struct{ w, h *int }{
		{&m.settingsView.Width, &m.settingsView.Height},
		{&m.logView.Width, &m.logView.Height},
	} {
		*vp.w, *vp.h = m.width, h
	}
	if m.schema != nil {
		m.schema.Width, m.schema.Height = m.width, h
	}
	if m.reviewView != nil {
		m.reviewView.Width, m.reviewView.Height = m.width, h-2
	}
	if m.requestView != nil {
		m.requestView.Width, m.requestView.Height = m.width, h-2
	}
	if m.logFollow {
		m.logView.GotoBottom()
	}
}

// bodyHeight is the lines between the tabs and the footer.
func (m *model) bodyHeight() int {
	return max(m.height-2-1-len(m.helpLines()), 3)
}

// View draws the whole screen: header, tabs, the pane, the outcome line
// and the keys. Every line fits the width.
func (m *model) View() string {
	var lines []string
	head := fmt.Sprintf("pikoctl tui · pikod %s", safe(m.opts.Instance))
	if m.loaded {
		head += fmt.Sprintf(" · %d servers · vault %s", len(m.status.Servers), safe(m.status.Vault.Backend))
		if m.status.Vault.Locked {
			head += " (locked)"
		}
	}
	if m.lost {
		head += " · DISCONNECTED"
	}
	lines = append(lines, m.st.title.Render(head))
	var tabs []string
	for i, name := range paneNames {
		label := fmt.Sprintf("%d %s", i+1, name)
		if i == paneActions {
			if n := m.prepared(); n > 0 {
				label += fmt.Sprintf("(%d)", n)
			}
		}
		if i == paneRequests {
			if n := m.pendingRequests(); n > 0 {
				label += fmt.Sprintf("(%d)", n)
			}
		}
		if i == m.pane {
			tabs = append(tabs, m.st.activeTab.Render("["+label+"]"))
		} else {
			tabs = append(tabs, m.st.tab.Render(" "+label+" "))
		}
	}
	lines = append(lines, strings.Join(tabs, " "))

	body := m.body()
	h := m.bodyHeight()
	if len(body) > h {
		body = body[:h]
	}
	for len(body) < h {
		body = append(body, "")
	}
	lines = append(lines, body...)
	switch {
	case m.flashBad:
		lines = append(lines, m.st.bad.Render(m.flash))
	default:
		lines = append(lines, m.flash)
	}
	lines = append(lines, m.helpLines()...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *model) prepared() int {
	n := 0
	for _, a := range m.actions {
		if a.State == contracts.ActionPrepared {
			n++
		}
	}
	return n
}

func (m *model) pendingRequests() int {
	n := 0
	for _, r := range m.requests {
		if r.State == contracts.RequestPending {
			n++
		}
	}
	return n
}

// body is the current pane's lines.
func (m *model) body() []string {
	if m.auth != nil {
		return m.authBody()
	}
	if m.run != nil {
		return m.runBody()
	}
	if m.creds != nil {
		return m.credBody()
	}
	switch {
	case m.change != nil:
		return m.changeBody()
	case m.confirm != nil:
		return m.confirm.lines
	case m.grantFor != nil:
		return m.grantBody()
	case m.adding != nil:
		return m.addBody()
	}
	switch m.pane {
	case paneServers:
		return m.serversBody()
	case paneCatalog:
		if m.schema != nil {
			return strings.Split(m.schema.View(), "\n")
		}
		return m.catalogBody()
	case paneActions:
		if m.reviewView != nil {
			return append([]string{
				m.st.title.Render("Review · a: approve (you type the digest's last 6 characters) · x: reject"),
				"",
			}, strings.Split(m.reviewView.View(), "\n")...)
		}
		return m.actionsBody()
	case paneRequests:
		if m.requestView != nil {
			return append([]string{
				m.st.title.Render("Request · a: answer (pikoctl mcp respond asks you) · x: decline"),
				"",
			}, strings.Split(m.requestView.View(), "\n")...)
		}
		return m.requestsBody()
	case paneSettings:
		return strings.Split(m.settingsView.View(), "\n")
	case paneLog:
		if len(m.logLines) == 0 {
			l := []string{m.st.dim.Render("no events yet: server state changes, catalog changes, server log messages and requests appear here")}
			if m.watchError != "" {
				l = append(l, m.st.bad.Render(m.watchError))
			}
			return l
		}
		return strings.Split(m.logView.View(), "\n")
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// clipTo shortens s to n columns.
func clipTo(s string, n int) string { return ansi.Truncate(s, n, "…") }

func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "  (none)"
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "  ", "  ") != nil {
		return "  " + safe(string(raw))
	}
	return "  " + safeLines(buf.String())
}

func indentBlock(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

func (m *model) authBody() []string {
	a := m.auth
	w := max(m.width, 20)
	out := []string{m.st.title.Render("OAuth sign-in: " + safe(a.server)), ""}
	switch {
	case a.res.AuthorizationURL == "" && !a.done:
		out = append(out, "starting the sign-in...")
	case a.res.AuthorizationURL != "":
		out = append(out, "Open this link in a browser, sign in and consent:", "")
		// The link is printed whole, wrapped only at the screen's edge,
		// so a terminal can select it.
		out = append(out, strings.Split(ansi.Hardwrap(safe(a.res.AuthorizationURL), w, false), "\n")...)
		out = append(out, "")
		if a.res.RedirectURI != "" {
			out = append(out, "The browser is sent back to "+safe(a.res.RedirectURI)+" on this machine.")
		}
		if a.res.ExpiresAt != "" && !a.done {
			out = append(out, "The sign-in expires at "+safe(a.res.ExpiresAt)+".")
		}
	}
	out = append(out, "")
	switch {
	case a.done && a.err != "":
		out = append(out, m.st.bad.Render("sign-in failed: "+a.err), "", "enter or esc closes")
	case a.done:
		msg := "signed in"
		if a.res.Grant != nil {
			msg += fmt.Sprintf(" (%s at %s", safe(a.res.Grant.GrantType), safe(a.res.Grant.Issuer))
			if a.res.Grant.Scope != "" {
				msg += ", scope " + safe(a.res.Grant.Scope)
			}
			msg += ")"
		}
		if a.res.State != "" {
			msg += "; the server is " + safe(a.res.State)
		}
		out = append(out, m.st.good.Render(msg), "", "enter or esc closes")
	default:
		out = append(out, "waiting for the sign-in to finish...", "", "esc stops waiting (the sign-in stays pending) · x cancels the sign-in")
	}
	return out
}

// paneKeys are the keys of the current pane, most useful first.
func (m *model) paneKeys() []key.Binding {
	k := m.keys
	if m.auth != nil {
		if m.auth.done {
			return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close"))}
		}
		return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop waiting")), k.CancelFlow}
	}
	if r := m.run; r != nil {
		switch {
		case r.running && !r.cancelled:
			return []key.Binding{key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "cancel the call"))}
		case r.running:
			return nil
		case r.res != nil || r.err != "":
			return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc/enter", "close"))}
		}
		return []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "call")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	}
	if m.creds != nil {
		return []key.Binding{
			key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab/↓", "next field")),
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "next, or store on the last")),
			key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "store")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	}
	if b := m.modalKeys(); b != nil {
		return b
	}
	if m.searching {
		return []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear")),
			key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		}
	}
	switch m.pane {
	case paneServers:
		pause := k.Pause
		if s, ok := m.selectedServer(); ok && s.Pause != nil {
			pause = withHelp(k.Pause, "resume")
		}
		return []key.Binding{k.Connect, k.Disconnect, k.Reconnect, withHelp(k.SignIn, "sign in"), pause}
	case paneCatalog:
		if m.schema != nil {
			if m.schemaKind != kindTool {
				return []key.Binding{k.Back, k.Up, k.Down}
			}
			return []key.Binding{k.Back, k.Run, k.Grant, k.Up, k.Down}
		}
		return []key.Binding{k.Search, withHelp(k.Open, "open"), k.Grant, k.Kinds, withHelp(k.Back, "clear filter")}
	case paneActions:
		if m.review != nil {
			return []key.Binding{k.Approve, k.Reject, k.Back, k.Up, k.Down}
		}
		return []key.Binding{withHelp(k.Open, "review"), withHelp(k.Approve, "review to approve"), k.Up, k.Down}
	case paneRequests:
		if m.request != nil {
			return []key.Binding{withHelp(k.Approve, "answer"), withHelp(k.Reject, "decline"), k.Back, k.Up, k.Down}
		}
		return []key.Binding{withHelp(k.Open, "read"), withHelp(k.Approve, "read to answer"), k.Up, k.Down}
	case paneSettings:
		keys := []key.Binding{k.Edit}
		if m.dryRun != nil {
			keys = append(keys, k.Save)
		}
		if m.draft != nil {
			keys = append(keys, k.Discard)
		}
		return keys
	case paneLog:
		return []key.Binding{k.Up, k.Down, withHelp(k.Top, "top"), withHelp(k.Bottom, "follow")}
	}
	return nil
}

// modalKeys are the keys of a change, question, chooser or the add line
// on screen (nil when none is).
func (m *model) modalKeys() []key.Binding {
	b := func(k, help string) key.Binding { return key.NewBinding(key.WithKeys(k), key.WithHelp(k, help)) }
	switch {
	case m.change != nil:
		c := m.change
		if c.saving {
			return []key.Binding{b("…", "saving")}
		}
		if c.dry != nil && !c.dry.Unchanged && len(c.problems) == 0 {
			return []key.Binding{b("y", "save"), b("esc", "leave it")}
		}
		return []key.Binding{b("esc", "close")}
	case m.confirm != nil:
		return []key.Binding{b("y", "yes"), b("any other key", "no")}
	case m.grantFor != nil:
		var out []key.Binding
		for _, c := range grantChoices {
			out = append(out, b(c.key, c.op))
		}
		return append(out, b("esc", "cancel"))
	case m.adding != nil:
		return []key.Binding{b("enter", "check it (nothing is saved yet)"), b("esc", "cancel")}
	}
	return nil
}

func withHelp(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}

// helpLines is the keys line (or, with ?, every key).
func (m *model) helpLines() []string {
	k := m.keys
	render := func(bs []key.Binding) string {
		var parts []string
		for _, b := range bs {
			parts = append(parts, b.Help().Key+" "+b.Help().Desc)
		}
		return m.st.help.Render(strings.Join(parts, "  "))
	}
	if m.searching || m.creds != nil || m.run != nil || m.adding != nil || m.change != nil || m.confirm != nil || m.grantFor != nil {
		// Every other key is text for the search or the form.
		return []string{render(m.paneKeys())}
	}
	if !m.showHelp {
		return []string{render(append(m.paneKeys(), k.Help, k.Quit))}
	}
	lines := []string{
		render(m.paneKeys()),
	}
	if m.pane == paneServers && m.auth == nil {
		lines = append(lines, render([]key.Binding{withHelp(k.Open, "its tools"), withHelp(k.Credentials, "enter its credentials (masked)")}),
			render([]key.Binding{k.Add, k.Remove, k.Logout}))
	}
	lines = append(lines,
		render([]key.Binding{k.Up, k.Down, k.Top, k.Bottom}),
		render([]key.Binding{withHelp(k.Pane[0], "servers"), withHelp(k.Pane[1], "catalog"), withHelp(k.Pane[2], "actions"), withHelp(k.Pane[3], "settings"), withHelp(k.Pane[4], "log"), withHelp(k.Pane[5], "requests")}),
		render([]key.Binding{k.Next, k.Prev, k.Refresh, withHelp(k.Help, "less help"), k.Quit}),
	)
	return lines
}
