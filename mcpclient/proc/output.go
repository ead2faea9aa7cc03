package proc

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/pikod/pikod/contracts"
)

// ErrMessageTooLarge is wrapped by the error Process.Stdout returns when the
// server writes a line longer than MaxLineBytes. It is in the
// ErrResourceExhausted class.
var ErrMessageTooLarge = fmt.Errorf("message over maxBytes: %w", contracts.ErrResourceExhausted)

func (p *Process) drainStderr() {
	defer close(p.stderrDone)
	// A small buffer: stderr comes a line at a time, and io.Copy's 32 KiB
	// per server add up with many servers. (The struct hides the file's
	// WriteTo, which would bring its own.)
	_, _ = io.CopyBuffer(p.tail, struct{ io.Reader }{p.errR}, make([]byte, 4<<10))
	_ = p.tail.Close()
}

// lineCapReader passes stdout through while counting bytes since the last
// newline.
type lineCapReader struct {
	p   *Process
	f   *os.File
	max int

	// mu guards the fields that follow (mcp-go reads from one goroutine,
	// but nothing forbids two).
	mu   sync.Mutex
	line int
	err  error
}

func (r *lineCapReader) Read(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.f.Read(b)
	for i := 0; i < n; i++ {
		if b[i] == '\n' {
			r.line = 0
			continue
		}
		r.line++
		if r.line > r.max {
			r.err = &messageTooLargeError{server: r.p.spec.ServerID, max: r.max}
			r.p.setCloseReason(r.err)
			r.p.log.Warn().Int("max_bytes", r.max).Msg("server sent an oversized message; closing the connection")
			// Deliver the complete lines before the oversized one.
			keep := 0
			for j := i; j > 0; j-- {
				if b[j-1] == '\n' {
					keep = j
					break
				}
			}
			if keep > 0 {
				return keep, nil
			}
			return 0, r.err
		}
	}
	return n, err
}

type messageTooLargeError struct {
	server string
	max    int
}

func (e *messageTooLargeError) Error() string {
	return fmt.Sprintf("server %q sent a message over maxBytes (%d bytes): closing the connection", e.server, e.max)
}

func (e *messageTooLargeError) Unwrap() error { return ErrMessageTooLarge }
