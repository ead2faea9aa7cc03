// Package vault will own secrets and OAuth grants in the OS keyring, their
// binding to a server's identity, and the redaction set. It arrives with
// the vault work; nothing in this build uses it yet.
//
// It may import contracts, 99designs/keyring and zerolog; never daemon,
// rpc, mcpclient or approvals.
package vault
