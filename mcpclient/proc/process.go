package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Process is one supervised stdio child: the leader of its own process
// group. Hand Stdout, Stdin (and nothing for stderr: the Process drains it)
// to transport.NewIO. Every Process must be stopped, even after it exited
// on its own: on Linux the exited leader is kept as a zombie until Stop so
// its group id cannot be reused while pikod may still signal the group.
type Process struct {
	spec    Spec
	records Records
	log     zerolog.Logger

	cmd       *exec.Cmd
	pid       int
	ticks     uint64
	startedAt time.Time
	home      string
	tmp       string // short temporary directory (Spec.ShortTempDir), "" for none
	// mark is the value of MarkVariable in the server's environment.
	mark string

	stdin  *stdinWriter
	stdout *lineCapReader
	outR   *os.File
	errR   *os.File
	tail   *stderrTail

	done       chan struct{} // closed by the owner goroutine when the leader exited
	stderrDone chan struct{} // closed when the stderr drain ends
	stopScan   chan struct{} // closed by Stop to end the escapee scan
	scanDone   chan struct{} // closed when the escapee scan ends

	stopOnce sync.Once
	stopErr  error

	// scanMu serialises escapee scans (the loop, ScanNow and Stop) and
	// guards unmarked.
	scanMu sync.Mutex
	// unmarked caches the processes a scan found without the mark.
	unmarked map[procKey]bool

	// mu guards the fields that follow.
	mu         sync.Mutex
	exitStatus string
	escapees   map[int]uint64 // pid -> start ticks of recorded escapees
	reaped     bool           // the leader was reaped: its pgid may be reused
	closeErr   error
}

// Stdout returns the child's stdout, capped per line: a line over
// MaxLineBytes ends the stream with an error wrapping ErrMessageTooLarge
// (complete lines before it are still delivered).
func (p *Process) Stdout() io.Reader { return p.stdout }

// Stdin returns the child's stdin. Each Write must make progress within
// WriteTimeout; after a timeout every later Write fails too, since a frame
// may have been cut in half.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// StderrTail returns the last StderrRingBytes of stderr, redacted line by
// line (Spec.Redact) as it arrived; still untrusted text, to be sanitized
// (contracts.SafeText) before anyone sees it.
func (p *Process) StderrTail() string { return p.tail.String() }

// PID returns the leader's pid.
func (p *Process) PID() int { return p.pid }

// PGID returns the process group id (the leader's pid).
func (p *Process) PGID() int { return p.pid }

// StartedAt returns when the child was started.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// HomeDir returns the disposable home, removed by Stop.
func (p *Process) HomeDir() string { return p.home }

// Done is closed when the leader has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus describes how the leader ended ("exit status 3",
// "signal: killed"); "" while it runs.
func (p *Process) ExitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitStatus
}

// CloseReason returns why pikod gave up on the connection (an oversized
// stdout line, a stdin write timeout), or nil.
func (p *Process) CloseReason() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closeErr
}

func (p *Process) setCloseReason(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closeErr == nil {
		p.closeErr = err
	}
}

// own waits for the leader to exit and publishes how it ended.
func (p *Process) own() {
	status := awaitExit(p)
	p.mu.Lock()
	p.exitStatus = status
	p.mu.Unlock()
	close(p.done)
	p.log.Info().Int("pid", p.pid).Str("exit_status", status).Msg("server process exited")
}

// describeExit formats an exit like os.ProcessState.String.
func describeExit(exited bool, code int, sig syscall.Signal, core bool) string {
	if exited {
		return fmt.Sprintf("exit status %d", code)
	}
	s := "signal: " + sig.String()
	if core {
		s += " (core dumped)"
	}
	return s
}
