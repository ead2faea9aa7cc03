// Package rpc is pikod's owner API transport: JSON-RPC 2.0 over NDJSON on a
// private Unix socket. It owns the socket's lifetime and permissions
// (Listen: a 0700 directory, a 0600 socket from the instant it exists, the
// stale-socket probe, removal on Close), the peer-credential check that
// refuses every uid other than the daemon's before a byte is read, the
// framing with its per-line size cap and write deadlines, the limits on
// what clients can make the daemon hold (a cap on connections; a budget of
// request bytes read and not yet answered, enforced by not reading a
// connection further), request dispatch in two lanes (control methods
// never wait behind work) with per-connection and server-wide slots,
// $/cancelRequest, half-closed connections (requests already read are
// answered; only a full close cancels), notifications back to the calling
// connection, the method table (Method rows built with Handle: each
// method's params decoded once, strictly, into its typed params; their
// common members checked once through contracts.ParamsChecker; the result
// encoded once), and the Go client (Dial, Call) used by pikoctl, the TUI
// and the tests.
//
// It is also the one place where terminal-only methods are enforced: for
// every call of a contracts.TerminalOnly method that is not exempt (the
// exemption member read from the very params value the handler gets;
// params that do not decode are never exempt), the server checks
// the calling process (Peer.CheckTerminal: a controlling terminal, fd 0 is
// that terminal, the terminal belongs to the daemon's uid, the process is
// in its foreground group; /proc on Linux, kern.proc.pid and proc_info on
// macOS) and then runs Options.OwnerCheck, which reads the passphrase from
// the decoded params (Request.Decoded), before any handler. A check that
// cannot be made refuses, and so does a server without OwnerCheck. Params
// that do not decode are answered invalid_params once the terminal checks
// pass, without asking the owner check.
//
// What pikod does around jsonrpc2 (sourcegraph/jsonrpc2, the protocol
// library): jsonrpc2.Conn runs each connection's read loop and the
// client's calls, and its message types (ID, Request, Response, Error)
// are the wire's. Around it, pikod owns the framing (stream: NDJSON lines
// with a cap, write deadlines, the request budget), the strict checks of
// every line (checkObject: one parse of the line into slices of it; a
// bad line is answered and the connection goes on), and the bytes jsonrpc2
// would otherwise decode into generic values and encode again: the server
// hands jsonrpc2 only a request's envelope (method and id) and keeps its
// params exactly as received for the method's row, which decodes them
// once into the typed params; results are encoded once (json.Marshal, or
// Encoded as kept) and framed by the stream, never re-encoded by
// jsonrpc2; the client keeps a large result as received and gives
// jsonrpc2 a placeholder. $/cancelRequest, the lanes, the slots and the
// terminal checks are pikod's too.
//
// Files, by concern:
//
//	listen.go                    the socket: its directory and modes, stale sockets,
//	                             the listener, the peer's credentials (peercred_*.go)
//	frame.go                     NDJSON framing with its caps, one parse per line
//	server.go                    the server: connections, dispatch with its two lanes,
//	                             replies, $/cancelRequest; budget.go the request slots;
//	                             hangup.go a peer that hung up
//	request.go                   what a handler gets: Request, Conn (notify, the
//	                             peer, the declared client), HandlerFunc
//	params.go                    DecodeParams: strict params, named type errors
//	method.go                    the typed method rows (Handle[P, R]), exemptions
//	peertty.go, peertty_*.go     the terminal checks of terminal-only methods
//	client.go                    the Go client: calls, verdicts after cancelling,
//	                             notifications
//	apiversion.go                API versions: the mismatch advice and the client's check
//
// rpc knows nothing of MCP, settings, the vault or the ledger: handlers are
// registered by the daemon. It may import only the standard library,
// contracts (method names and the error-code table: errors cross the socket
// as *contracts.Error and errors.Is keeps working on the client),
// github.com/sourcegraph/jsonrpc2 (the connection and message types; the
// framing is ours), github.com/rs/zerolog and golang.org/x/sys.
package rpc
