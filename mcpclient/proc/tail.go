package proc

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// stderrCutMargin is how much more than the tail's size an overlong line
// keeps when it loses its beginning: more than any spelling of a secret.
const stderrCutMargin = 4 << 10

// stderrTail keeps the end of a server's stderr. Text enters it one line
// at a time, each line redacted whole first, so the ring never holds an
// unredacted fragment: its cap cuts only lines that were redacted before
// they came in. A line still being written is kept apart and held: it
// may end in the first characters of a secret, which redaction cannot
// recognise yet, so only what lies more than stderrCutMargin bytes before
// its end is shown (redacted), marked with "…" where the rest is held. An overlong line is bounded at 2*(size+stderrCutMargin)
// bytes: then it is redacted whole and only the end of the redacted text
// is kept, so the cut falls in redacted text. A secret that straddles the
// cut lay whole in what was redacted (it is shorter than
// size+stderrCutMargin), so no piece of one survives a cut.
type stderrTail struct {
	redact func(string) string
	size   int

	// mu guards the fields that follow.
	mu      sync.Mutex
	ring    []byte // the last size bytes of redacted complete lines
	pending []byte // the line being written; redacted up to a cut, raw after
	cut     bool   // pending lost its beginning
}

func newStderrTail(size int, redact func(string) string) *stderrTail {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	// The ring grows as stderr comes (most servers write little or
	// nothing), to at most 2*size.
	return &stderrTail{redact: redact, size: size}
}

// Write takes any chunk of stderr.
func (t *stderrTail) Write(p []byte) (int, error) {
	n := len(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.pending = append(t.pending, p...)
			t.trimPending()
			break
		}
		t.pending = append(t.pending, p[:i+1]...)
		t.flushLocked()
		p = p[i+1:]
	}
	return n, nil
}

// Close ends the last line (stderr reached EOF).
func (t *stderrTail) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) > 0 {
		t.flushLocked()
	}
	return nil
}

// String returns the kept tail, the line being written included, redacted
// and at most about size bytes.
func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]byte(nil), t.ring...)
	if len(t.pending) > stderrCutMargin {
		line := t.redactedPending()
		end := max(0, len(line)-stderrCutMargin)
		for end > 0 && !utf8.RuneStart(line[end]) {
			end--
		}
		out = append(append(out, line[:end]...), "…"...)
	}
	if len(out) > t.size {
		out = out[len(out)-t.size:]
	}
	return string(out)
}

// trimPending bounds an overlong line: redacted whole, then cut to its
// last size+stderrCutMargin bytes.
func (t *stderrTail) trimPending() {
	window := t.size + stderrCutMargin
	if len(t.pending) <= 2*window {
		return
	}
	red := t.redact(string(t.pending))
	start := max(0, len(red)-window)
	for start < len(red) && !utf8.RuneStart(red[start]) {
		start++
	}
	t.pending = append(t.pending[:0], red[start:]...)
	t.cut = true
}

// redactedPending is the pending line redacted, marked when it lost its
// beginning.
func (t *stderrTail) redactedPending() []byte {
	line := []byte(t.redact(string(t.pending)))
	if t.cut {
		line = append([]byte("…"), line...)
	}
	return line
}

func (t *stderrTail) flushLocked() {
	line := t.redactedPending()
	t.pending, t.cut = t.pending[:0], false
	if len(line) > t.size {
		line = line[len(line)-t.size:]
	}
	t.ring = append(t.ring, line...)
	if len(t.ring) > t.size {
		t.ring = t.ring[:copy(t.ring, t.ring[len(t.ring)-t.size:])]
	}
}
