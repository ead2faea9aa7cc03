package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/contracts"
)

// requestsKey: the list of server requests, and one request read whole.
// Answering and declining hand the terminal to pikoctl mcp respond, which
// applies the daemon's terminal checks and the approval passphrase.
func (m *model) requestsKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.request != nil {
		r := *m.request
		switch {
		case key.Matches(msg, k.Back):
			m.request, m.requestView = nil, nil
			return nil
		case key.Matches(msg, k.Approve), key.Matches(msg, k.Reject):
			if r.State != contracts.RequestPending {
				m.setFlash(fmt.Sprintf("request %s is %s and cannot be answered again", r.ID, r.State), true)
				return nil
			}
			return m.respond(r.ID, key.Matches(msg, k.Reject))
		}
		vp, cmd := m.requestView.Update(msg)
		m.requestView = &vp
		return cmd
	}
	n := len(m.requests)
	switch {
	case m.reqList.move(msg, k, n):
	case key.Matches(msg, k.Open), key.Matches(msg, k.Approve), key.Matches(msg, k.Reject):
		// Every answer starts from the request read whole.
		if m.reqList.cursor < n {
			return m.loadRequest(m.requests[m.reqList.cursor].ID, false)
		}
	}
	return nil
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
	out = append(out, m.listRows(m.reqList, len(m.requests), h, func(i int) string {
		r := m.requests[i]
		kind := r.Kind
		if r.Mode != "" {
			kind += "/" + r.Mode
		}
		line := fmt.Sprintf("%-20s %-9s %-10s %-16s %s", clipTo(safe(r.ID), 20), safe(r.State), clipTo(safe(r.Server), 10),
			clipTo(safe(kind), 16), safe(firstLine(r.Message)))
		return line
	})...)
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

// requestsLoaded takes the list of server requests.
func (m *model) requestsLoaded(msg requestsMsg) tea.Cmd {
	if msg.err != nil {
		m.reqErr = errText(msg.err)
		return nil
	}
	m.requests, m.reqErr = msg.res.Requests, ""
	m.reqList.cursor = clamp(m.reqList.cursor, len(m.requests))
	return nil
}

// requestLoaded opens one request read whole, or refreshes the one shown.
func (m *model) requestLoaded(msg requestReadMsg) tea.Cmd {
	if msg.refresh && (m.request == nil || m.request.ID != msg.res.ID) {
		return nil // the view was closed or shows another request
	}
	if msg.err != nil {
		m.setFlash("reading the request: "+errText(msg.err), true)
		return nil
	}
	r := msg.res
	if msg.refresh {
		m.request = &r
		m.requestView.SetContent(m.requestText(r))
		return nil
	}
	m.request = &r
	vp := viewport.New(m.width, m.bodyHeight()-2)
	vp.SetContent(m.requestText(r))
	m.requestView = &vp
	return nil
}

// respondEnded says how the hand-off to pikoctl mcp respond ended and
// closes the request.
func (m *model) respondEnded(msg respondedMsg) tea.Cmd {
	verb := "pikoctl mcp respond"
	if msg.decline {
		verb += " --decline"
	}
	if msg.err != nil {
		m.setFlash(fmt.Sprintf("request %s: %s ended with %v (its output was shown above)", msg.id, verb, msg.err), true)
	} else {
		m.setFlash(fmt.Sprintf("request %s answered with %s (its output was shown above)", msg.id, verb), false)
	}
	m.request, m.requestView = nil, nil
	return tea.Batch(m.loadRequests(), m.loadActions())
}
