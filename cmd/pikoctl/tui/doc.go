// Package tui is pikoctl's terminal console ("pikoctl tui"): a live view of
// pikod's servers, their catalogs, prepared actions, settings and events.
//
// Like the rest of pikoctl it is a thin client: it talks to the daemon only
// through the rpc client and the contracts types, keeps no state of its own,
// and may import nothing else of pikod (tests/deps_test.go enforces it).
// Decisions that must come from the person at the terminal (approving an
// action, answering a server's request, resuming a paused server) are not
// taken inside the TUI: it hands the terminal to "pikoctl mcp approve",
// "respond" or "resume", which ask exactly as they do on their own, and the
// daemon checks that process like any other. Settings changes made from
// the panes (grants, adding and removing servers) are composed as
// pikoctl's one-server commands compose them and saved through
// extensions.configure with the revision they were made from, after a dry
// run the owner reads.
package tui

// Bubble Tea's init must not query the terminal in every pikoctl command:
// see termquery.
import _ "a.pikod.internal/termquery"
