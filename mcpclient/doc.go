// Package mcpclient owns one supervised session per configured MCP server:
// stdio children (started and stopped through mcpclient/proc, which owns
// the processes), HTTP and SSE clients (on mcpclient/netguard's guarded
// client, the SSRF guard), the protocol era, complete catalogs with
// model-facing names and definition digests, and the requests pikod sends.
//
// A Supervisor holds the sessions; each session has at most one live
// connection, shared by concurrent callers, and never reconnects by itself.
//
// It may import contracts, mcpclient/proc, mcpclient/netguard,
// mcpclient/oauth, mark3labs/mcp-go, golang.org/x/oauth2, golang.org/x/sys,
// santhosh-tekuri/jsonschema/v6 (with golang.org/x/text) and zerolog; never daemon, rpc, vault or approvals (the
// daemon passes it what it needs through small interfaces such as
// proc.Records and Pins).
//
// Files, by concern:
//
//	supervisor.go          the Supervisor: options, the sessions, events, redaction
//	session.go             a session: its state, connect (one setup shared by
//	                       concurrent callers), disconnect, lost connections, status
//	connection.go          a connection: dialling (with staged OAuth grants), opening,
//	                       the watch of its life, notifications, its catalog
//	transport.go           the mcp-go transport per settings (stdio, http, sse) and the
//	                       stdio stdout watch
//	negotiate.go, raw.go   the protocol era (initialize, server/discover, a pin) and raw
//	                       requests; getstream.go, ssetap.go the HTTP streams
//	catalog.go, changes.go catalogs, model-facing names, digests and list changes
//	search.go              BM25 search over the catalogs' tools (extensions.mcp.search)
//	pins.go                grants pinned to definition digests
//	prepare.go, call.go    a call decided once (Prepare) and sent (PreparedCall.Send);
//	                       args.go canonical arguments, schema.go their validation,
//	                       paramheaders.go arguments that travel in headers
//	notsent.go, slots.go   what was provably not sent; the per-server slots and timeouts
//	results.go             result types
//	resources.go, subscriptions.go, uritemplate.go resources, prompts, completion and
//	                       subscriptions
//	skills.go, frontmatter.go skills and their SKILL.md
//	tasks.go               tasks; requests.go server-to-client requests; logs.go logging
//	auth*.go               OAuth (protocol pieces in mcpclient/oauth): auth.go a
//	                       server's token state and its renewal; authrecord.go
//	                       the records the vault keeps; authtransport.go the
//	                       round tripper that sends tokens and answers
//	                       challenges; authflow.go sign-in; authgrant.go
//	                       grants without a browser and renewal requests;
//	                       authwatch.go the watch for challenges
//	budget.go, errtext.go  noise budgets; error text said once
//	browser.go             closing a browser server gracefully
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
