package daemon

import (
	"sync"

	"github.com/pikod/pikod/contracts"
)

// rotations are the servers whose credentials changed while they were
// connected: the connection still runs with the old ones (a stdio
// server's environment, headers a session was set up with). Until the
// owner reconnects, calls, resource reads and prompts are refused with
// reconnect_required rather than sent with credentials the owner
// replaced; status says so.
type rotations struct {
	mu sync.Mutex
	// at is, by server, the connection generation the credentials
	// changed under.
	at map[string]uint64
}

// markRotated records that server's credentials changed now.
func (d *daemon) markRotated(server string) {
	gen := d.sup.Generation(server)
	if gen == 0 {
		return // not connected: the next connection reads the new ones
	}
	d.rotated.mu.Lock()
	defer d.rotated.mu.Unlock()
	if d.rotated.at == nil {
		d.rotated.at = map[string]uint64{}
	}
	d.rotated.at[server] = gen
}

// reconnectRequired reports whether server's connection runs with
// credentials replaced since it was made. A new connection clears it.
func (d *daemon) reconnectRequired(server string) bool {
	gen := d.sup.Generation(server)
	d.rotated.mu.Lock()
	defer d.rotated.mu.Unlock()
	at, ok := d.rotated.at[server]
	if ok && at != gen {
		delete(d.rotated.at, server)
		return false
	}
	return ok
}

// checkRotated refuses work on a connection whose credentials were
// replaced since it was made.
func (d *daemon) checkRotated(server string) error {
	if !d.reconnectRequired(server) {
		return nil
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonReconnectRequired,
		"the credentials of %q changed since it connected; nothing was sent with the old ones", server),
		"reconnect it to use the new credentials: 'pikoctl mcp reconnect "+server+"'")
}
