package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/cmd/pikoctl/render"
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

// window returns the range of a list of n rows to show in h lines so the
// cursor stays visible.
func window(cursor, n, h int) (int, int) {
	if n <= h {
		return 0, n
	}
	start := max(cursor-h/2, 0)
	if start+h > n {
		start = n - h
	}
	return start, start + h
}

func (m *model) mark(selected bool, line string) string {
	if selected {
		return m.st.sel.Render("> " + line)
	}
	return "  " + line
}

func (m *model) serversBody() []string {
	if !m.loaded {
		if m.statusErr != "" {
			return []string{m.st.bad.Render("reading status: " + m.statusErr)}
		}
		return []string{"reading status..."}
	}
	if len(m.status.Servers) == 0 {
		return []string{
			"no servers configured.",
			"",
			"a adds one: NAME then its command, or NAME then its https:// URL.",
			"Or 4 opens the settings; e edits them in $EDITOR. A server looks like",
			`  {"id":"files","transport":"stdio","command":"/usr/bin/mcp-files"}`,
		}
	}
	out := []string{m.st.dim.Render(fmt.Sprintf("  %-16s %-11s %-11s %5s  %s", "SERVER", "STATE", "PROTOCOL", "TOOLS", "LAST ERROR"))}
	h := m.bodyHeight()
	detail := m.serverDetail()
	listH := max(h-1-len(detail)-1, min(3, len(m.status.Servers)))
	start, end := window(m.srvCursor, len(m.status.Servers), listH)
	for i := start; i < end; i++ {
		s := m.status.Servers[i]
		proto := s.ProtocolVersion
		if proto == "" {
			proto = "-"
		}
		tools := "-"
		if connected(s) {
			tools = fmt.Sprint(s.ToolCount)
		}
		state := s.State
		if !s.Enabled && state != contracts.StateDisabled {
			state += "*"
		}
		line := fmt.Sprintf("%-16s %-11s %-11s %5s  %s", clipTo(safe(s.ID), 16), state, clipTo(safe(proto), 11), tools, safe(s.LastError))
		out = append(out, m.mark(i == m.srvCursor, line))
	}
	out = append(out, "")
	return append(out, detail...)
}

// serverDetail is what the list has no room for, for the selected server.
func (m *model) serverDetail() []string {
	s, ok := m.selectedServer()
	if !ok {
		return nil
	}
	var d []string
	add := func(k, v string) {
		if v != "" {
			d = append(d, fmt.Sprintf("%-12s %s", k+":", safe(v)))
		}
	}
	add("server", s.ID+" ("+s.Transport+")")
	if s.ServerInfo != nil {
		add("reports", strings.TrimSpace(s.ServerInfo.Name+" "+s.ServerInfo.Version))
	}
	if s.ProtocolVersion != "" {
		add("protocol", s.ProtocolVersion+" ("+s.Negotiated+")")
	}
	if s.PID != 0 {
		add("pid", fmt.Sprint(s.PID))
	}
	add("since", s.ConnectedSince)
	if p := s.Pause; p != nil {
		v := "since " + p.Since
		if p.Reason != "" {
			v += ": " + p.Reason
		}
		if s.ConnectionState != "" && s.ConnectionState != contracts.StateConnected {
			v += " (connection " + s.ConnectionState + ")"
		}
		add("paused", v)
	}
	if s.Credentials != "" {
		add("credentials", s.Credentials+" (v enters them, masked)")
	}
	if s.OAuth != nil {
		v := s.OAuth.Grant
		if s.OAuth.Pending != nil {
			v += ", sign-in pending until " + s.OAuth.Pending.ExpiresAt
		}
		add("oauth", v)
	}
	if len(s.ChangedTools) > 0 {
		add("changed", strings.Join(s.ChangedTools, ", ")+" (grants suspended until trusted)")
	}
	if !s.CatalogComplete && s.CatalogProblem != "" {
		add("catalog", "incomplete: "+s.CatalogProblem)
	}
	add("exit", s.ExitStatus)
	if s.LastError != "" {
		for i, l := range strings.Split(ansi.Wrap(safe(s.LastError), max(m.width-14, 20), " "), "\n") {
			if i == 0 {
				d = append(d, m.st.bad.Render(fmt.Sprintf("%-12s %s", "last error:", l)))
			} else {
				d = append(d, m.st.bad.Render(strings.Repeat(" ", 13)+l))
			}
		}
	}
	if s.StderrTail != "" {
		tail := strings.Split(strings.TrimRight(safeLines(s.StderrTail), "\n"), "\n")
		if len(tail) > 3 {
			tail = tail[len(tail)-3:]
		}
		for i, l := range tail {
			k := ""
			if i == 0 {
				k = "stderr:"
			}
			d = append(d, m.st.dim.Render(fmt.Sprintf("%-12s %s", k, l)))
		}
	}
	return d
}

