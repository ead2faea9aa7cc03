// Package mcpclient owns one supervised session per configured MCP server:
// stdio children (started and stopped through mcpclient/proc, which owns
// the processes), guarded HTTP and SSE clients, the protocol era,
// complete catalogs with model-facing names and definition digests, and
// the requests pikod sends.
//
// A Supervisor holds the sessions; each session has at most one live
// connection, shared by concurrent callers, and never reconnects by itself.
//
// It may import contracts, mcpclient/proc, mark3labs/mcp-go, golang.org/x/oauth2,
// golang.org/x/sys, santhosh-tekuri/jsonschema/v6 (with golang.org/x/text)
// and zerolog; never daemon, rpc, vault or approvals (the
// daemon passes it what it needs through small interfaces such as
// proc.Records and Pins).
//
// Text from servers and their processes is redacted (Options.Redact, the
// vault's) before anything cuts it to a length, and made safe for a
// terminal with contracts.SafeText after: error messages, lastError,
// server names, schema messages, progress messages, and the stderr tail,
// whose lines are redacted one by one before they enter it.
//
// Grants are computed here, once per discovery: a tool the settings grant
// (readOnlyTools, autonomousTools) keeps its grant only while its
// definition digest is the one pinned for it (Pins); otherwise every
// catalog, status and call sees it suspended.
package mcpclient
