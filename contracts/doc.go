// Package contracts is the wire between pikod and its clients: the
// JSON-RPC method names, the params and result type of every method, the
// API version, the append-only error-code table with its error classes, the
// instance naming and path rules, and the mcp settings schema with its
// validation.
//
// contracts is a leaf. It may import only the standard library: every other
// package of the module, pikoctl and third-party tools depend on it, so it
// must stay small, stable and free of dependencies (deps_test.go enforces it).
package contracts

//go:generate go run ./internal/refgen -root .. -out ../docs/reference