func (m *model) catalogBody() []string {
	rows := m.rows()
	q := strings.TrimSpace(m.search.Value())
	var out []string
	if m.searching || m.search.Value() != "" {
		out = append(out, m.search.View())
	}
	scope := "every connected server"
	if m.serverOnly != "" {
		scope = "server " + safe(m.serverOnly)
	}
	total, others := m.catCounts()
	switch {
	case q == "":
		line := fmt.Sprintf("%d tools · %s", total, scope)
		if others != "" {
			line += " · " + others
		}
		if m.catKind != "" {
			line = fmt.Sprintf("%ss only · %s · t next kind · esc all", m.catKind, scope)
		}
		out = append(out, m.st.dim.Render(line))
	case m.searchErr != "" && m.hitsFor == q:
		out = append(out, m.st.bad.Render(m.searchErr))
	case len(rows) == 0 && (m.hits == nil || m.hitsFor != q):
		out = append(out, m.st.dim.Render("searching..."))
	default:
		line := fmt.Sprintf("%d matches of %d tools (BM25) · %s", len(rows), total, scope)
		if m.hits != nil && len(m.hits.NotSearched) > 0 {
			line += " · not connected: " + strings.Join(m.hits.NotSearched, ", ")
		}
		out = append(out, m.st.dim.Render(safe(line)))
	}
	var errs []string
	for id, e := range m.catErr {
		errs = append(errs, m.st.bad.Render(id+": "+e))
	}
	sort.Strings(errs)
	out = append(out, errs...)
	if len(m.catalogs) == 0 && len(errs) == 0 && q == "" {
		return append(out, "", "no connected server: connect one in the servers pane (1, then c)")
	}
	if len(rows) == 0 && q == "" && m.catKind != "" {
		return append(out, "", "no "+m.catKind+"s here: t shows the next kind, esc every kind")
	}
	h := m.bodyHeight() - len(out)
	start, end := window(m.catCursor, len(rows), h)
	scored := q != ""
	for i := start; i < end; i++ {
		out = append(out, m.mark(i == m.catCursor, m.rowLine(rows[i], scored, 30)))
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// clipTo shortens s to n columns.
func clipTo(s string, n int) string { return ansi.Truncate(s, n, "…") }

// schemaText renders one tool for reading: what it is, its grant, and its
// input and output schemas (properties first, then the JSON).
func (m *model) schemaText(t contracts.CatalogTool) string {
	var b strings.Builder
	w := max(m.width-2, 20)
	fmt.Fprintf(&b, "%s\n", m.st.title.Render(safe(t.Server+"/"+t.Name)+"   (esc back)"))
	if t.OriginalName != "" && t.OriginalName != t.Name {
		fmt.Fprintf(&b, "server's name: %s\n", safe(t.OriginalName))
	}
	if t.Title != "" {
		fmt.Fprintf(&b, "title:  %s\n", safe(t.Title))
	}
	grant := t.Grant
	if !t.Selected {
		grant = grantWords(t)
	}
	fmt.Fprintf(&b, "grant:  %s\n", safe(grant))
	if t.SuspendedGrant != "" {
		fmt.Fprintf(&b, "        %s suspended: the definition changed since it was trusted\n", safe(t.SuspendedGrant))
	}
	if t.Pin != "" {
		fmt.Fprintf(&b, "pin:    %s\n", safe(t.Pin))
	}
	fmt.Fprintf(&b, "digest: %s\n", safe(t.Digest))
	if t.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", ansi.Wrap(safeLines(t.Description), w, " "))
	}
	if len(t.Annotations) > 0 && string(t.Annotations) != "null" {
		fmt.Fprintf(&b, "\nannotations (hints from the server; they grant nothing):\n%s\n", indentJSON(t.Annotations))
	}
	fmt.Fprintf(&b, "\ninput:\n%s", schemaProps(t.InputSchema))
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		fmt.Fprintf(&b, "\noutput:\n%s", schemaProps(t.OutputSchema))
	}
	fmt.Fprintf(&b, "\ninput schema:\n%s\n", indentJSON(t.InputSchema))
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		fmt.Fprintf(&b, "\noutput schema:\n%s\n", indentJSON(t.OutputSchema))
	}
	return b.String()
}

