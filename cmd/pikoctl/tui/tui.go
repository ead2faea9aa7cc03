package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// Options are what pikoctl gives the TUI.
type Options struct {
	// Client is the connection to pikod the TUI uses for every request and
	// for the events it follows (extensions.mcp.watch). Run closes it.
	Client *rpc.Client
	// Instance names the daemon instance, for the header.
	Instance string
	// Approve returns the command that approves one action at this
	// terminal: "pikoctl mcp approve ID" for the same daemon. The TUI hands
	// it the terminal; it asks for the digest's last characters and the
	// passphrase itself.
	Approve func(actionID string) *exec.Cmd
	// Respond returns the command that answers one server request at this
	// terminal: "pikoctl mcp respond ID" (with --decline when decline is
	// set) for the same daemon. The TUI hands it the terminal; it asks the
	// answer (and the passphrase) itself.
	Respond func(requestID string, decline bool) *exec.Cmd
	// Resume returns the command that resumes one paused server at this
	// terminal: "pikoctl mcp resume SERVER" for the same daemon. The TUI
	// hands it the terminal; it asks for the server id (and the
	// passphrase) itself.
	Resume func(server string) *exec.Cmd
	// Editor is the command line of the settings editor ($VISUAL or
	// $EDITOR); empty means vi.
	Editor string
	// NoColor turns every colour off (NO_COLOR is set).
	NoColor bool
	// Input and Output are the terminal; nil means stdin and stdout.
	Input  io.Reader
	Output io.Writer
}

// Panes, in the order of their number keys.
const (
	paneServers = iota
	paneCatalog
	paneActions
	paneSettings
	paneLog
	paneRequests
)

var paneNames = []string{"servers", "catalog", "actions", "settings", "log", "requests"}

// callTimeout bounds every request but a connect, a sign-in wait and an
// approval (those take as long as the server or the person needs).
const callTimeout = 30 * time.Second

// connectTimeout bounds connect and reconnect.
const connectTimeout = 3 * time.Minute

// refreshEvery is how often status is read again without an event (ages,
// counts that no event announces).
const refreshEvery = 5 * time.Second

// maxLogLines is how many event lines the log pane keeps.
const maxLogLines = 500

// Run shows the TUI until the owner quits or ctx ends.
func Run(ctx context.Context, o Options) error {
	defer o.Client.Close()
	m := newModel(o.Client, o)
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx)}
	if o.Input != nil {
		opts = append(opts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		opts = append(opts, tea.WithOutput(o.Output))
	}
	p := tea.NewProgram(m, opts...)

	// Events go through a bounded queue so a busy screen never stalls the
	// connection's reader; what does not fit is counted and reported.
	feed := make(chan contracts.EventParams, 256)
	quit := make(chan struct{})
	var dropped sync.Mutex
	lost := 0
	// Progress of the console's own call: lossy (a newer one replaces
	// what is dropped).
	progress := make(chan contracts.ProgressParams, 16)
	o.Client.OnNotification(func(method string, raw json.RawMessage) {
		if method == contracts.NotifyMCPProgress {
			var pp contracts.ProgressParams
			if json.Unmarshal(raw, &pp) == nil {
				select {
				case progress <- pp:
				default:
				}
			}
			return
		}
		if method != contracts.NotifyMCPEvent {
			return
		}
		var ev contracts.EventParams
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		select {
		case feed <- ev:
		default:
			dropped.Lock()
			lost++
			dropped.Unlock()
		}
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case ev := <-feed:
				dropped.Lock()
				n := lost
				lost = 0
				dropped.Unlock()
				p.Send(eventMsg{ev: ev, droppedHere: n})
			case pp := <-progress:
				p.Send(progressMsg{p: pp})
			case <-o.Client.Done():
				p.Send(lostMsg{})
				<-quit
				return
			case <-quit:
				return
			}
		}
	}()
	_, err := p.Run()
	close(quit)
	wg.Wait()
	m.stopWaiting()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// model is the TUI's state. Every request runs in a tea.Cmd; Update never
