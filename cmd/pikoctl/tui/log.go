package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
)

// event takes one extensions.mcp.event: a log line, and a refresh of what
// it changed.
func (m *model) event(msg eventMsg) tea.Cmd {
	ev := msg.ev
	if msg.droppedHere > 0 {
		m.appendLog(fmt.Sprintf("(%d events dropped: the screen was busy)", msg.droppedHere))
	}
	if ev.Dropped > 0 {
		m.appendLog(fmt.Sprintf("(pikod dropped %d events for this console)", ev.Dropped))
	}
	m.lastSeq = ev.Seq
	m.appendLog(eventLine(ev))
	switch ev.Kind {
	case contracts.EventState:
		return m.loadStatus()
	case contracts.EventCatalog:
		return tea.Batch(m.loadStatus(), m.loadCatalog(ev.Server))
	case contracts.EventRequest:
		cmds := []tea.Cmd{m.loadActions(), m.loadRequests()}
		var d contracts.RequestEventData
		if m.request != nil && json.Unmarshal(ev.Data, &d) == nil && d.ID == m.request.ID {
			cmds = append(cmds, m.loadRequest(d.ID, true))
		}
		return tea.Batch(cmds...)
	}
	return nil
}

func (m *model) appendLog(line string) {
	m.logLines = append(m.logLines, line)
	if n := len(m.logLines) - maxLogLines; n > 0 {
		m.logLines = append([]string(nil), m.logLines[n:]...)
	}
	m.logView.SetContent(strings.Join(m.logLines, "\n"))
	if m.logFollow {
		m.logView.GotoBottom()
	}
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
