// Package bridge is 'pikoctl mcp serve': an MCP server for one host (an
// agent: Claude Code, Codex, Cursor, ...) that reaches pikod's servers
// through pikod's socket.
//
// The bridge is a plain client of the socket. It holds no credential, no
// grant and no state of its own: every call goes through pikod's call
// path, so a call without a grant becomes a prepared action that only the
// owner approves at a terminal, and pikod writes the receipt. The host can
// only ask: nothing here approves, rejects, answers a server request,
// resumes, trusts, configures, stores a secret or signs in (DESIGN.md
// §6b, §6c).
//
// Files, by concern:
//
//	bridge.go     Options, Serve, the MCP server over stdio and the
//	              session's lifetime
//	catalog.go    which servers and tools are exposed, under which names,
//	              loaded on the host's first list request
//	tools.go      an exposed tool's call, pikod_call_tool, and what the
//	              host is told of a prepared action
//	resources.go  resources and retained results as resources
//	skills.go     skills as resources, loaded through pikod
//	http.go       the Streamable HTTP mode, on loopback only
//
// bridge may import contracts, rpc and mcp-go's server, nothing of
// pikod's MCP client or storage (tests/deps_test.go enforces it).
package bridge
