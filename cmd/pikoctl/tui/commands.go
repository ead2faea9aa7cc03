package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/pikod/pikod/contracts"
)

// call runs one request with callTimeout.
func (m *model) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return m.c.Call(ctx, method, params, result)
}

func (m *model) watch() tea.Cmd {
	return func() tea.Msg {
		var res contracts.WatchResult
		err := m.call(contracts.MethodMCPWatch, contracts.WatchParams{}, &res)
		return watchMsg{res: res, err: err}
	}
}

func (m *model) loadStatus() tea.Cmd {
	return func() tea.Msg {
		var res contracts.StatusResult
		err := m.call(contracts.MethodMCPStatus, contracts.StatusParams{}, &res)
		return statusMsg{res: res, err: err}
	}
}

func (m *model) loadCatalog(server string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.CatalogResult
		err := m.call(contracts.MethodMCPCatalog, contracts.CatalogParams{Server: server}, &res)
		return catalogMsg{server: server, res: res, err: err}
	}
}

// loadCatalogs reads the catalog of every connected server.
func (m *model) loadCatalogs() tea.Cmd {
	var cmds []tea.Cmd
	for _, s := range m.status.Servers {
		if connected(s) {
			cmds = append(cmds, m.loadCatalog(s.ID))
		}
	}
	return tea.Batch(cmds...)
}

func (m *model) loadActions() tea.Cmd {
	return func() tea.Msg {
		var res contracts.ActionsListResult
		err := m.call(contracts.MethodMCPActionsList, contracts.ActionsListParams{Limit: 200}, &res)
		return actionsMsg{res: res, err: err}
	}
}

func (m *model) loadReview(id string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.ActionReview
		err := m.call(contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: id}, &res)
		return reviewMsg{res: res, err: err}
	}
}

func (m *model) loadRequests() tea.Cmd {
	return func() tea.Msg {
		var res contracts.RequestsResult
		err := m.call(contracts.MethodMCPRequests, contracts.RequestsParams{}, &res)
		return requestsMsg{res: res, err: err}
	}
}

func (m *model) loadRequest(id string, refresh bool) tea.Cmd {
	return func() tea.Msg {
		var res contracts.ServerRequestInfo
		err := m.call(contracts.MethodMCPRequestsRead, contracts.RequestReadParams{RequestID: id}, &res)
		return requestReadMsg{res: res, refresh: refresh, err: err}
	}
}

// runSearch ranks the connected servers' tools against q
// (extensions.mcp.search, BM25).
func (m *model) runSearch(q string) tea.Cmd {
	server := m.serverOnly
	return func() tea.Msg {
		var res contracts.SearchResult
		err := m.call(contracts.MethodMCPSearch, contracts.SearchParams{Query: q, Limit: contracts.MaxSearchLimit, Server: server}, &res)
		return searchMsg{query: q, res: res, err: err}
	}
}

func (m *model) loadSettings() tea.Cmd {
	return func() tea.Msg {
		var res contracts.SettingsResult
		err := m.call(contracts.MethodSettings, contracts.SettingsParams{Extension: contracts.ExtensionMCP}, &res)
		return settingsMsg{res: res, err: err}
	}
}

// serverOp runs connect, disconnect or reconnect on one server.
func (m *model) serverOp(op, server string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		p := contracts.ServerParams{Server: server}
		switch op {
		case "disconnect":
			var res contracts.DisconnectResult
			if err := m.c.Call(ctx, contracts.MethodMCPDisconnect, p, &res); err != nil {
				return opMsg{err: fmt.Errorf("disconnecting %s: %w", server, err)}
			}
			if !res.WasConnected {
				return opMsg{text: server + " was not connected"}
			}
			return opMsg{text: server + " disconnected"}
		case "reconnect":
			var res contracts.DisconnectResult
			if err := m.c.Call(ctx, contracts.MethodMCPDisconnect, p, &res); err != nil {
				return opMsg{err: fmt.Errorf("disconnecting %s: %w", server, err)}
			}
		}
		var res contracts.ConnectResult
		if err := m.c.Call(ctx, contracts.MethodMCPConnect, p, &res); err != nil {
			return opMsg{err: fmt.Errorf("connecting %s: %w", server, err)}
		}
		s := res.Server
		text := fmt.Sprintf("%s %s", server, s.State)
		if s.ProtocolVersion != "" {
			text += fmt.Sprintf(" (protocol %s, %d tools)", s.ProtocolVersion, s.ToolCount)
		}
		return opMsg{text: text}
	}
}