// waits on the daemon.
type model struct {
	c    *rpc.Client
	opts Options
	keys keyMap
	st   styles

	width, height int
	pane          int
	showHelp      bool
	// flash is the last outcome line (an operation's result or error).
	flash    string
	flashBad bool
	lost     bool
	// handingOff is set while another program has (or is about to get,
	// or just gave back) the terminal, until its outcome arrives; held are
	// the keys typed meanwhile, replayed then.
	handingOff bool
	held       []tea.KeyMsg

	status    contracts.StatusResult
	statusErr string
	loaded    bool
	srvCursor int

	catalogs   map[string]contracts.CatalogResult
	catErr     map[string]string
	catCursor  int
	search     textinput.Model
	searching  bool
	serverOnly string
	schema     *viewport.Model
	schemaOf   string

	actions    []contracts.ActionSummary
	actCursor  int
	review     *contracts.ActionReview
	reviewView *viewport.Model

	requests    []contracts.ServerRequestInfo
	reqCursor   int
	reqErr      string
	request     *contracts.ServerRequestInfo
	requestView *viewport.Model

	// hits are the ranked search results (extensions.mcp.search) for
	// hitsFor, the query they answer; searchErr is why the last search
	// failed.
	hits      *contracts.SearchResult
	hitsFor   string
	searchErr string

	settings     contracts.SettingsResult
	settingsView viewport.Model
	// draft is the owner's edited settings text while it is not saved; it
	// is kept across failed saves so nothing typed is lost.
	draft []byte
	// base is the revision the draft was edited from: saving expects it,
	// so a change made meanwhile is refused, not overwritten.
	base     uint64
	problems []string
	dryRun   *contracts.ConfigureResult

	auth  *authState
	creds *credForm
	run   *runState
	// change is a settings change proposed from a pane, on screen until
	// saved or left; confirm a yes/no question; grantFor the tool whose
	// grant chooser is open; adding the one-line add.
	change   *changeState
	confirm  *confirmState
	grantFor *contracts.CatalogTool
	adding   *textinput.Model
	// offerCreds are servers a save added whose credentials the console
	// offers to enter, once status and settings reach offerRev.
	offerCreds []string
	offerRev   uint64
	// schemaTool is the tool the schema view shows (r calls it);
	// schemaKind the kind of catalog row it shows.
	schemaTool contracts.CatalogTool
	schemaKind string
	// catKind narrows the catalog pane to one kind ("" shows all).
	catKind    string
	logLines   []string
	logView    viewport.Model
	logFollow  bool
	lastSeq    uint64
	watchError string
}

// authState is an OAuth sign-in the TUI started and waits for.
type authState struct {
	server string
	res    contracts.AuthResult
	done   bool
	err    string
	cancel context.CancelFunc
}

func newModel(c *rpc.Client, o Options) *model {
	si := textinput.New()
	si.Prompt = "/ "
	si.Placeholder = "name or description"
	si.CharLimit = 200
	st := newStyles(colorProfile(o))
	si.PromptStyle, si.TextStyle, si.PlaceholderStyle = st.title, st.plain, st.dim
	si.Cursor.Style = st.plain
	m := &model{
		c:            c,
		opts:         o,
		keys:         newKeyMap(),
		st:           st,
		width:        80,
		height:       24,
		catalogs:     map[string]contracts.CatalogResult{},
		catErr:       map[string]string{},
		search:       si,
		settingsView: viewport.New(80, 10),
		logView:      viewport.New(80, 10),
		logFollow:    true,
	}
	return m
}

// colorProfile is Ascii (no colour, no attributes) with NoColor, else
// what the output terminal supports.
func colorProfile(o Options) termenv.Profile {
	if o.NoColor {
		return termenv.Ascii
	}
	out := o.Output
	if out == nil {
		out = os.Stdout
	}
	return termenv.NewOutput(out).EnvColorProfile()
}

