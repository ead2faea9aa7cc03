package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// cancelGrace is how long a cancelled call waits for pikod's verdict
// (sent or not), as pikoctl mcp call does.
const cancelGrace = 2 * time.Second

// runState is one tool call made from the console: its arguments being
// typed, then running with the server's progress, then its outcome. One
// call runs at a time, so every extensions.mcp.progress on this
// connection is its.
type runState struct {
	tool     contracts.CatalogTool
	args     textinput.Model
	running  bool
	cancel   context.CancelFunc
	progress *contracts.ProgressParams
	// cancelled: the owner pressed x while it ran.
	cancelled bool
	res       *contracts.CallResult
	err       string
}

type (
	progressMsg struct{ p contracts.ProgressParams }
	runDoneMsg  struct {
		res       contracts.CallResult
		cancelled bool
		err       error
	}
)

func (m *model) newRun(t contracts.CatalogTool) *runState {
	in := textinput.New()
	in.Prompt = "arguments: "
	in.CharLimit = 100_000
	in.SetValue("{}")
	in.PromptStyle, in.TextStyle, in.PlaceholderStyle = m.st.title, m.st.plain, m.st.dim
	in.Cursor.Style = m.st.plain
	in.Focus()
	return &runState{tool: t, args: in}
}

// runKey handles a key while the call view is open.
func (m *model) runKey(msg tea.KeyMsg) tea.Cmd {
	r := m.run
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	switch {
	case r.running:
		if key := msg.String(); key == "x" && !r.cancelled {
			r.cancelled = true
			r.cancel()
		}
		return nil
	case r.res != nil || r.err != "":
		if msg.Type == tea.KeyEsc || msg.Type == tea.KeyEnter {
			m.run = nil
		}
		return nil
	}
	switch msg.Type {
	case tea.KeyEsc:
		m.run = nil
		m.setFlash("nothing was called", false)
		return nil
	case tea.KeyEnter:
		text := strings.TrimSpace(r.args.Value())
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
			m.setFlash(`the arguments are not one JSON object: type e.g. {"name":"value"}`, true)
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.running, r.cancel = true, cancel
		r.args.Blur()
		m.setFlash("", false)
		return m.callTool(ctx, r.tool, json.RawMessage(text))
	}
	var cmd tea.Cmd
	r.args, cmd = r.args.Update(msg)
	return cmd
}

// callTool makes extensions.mcp.call; cancelling ctx sends
// $/cancelRequest and waits for pikod's verdict.
func (m *model) callTool(ctx context.Context, t contracts.CatalogTool, args json.RawMessage) tea.Cmd {
	tool := t.OriginalName
	if tool == "" {
		tool = t.Name
	}
	return func() tea.Msg {
		var res contracts.CallResult
		err := m.c.CallVerdict(ctx, cancelGrace, contracts.MethodMCPCall,
			contracts.CallParams{Server: t.Server, Tool: tool, Arguments: args}, &res)
		return runDoneMsg{res: res, cancelled: ctx.Err() != nil, err: err}
	}
}

func (m *model) runDone(msg runDoneMsg) tea.Cmd {
	r := m.run
	if r == nil {
		return nil
	}
	r.running = false
	r.cancel()
	switch {
	case errors.Is(msg.err, rpc.ErrNoVerdict):
		r.err = "cancelled, but pikod gave no verdict in time: the call may or may not have been sent; check 'pikoctl mcp actions' and the server before trying again"
	case msg.err != nil && msg.cancelled && contracts.IsNotSent(msg.err):
		r.err = "cancelled: nothing was sent"
	case msg.err != nil:
		r.err = errText(msg.err)
	default:
		res := msg.res
		r.res = &res
	}
	return tea.Batch(m.loadActions(), m.loadStatus())
}

// runBody draws the call view.
func (m *model) runBody() []string {
	r := m.run
	w := max(m.width, 20)
	out := []string{m.st.title.Render("Call " + safe(r.tool.Server+"/"+r.tool.OriginalName)), ""}
	if !r.running && r.res == nil && r.err == "" {
		out = append(out, "Type the arguments as one JSON object; pikod checks them against the input", "schema before anything is sent. A tool that needs approval is prepared, not run.", "")
		out = append(out, r.args.View(), "", "input:")
		out = append(out, strings.Split(strings.TrimRight(schemaProps(r.tool.InputSchema), "\n"), "\n")...)
		return out
	}
	out = append(out, "arguments: "+safe(strings.TrimSpace(r.args.Value())), "")
	if r.running {
		line := "running..."
		if r.cancelled {
			line = "cancelling: waiting for pikod to say whether it was sent..."
		}
		out = append(out, line)
		if p := r.progress; p != nil {
			out = append(out, progressLine(p, w))
			if p.Message != "" {
				out = append(out, strings.Split(ansi.Wrap(safe(p.Message), w, " "), "\n")...)
			}
		}
		return out
	}
	if r.err != "" {
		out = append(out, strings.Split(ansi.Wrap(m.st.bad.Render(r.err), w, " "), "\n")...)
		return out
	}
	res := r.res
	out = append(out, render.CallStatus(*res))
	switch {
	case res.Status == contracts.CallApprovalRequired:
		out = append(out, safe(fmt.Sprintf("nothing was sent: prepared as action %s (3 actions reviews and approves it)", res.ActionID)))
	case res.Error != nil:
		out = append(out, strings.Split(ansi.Wrap(m.st.bad.Render(errText(res.Error)), w, " "), "\n")...)
	}
	if res.Truncated {
		out = append(out, safe("the result is truncated here; the whole is at source "+res.OriginalResultSourceID))
	}
	out = append(out, "")
	out = append(out, strings.Split(strings.TrimRight(ansi.Wrap(contentText(res), w, " "), "\n"), "\n")...)
	return out
}

// progressLine is "[#####.....] 3/10" or "progress 3" without a total.
func progressLine(p *contracts.ProgressParams, w int) string {
	if p.Total <= 0 {
		return fmt.Sprintf("progress %g", p.Progress)
	}
	barW := min(max(w-24, 10), 40)
	filled := int(float64(barW) * min(p.Progress/p.Total, 1))
	return fmt.Sprintf("[%s%s] %g/%g", strings.Repeat("#", filled), strings.Repeat(".", barW-filled), p.Progress, p.Total)
}

// contentText is a result's text content (other kinds are named), then
// its structured content.
func contentText(res *contracts.CallResult) string {
	var parts []string
	var content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
	}
	if json.Unmarshal(res.Content, &content) == nil {
		for _, c := range content {
			if c.Type == "text" {
				parts = append(parts, safeLines(c.Text))
			} else {
				parts = append(parts, safe(fmt.Sprintf("(%s content %s)", c.Type, c.MimeType)))
			}
		}
	}
	if len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		parts = append(parts, "structured:", indentJSON(res.StructuredContent))
	}
	return strings.Join(parts, "\n")
}

// progressed shows a running call's progress.
func (m *model) progressed(msg progressMsg) tea.Cmd {
	if m.run != nil && m.run.running {
		p := msg.p
		m.run.progress = &p
	}
	return nil
}
