package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

// The catalog pane lists what the connected servers offer: their tools
// (with grants, searchable, callable), then their resources, resource
// templates, prompts and skills, as extensions.mcp.catalog returns them. t
// narrows the list to one kind.

// Kinds of catalog rows, in list order.
const (
	kindTool     = "tool"
	kindResource = "resource"
	kindTemplate = "template"
	kindPrompt   = "prompt"
	kindSkill    = "skill"
)

// catKinds is the order t cycles through ("" is every kind).
var catKinds = []string{"", kindTool, kindResource, kindTemplate, kindPrompt, kindSkill}

// catRow is one line of the catalog pane.
type catRow struct {
	kind   string
	server string
	// tool is set for a tool; score for a search hit.
	tool  contracts.CatalogTool
	score float64
	// item is a resource, template or prompt as the server listed it.
	item catItem
	raw  json.RawMessage
}

// catItem is what the pane shows of a resource, a resource template or a
// prompt (MCP's fields; everything else is in raw).
type catItem struct {
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
	Size        *int64 `json:"size"`
	Arguments   []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	} `json:"arguments"`
	// Frontmatter and Resources are a skill entry's (its name and
	// description are the frontmatter's).
	Frontmatter struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"frontmatter"`
	Resources json.RawMessage `json:"resources"`
}

// rows is the catalog pane's list: with a search, the ranked tool hits
// (nil until the answer to the current query arrives); else every kind
// the filter shows, each by server.
func (m *model) rows() []catRow {
	tools, scores := m.listed()
	var out []catRow
	if m.catKind == "" || m.catKind == kindTool || strings.TrimSpace(m.search.Value()) != "" {
		for i, t := range tools {
			r := catRow{kind: kindTool, server: t.Server, tool: t}
			if scores != nil {
				r.score = scores[i]
			}
			out = append(out, r)
		}
	}
	if strings.TrimSpace(m.search.Value()) != "" {
		return out
	}
	for _, kind := range []string{kindResource, kindTemplate, kindPrompt, kindSkill} {
		if m.catKind != "" && m.catKind != kind {
			continue
		}
		for _, id := range m.catalogServers() {
			c := m.catalogs[id]
			list := c.Resources
			switch kind {
			case kindTemplate:
				list = c.ResourceTemplates
			case kindPrompt:
				list = c.Prompts
			case kindSkill:
				list = c.Skills
			}
			for _, raw := range list {
				r := catRow{kind: kind, server: id, raw: raw}
				_ = json.Unmarshal(raw, &r.item) // what does not decode is shown raw
				if kind == kindSkill {
					r.item.Name, r.item.Description = r.item.Frontmatter.Name, r.item.Frontmatter.Description
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// catalogServers are the servers whose catalogs the pane shows, sorted.
func (m *model) catalogServers() []string {
	servers := make([]string, 0, len(m.catalogs))
	for id := range m.catalogs {
		if m.serverOnly == "" || id == m.serverOnly {
			servers = append(servers, id)
		}
	}
	sort.Strings(servers)
	return servers
}

// catCounts says how many of each kind the shown servers offer.
func (m *model) catCounts() (tools int, others string) {
	var res, tpl, pr, sk int
	for _, id := range m.catalogServers() {
		c := m.catalogs[id]
		tools += len(c.Tools)
		res += len(c.Resources)
		tpl += len(c.ResourceTemplates)
		pr += len(c.Prompts)
		sk += len(c.Skills)
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{res, "resource"}, {tpl, "template"}, {pr, "prompt"}, {sk, "skill"}} {
		if p.n == 1 {
			parts = append(parts, "1 "+p.what)
		} else if p.n > 1 {
			parts = append(parts, fmt.Sprintf("%d %ss", p.n, p.what))
		}
	}
	return tools, strings.Join(parts, ", ")
}

// rowLine is one catalog row in the list.
func (m *model) rowLine(r catRow, scored bool, nameW int) string {
	var name, col, desc string
	switch r.kind {
	case kindTool:
		t := r.tool
		col = t.Grant
		if !t.Selected {
			col = "unselected"
		}
		if t.SuspendedGrant != "" {
			col = "suspended"
		}
		desc = t.Title
		if desc == "" {
			desc = firstLine(t.Description)
		}
		name = toolName(t)
	default:
		it := r.item
		col = r.kind
		name = it.Name
		where := it.URI
		if r.kind == kindTemplate {
			where = it.URITemplate
		}
		if name == "" {
			name = where
		}
		desc = it.Title
		if desc == "" {
			desc = firstLine(it.Description)
		}
		if where != "" && where != name {
			desc = strings.TrimSpace(where + "  " + desc)
		}
	}
	if scored {
		return fmt.Sprintf("%6.3f %-*s %-10s %s", r.score, nameW-7, clipTo(safe(r.server+"/"+name), nameW-7), clipTo(safe(col), 10), safe(desc))
	}
	return fmt.Sprintf("%-*s %-10s %s", nameW, clipTo(safe(r.server+"/"+name), nameW), clipTo(safe(col), 10), safe(desc))
}

// itemText renders a resource, template or prompt for reading. Every
// field is the server's text, sanitized.
func (m *model) itemText(r catRow) string {
	var b strings.Builder
	w := max(m.width-2, 20)
	it := r.item
	name := it.Name
	if name == "" {
		name = it.URI + it.URITemplate
	}
	fmt.Fprintf(&b, "%s\n", m.st.title.Render(safe(r.server+"/"+name)+" ("+r.kind+")   (esc back)"))
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-12s %s\n", k+":", safe(v))
		}
	}
	field("uri", it.URI)
	field("uri template", it.URITemplate)
	field("title", it.Title)
	field("mime type", it.MimeType)
	if it.Size != nil {
		field("size", fmt.Sprintf("%d bytes", *it.Size))
	}
	if it.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", ansi.Wrap(safeLines(it.Description), w, " "))
	}
	if r.kind == kindPrompt {
		b.WriteString("\narguments:\n")
		if len(it.Arguments) == 0 {
			b.WriteString("  (none)\n")
		}
		for _, a := range it.Arguments {
			flag := "optional"
			if a.Required {
				flag = "required"
			}
			fmt.Fprintf(&b, "  %-20s %-8s %s\n", safe(a.Name), flag, safe(firstLine(a.Description)))
		}
	}
	b.WriteString("\n")
	switch r.kind {
	case kindResource:
		fmt.Fprintf(&b, "read it with: pikoctl mcp read %s %s\n", safe(r.server), safe(it.URI))
	case kindTemplate:
		fmt.Fprintf(&b, "complete its arguments with: pikoctl mcp complete %s --template %s ARG PREFIX\n", safe(r.server), safe(it.URITemplate))
	case kindPrompt:
		fmt.Fprintf(&b, "get it with: pikoctl mcp prompt %s %s --arg NAME=VALUE\n", safe(r.server), safe(it.Name))
	case kindSkill:
		var files []json.RawMessage
		if json.Unmarshal(it.Resources, &files) == nil {
			fmt.Fprintf(&b, "%d files (none is read until the skill is loaded)\n", len(files))
		} else {
			b.WriteString("its files are \"dynamic\": pikod cannot verify them, and does not load it\n")
		}
		fmt.Fprintf(&b, "load it (verified) with: pikoctl mcp skill %s %s\n", safe(r.server), safe(it.URI))
	}
	fmt.Fprintf(&b, "\nas the server listed it:\n%s\n", indentJSON(r.raw))
	return b.String()
}

// tools is every connected server's tools (or one server's), by server
// and name.
func (m *model) tools() []contracts.CatalogTool {
	servers := make([]string, 0, len(m.catalogs))
	for id := range m.catalogs {
		if m.serverOnly == "" || id == m.serverOnly {
			servers = append(servers, id)
		}
	}
	sort.Strings(servers)
	var out []contracts.CatalogTool
	for _, id := range servers {
		for _, t := range m.catalogs[id].Tools {
			if t.Server == "" {
				t.Server = id
			}
			out = append(out, t)
		}
	}
	return out
}

// listed is the catalog pane's list: every tool while the search is
// empty, else the search's ranked hits with their BM25 scores (nil until
// the answer to the current query arrives).
func (m *model) listed() ([]contracts.CatalogTool, []float64) {
	q := strings.TrimSpace(m.search.Value())
	if q == "" {
		return m.tools(), nil
	}
	if m.hits == nil || m.hitsFor != q {
		return nil, nil
	}
	tools := make([]contracts.CatalogTool, 0, len(m.hits.Results))
	scores := make([]float64, 0, len(m.hits.Results))
	for _, h := range m.hits.Results {
		tools = append(tools, m.hitTool(h))
		scores = append(scores, h.Score)
	}
	return tools, scores
}

// hitTool is the catalog entry of a search hit (for its schema), or what
// the hit itself says when the catalog was not read yet.
func (m *model) hitTool(h contracts.SearchHit) contracts.CatalogTool {
	for _, t := range m.catalogs[h.Server].Tools {
		if t.Name == h.Name || (t.OriginalName == h.Tool && h.Tool != "") {
			if t.Server == "" {
				t.Server = h.Server
			}
			return t
		}
	}
	grant := h.Grant
	return contracts.CatalogTool{Server: h.Server, Name: h.Name, OriginalName: h.Tool, Title: h.Title,
		Description: h.Description, Grant: grant, Selected: grant != "not_selected"}
}

// clearSearch empties the search and its results.
func (m *model) clearSearch() {
	m.search.SetValue("")
	m.hits, m.hitsFor, m.searchErr = nil, "", ""
	m.catList.cursor = 0
}

func (m *model) catalogKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.schema != nil {
		isTool := m.schemaKind == kindTool
		switch {
		case key.Matches(msg, k.Back) || msg.Type == tea.KeyEnter:
			m.schema = nil
			return nil
		case key.Matches(msg, k.Run) && isTool:
			m.run = m.newRun(m.schemaTool)
			return textinput.Blink
		case key.Matches(msg, k.Grant) && isTool:
			t := m.schemaTool
			m.grantFor = &t
			m.setFlash("", false)
			return nil
		}
		vp, cmd := m.schema.Update(msg)
		m.schema = &vp
		return cmd
	}
	rows := m.rows()
	n := len(rows)
	switch {
	case m.catList.move(msg, k, n):
	case key.Matches(msg, k.Search):
		m.searching = true
		return m.search.Focus()
	case key.Matches(msg, k.Back):
		m.clearSearch()
		m.serverOnly, m.catKind = "", ""
	case key.Matches(msg, k.Kinds):
		i := slices.Index(catKinds, m.catKind)
		m.catKind = catKinds[(i+1)%len(catKinds)]
		m.catList.cursor = 0
	case key.Matches(msg, k.Grant):
		if m.catList.cursor < n && rows[m.catList.cursor].kind == kindTool {
			t := rows[m.catList.cursor].tool
			m.grantFor = &t
			m.setFlash("", false)
		} else if m.catList.cursor < n {
			m.setFlash("grants are for tools: "+rows[m.catList.cursor].kind+"s are read, not called", true)
		}
	case key.Matches(msg, k.Open):
		if m.catList.cursor < n {
			r := rows[m.catList.cursor]
			vp := viewport.New(m.width, m.bodyHeight())
			if r.kind == kindTool {
				vp.SetContent(m.schemaText(r.tool))
				m.schemaOf, m.schemaTool = r.tool.Server+"/"+r.tool.Name, r.tool
			} else {
				vp.SetContent(m.itemText(r))
				m.schemaOf, m.schemaTool = r.server+"/"+r.item.Name+r.item.URI, contracts.CatalogTool{}
			}
			m.schema, m.schemaKind = &vp, r.kind
		}
	}
	return nil
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
	scored := q != ""
	out = append(out, m.listRows(m.catList, len(rows), h, func(i int) string { return m.rowLine(rows[i], scored, 30) })...)
	return out
}

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

// catalogLoaded takes a server's catalog, or why it could not be read.
func (m *model) catalogLoaded(msg catalogMsg) tea.Cmd {
	if msg.err != nil {
		m.catErr[msg.server] = errText(msg.err)
		delete(m.catalogs, msg.server)
	} else {
		delete(m.catErr, msg.server)
		m.catalogs[msg.server] = msg.res
	}
	m.catList.cursor = clamp(m.catList.cursor, len(m.rows()))
	return nil
}

// searched takes the ranked tools of a search, unless the query changed
// since.
func (m *model) searched(msg searchMsg) tea.Cmd {
	if msg.query != strings.TrimSpace(m.search.Value()) {
		return nil // an answer to an older query
	}
	if msg.err != nil {
		m.hits, m.hitsFor, m.searchErr = nil, msg.query, "searching: "+errText(msg.err)
		return nil
	}
	res := msg.res
	m.hits, m.hitsFor, m.searchErr = &res, msg.query, ""
	m.catList.cursor = clamp(m.catList.cursor, len(res.Results))
	return nil
}
