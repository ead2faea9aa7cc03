package tui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
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
	srvList   listView

	catalogs   map[string]contracts.CatalogResult
	catErr     map[string]string
	catList    listView
	search     textinput.Model
	searching  bool
	serverOnly string
	schema     *viewport.Model
	schemaOf   string

	actions    []contracts.ActionSummary
	actList    listView
	review     *contracts.ActionReview
	reviewView *viewport.Model

	requests    []contracts.ServerRequestInfo
	reqList     listView
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
		return m, m.statusLoaded(msg)
	case catalogMsg:
		return m, m.catalogLoaded(msg)
	case actionsMsg:
		return m, m.actionsLoaded(msg)
	case reviewMsg:
		return m, m.reviewLoaded(msg)
	case requestsMsg:
		return m, m.requestsLoaded(msg)
	case requestReadMsg:
		return m, m.requestLoaded(msg)
	case respondedMsg:
		return m, m.respondEnded(msg)
	case searchMsg:
		return m, m.searched(msg)
	case settingsMsg:
		return m, m.settingsLoaded(msg)
	case editedMsg:
		return m, m.edited(msg)
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
		return m, m.progressed(msg)
	case runDoneMsg:
		return m, m.runDone(msg)
	case resumedMsg:
		return m, m.resumeEnded(msg)
	case approvedMsg:
		return m, m.approveEnded(msg)
	}
	return m, nil
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
			m.catList.cursor = 0
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
