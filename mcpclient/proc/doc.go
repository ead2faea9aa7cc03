// Package proc owns the processes of stdio servers, apart from anything
// MCP: spawning a command without a shell in a session and process group of
// its own (no controlling terminal: it can never reach the terminal pikod
// runs on) with an
// environment built from nothing and a disposable home (spawn.go), the
// capped stdout and the stderr ring (output.go), the stdin writer with its
// deadline and its record of frames that were never written (stdin.go),
// stopping a server's whole tree (stop.go), finding its processes that
// left the group (escapees.go) by the tree and by the mark every server
// carries in its environment (mark.go), and the durable process records
// from which a restarted daemon ends what a killed one left running
// (records.go). fds.go keeps inherited descriptors out of every server.
// The platform parts (reading the process table and environments,
// signalling a pid only while it is still the same process, the
// subreaper) are in sys_linux.go and sys_darwin.go.
//
// proc may import contracts, golang.org/x/sys and zerolog; never
// mcpclient or the MCP SDK (it knows nothing of the protocol), daemon,
// rpc, vault or approvals. The daemon passes it a Records store.
package proc