// pause holds every new call to server for the owner
// (extensions.mcp.pause: anyone may pause; resuming is terminal-only).
func (m *model) pause(server string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.PauseResult
		if err := m.call(contracts.MethodMCPPause, contracts.PauseParams{Server: server}, &res); err != nil {
			return opMsg{err: fmt.Errorf("pausing %s: %w", server, err)}
		}
		what := "paused"
		if !res.Changed {
			what = "already paused"
		}
		return opMsg{text: fmt.Sprintf("%s %s: every new call to it is held as an action for you; p resumes it (you confirm at the terminal)", server, what)}
	}
}

// authStart starts an OAuth sign-in.
func (m *model) authStart(server string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.AuthResult
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		err := m.c.Call(ctx, contracts.MethodMCPAuth, contracts.AuthParams{Server: server, Op: contracts.AuthOpStart}, &res)
		return authMsg{server: server, res: res, err: err}
	}
}

// authWait waits for a pending sign-in to end (or ctx: the owner stopped
// waiting).
func (m *model) authWait(ctx context.Context, server, flow string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.AuthResult
		err := m.c.Call(ctx, contracts.MethodMCPAuth, contracts.AuthParams{Server: server, Op: contracts.AuthOpWait, FlowID: flow}, &res)
		return authMsg{server: server, res: res, waited: true, err: err}
	}
}

func (m *model) authCancel(server string) tea.Cmd {
	return func() tea.Msg {
		var res contracts.AuthCancelResult
		if err := m.call(contracts.MethodMCPAuthCancel, contracts.ServerParams{Server: server}, &res); err != nil {
			return opMsg{err: err}
		}
		return opMsg{text: server + ": " + res.Message}
	}
}

func (m *model) reject(r contracts.ActionReview) tea.Cmd {
	return func() tea.Msg {
		var res contracts.CallResult
		err := m.call(contracts.MethodMCPActionsApprove, contracts.ApproveParams{ActionID: r.ID, Digest: r.Digest, Decision: contracts.DecisionReject}, &res)
		if err != nil {
			return opMsg{err: fmt.Errorf("rejecting %s: %w", r.ID, err)}
		}
		return opMsg{text: fmt.Sprintf("action %s rejected: nothing was sent", r.ID)}
	}
}

// configure sends the draft settings with the revision they were edited
// from, as a dry run first (to show what the change widens) or for real.
func (m *model) configure(text []byte, rev uint64, dryRun bool) tea.Cmd {
	return func() tea.Msg {
		var res contracts.ConfigureResult
		err := m.call(contracts.MethodConfigure, contracts.ConfigureParams{
			Extension: contracts.ExtensionMCP, Settings: json.RawMessage(text), ExpectRevision: rev, DryRun: dryRun,
		}, &res)
		return configureMsg{res: res, dryRun: dryRun, err: err}
	}
}

// edit opens the settings text in the editor; the result comes back as an
// editedMsg with the file's new content.
func (m *model) edit(text []byte) tea.Cmd {
	f, err := os.CreateTemp("", "pikod-settings-*.json")
	if err != nil {
		return func() tea.Msg { return editedMsg{err: fmt.Errorf("creating a file to edit: %w", err)} }
	}
	path := f.Name()
	_, werr := f.Write(text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return func() tea.Msg { return editedMsg{err: fmt.Errorf("writing %s: %w", path, werr)} }
	}
	editor := strings.Fields(m.opts.Editor)
	if len(editor) == 0 {
		editor = []string{"vi"}
	}
	cmd := exec.Command(editor[0], append(editor[1:], path)...)
	m.handingOff = true
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		defer os.Remove(path)
		if err != nil {
			return editedMsg{err: fmt.Errorf("the editor (%s) failed: %w; set $EDITOR to one that works", strings.Join(editor, " "), err)}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return editedMsg{err: fmt.Errorf("reading the edited settings: %w", err)}
		}
		return editedMsg{text: b}
	})
}
