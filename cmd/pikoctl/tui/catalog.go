package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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
