// Command pikoctl is the thin command-line client of pikod: every command
// but "service" is one JSON-RPC call on the daemon's owner socket, and the
// CLI keeps no state of its own.
//
// Exit codes: exitCodes in main.go (the one block and table), printed by
// 'pikoctl --help'.
//
// Files, by concern (a command lives in the file named for its area):
//
//	main.go, root.go      exit codes, the root command, global flags, the
//	                      socket connection and its API version check
//	output.go             reading input (bounded), JSON errors with line and
//	                      column, clean (the terminal sanitiser), tables
//	tty.go, tty_*.go      the terminal: prompts, masked input, line reading
//	mcp.go                pikoctl mcp, configure, config, status
//	servers.go            add, remove, enable, disable, grant, revoke, edit
//	connections.go        connect, disconnect, reconnect, ping, catalog;
//	                      subscribe, unsubscribe
//	calls.go              call, actions, review, approve (with the approval
//	                      gate), reject, source
//	tools.go, trust.go    tool, search; diff and trust of pinned definitions
//	resources.go          resources, read; prompts, prompt; complete
//	complete.go           shell completion of servers, tools and actions
//	requests.go           requests, request, respond (server requests)
//	tasks.go, skills.go   tasks and task; skills and skill
//	receipts.go           receipts (list, --verify, --export, --prune), receipt, compact
//	events.go             logs, watch: events worded by cmd/pikoctl/render
//	pause.go              pause and resume
//	secret.go             secret; vault unlock and migrate
//	auth.go               auth, cancel, logout (OAuth sign-in)
//	browser.go            browser; browserremote.go browser-remote
//	artifact.go           artifact
//	import.go, install.go import of other hosts' servers; install and
//	                      uninstall of the bridge in a host's configuration
//	hostconf.go           editing a host's configuration file as text (the
//	                      JSON half in hostconf_json.go, TOML in hostconf_toml.go)
//	serve.go              mcp serve, the bridge (cmd/pikoctl/bridge)
//	tuicmd.go             tui, the console (cmd/pikoctl/tui)
//	service.go            service: the systemd or launchd unit
//	doctor.go, version.go, approvals.go, rpc.go, docgen.go
//	                      doctor; version; approvals passphrase; rpc
//	                      METHOD; the generated CLI reference
//
// pikoctl may import contracts, rpc and its own packages (bridge, tui,
// render), never daemon, mcpclient, vault or approvals: it learns
// everything from the socket (tests/deps_test.go enforces it).
package main
