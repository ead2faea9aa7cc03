// Package netguard is pikod's one road to the network for MCP servers and
// their authorization servers: an *http.Client whose every connection is
// checked (the SSRF guard). It knows nothing of MCP or OAuth beyond the
// rule that a POST carries the request.
//
// Files, by concern:
//
//	client.go   NewClient and Config; the checks of every request (https
//	            only, refused headers, no redirects, identity encoding,
//	            capped bodies), the dialer that vets every resolved address
//	            (allowPrivateNetwork for the configured origin alone), TLS
//	            pins, and UnsentError, the proof that a request never left
//	            (sendTrace)
//	addr.go     which addresses are public: the non-public IPv4 and IPv6
//	            ranges, and IPv4 hidden in IPv6 forms
//
// netguard may import contracts only (its refusals wrap contracts'
// classes); never mcpclient, the SDK, daemon, rpc, vault or approvals.
package netguard
