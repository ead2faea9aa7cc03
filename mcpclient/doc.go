// Package mcpclient will own one supervised session per configured MCP
// server: process groups, guarded HTTP, protocol eras, catalogs, calls and
// server-to-client requests. It arrives with the connections work; nothing
// in this build uses it yet.
//
// It may import contracts, mark3labs/mcp-go, golang.org/x/oauth2 and
// zerolog; never daemon, rpc, vault or approvals (the daemon passes it what
// it needs through small interfaces).
package mcpclient
