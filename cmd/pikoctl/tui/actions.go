package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

func (m *model) actionsKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.review != nil {
		r := *m.review
		switch {
		case key.Matches(msg, k.Back):
			m.review, m.reviewView = nil, nil
			return nil
		case key.Matches(msg, k.Approve):
			if r.State != contracts.ActionPrepared {
				m.setFlash(fmt.Sprintf("action %s is %s and cannot be approved", r.ID, r.State), true)
				return nil
			}
			return m.approve(r.ID)
		case key.Matches(msg, k.Reject):
			if r.State != contracts.ActionPrepared {
				m.setFlash(fmt.Sprintf("action %s is %s: nothing to reject", r.ID, r.State), true)
				return nil
			}
			m.review, m.reviewView = nil, nil
			return m.reject(r)
		}
		vp, cmd := m.reviewView.Update(msg)
		m.reviewView = &vp
		return cmd
	}
	n := len(m.actions)
	switch {
	case m.actList.move(msg, k, n):
	case key.Matches(msg, k.Open), key.Matches(msg, k.Approve), key.Matches(msg, k.Reject):
		// Every decision starts from the review, which shows what
		// approving sends.
		if i, ok := m.actList.at(n); ok {
			return m.loadReview(m.actions[i].ID)
		}
	}
	return nil
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

func (m *model) actionsBody() []string {
	if len(m.actions) == 0 {
		return []string{"no actions: calls of tools that need your approval appear here"}
	}
	out := []string{m.st.dim.Render(fmt.Sprintf("  %-30s %-10s %-10s %-11s %s", "ACTION", "STATE", "SERVER", "TOOL", "CALLER"))}
	h := m.bodyHeight() - 1
	// The caller takes what is left of the line (the review shows it whole).
	callerW := max(m.width-2-30-1-10-1-10-1-11-1, 8)
	out = append(out, m.listRows(m.actList, len(m.actions), h, func(i int) string {
		a := m.actions[i]
		return fmt.Sprintf("%-30s %-10s %-10s %-11s %s", clipTo(safe(a.ID), 30), safe(a.State), clipTo(safe(a.Server), 10),
			clipTo(safe(a.Tool), 11), callerCell(a.Caller, callerW))
	})...)
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