// stopWaiting ends a sign-in wait still running when the TUI ends (the
// sign-in itself stays pending in the daemon).
func (m *model) stopWaiting() {
	if m.auth != nil && m.auth.cancel != nil {
		m.auth.cancel()
	}
	if m.run != nil && m.run.cancel != nil {
		m.run.cancel()
	}
}

// Messages.
type (
	statusMsg struct {
		res contracts.StatusResult
		err error
	}
	catalogMsg struct {
		server string
		res    contracts.CatalogResult
		err    error
	}
	actionsMsg struct {
		res contracts.ActionsListResult
		err error
	}
	reviewMsg struct {
		res contracts.ActionReview
		err error
	}
	settingsMsg struct {
		res contracts.SettingsResult
		err error
	}
	// editedMsg: the editor ended; text is what the file holds.
	editedMsg struct {
		text []byte
		err  error
	}
	configureMsg struct {
		res    contracts.ConfigureResult
		dryRun bool
		err    error
	}
	opMsg struct {
		text string
		err  error
	}
	authMsg struct {
		server string
		res    contracts.AuthResult
		waited bool
		err    error
	}
	approvedMsg struct {
		id  string
		err error
	}
	watchMsg struct {
		res contracts.WatchResult
		err error
	}
	eventMsg struct {
		ev          contracts.EventParams
		droppedHere int
	}
	requestsMsg struct {
		res contracts.RequestsResult
		err error
	}
	// requestReadMsg: a request read whole; refresh marks a re-read of
	// the one on screen (after an event), which must not reopen a view
	// the owner closed meanwhile.
	requestReadMsg struct {
		res     contracts.ServerRequestInfo
		refresh bool
		err     error
	}
	respondedMsg struct {
		id      string
		decline bool
		err     error
	}
	searchMsg struct {
		query string
		res   contracts.SearchResult
		err   error
	}
	lostMsg struct{}
	tickMsg struct{}
)

func (m *model) Init() tea.Cmd {
	return tea.Batch(m.watch(), m.loadStatus(), m.loadSettings(), m.loadActions(), m.loadRequests(), tick())
}

func tick() tea.Cmd {
	return tea.Tick(refreshEvery, func(time.Time) tea.Msg { return tickMsg{} })
}

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

func (m *model) setFlash(text string, bad bool) {
	m.flash, m.flashBad = safe(text), bad
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		// A line feed is Enter, as in a shell: it is what a terminal in
		// canonical mode makes of one typed during a hand-off.
		if msg.Type == tea.KeyCtrlJ {
			msg.Type = tea.KeyEnter
		}
		if m.handingOff {
			m.holdKey(msg)
			return m, nil
		}
		return m, tea.Batch(m.key(msg), m.nextOffer())
	case handBack:
		m.handingOff = false
		_, cmd := m.update(msg)
		return m, tea.Batch(cmd, m.replayHeld(), m.nextOffer())
	}
	_, cmd := m.update(msg)
	return m, tea.Batch(cmd, m.nextOffer())
}

