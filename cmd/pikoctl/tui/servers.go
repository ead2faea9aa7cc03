package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

func (m *model) selectedServer() (contracts.ServerStatus, bool) {
	if i, ok := m.srvList.at(len(m.status.Servers)); ok {
		return m.status.Servers[i], true
	}
	return contracts.ServerStatus{}, false
}

func (m *model) serversKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	n := len(m.status.Servers)
	switch {
	case m.srvList.move(msg, k, n):
		return nil
	case key.Matches(msg, k.Add):
		m.adding = m.newAddInput()
		m.setFlash("", false)
		return textinput.Blink
	}
	s, ok := m.selectedServer()
	if !ok {
		return nil
	}
	switch {
	case key.Matches(msg, k.Connect):
		m.setFlash("connecting "+s.ID+"...", false)
		return m.serverOp("connect", s.ID)
	case key.Matches(msg, k.Disconnect):
		m.setFlash("disconnecting "+s.ID+"...", false)
		return m.serverOp("disconnect", s.ID)
	case key.Matches(msg, k.Reconnect):
		m.setFlash("reconnecting "+s.ID+"...", false)
		return m.serverOp("reconnect", s.ID)
	case key.Matches(msg, k.SignIn):
		if s.Transport == "stdio" {
			m.setFlash(s.ID+" is a stdio server: OAuth sign-in is for http and sse servers", true)
			return nil
		}
		m.auth = &authState{server: s.ID}
		return m.authStart(s.ID)
	case key.Matches(msg, k.Credentials):
		m.creds = m.newCredForm(s)
		m.setFlash("", false)
		return textinput.Blink
	case key.Matches(msg, k.Pause):
		if s.Pause != nil {
			return m.resume(s.ID)
		}
		m.setFlash("pausing "+s.ID+"...", false)
		return m.pause(s.ID)
	case key.Matches(msg, k.Remove):
		return m.removeServer(s.ID)
	case key.Matches(msg, k.Logout):
		return m.logout(s)
	case key.Matches(msg, k.Open):
		m.serverOnly = s.ID
		m.clearSearch()
		return m.setPane(paneCatalog)
	}
	return nil
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
	out = append(out, m.listRows(m.srvList, len(m.status.Servers), listH, func(i int) string {
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
		return line
	})...)
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

// statusLoaded takes a status answer: the servers, and the catalogs to read
// again of those that came up or changed.
func (m *model) statusLoaded(msg statusMsg) tea.Cmd {
	if msg.err != nil {
		m.statusErr = errText(msg.err)
		return nil
	}
	prev := m.status
	m.status, m.statusErr, m.loaded = msg.res, "", true
	m.srvList.cursor = clamp(m.srvList.cursor, len(m.status.Servers))
	var cmds []tea.Cmd
	// Read the catalogs of servers that came up or changed.
	for _, s := range m.status.Servers {
		if !connected(s) {
			delete(m.catalogs, s.ID)
			continue
		}
		old, ok := findServer(prev, s.ID)
		_, have := m.catalogs[s.ID]
		_, failed := m.catErr[s.ID]
		changed := !ok || old.Generation != s.Generation || old.ToolCount != s.ToolCount
		// A catalog that failed to load is tried again when the
		// server changes (or ctrl+r), not at every refresh.
		if changed || (!have && !failed) {
			cmds = append(cmds, m.loadCatalog(s.ID))
		}
	}
	return tea.Batch(cmds...)
}

// resumeEnded says how the hand-off to pikoctl mcp resume ended.
func (m *model) resumeEnded(msg resumedMsg) tea.Cmd {
	if msg.err != nil {
		m.setFlash(fmt.Sprintf("%s stays paused (pikoctl mcp resume: %v)", msg.server, msg.err), true)
	} else {
		m.setFlash(fmt.Sprintf("%s resumed: calls run under their grants again (held actions stay in 3 actions)", msg.server), false)
	}
	return tea.Batch(m.loadStatus(), m.loadActions())
}

// authed handles a sign-in answer: a link to show, or the outcome.
func (m *model) authed(msg authMsg) tea.Cmd {
	a := m.auth
	if a == nil || a.server != msg.server {
		return nil
	}
	if msg.err != nil {
		if msg.waited && errors.Is(msg.err, context.Canceled) {
			m.auth = nil
			m.setFlash("stopped waiting: the sign-in for "+msg.server+" stays pending until it expires ('pikoctl mcp cancel "+msg.server+"' cancels it)", false)
			return nil
		}
		a.done, a.err = true, errText(msg.err)
		return m.loadStatus()
	}
	if !msg.waited {
		a.res = msg.res
	}
	if msg.res.Status == contracts.AuthPending && !msg.waited {
		ctx, cancel := context.WithCancel(context.Background())
		a.cancel = cancel
		return m.authWait(ctx, msg.server, msg.res.FlowID)
	}
	a.done = true
	if msg.waited {
		a.res.Status, a.res.State, a.res.Grant = msg.res.Status, msg.res.State, msg.res.Grant
	}
	return m.loadStatus()
}
