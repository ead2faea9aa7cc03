// Package daemon wires pikod together and owns its lifetime: it prepares
// the state directory, opens the database, listens on the owner socket,
// registers the method table, maps domain errors to wire errors (through
// contracts.ToError) and shuts everything down in reverse start order.
//
// daemon may import every package of the module; only cmd/pikod and the
// end-to-end tests import daemon.
package daemon