// update handles every message but a key.
func (m *model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tickMsg:
		cmds := []tea.Cmd{tick()}
		if !m.lost {
			cmds = append(cmds, m.loadStatus())
			if m.pane == paneActions {
				cmds = append(cmds, m.loadActions())
			}
			if m.pane == paneRequests {
				cmds = append(cmds, m.loadRequests())
			}
		}
		return m, tea.Batch(cmds...)
	case lostMsg:
		m.lost = true
		m.setFlash("the connection to pikod ended (it stopped?): quit and start pikoctl tui again", true)
		return m, nil
	case watchMsg:
		if msg.err != nil {
			m.watchError = "events are not followed: " + errText(msg.err)
		} else {
			m.lastSeq = msg.res.Seq
		}
		return m, nil
	case eventMsg:
		return m, m.event(msg)
	case statusMsg:
		if msg.err != nil {
			m.statusErr = errText(msg.err)
			return m, nil
		}
		prev := m.status
		m.status, m.statusErr, m.loaded = msg.res, "", true
		m.srvCursor = clamp(m.srvCursor, len(m.status.Servers))
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
		return m, tea.Batch(cmds...)
	case catalogMsg:
		if msg.err != nil {
			m.catErr[msg.server] = errText(msg.err)
			delete(m.catalogs, msg.server)
		} else {
			delete(m.catErr, msg.server)
			m.catalogs[msg.server] = msg.res
		}
		m.catCursor = clamp(m.catCursor, len(m.rows()))
		return m, nil
	case actionsMsg:
		if msg.err != nil {
			m.setFlash("listing actions: "+errText(msg.err), true)
			return m, nil
		}
		m.actions = msg.res.Actions
		m.actCursor = clamp(m.actCursor, len(m.actions))
		return m, nil
	case reviewMsg:
		if msg.err != nil {
			m.setFlash("reviewing: "+errText(msg.err), true)
			return m, nil
		}
		r := msg.res
		m.review = &r
		vp := viewport.New(m.width, m.bodyHeight())
		vp.SetContent(m.reviewText(r))
		m.reviewView = &vp
		return m, nil
	case requestsMsg:
		if msg.err != nil {
			m.reqErr = errText(msg.err)
			return m, nil
		}
		m.requests, m.reqErr = msg.res.Requests, ""
		m.reqCursor = clamp(m.reqCursor, len(m.requests))
		return m, nil
	case requestReadMsg:
		if msg.refresh && (m.request == nil || m.request.ID != msg.res.ID) {
			return m, nil // the view was closed or shows another request
		}
		if msg.err != nil {
			m.setFlash("reading the request: "+errText(msg.err), true)
			return m, nil
		}
		r := msg.res
		if msg.refresh {
			m.request = &r
			m.requestView.SetContent(m.requestText(r))
			return m, nil
		}
		m.request = &r
		vp := viewport.New(m.width, m.bodyHeight()-2)
		vp.SetContent(m.requestText(r))
		m.requestView = &vp
		return m, nil
	case respondedMsg:
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
		return m, tea.Batch(m.loadRequests(), m.loadActions())
	case searchMsg:
		if msg.query != strings.TrimSpace(m.search.Value()) {
			return m, nil // an answer to an older query
		}
		if msg.err != nil {
			m.hits, m.hitsFor, m.searchErr = nil, msg.query, "searching: "+errText(msg.err)
			return m, nil
		}
		res := msg.res
		m.hits, m.hitsFor, m.searchErr = &res, msg.query, ""
		m.catCursor = clamp(m.catCursor, len(res.Results))
		return m, nil
	case settingsMsg:
		if msg.err != nil {
			m.setFlash("reading settings: "+errText(msg.err), true)
			return m, nil
		}
		m.settings = msg.res
		m.refreshSettingsView()
		return m, nil
	case editedMsg:
		if msg.err != nil {
			m.setFlash(errText(msg.err), true)
			return m, nil
		}
		if m.draft == nil && string(msg.text) == string(m.settingsText()) {
			m.setFlash("settings unchanged: nothing to save", false)
			return m, nil
		}
		m.draft, m.problems, m.dryRun = msg.text, nil, nil
		m.refreshSettingsView()
		if !json.Valid(msg.text) {
			m.problems = []string{jsonProblem(msg.text)}
			m.refreshSettingsView()
			return m, nil
		}
		m.setFlash("checking the edited settings...", false)
		return m, m.configure(m.draft, m.base, true)
	case configureMsg:
		return m, m.configured(msg)
	case proposedMsg:
		return m, m.proposed(msg)
	case changeSavedMsg:
		return m, m.changeSaved(msg)
	case opMsg:
		if msg.err != nil {
			m.setFlash(errText(msg.err), true)
		} else {
			m.setFlash(msg.text, false)
		}
		return m, tea.Batch(m.loadStatus(), m.loadActions())
	case authMsg:
		return m, m.authed(msg)
	case secretMsg:
		return m, m.secretStored(msg)
	case progressMsg:
		if m.run != nil && m.run.running {
			p := msg.p
			m.run.progress = &p
		}
		return m, nil
	case runDoneMsg:
		return m, m.runDone(msg)
	case resumedMsg:
		if msg.err != nil {
			m.setFlash(fmt.Sprintf("%s stays paused (pikoctl mcp resume: %v)", msg.server, msg.err), true)
		} else {
			m.setFlash(fmt.Sprintf("%s resumed: calls run under their grants again (held actions stay in 3 actions)", msg.server), false)
		}
		return m, tea.Batch(m.loadStatus(), m.loadActions())
	case approvedMsg:
		if msg.err != nil {
			m.setFlash(fmt.Sprintf("action %s: pikoctl mcp approve ended with %v (its output was shown above)", msg.id, msg.err), true)
		} else {
			m.setFlash(fmt.Sprintf("action %s approved and run (its result was shown above)", msg.id), false)
		}
		m.review, m.reviewView = nil, nil
		return m, tea.Batch(m.loadActions(), m.loadStatus())
	}
	return m, nil
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

