package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap holds every key the TUI answers to. Which ones apply depends on
// the pane; the help line shows those.
type keyMap struct {
	Up, Down, Top, Bottom key.Binding
	Next, Prev            key.Binding
	Pane                  [6]key.Binding
	Help, Quit, Refresh   key.Binding

	Connect, Disconnect, Reconnect, SignIn, Open key.Binding
	Search, Back                                 key.Binding
	Approve, Reject                              key.Binding
	Edit, Discard, Save                          key.Binding
	CancelFlow                                   key.Binding
	Credentials                                  key.Binding
	Pause                                        key.Binding
	Add, Remove, Logout, Grant, Kinds            key.Binding
	Run                                          key.Binding
}

func newKeyMap() keyMap {
	k := keyMap{
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Top:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:  key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
		Next:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		Prev:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Refresh: key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "refresh")),

		Connect:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "connect")),
		Disconnect:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "disconnect")),
		Reconnect:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reconnect")),
		SignIn:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "OAuth sign-in")),
		Open:        key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Search:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Back:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Approve:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Reject:      key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reject")),
		Edit:        key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit in $EDITOR")),
		Discard:     key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "discard edits")),
		Save:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "save")),
		CancelFlow:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "cancel sign-in")),
		Credentials: key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "credentials")),
		Pause:       key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Add:         key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "add a server")),
		Remove:      key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "remove it")),
		Logout:      key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "log out (OAuth)")),
		Grant:       key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "grant")),
		Kinds:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "kinds")),
		Run:         key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "call it")),
	}
	for i, name := range paneNames {
		n := string(rune('1' + i))
		k.Pane[i] = key.NewBinding(key.WithKeys(n), key.WithHelp(n, name))
	}
	return k
}
