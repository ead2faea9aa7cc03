package main

import (
	"strings"
	"testing"
)

// TestTUINeedsATerminal: pikoctl tui without a terminal says so and what
// to do, before it dials the daemon; with one but no daemon it is the
// usual unreachable error (exit 3).
func TestTUINeedsATerminal(t *testing.T) {
	ta := newTestApp(t, "", false)
	if code := ta.runArgs(t, "--socket", missingSocket(t), "tui"); code != exitFailure ||
		!strings.Contains(ta.errOut.String(), "stdin is not a terminal") || !strings.Contains(ta.errOut.String(), "hint: run 'pikoctl tui' in your terminal") {
		t.Errorf("pikoctl tui without a terminal: exit %d, stderr %q", code, ta.errOut.String())
	}
	ta = newTestApp(t, "", true)
	if code := ta.runArgs(t, "--socket", missingSocket(t), "tui"); code != exitUnreachable {
		t.Errorf("pikoctl tui without a daemon: exit %d, want %d; stderr %q", code, exitUnreachable, ta.errOut.String())
	}
}