// key handles one key press.
func (m *model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.run != nil {
		return m.runKey(msg)
	}
	if m.creds != nil {
		return m.credKey(msg)
	}
	switch {
	case m.change != nil:
		return m.changeKey(msg)
	case m.confirm != nil:
		return m.confirmKey(msg)
	case m.grantFor != nil:
		return m.grantKey(msg)
	case m.adding != nil:
		return m.addKey(msg)
	}
	// Text entry takes every key but the ones that end it.
	if m.searching {
		switch msg.Type {
		case tea.KeyEnter:
			m.searching = false
			m.search.Blur()
			return nil
		case tea.KeyEsc:
			m.searching = false
			m.search.Blur()
			m.clearSearch()
			return nil
		case tea.KeyCtrlC:
			return tea.Quit
		}
		before := m.search.Value()
		var cmd tea.Cmd
		m.search, cmd = m.search.Update(msg)
		if q := strings.TrimSpace(m.search.Value()); m.search.Value() != before && q != "" {
			m.catCursor = 0
			return tea.Batch(cmd, m.runSearch(q))
		}
		if strings.TrimSpace(m.search.Value()) == "" {
			m.hits, m.hitsFor, m.searchErr = nil, "", ""
		}
		return cmd
	}
	if m.auth != nil {
		switch {
		case key.Matches(msg, k.Quit):
			return tea.Quit
		case key.Matches(msg, k.Help):
			m.showHelp = !m.showHelp
			m.layout()
		case key.Matches(msg, k.CancelFlow) && !m.auth.done:
			m.stopWaiting()
			server := m.auth.server
			m.auth = nil
			return m.authCancel(server)
		case key.Matches(msg, k.Back), msg.Type == tea.KeyEnter:
			m.stopWaiting()
			if m.auth != nil && m.auth.done {
				m.auth = nil
			}
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		m.layout()
		return nil
	case key.Matches(msg, k.Next):
		return m.setPane((m.pane + 1) % len(paneNames))
	case key.Matches(msg, k.Prev):
		return m.setPane((m.pane + len(paneNames) - 1) % len(paneNames))
	case key.Matches(msg, k.Refresh):
		cmds := []tea.Cmd{m.loadStatus(), m.loadActions(), m.loadSettings(), m.loadCatalogs(), m.loadRequests()}
		if q := strings.TrimSpace(m.search.Value()); q != "" {
			cmds = append(cmds, m.runSearch(q))
		}
		return tea.Batch(cmds...)
	}
	for i, b := range k.Pane {
		if key.Matches(msg, b) {
			return m.setPane(i)
		}
	}
	switch m.pane {
	case paneServers:
		return m.serversKey(msg)
	case paneCatalog:
		return m.catalogKey(msg)
	case paneActions:
		return m.actionsKey(msg)
	case paneSettings:
		return m.settingsKey(msg)
	case paneRequests:
		return m.requestsKey(msg)
	case paneLog:
		switch {
		case key.Matches(msg, k.Bottom):
			m.logFollow = true
			m.logView.GotoBottom()
		case key.Matches(msg, k.Top):
			m.logFollow = false
			m.logView.GotoTop()
		default:
			var cmd tea.Cmd
			m.logView, cmd = m.logView.Update(msg)
			m.logFollow = m.logView.AtBottom()
			return cmd
		}
	}
	return nil
}

func (m *model) setPane(p int) tea.Cmd {
	m.pane = p
	switch p {
	case paneActions:
		return m.loadActions()
	case paneRequests:
		return m.loadRequests()
	case paneSettings:
		if m.draft == nil {
			return m.loadSettings()
		}
	case paneCatalog:
		return m.loadCatalogs()
	}
	return nil
}

func (m *model) selectedServer() (contracts.ServerStatus, bool) {
	if m.srvCursor < 0 || m.srvCursor >= len(m.status.Servers) {
		return contracts.ServerStatus{}, false
	}
	return m.status.Servers[m.srvCursor], true
}

func (m *model) serversKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	n := len(m.status.Servers)
	switch {
	case moveCursor(msg, k, &m.srvCursor, n):
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

// tools is every connected server's tools (or one server's), by server
// and name.
func (m *model) tools() []contracts.CatalogTool {
	servers := make([]string, 0, len(m.catalogs))
	for id := range m.catalogs {
		if m.serverOnly == "" || id == m.serverOnly {
			servers = append(servers, id)
		}
	}
	sort.Strings(servers)
	var out []contracts.CatalogTool
	for _, id := range servers {
		for _, t := range m.catalogs[id].Tools {
			if t.Server == "" {
				t.Server = id
			}
			out = append(out, t)
		}
	}
	return out
}

// listed is the catalog pane's list: every tool while the search is
// empty, else the search's ranked hits with their BM25 scores (nil until
// the answer to the current query arrives).
func (m *model) listed() ([]contracts.CatalogTool, []float64) {
	q := strings.TrimSpace(m.search.Value())
	if q == "" {
		return m.tools(), nil
	}
	if m.hits == nil || m.hitsFor != q {
		return nil, nil
	}
	tools := make([]contracts.CatalogTool, 0, len(m.hits.Results))
	scores := make([]float64, 0, len(m.hits.Results))
	for _, h := range m.hits.Results {
		tools = append(tools, m.hitTool(h))
		scores = append(scores, h.Score)
	}
	return tools, scores
}

// hitTool is the catalog entry of a search hit (for its schema), or what
// the hit itself says when the catalog was not read yet.
func (m *model) hitTool(h contracts.SearchHit) contracts.CatalogTool {
	for _, t := range m.catalogs[h.Server].Tools {
		if t.Name == h.Name || (t.OriginalName == h.Tool && h.Tool != "") {
			if t.Server == "" {
				t.Server = h.Server
			}
			return t
		}
	}
	grant := h.Grant
	return contracts.CatalogTool{Server: h.Server, Name: h.Name, OriginalName: h.Tool, Title: h.Title,
		Description: h.Description, Grant: grant, Selected: grant != "not_selected"}
}

// clearSearch empties the search and its results.
func (m *model) clearSearch() {
	m.search.SetValue("")
	m.hits, m.hitsFor, m.searchErr = nil, "", ""
	m.catCursor = 0
}

func (m *model) catalogKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.schema != nil {
		isTool := m.schemaKind == kindTool
		switch {
		case key.Matches(msg, k.Back) || msg.Type == tea.KeyEnter:
			m.schema = nil
			return nil
		case key.Matches(msg, k.Run) && isTool:
			m.run = m.newRun(m.schemaTool)
			return textinput.Blink
		case key.Matches(msg, k.Grant) && isTool:
			t := m.schemaTool
			m.grantFor = &t
			m.setFlash("", false)
			return nil
		}
		vp, cmd := m.schema.Update(msg)
		m.schema = &vp
		return cmd
	}
	rows := m.rows()
	n := len(rows)
	switch {
	case moveCursor(msg, k, &m.catCursor, n):
	case key.Matches(msg, k.Search):
		m.searching = true
		return m.search.Focus()
	case key.Matches(msg, k.Back):
		m.clearSearch()
		m.serverOnly, m.catKind = "", ""
	case key.Matches(msg, k.Kinds):
		i := slices.Index(catKinds, m.catKind)
		m.catKind = catKinds[(i+1)%len(catKinds)]
		m.catCursor = 0
	case key.Matches(msg, k.Grant):
		if m.catCursor < n && rows[m.catCursor].kind == kindTool {
			t := rows[m.catCursor].tool
			m.grantFor = &t
			m.setFlash("", false)
		} else if m.catCursor < n {
			m.setFlash("grants are for tools: "+rows[m.catCursor].kind+"s are read, not called", true)
		}
	case key.Matches(msg, k.Open):
		if m.catCursor < n {
			r := rows[m.catCursor]
			vp := viewport.New(m.width, m.bodyHeight())
			if r.kind == kindTool {
				vp.SetContent(m.schemaText(r.tool))
				m.schemaOf, m.schemaTool = r.tool.Server+"/"+r.tool.Name, r.tool
			} else {
				vp.SetContent(m.itemText(r))
				m.schemaOf, m.schemaTool = r.server+"/"+r.item.Name+r.item.URI, contracts.CatalogTool{}
			}
			m.schema, m.schemaKind = &vp, r.kind
		}
	}
	return nil
}

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
	case moveCursor(msg, k, &m.actCursor, n):
	case key.Matches(msg, k.Open), key.Matches(msg, k.Approve), key.Matches(msg, k.Reject):
		// Every decision starts from the review, which shows what
		// approving sends.
		if m.actCursor < n {
			return m.loadReview(m.actions[m.actCursor].ID)
		}
	}
	return nil
}

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
	case moveCursor(msg, k, &m.reqCursor, n):
	case key.Matches(msg, k.Open), key.Matches(msg, k.Approve), key.Matches(msg, k.Reject):
		// Every answer starts from the request read whole.
		if m.reqCursor < n {
			return m.loadRequest(m.requests[m.reqCursor].ID, false)
		}
	}
	return nil
}

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

