package testsupport

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer that a writer (a child process's output, a
// logger) and the test may use at the same time; it signals every write,
// so a test can wait for output without polling. The zero value is ready.
type Buffer struct {
	// mu guards the fields that follow.
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // made on first use; one pending signal at most
}

func (b *Buffer) signal() chan struct{} {
	if b.changed == nil {
		b.changed = make(chan struct{}, 1)
	}
	return b.changed
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	ch := b.signal()
	b.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
	return n, err
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset forgets everything written so far.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Changed receives after a write (one signal for any number of writes
// since the last receive).
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.signal()
}

// WaitFor waits until the output holds substr; done ends the wait early
// (the writer has gone away), and the test fails after timeout.
func (b *Buffer) WaitFor(t testing.TB, substr string, done <-chan struct{}, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(b.String(), substr) {
		select {
		case <-b.Changed():
		case <-done:
			if !strings.Contains(b.String(), substr) {
				t.Fatalf("the process ended before writing %q; output:\n%s", substr, b.String())
			}
			return
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %q; output:\n%s", timeout, substr, b.String())
		}
	}
}
