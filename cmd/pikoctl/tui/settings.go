package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/pikod/pikod/contracts"
)

func (m *model) settingsKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Edit):
		text := m.draft
		if text == nil {
			text, m.base = m.settingsText(), m.settings.Revision
		}
		return m.edit(text)
	case key.Matches(msg, k.Discard) && m.draft != nil:
		m.draft, m.problems, m.dryRun = nil, nil, nil
		m.setFlash("edits discarded", false)
		m.refreshSettingsView()
		return m.loadSettings()
	case key.Matches(msg, k.Save) && m.dryRun != nil && m.draft != nil:
		m.setFlash("saving...", false)
		return m.configure(m.draft, m.base, false)
	}
	var cmd tea.Cmd
	m.settingsView, cmd = m.settingsView.Update(msg)
	return cmd
}

// settingsText is the stored settings, indented for editing.
func (m *model) settingsText() []byte {
	raw := m.settings.Settings
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{"servers":[]}`)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return append([]byte(nil), raw...)
	}
	buf.WriteString("\n")
	return buf.Bytes()
}

func (m *model) refreshSettingsView() {
	var b strings.Builder
	if len(m.problems) > 0 {
		b.WriteString(m.st.bad.Render("NOT SAVED: the edited settings have problems (e edits them again, u discards):") + "\n")
		for _, p := range m.problems {
			b.WriteString(m.st.bad.Render("  - "+safe(p)) + "\n")
		}
		b.WriteString("\n")
	}
	if d := m.dryRun; d != nil {
		b.WriteString(m.st.good.Render(fmt.Sprintf("valid: saving makes revision %d (y saves, e edits again, u discards)", d.Revision)) + "\n")
		for _, l := range []struct {
			what string
			ids  []string
		}{{"added", d.Added}, {"changed", d.Changed}, {"removed", d.Removed}} {
			if len(l.ids) > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", l.what, safe(strings.Join(l.ids, ", ")))
			}
		}
		for _, w := range d.Widened {
			b.WriteString(m.st.warn.Render("  WIDENS: "+safe(w)) + "\n")
		}
		b.WriteString("\n")
	}
	text := m.draft
	if text == nil {
		text = m.settingsText()
		fmt.Fprintf(&b, "revision %d", m.settings.Revision)
		if m.settings.UpdatedAt != "" {
			fmt.Fprintf(&b, ", saved %s", safe(m.settings.UpdatedAt))
		}
		b.WriteString(" (e edits in $EDITOR)\n")
	} else {
		fmt.Fprintf(&b, "edited from revision %d, not saved:\n", m.base)
	}
	b.WriteString(safeLines(string(text)))
	m.settingsView.SetContent(b.String())
}

// problemsOf lists what a refused configure found wrong, one line each.
func problemsOf(err error) []string {
	var ce *contracts.Error
	if errors.As(err, &ce) {
		var out []string
		if ce.Data != nil {
			for _, p := range ce.Data.Problems {
				out = append(out, p.Error())
			}
		}
		if len(out) == 0 {
			out = append(out, ce.Message)
		}
		if ce.Data != nil && ce.Data.Hint != "" {
			out = append(out, "hint: "+ce.Data.Hint)
		}
		return out
	}
	return []string{errText(err)}
}

// jsonProblem says where the text stops being JSON.
func jsonProblem(text []byte) string {
	var v any
	err := json.Unmarshal(text, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, c := range text[:min(int(se.Offset), len(text))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Sprintf("not JSON at line %d, column %d: %v", line, col, se)
	}
	if err != nil {
		return "not JSON: " + err.Error()
	}
	return "not JSON"
}

// settingsLoaded takes the saved settings.
func (m *model) settingsLoaded(msg settingsMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash("reading settings: "+errText(msg.err), true)
		return nil
	}
	m.settings = msg.res
	m.refreshSettingsView()
	return nil
}

// edited takes the text $EDITOR left: unchanged, not JSON, or checked by a
// dry run.
func (m *model) edited(msg editedMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash(errText(msg.err), true)
		return nil
	}
	if m.draft == nil && string(msg.text) == string(m.settingsText()) {
		m.setFlash("settings unchanged: nothing to save", false)
		return nil
	}
	m.draft, m.problems, m.dryRun = msg.text, nil, nil
	m.refreshSettingsView()
	if !json.Valid(msg.text) {
		m.problems = []string{jsonProblem(msg.text)}
		m.refreshSettingsView()
		return nil
	}
	m.setFlash("checking the edited settings...", false)
	return m.configure(m.draft, m.base, true)
}

// configured handles the answer to a dry run or a save.
func (m *model) configured(msg configureMsg) tea.Cmd {
	if msg.err != nil {
		m.problems = problemsOf(msg.err)
		m.dryRun = nil
		m.setFlash("the edited settings were not saved: e edits them again, u discards them", true)
		m.refreshSettingsView()
		return nil
	}
	if msg.dryRun {
		res := msg.res
		m.dryRun, m.problems = &res, nil
		m.setFlash("the edited settings are valid: y saves them, e edits again, u discards", false)
		m.refreshSettingsView()
		return nil
	}
	m.draft, m.dryRun, m.problems = nil, nil, nil
	return m.saved(msg.res)
}