// connected reports whether the server's connection is up, paused or not
// (a pause holds calls; the connection and its catalog stay).
func connected(s contracts.ServerStatus) bool {
	return s.State == contracts.StateConnected || (s.State == contracts.StatePaused && s.ConnectionState == contracts.StateConnected)
}

func findServer(st contracts.StatusResult, id string) (contracts.ServerStatus, bool) {
	for _, s := range st.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return contracts.ServerStatus{}, false
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

// errText is an error as one safe line, with the daemon's hint.
func errText(err error) string {
	var ce *contracts.Error
	if errors.As(err, &ce) {
		s := ce.Message
		if ce.Data != nil && ce.Data.Hint != "" {
			s += " (hint: " + ce.Data.Hint + ")"
		}
		return safe(s)
	}
	return safe(err.Error())
}

func safe(s string) string      { return contracts.SafeText(s, contracts.OneLine, 0) }
func safeLines(s string) string { return contracts.SafeText(s, contracts.Lines, 0) }

// styles are the few styles the screen uses; with NoColor they are plain
// (the cursor mark and words carry the meaning, never colour alone).
type styles struct {
	plain, title, tab, activeTab, sel, dim, bad, good, warn, help lipgloss.Style
}

func newStyles(p termenv.Profile) styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	return styles{
		plain:     r.NewStyle(),
		title:     r.NewStyle().Bold(true),
		tab:       r.NewStyle().Foreground(lipgloss.Color("245")),
		activeTab: r.NewStyle().Bold(true).Foreground(lipgloss.Color("39")),
		sel:       r.NewStyle().Bold(true).Foreground(lipgloss.Color("39")),
		dim:       r.NewStyle().Foreground(lipgloss.Color("245")),
		bad:       r.NewStyle().Foreground(lipgloss.Color("196")),
		good:      r.NewStyle().Foreground(lipgloss.Color("34")),
		warn:      r.NewStyle().Foreground(lipgloss.Color("214")),
		help:      r.NewStyle().Foreground(lipgloss.Color("245")),
	}
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
