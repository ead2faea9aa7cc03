// Package tui is pikoctl's terminal console ("pikoctl tui"): a live view of
// pikod's servers, their catalogs, prepared actions, settings and events.
//
// Like the rest of pikoctl it is a thin client: it talks to the daemon only
// through the rpc client and the contracts types, keeps no state of its own,
// and may import nothing else of pikod (tests/deps_test.go enforces it).
// Decisions that must come from the person at the terminal (approving an
// action) are not taken inside the TUI: it hands the terminal to
// "pikoctl mcp approve", which asks exactly as it does on its own, and the
// daemon checks that process like any other.
package tui

// Bubble Tea's init must not query the terminal in every pikoctl command:
// see termquery.
import _ "a.pikod.internal/termquery"
