// Package render words what pikod reports, the one way that pikoctl's
// commands and its console both print it: events, log entries and server
// requests (an event reads the same in `pikoctl mcp watch` as in the
// console's log pane), an action's state and its review (the lines of
// `pikoctl mcp review` are the console's review screen), and a call's
// status line with its receipt. Only the next step differs (a command to
// run, or a key to press), and the caller words it through Hints.
//
// Every line it returns is made safe for a terminal (contracts.SafeText):
// servers write most of what it prints.
//
// Files: render.go (events, server requests, log entries, ShellArg) and
// action.go (an action's state and review, a call's status line).
//
// render may import contracts alone: no third-party module, nothing else
// of pikod (tests/deps_test.go enforces it).
package render
