package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
)

// stdinWriter gives every Write a deadline. os.Pipe files are pollable, so
// SetWriteDeadline works on them. Every Write is one frame (mcp-go writes
// each message, newline included, in one call), and the writer records
// whether any byte of it went into the pipe: a failed Write that wrote
// nothing carries a record of it (see NothingWritten), and written counts every byte that did
// go, so a caller can tell that nothing at all was written while its
// request was out.
type stdinWriter struct {
	p         *Process
	f         *os.File
	timeout   time.Duration
	closeOnce sync.Once
	// written counts the bytes that went into the pipe.
	written atomic.Uint64

	// mu serialises writes and guards err.
	mu  sync.Mutex
	err error
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, &notWrittenError{err: w.err}
	}
	if err := w.f.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		// Closed by Stop (os.ErrClosed) or never pollable: nothing written.
		return 0, &notWrittenError{err: fmt.Errorf("writing to server %q: %w", w.p.spec.ServerID, err)}
	}
	n, err := w.f.Write(b)
	w.written.Add(uint64(n))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.err = fmt.Errorf("writing to server %q: stdin took nothing for %s (the server is not reading): %w: %w", w.p.spec.ServerID, w.timeout, contracts.ErrDeadlineExceeded, err)
			w.p.setCloseReason(w.err)
			w.p.log.Warn().Dur("write_timeout", w.timeout).Int("frame_bytes_written", n).Msg("server stopped reading stdin; closing the connection")
			err = w.err
		} else {
			err = fmt.Errorf("writing to server %q: %w", w.p.spec.ServerID, err)
		}
		if n == 0 {
			// A pipe whose reader is gone (EPIPE) or a full pipe that
			// took nothing: not one byte of this frame left.
			return 0, &notWrittenError{err: err}
		}
		return n, err
	}
	return n, nil
}

// StdinWritten returns how many bytes have gone into the server's stdin.
// When it is the same before and after a request, not one byte of that
// request was written.
func (p *Process) StdinWritten() uint64 { return p.stdin.written.Load() }

// Close closes stdin at once, failing a Write in progress; closing twice
// is not an error.
func (w *stdinWriter) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.f.Close() })
	return err
}

// notWrittenError records that not one byte of the frame a Write failed
// on went into the pipe.
type notWrittenError struct{ err error }

func (e *notWrittenError) Error() string { return e.err.Error() }
func (e *notWrittenError) Unwrap() error { return e.err }

// NothingWritten reports whether err (or an error it wraps) is a failed
// Stdin Write that wrote not one byte of its frame: the frame provably
// never reached the server.
func NothingWritten(err error) bool {
	var n *notWrittenError
	return errors.As(err, &n)
}
