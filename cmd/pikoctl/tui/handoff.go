package tui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/term"
)

// Hand-offs. Decisions that are terminal-only in pikod (approve, respond,
// resume) are not made inside the console: it gives the terminal to the
// pikoctl command that makes them, which asks exactly as it does on its
// own, and the daemon checks that process like any other. The settings
// editor gets the terminal the same way.
//
// Nothing typed around a hand-off is lost. Bubble Tea gives the terminal
// back (raw mode, a new input reader) before the message that says the
// command ended arrives, so keys typed at once used to reach the screen the
// owner had left (the review of the action just approved) and vanish
// there; they are now held while a hand-off is out and replayed, in order,
// once its outcome has been taken in (handedBack). And the "press Enter to
// return" wait reads the terminal raw: in canonical mode the line
// discipline would turn a second Enter into a line feed (ctrl+j) and eat
// erase, kill, ctrl+s and ctrl+c typed ahead.

// maxHeld bounds the keys held while a hand-off is out.
const maxHeld = 64

// handBack marks the message a hand-off's command sends when it ends: its
// arrival ends the hold on keys.
type handBack interface{ handedBack() }

func (approvedMsg) handedBack()  {}
func (respondedMsg) handedBack() {}
func (resumedMsg) handedBack()   {}
func (editedMsg) handedBack()    {}

// resumedMsg: pikoctl mcp resume ended.
type resumedMsg struct {
	server string
	err    error
}

// handOff returns the command that gives the terminal to c and holds
// keys until done's message is taken in.
func (m *model) handOff(c tea.ExecCommand, done tea.ExecCallback) tea.Cmd {
	m.handingOff = true
	return tea.Exec(c, done)
}

// holdKey keeps a key typed while a hand-off is out (beyond maxHeld they
// are dropped: nobody types that much ahead on purpose).
func (m *model) holdKey(k tea.KeyMsg) {
	if len(m.held) < maxHeld {
		m.held = append(m.held, k)
	}
}

// replayHeld hands the held keys to the console in the order typed. One of
// them may start another hand-off: the keys after it are held again.
func (m *model) replayHeld() tea.Cmd {
	held := m.held
	m.held = nil
	var cmds []tea.Cmd
	for i, k := range held {
		if m.handingOff {
			m.held = append(m.held, held[i:]...)
			break
		}
		cmds = append(cmds, m.key(k))
	}
	return tea.Batch(cmds...)
}

// approve hands the terminal to "pikoctl mcp approve ID".
func (m *model) approve(id string) tea.Cmd {
	if m.opts.Approve == nil {
		return func() tea.Msg { return opMsg{err: errors.New("approving is not available here")} }
	}
	return m.handOff(&pausedCmd{cmd: m.opts.Approve(id)}, func(err error) tea.Msg {
		return approvedMsg{id: id, err: err}
	})
}

// respond hands the terminal to "pikoctl mcp respond ID" (--decline).
func (m *model) respond(id string, decline bool) tea.Cmd {
	if m.opts.Respond == nil {
		return func() tea.Msg { return opMsg{err: errors.New("answering requests is not available here")} }
	}
	return m.handOff(&pausedCmd{cmd: m.opts.Respond(id, decline)}, func(err error) tea.Msg {
		return respondedMsg{id: id, decline: decline, err: err}
	})
}

// resume hands the terminal to "pikoctl mcp resume SERVER": resuming is
// terminal-only, so the console never resumes by itself.
func (m *model) resume(server string) tea.Cmd {
	if m.opts.Resume == nil {
		return func() tea.Msg {
			return opMsg{err: errors.New("resuming is not available here: run 'pikoctl mcp resume " + server + "'")}
		}
	}
	return m.handOff(&pausedCmd{cmd: m.opts.Resume(server)}, func(err error) tea.Msg {
		return resumedMsg{server: server, err: err}
	})
}

// pausedCmd runs a command on the terminal the TUI released, then waits
// for Enter so its output can be read before the TUI comes back.
type pausedCmd struct {
	cmd *exec.Cmd
	in  io.Reader
	out io.Writer
}

func (p *pausedCmd) SetStdin(r io.Reader)  { p.in = r }
func (p *pausedCmd) SetStdout(w io.Writer) { p.out = w }
func (p *pausedCmd) SetStderr(io.Writer)   {}

func (p *pausedCmd) Run() error {
	// The command's stdin must be the terminal itself (pikod checks it):
	// the console's input is handed over as it is, never wrapped. When it
	// is not a terminal (a test), the daemon refuses the command's
	// terminal-only call, as it should.
	p.cmd.Stdin = p.in
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	err := p.cmd.Run()
	waitEnter(p.in, p.out)
	return err
}

// waitEnter asks for Enter and reads up to it (or ctrl+c, ctrl+d, the end
// of input). On a terminal it reads raw, from before the question is
// shown, and byte by byte, so what is typed after the Enter stays unread,
// exactly as typed, for the console.
func waitEnter(in io.Reader, out io.Writer) {
	if f, ok := in.(*os.File); ok {
		if fd := int(f.Fd()); term.IsTerminal(fd) {
			if st, err := term.MakeRaw(fd); err == nil {
				defer func() { _ = term.Restore(fd, st) }()
			}
		}
	}
	// Raw output does not return the carriage by itself.
	fmt.Fprint(out, "\r\npress Enter to return to pikoctl tui ")
	var b [1]byte
	for {
		n, err := in.Read(b[:])
		if err != nil {
			return
		}
		if n == 1 {
			switch b[0] {
			case '\r', '\n', 0x03, 0x04:
				return
			}
		}
	}
}