// schemaProps lists an object schema's properties: name, type, required,
// description.
func schemaProps(raw json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return "  (no parameters)\n"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var b strings.Builder
	for _, n := range names {
		p := s.Properties[n]
		typ := "any"
		switch v := p.Type.(type) {
		case string:
			typ = v
		case []any:
			var parts []string
			for _, x := range v {
				parts = append(parts, fmt.Sprint(x))
			}
			typ = strings.Join(parts, "|")
		}
		if len(p.Enum) > 0 {
			var parts []string
			for _, x := range p.Enum {
				parts = append(parts, fmt.Sprint(x))
			}
			typ += " {" + strings.Join(parts, ",") + "}"
		}
		flag := "optional"
		if req[n] {
			flag = "required"
		}
		fmt.Fprintf(&b, "  %-20s %-12s %-8s %s\n", safe(n), safe(typ), flag, safe(firstLine(p.Description)))
	}
	return b.String()
}

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

// reviewText is exactly what approving would send, as pikoctl mcp review
// shows it.
func (m *model) reviewText(r contracts.ActionReview) string {
	var b strings.Builder
	fmt.Fprintf(&b, "action:    %s (%s)\n", safe(r.ID), safe(r.State))
	fmt.Fprintf(&b, "server:    %s\n", safe(r.Server))
	fmt.Fprintf(&b, "tool:      %s\n", safe(r.ToolName))
	// Who asked comes before what it asks: the declared names say so.
	asked := ansi.Wrap(safe(r.Caller.Describe()), max(m.width-12, 20), " ")
	fmt.Fprintf(&b, "asked by:  %s\n", strings.ReplaceAll(asked, "\n", "\n           "))
	if r.ToolDescription != "" {
		fmt.Fprintf(&b, "described: %s\n", safe(firstLine(r.ToolDescription)))
	}
	fmt.Fprintf(&b, "created:   %s\n", safe(r.CreatedAt))
	if r.ExpiresAt != "" {
		fmt.Fprintf(&b, "expires:   %s\n", safe(r.ExpiresAt))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "reason:    %s\n", safe(r.Reason))
	}
	fmt.Fprintf(&b, "digest:    %s\n", safe(r.Digest))
	fmt.Fprintf(&b, "arguments:\n%s\n", indentBlock(safeLines(r.ArgumentsText)))
	return b.String()
}

