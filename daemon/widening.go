package daemon

import (
	"fmt"
	"slices"

	"github.com/pikod/pikod/contracts"
)

// widenedGrants lists what next grants that prev did not: tools added to
// readOnlyTools or autonomousTools, sampling or elicitation switched on,
// and granted servers whose command, arguments, working directory, env or
// URL changed (the delegated trust would now apply to another program).
// Saving still goes ahead; the list is reported and logged so a widening
// is never silent.
func widenedGrants(prev, next *contracts.MCPSettings) []string {
	old := map[string]*contracts.ServerSettings{}
	for i := range prev.Servers {
		old[prev.Servers[i].ID] = &prev.Servers[i]
	}
	out := []string{}
	for i := range next.Servers {
		n := &next.Servers[i]
		o := old[n.ID]
		if o == nil {
			o = &contracts.ServerSettings{}
		}
		for _, t := range n.AutonomousTools {
			if !slices.Contains(o.AutonomousTools, t) {
				out = append(out, fmt.Sprintf("server %q: %q runs without approval (autonomousTools)", n.ID, t))
			}
		}
		for _, t := range n.ReadOnlyTools {
			if !slices.Contains(o.ReadOnlyTools, t) && !slices.Contains(o.AutonomousTools, t) {
				out = append(out, fmt.Sprintf("server %q: %q runs without approval (readOnlyTools)", n.ID, t))
			}
		}
		if n.Sampling && !o.Sampling {
			out = append(out, fmt.Sprintf("server %q: sampling enabled", n.ID))
		}
		if n.Elicitation && !o.Elicitation {
			out = append(out, fmt.Sprintf("server %q: elicitation enabled", n.ID))
		}
		granted := len(n.AutonomousTools)+len(n.ReadOnlyTools) > 0
		if o.ID != "" && granted && identity(o) != identity(n) {
			out = append(out, fmt.Sprintf("server %q: its granted tools now run in a different program or endpoint", n.ID))
		}
	}
	return out
}
