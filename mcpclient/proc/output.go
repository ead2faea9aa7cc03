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
	_, _ = io.Copy(p.ring, p.errR)
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

// ring keeps the last max bytes written to it.
type ring struct {
	max int

	// mu guards buf.
	mu  sync.Mutex
	buf []byte
}

func newRing(max int) *ring { return &ring{max: max, buf: make([]byte, 0, 2*max)} }

func (r *ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(b)
	if len(b) > r.max {
		b = b[len(b)-r.max:]
	}
	// len(buf) <= max and len(b) <= max: the append stays within cap.
	r.buf = append(r.buf, b...)
	if len(r.buf) > r.max {
		r.buf = r.buf[:copy(r.buf, r.buf[len(r.buf)-r.max:])]
	}
	return n, nil
}

func (r *ring) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.buf...)
}
