package tui

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSkillsCatalogPane: skills are a kind of the catalog pane, named and
// described by their frontmatter; enter shows how to load one, and the
// server's text is sanitized.
func TestSkillsCatalogPane(t *testing.T) {
	m := testModel(t)
	m.Update(statusMsg{res: sampleStatus()})
	c := sampleCatalog()
	c.Skills = []json.RawMessage{
		json.RawMessage(`{"uri":"skill://git-workflow/SKILL.md","frontmatter":{"name":"git-workflow","description":"Follow the \u001b[31mteam's\u001b[0m Git conventions"},` +
			`"resources":[{"uri":"skill://git-workflow/SKILL.md","digest":"sha256:00","size":1},{"uri":"skill://git-workflow/a.md","digest":"sha256:00","size":1}]}`),
		json.RawMessage(`{"uri":"skill://daily/SKILL.md","frontmatter":{"name":"daily","description":"Today"},"resources":"dynamic"}`),
	}
	m.Update(catalogMsg{server: "fx", res: c})
	keys(m, "2")
	for range 5 {
		keys(m, "t")
	}
	s := strings.Join(m.body(), "\n")
	for _, want := range []string{"skills only", "fx/git-workflow", "skill      skill://git-workflow/SKILL.md  Follow the", "fx/daily"} {
		if !strings.Contains(s, want) {
			t.Errorf("the skills view lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("a server's escape sequence reached the screen: %q", s)
	}
	keys(m, "enter")
	s = strings.Join(m.body(), "\n")
	for _, want := range []string{"2 files (none is read until the skill is loaded)", "load it (verified) with: pikoctl mcp skill fx skill://git-workflow/SKILL.md"} {
		if !strings.Contains(s, want) {
			t.Errorf("the skill view lacks %q:\n%s", want, s)
		}
	}
}
