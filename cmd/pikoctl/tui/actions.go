package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/cmd/pikoctl/render"
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

// reviewText is exactly what approving would send, the lines pikoctl mcp
// review prints (render.Review), wrapped to the screen: a label's value
// continues under itself, the other lines of a description wrap at the
// edge, and the arguments are left as sent.
func (m *model) reviewText(r contracts.ActionReview) string {
	w := max(m.width, 40)
	lw := render.ReviewLabelWidth
	indent := strings.Repeat(" ", lw)
	var out []string
	for _, entry := range render.Review(r) {
		first, rest, _ := strings.Cut(entry, "\n")
		labelled := len(first) > lw && first[lw-1] == ' ' && strings.Contains(first[:lw], ":")
		switch {
		case strings.HasPrefix(first, "  ") || ansi.StringWidth(first) <= w:
			out = append(out, first)
		case labelled:
			for i, part := range strings.Split(ansi.Wrap(first[lw:], w-lw, " "), "\n") {
				if i == 0 {
					part = first[:lw] + part
				} else {
					part = indent + part
				}
				out = append(out, part)
			}
		default:
			out = append(out, strings.Split(ansi.Wrap(first, w, " "), "\n")...)
		}
		if rest != "" {
			out = append(out, strings.Split(ansi.Wrap(rest, w, " "), "\n")...)
		}
	}
	return strings.Join(out, "\n") + "\n"
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

// actionsLoaded takes the list of actions.
func (m *model) actionsLoaded(msg actionsMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash("listing actions: "+errText(msg.err), true)
		return nil
	}
	m.actions = msg.res.Actions
	m.actList.cursor = clamp(m.actList.cursor, len(m.actions))
	return nil
}

// reviewLoaded opens the review of an action the daemon sent.
func (m *model) reviewLoaded(msg reviewMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash("reviewing: "+errText(msg.err), true)
		return nil
	}
	r := msg.res
	m.review = &r
	vp := viewport.New(m.width, m.bodyHeight())
	vp.SetContent(m.reviewText(r))
	m.reviewView = &vp
	return nil
}

// approveEnded says how the hand-off to pikoctl mcp approve ended and
// closes the review.
func (m *model) approveEnded(msg approvedMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash(fmt.Sprintf("action %s: pikoctl mcp approve ended with %v (its output was shown above)", msg.id, msg.err), true)
	} else {
		m.setFlash(fmt.Sprintf("action %s approved and run (its result was shown above)", msg.id), false)
	}
	m.review, m.reviewView = nil, nil
	return tea.Batch(m.loadActions(), m.loadStatus())
}
