// Package daemon wires pikod together and owns its lifetime: it prepares
// the state directory, opens the database, listens on the owner socket,
// registers the method table, maps domain errors to wire errors (through
// contracts.ToError) and shuts everything down in reverse start order.
//
// Files, by concern (each method's handler is in the file of its feature):
//
//	daemon.go            Config, Run: the state directory, the stores, the socket,
//	                     the order of start and shutdown
//	handlers.go          the method table and the small handlers (hello, settings)
//	calls.go             calls and approved actions: the grant, the ledger, the send;
//	                     actionresult.go an ended action's result; tasks.go tasks
//	present/             what callers and the owner are shown: previews of results,
//	                     an action's summary, advice and review (package present)
//	owner.go             the approval passphrase gate of terminal-only methods
//	pins.go, widening.go pinned definitions, trust, widened grants; skills.go skills
//	credentials.go       the credential records in the vault; oauth.go OAuth grants;
//	                     rotation.go reconnecting after a change; vaultpin.go the
//	                     backend pin and migration
//	redaction.go         redaction of every frame, by the request it answers
//	events.go, watch.go  events and the watch, logging; logfile.go pikod.log, rotated
//	requests.go          server-to-client requests awaiting the owner
//	resources.go         resources, prompts, completion; search.go search
//	artifacts.go         artifact reads and imports; captures.go the paths results report
//	receipts.go          receipts and their export; retention.go pruning;
//	                     compact.go compaction; storage.go a full disk
//	pause.go             pause and resume (the hand-off)
//	harden_*.go          process hardening
//
// daemon may import every package of the module; only cmd/pikod and the
// end-to-end tests import daemon.
package daemon
