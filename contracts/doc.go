// Package contracts is the wire between pikod and its clients: the
// JSON-RPC method names, the params and result type of every method, the
// API version, the append-only error-code table with its error classes, the
// instance naming and path rules, and the mcp settings schema with its
// validation.
//
// Files, by concern:
//
//	methods.go, params.go     the method table (names, flags) and the common params checks
//	actions.go … trust.go     one file per area of the API, named for it (calls.go,
//	                          actions.go, catalog.go, requests.go, tasks.go, ...): its
//	                          params and result types and their constants
//	errors.go, reasons.go     the error classes and append-only codes; the data.reason
//	                          words, frozen by testdata/reasons.golden
//	settings*.go              the mcp settings schema (settings.go), parsing
//	                          (settings_parse.go) and validation
//	                          (settings_validate.go); settings_secret.go tells
//	                          values and names that look like credentials
//	paths.go                  instance names, the socket and state paths
//	text.go                   the terminal sanitiser (SafeText); idna.go host names;
//	                          jsonspan.go a JSON value read in place (JSONSpan)
//	digest.go                 every digest pikod stores (tools, actions, skills,
//	                          proposals) and canonical JSON, frozen by TestDigestsFrozen
//	internal/refgen           generates docs/reference from this package
//
// contracts is a leaf. It may import only the standard library: every other
// package of the module, pikoctl and third-party tools depend on it, so it
// must stay small, stable and free of dependencies (deps_test.go enforces it).
package contracts

//go:generate go run ./internal/refgen -root .. -out ../docs/reference
