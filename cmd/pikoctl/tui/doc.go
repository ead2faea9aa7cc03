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
//
// Files, by concern (one per pane, then what the panes share):
//
//	tui.go        Options, Run, the model, its messages and Update, which
//	              routes each message to the pane that owns it and each key
//	              to the keys every pane shares, then the pane's own
//	commands.go   every request to the daemon, each a tea.Cmd
//	view.go       the frame (tabs, body, keys line), the help and the sign-in modal
//	list.go       listView: the list half of the list-and-detail panes
//	servers.go    pane 1: servers, their detail line and keys, the status
//	              answer, sign-in and resume outcomes
//	catalog.go    pane 2: tools, resources, prompts and skills, search, a schema
//	actions.go    pane 3: prepared actions and the review (worded by
//	              cmd/pikoctl/render, as pikoctl mcp review prints it)
//	settings.go   pane 4: the settings text, edited in $EDITOR, saved after a dry run
//	log.go        pane 5: events as lines (worded by cmd/pikoctl/render)
//	requests.go   pane 6: server requests waiting for the owner
//	changes.go    settings changes composed from the panes (grants, add, remove)
//	addserver.go, creds.go, run.go the add-server line, the credentials form,
//	              a tool run from the catalog
//	handoff.go    handing the terminal to pikoctl approve, respond and resume
//	keys.go       the key map
package tui

// Bubble Tea's init must not query the terminal in every pikoctl command:
// see termquery.
import _ "a.pikod.internal/termquery"
