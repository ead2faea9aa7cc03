package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/pikod/pikod/contracts"
)

// The one-line add (a on the servers pane) reads what 'pikoctl mcp add'
// reads, without the flags that carry values the settings may not hold
// (env, headers: those go to the credentials form the console offers after
// the save), and proposes the new entry like any other settings change.

// addKey handles a key while the one-line add is open.
func (m *model) addKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyCtrlC:
		return tea.Quit
	case tea.KeyEsc:
		m.adding = nil
		m.setFlash("no server added", false)
		return nil
	case tea.KeyEnter:
		srv, err := parseAddLine(m.adding.Value())
		if err != nil {
			m.setFlash(err.Error(), true)
			return nil
		}
		m.adding = nil
		entry, _ := json.Marshal(srv)
		var buf bytes.Buffer
		_ = json.Indent(&buf, entry, "  ", "  ")
		notes := []string{"the entry it adds (nothing is granted; it connects when you press c):", "  " + buf.String()}
		title := "add server " + srv.ID
		return m.propose(title, notes, func(s *contracts.MCPSettings) error {
			if slices.ContainsFunc(s.Servers, func(e contracts.ServerSettings) bool { return e.ID == srv.ID }) {
				return fmt.Errorf("server %q is already configured: change it in the settings (4, then e), or remove it first (X on the servers pane)", srv.ID)
			}
			s.Servers = append(s.Servers, srv)
			return nil
		})
	}
	var cmd tea.Cmd
	*m.adding, cmd = m.adding.Update(msg)
	return cmd
}

func (m *model) newAddInput() *textinput.Model {
	in := textinput.New()
	in.Prompt = "add: "
	in.Placeholder = "NAME COMMAND [ARGS...]  or  NAME https://HOST/PATH"
	in.CharLimit = 4096
	in.PromptStyle, in.TextStyle, in.PlaceholderStyle = m.st.title, m.st.plain, m.st.dim
	in.Cursor.Style = m.st.plain
	in.Focus()
	return &in
}

func (m *model) addBody() []string {
	return []string{
		m.st.title.Render("Add a server (as 'pikoctl mcp add')"), "",
		"  NAME COMMAND [ARGS...]        a local program (stdio), run without a shell",
		"  NAME https://HOST/PATH        a Streamable HTTP endpoint",
		"  --transport sse NAME URL      a legacy HTTP+SSE endpoint",
		"  flags before NAME: --oauth, --allow-private-network, --disabled",
		`Quote a word with spaces ("..." or '...'). Type no credentials here: after`,
		"saving, the console offers the masked credentials form (values go to the vault).",
		"",
		m.adding.View(),
	}
}

// parseAddLine reads the one-line add:
//
//	[--transport stdio|http|sse] [--oauth] [--allow-private-network] [--disabled] NAME (COMMAND [ARGS...] | URL)
//
// A lone word after NAME that starts with https:// or http:// is an http
// endpoint.
func parseAddLine(line string) (contracts.ServerSettings, error) {
	var srv contracts.ServerSettings
	words, err := splitWords(line)
	if err != nil {
		return srv, err
	}
	transport := ""
	var oauth, private, disabled bool
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		w := words[0]
		words = words[1:]
		switch {
		case w == "--":
		case w == "--transport" || w == "-t":
			if len(words) == 0 {
				return srv, errors.New("--transport needs stdio, http or sse")
			}
			transport, words = words[0], words[1:]
		case strings.HasPrefix(w, "--transport="):
			transport = strings.TrimPrefix(w, "--transport=")
		case w == "--oauth":
			oauth = true
		case w == "--allow-private-network":
			private = true
		case w == "--disabled":
			disabled = true
		default:
			return srv, fmt.Errorf("unknown flag %s: the console's add takes --transport, --oauth, --allow-private-network and --disabled before NAME (env and headers: the credentials form, or 'pikoctl mcp add')", clipTo(w, 40))
		}
		if w == "--" {
			break
		}
	}
	if len(words) == 0 {
		return srv, errors.New("type the server's NAME, then its command (or its URL)")
	}
	srv.ID, words = words[0], words[1:]
	if transport == "" {
		transport = contracts.TransportStdio
		if len(words) == 1 && (strings.HasPrefix(words[0], "https://") || strings.HasPrefix(words[0], "http://")) {
			transport = contracts.TransportHTTP
		}
	}
	srv.Transport = transport
	switch transport {
	case contracts.TransportStdio:
		if len(words) == 0 {
			return srv, fmt.Errorf("%s needs the command to run after its name (or a URL for a remote server)", srv.ID)
		}
		if oauth || private {
			return srv, errors.New("--oauth and --allow-private-network are for http and sse servers")
		}
		srv.Command, srv.Args = words[0], words[1:]
		if len(srv.Args) == 0 {
			srv.Args = nil
		}
	case contracts.TransportHTTP, contracts.TransportSSE:
		if len(words) != 1 {
			return srv, fmt.Errorf("a %s server takes one URL after its name, not %d words", transport, len(words))
		}
		srv.URL = words[0]
		srv.AllowPrivateNetwork = private
		if oauth {
			srv.OAuth = &contracts.OAuthSettings{}
		}
	default:
		return srv, fmt.Errorf("--transport must be stdio, http or sse, not %q", clipTo(transport, 20))
	}
	if disabled {
		no := false
		srv.Enabled = &no
	}
	return srv, nil
}

// splitWords splits a line into words at spaces, as a shell would for
// plain words: '...' keeps everything, "..." keeps all but \" and \\, a
// backslash outside quotes keeps the next character. Nothing is expanded.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\':
			escaped, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("a %c quote is not closed", quote)
	}
	if escaped {
		return nil, errors.New("the line ends with a backslash")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
