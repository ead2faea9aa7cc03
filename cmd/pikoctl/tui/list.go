package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// listView is the list half of the list-and-detail panes (servers,
// catalog, actions, requests): a cursor over the pane's rows, the keys
// that move it, and the rows that fit with the cursor's row marked. The
// pane owns its rows and its detail (a line under the list, or a whole
// view opened with enter); listView owns only where the cursor is.
type listView struct {
	cursor int
}

// move moves the cursor for the up, down, top and bottom keys over n rows
// and reports whether msg was one of them.
func (l *listView) move(msg tea.KeyMsg, k keyMap, n int) bool {
	return moveCursor(msg, k, &l.cursor, n)
}

// at reports the cursor's row among n, if there is one.
func (l listView) at(n int) (int, bool) {
	return l.cursor, l.cursor >= 0 && l.cursor < n
}

// listRows renders the rows of a list of n that fit in h lines, keeping the
// cursor's row in view and marked; line renders row i.
func (m *model) listRows(l listView, n, h int, line func(i int) string) []string {
	start, end := window(l.cursor, n, h)
	out := make([]string, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, m.mark(i == l.cursor, line(i)))
	}
	return out
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

// mark is a list row with the cursor's mark, or the room for it.
func (m *model) mark(selected bool, line string) string {
	if selected {
		return m.st.sel.Render("> " + line)
	}
	return "  " + line
}

// moveCursor moves a list's cursor for the up, down, top and bottom keys
// and reports whether msg was one of them.
func moveCursor(msg tea.KeyMsg, k keyMap, cur *int, n int) bool {
	switch {
	case key.Matches(msg, k.Up):
		*cur = clamp(*cur-1, n)
	case key.Matches(msg, k.Down):
		*cur = clamp(*cur+1, n)
	case key.Matches(msg, k.Top):
		*cur = 0
	case key.Matches(msg, k.Bottom):
		*cur = clamp(n-1, n)
	default:
		return false
	}
	return true
}

// clamp keeps a cursor inside a list of n entries.
func clamp(i, n int) int {
	if i >= n {
		i = n - 1
	}
	if i < 0 {
		i = 0
	}
	return i
}