func indentBlock(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

func (m *model) requestsBody() []string {
	var out []string
	if m.reqErr != "" {
		out = append(out, m.st.bad.Render("listing requests: "+m.reqErr))
	}
	if len(m.requests) == 0 {
		return append(out, "no server requests: questions (elicitation) and completions (sampling) that servers",
			"ask you appear here while their calls wait")
	}
	out = append(out, m.st.dim.Render(fmt.Sprintf("  %-20s %-9s %-10s %-16s %s", "REQUEST", "STATE", "SERVER", "KIND", "MESSAGE")))
	h := m.bodyHeight() - len(out)
	start, end := window(m.reqCursor, len(m.requests), h)
	for i := start; i < end; i++ {
		r := m.requests[i]
		kind := r.Kind
		if r.Mode != "" {
			kind += "/" + r.Mode
		}
		line := fmt.Sprintf("%-20s %-9s %-10s %-16s %s", clipTo(safe(r.ID), 20), safe(r.State), clipTo(safe(r.Server), 10),
			clipTo(safe(kind), 16), safe(firstLine(r.Message)))
		out = append(out, m.mark(i == m.reqCursor, line))
	}
	return out
}

// requestText is one server request read whole: who asks, what, and for
// a form the fields pikoctl mcp respond will ask.
func (m *model) requestText(r contracts.ServerRequestInfo) string {
	var b strings.Builder
	w := max(m.width-2, 20)
	fmt.Fprintf(&b, "request:   %s (%s)\n", safe(r.ID), safe(r.State))
	fmt.Fprintf(&b, "server:    %s\n", safe(r.Server))
	kind := r.Kind
	if r.Mode != "" {
		kind += " (" + r.Mode + ")"
	}
	fmt.Fprintf(&b, "kind:      %s, %s\n", safe(kind), safe(r.Method))
	if r.Tool != "" {
		fmt.Fprintf(&b, "for call:  %s\n", safe(r.Tool))
	}
	fmt.Fprintf(&b, "created:   %s\n", safe(r.CreatedAt))
	if r.ExpiresAt != "" {
		fmt.Fprintf(&b, "expires:   %s\n", safe(r.ExpiresAt))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "reason:    %s\n", safe(r.Reason))
	}
	if r.MaxTokens > 0 {
		fmt.Fprintf(&b, "maxTokens: %d\n", r.MaxTokens)
	}
	if r.Message != "" {
		fmt.Fprintf(&b, "\nthe server asks:\n%s\n", indentBlock(ansi.Wrap(safeLines(r.Message), w, " ")))
	}
	if r.URL != "" {
		fmt.Fprintf(&b, "\nurl (pikod never opens it): %s\ndomain: %s\n", safe(r.URL), safe(r.Domain))
		if r.DomainASCII != "" {
			fmt.Fprintf(&b, "punycode: %s (the real spelling: compare this)\n", safe(r.DomainASCII))
		}
		if r.DomainUnicode != "" {
			fmt.Fprintf(&b, "unicode: %s (how a browser may show it)\n", safe(r.DomainUnicode))
		}
		if len(r.DomainScripts) > 0 {
			fmt.Fprintf(&b, "WARNING: the domain mixes scripts (%s): it may imitate a domain you know\n", safe(strings.Join(r.DomainScripts, ", ")))
		}
	}
	if len(r.Schema) > 0 && string(r.Schema) != "null" {
		fmt.Fprintf(&b, "\nfields:\n%s", schemaProps(r.Schema))
	}
	if r.Proposal != "" {
		fmt.Fprintf(&b, "\nproposed answer (from a local tool; sent only if you choose it):\n%s\n", indentBlock(safeLines(r.Proposal)))
	}
	b.WriteString("\nDo not enter credentials you would not give this server.\n")
	return b.String()
}

func (m *model) actionsBody() []string {
	if len(m.actions) == 0 {
		return []string{"no actions: calls of tools that need your approval appear here"}
	}
	out := []string{m.st.dim.Render(fmt.Sprintf("  %-30s %-10s %-10s %-11s %s", "ACTION", "STATE", "SERVER", "TOOL", "CALLER"))}
	h := m.bodyHeight() - 1
	start, end := window(m.actCursor, len(m.actions), h)
	// The caller takes what is left of the line (the review shows it whole).
	callerW := max(m.width-2-30-1-10-1-10-1-11-1, 8)
	for i := start; i < end; i++ {
		a := m.actions[i]
		line := fmt.Sprintf("%-30s %-10s %-10s %-11s %s", clipTo(safe(a.ID), 30), safe(a.State), clipTo(safe(a.Server), 10),
			clipTo(safe(a.Tool), 11), callerCell(a.Caller, callerW))
		out = append(out, m.mark(i == m.actCursor, line))
	}
	return out
}

// callerCell is who asked, in w columns: the whole short form when it
// fits, else the kernel's part of it ("pikoctl[4242]") rather than a cut
// one.
func callerCell(c contracts.Caller, w int) string {
	s := c.Short()
	if ansi.StringWidth(s) > w {
		if i := strings.Index(s, "] "); i >= 0 && i+1 <= w {
			return s[:i+1]
		}
	}
	return clipTo(s, w)
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

// eventLine is one event as a log line: its time of day, server and
// kind in columns, then the words `pikoctl mcp watch` prints, with the
// console's keys as the next step.
func eventLine(ev contracts.EventParams) string {
	t := ev.Time
	if len(t) >= 19 {
		t = t[11:19]
	}
	return safe(fmt.Sprintf("%s %-12s %-8s %s", t, ev.Server, ev.Kind, render.Event(ev, consoleHints)))
}

// consoleHints word the next step as the console's key for it.
var consoleHints = render.Hints{
	Respond: func(string) string { return "6 answers it" },
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
