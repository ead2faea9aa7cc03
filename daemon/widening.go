package daemon

import (
	"fmt"
	"slices"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/vault"
)

// widenedGrants lists what next grants that prev did not: tools added to
// readOnlyTools or autonomousTools, sampling or elicitation switched on,
// granted servers whose command, arguments, working directory, env or
// URL changed (the delegated trust would now apply to another program),
// an artifactDirectory added or moved (its files become readable through
// pikod), allowPrivateNetwork switched on, and, for a server already
// configured, more tools selected (tools omitted where a list was given,
// or names added to it) or resources or prompts switched on.
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
		if n.ArtifactDirectory != "" && n.ArtifactDirectory != o.ArtifactDirectory {
			out = append(out, fmt.Sprintf("server %q: files it reports in %s can be read through pikod (artifactDirectory)", n.ID, n.ArtifactDirectory))
		}
		if n.AllowPrivateNetwork && !o.AllowPrivateNetwork {
			out = append(out, fmt.Sprintf("server %q: its endpoint may be on this machine or a private network (allowPrivateNetwork)", n.ID))
		}
		if o.ID != "" {
			out = append(out, widenedSelection(o, n)...)
		}
		granted := len(n.AutonomousTools)+len(n.ReadOnlyTools) > 0
		if o.ID != "" && granted && vault.Identity(o) != vault.Identity(n) {
			out = append(out, fmt.Sprintf("server %q: its granted tools now run in a different program or endpoint", n.ID))
		}
	}
	return out
}

// widenedSelection lists what an existing server's next settings select
// that its previous ones did not: tools (every one when the list is
// dropped), resources and prompts.
func widenedSelection(o, n *contracts.ServerSettings) []string {
	var out []string
	switch {
	case o.Tools == nil:
	case n.Tools == nil:
		out = append(out, fmt.Sprintf("server %q: every tool is selected, callable with approval (tools omitted)", n.ID))
	default:
		for _, t := range *n.Tools {
			if !slices.Contains(*o.Tools, t) {
				out = append(out, fmt.Sprintf("server %q: %q is selected, callable with approval (tools)", n.ID, t))
			}
		}
	}
	if n.ResourcesEnabled() && !o.ResourcesEnabled() {
		out = append(out, fmt.Sprintf("server %q: its resources can be listed and read (resources)", n.ID))
	}
	if n.PromptsEnabled() && !o.PromptsEnabled() {
		out = append(out, fmt.Sprintf("server %q: its prompts can be listed and got (prompts)", n.ID))
	}
	return out
}
