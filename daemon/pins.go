package daemon

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// pinStore keeps the supervisor's tool pins in the database.
type pinStore struct {
	db  *approvals.DB
	red *vault.Redactor
}

// editPins writes edits with every kept definition redacted: a definition
// is the server's text, and pikod.db holds no credential value. Digests
// are the server's own, so grants still compare exactly.
func editPins(db *approvals.DB, red *vault.Redactor, edits []approvals.PinEdit) ([]approvals.Pin, error) {
	for i := range edits {
		if p := edits[i].Pin; p != nil && len(p.Definition) > 0 {
			c := *p
			c.Definition = red.JSON(p.Definition)
			edits[i].Pin = &c
		}
	}
	return db.EditPins(edits)
}

func (s pinStore) Load(server string) (map[string]mcpclient.ToolPin, error) {
	pins, err := s.db.Pins(server)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcpclient.ToolPin, len(pins))
	for k, p := range pins {
		out[k] = mcpclient.ToolPin{Tool: p.Tool, Digest: p.Digest, Definition: p.Definition}
	}
	return out, nil
}

func (s pinStore) AddMissing(server string, pins []mcpclient.ToolPin) error {
	now := time.Now().UTC()
	edits := make([]approvals.PinEdit, len(pins))
	for i, p := range pins {
		edits[i] = approvals.PinEdit{Server: server, Tool: p.Tool, IfAbsent: true,
			Pin: &approvals.Pin{Digest: p.Digest, Definition: p.Definition, PinnedAt: now, By: approvals.PinnedByDiscovery}}
	}
	_, err := editPins(s.db, s.red, edits)
	return err
}

// grantedTools returns the tools a server's settings grant (readOnlyTools
// and autonomousTools).
func grantedTools(s *contracts.ServerSettings) map[string]bool {
	out := map[string]bool{}
	if s == nil {
		return out
	}
	for _, t := range s.ReadOnlyTools {
		out[t] = true
	}
	for _, t := range s.AutonomousTools {
		out[t] = true
	}
	return out
}

// pinEdits says how a settings save moves the pins. live holds, per
// server connected when the owner saved, the tools its catalog showed
// then. A grant covers the definition current when the owner saved it:
//
//   - a tool this save grants (it was not granted before) is pinned to the
//     definition the live catalog shows, replacing any older pin; one the
//     server did not show is pinned at its first discovery;
//   - a grant the save keeps keeps its pin: only trust accepts a changed
//     definition of a tool that stays granted, so an unrelated save (or a
//     local tool saving settings) cannot launder a changed definition; a
//     kept grant without a pin yet is pinned to the live definition;
//   - a grant the save removes loses its pin, and a server removed from
//     the settings (or otherwise unknown: pinned lists every server the
//     database has pins for) loses all of them.
func pinEdits(prev, next *contracts.MCPSettings, live map[string][]contracts.CatalogTool, pinned []string, now time.Time) []approvals.PinEdit {
	var edits []approvals.PinEdit
	old := map[string]*contracts.ServerSettings{}
	for i := range prev.Servers {
		old[prev.Servers[i].ID] = &prev.Servers[i]
	}
	inNext := map[string]bool{}
	for i := range next.Servers {
		n := &next.Servers[i]
		inNext[n.ID] = true
		before, after := grantedTools(old[n.ID]), grantedTools(n)
		for _, t := range sortedSet(before) {
			if !after[t] {
				edits = append(edits, approvals.PinEdit{Server: n.ID, Tool: t})
			}
		}
		seen := map[string]contracts.CatalogTool{}
		for _, t := range live[n.ID] {
			seen[t.OriginalName] = t
		}
		for _, t := range sortedSet(after) {
			def, ok := seen[t]
			switch {
			case !before[t] && ok:
				edits = append(edits, approvals.PinEdit{Server: n.ID, Tool: t, Pin: settingsPin(def, now)})
			case !before[t]:
				edits = append(edits, approvals.PinEdit{Server: n.ID, Tool: t})
			case ok:
				edits = append(edits, approvals.PinEdit{Server: n.ID, Tool: t, Pin: settingsPin(def, now), IfAbsent: true})
			}
		}
	}
	gone := map[string]bool{}
	for _, id := range pinned {
		gone[id] = true
	}
	for id := range old {
		gone[id] = true
	}
	for _, id := range sortedSet(gone) {
		if !inNext[id] {
			edits = append(edits, approvals.PinEdit{Server: id})
		}
	}
	return edits
}

func settingsPin(t contracts.CatalogTool, now time.Time) *approvals.Pin {
	p := mcpclient.PinOf(t)
	return &approvals.Pin{Digest: p.Digest, Definition: p.Definition, PinnedAt: now, By: approvals.PinnedBySettings}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// liveTools snapshots the tools of every connected server in settings,
// never connecting and never waiting.
func (d *daemon) liveTools(settings *contracts.MCPSettings) map[string][]contracts.CatalogTool {
	out := map[string][]contracts.CatalogTool{}
	for i := range settings.Servers {
		id := settings.Servers[i].ID
		if tools, ok, err := d.sup.LiveTools(context.Background(), id, false); err == nil && ok {
			out[id] = tools
		}
	}
	return out
}

// savePins moves the pins for a save from prev to next (see pinEdits).
// It runs before the supervisor applies next, so a server's first
// discovery under next already finds them.
func (d *daemon) savePins(prev, next *contracts.MCPSettings, live map[string][]contracts.CatalogTool) {
	pinned, err := d.db.PinnedServers()
	if err != nil {
		d.log.Error().Err(err).Msg("listing tool pins")
	}
	kept := map[string]bool{}
	for i := range next.Servers {
		kept[next.Servers[i].ID] = true
	}
	for i := range prev.Servers {
		if id := prev.Servers[i].ID; !kept[id] {
			if err := d.db.DeleteSkillPins(id); err != nil {
				d.log.Error().Err(err).Str("server", id).Msg("forgetting the skill pins of a removed server")
			}
		}
	}
	edits := pinEdits(prev, next, live, pinned, time.Now().UTC())
	if len(edits) == 0 {
		return
	}
	written, err := editPins(d.db, d.red, edits)
	if err != nil {
		d.log.Error().Err(err).Msg("saving tool pins for the new settings; changed grants pin at their next discovery")
		return
	}
	for _, p := range written {
		d.log.Info().Str("server", p.Server).Str("tool", p.Tool).Str("digest", p.Digest).Msg("granted tool pinned by the settings")
	}
}

// trust serves extensions.mcp.trust: show (diff) or accept (accept,
// terminal-only by the method table) the changed definitions of granted
// tools.
func (d *daemon) trust(ctx context.Context, req *rpc.Request, p *contracts.TrustParams) (any, error) {
	cfg, ok := d.serverSettings(p.Server)
	if !ok {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", p.Server),
			"list the configured servers with 'pikoctl mcp status'")
	}
	if p.Tool != "" && !grantedTools(&cfg)[p.Tool] {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNotGranted,
			"tool %q of server %q is not in readOnlyTools or autonomousTools: no grant is pinned to its definition", p.Tool, p.Server),
			"calls of tools without a grant are prepared actions whatever their definition")
	}
	switch p.Op {
	case contracts.TrustDiff:
		cat, err := d.sup.Catalog(ctx, p.Server)
		if err != nil {
			return nil, err
		}
		changes, err := d.toolChanges(p.Server, p.Tool, cat.Tools)
		if err != nil {
			return nil, err
		}
		return contracts.TrustResult{Server: p.Server, Op: p.Op, Tools: changes}, nil
	case contracts.TrustAccept:
		return d.trustAccept(ctx, req, *p)
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp, `"op" must be "diff" or "accept"`)
}

// toolChanges pairs the pinned and current definitions: of every granted
// tool whose definition changed, or of tool alone (changed or not).
func (d *daemon) toolChanges(server, tool string, tools []contracts.CatalogTool) ([]contracts.ToolChange, error) {
	pins, err := d.db.Pins(server)
	if err != nil {
		return nil, err
	}
	out := []contracts.ToolChange{}
	found := false
	for _, t := range tools {
		if tool != "" && t.OriginalName != tool {
			continue
		}
		found = true
		if tool == "" && t.Pin != contracts.PinChanged {
			continue
		}
		c := contracts.ToolChange{Tool: t.OriginalName, Grant: t.Grant, Pin: t.Pin,
			CurrentDigest: t.Digest, Current: mcpclient.Definition(t)}
		if t.SuspendedGrant != "" {
			c.Grant = t.SuspendedGrant
		}
		if pin, ok := pins[t.OriginalName]; ok {
			c.PinnedDigest, c.Pinned, c.PinnedBy = pin.Digest, pin.Definition, pin.By
			c.PinnedAt = pin.PinnedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, c)
	}
	if tool != "" && !found {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool,
			"server %q offers no tool %q now", server, tool),
			"list its tools with 'pikoctl mcp catalog "+server+"'")
	}
	return out, nil
}

// trustAccept pins the current definitions the owner reviewed.
func (d *daemon) trustAccept(ctx context.Context, req *rpc.Request, p contracts.TrustParams) (any, error) {
	tools, connected, err := d.sup.LiveTools(ctx, p.Server, true)
	if err != nil {
		return nil, err
	}
	if !connected {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNotConnected,
			"server %q is not connected, so its current definitions are unknown; nothing was accepted", p.Server),
			"run 'pikoctl mcp diff "+p.Server+"' (it connects), then trust again")
	}
	changes, err := d.toolChanges(p.Server, p.Tool, tools)
	if err != nil {
		return nil, err
	}
	changes = slices.DeleteFunc(changes, func(c contracts.ToolChange) bool { return c.Pin != contracts.PinChanged })
	if len(changes) == 0 {
		what := fmt.Sprintf("no granted tool of server %q has a changed definition", p.Server)
		if p.Tool != "" {
			what = fmt.Sprintf("the definition of tool %q of server %q is the pinned one", p.Tool, p.Server)
		}
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNothingChanged, "%s; nothing to accept", what)
	}
	accepting := map[string]bool{}
	for _, c := range changes {
		accepting[c.Tool] = true
		if got, ok := p.Digests[c.Tool]; !ok || got != c.CurrentDigest {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonDefinitionMoved,
				"the current definition of tool %q of server %q (digest %s) is not one you reviewed; nothing was accepted",
				c.Tool, p.Server, c.CurrentDigest),
				"show the definitions again with 'pikoctl mcp diff "+p.Server+" "+c.Tool+"' and accept what it shows")
		}
	}
	for tool := range p.Digests {
		if !accepting[tool] {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonNothingChanged,
				"tool %q of server %q has no changed definition to accept; nothing was accepted", tool, p.Server)
		}
	}
	now := time.Now().UTC()
	edits := make([]approvals.PinEdit, len(changes))
	for i, c := range changes {
		edits[i] = approvals.PinEdit{Server: p.Server, Tool: c.Tool, Pin: &approvals.Pin{
			Digest: c.CurrentDigest, Definition: c.Current, PinnedAt: now, By: approvals.PinnedByTrust, Replaced: c.PinnedDigest}}
	}
	if _, err := editPins(d.db, d.red, edits); err != nil {
		return nil, err
	}
	if err := d.sup.RefreshPins(p.Server); err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("re-applying pins after trust")
	}
	names := make([]string, len(changes))
	for i := range changes {
		c := &changes[i]
		names[i] = c.Tool
		c.Pin, c.PinnedDigest, c.Pinned, c.PinnedBy = contracts.PinPinned, c.CurrentDigest, c.Current, approvals.PinnedByTrust
		c.PinnedAt = now.Format(time.RFC3339)
	}
	d.log.Info().Str("server", p.Server).Strs("tools", names).Int("peer_pid", req.Peer.PID).Msg("changed tool definitions trusted; grants restored")
	return contracts.TrustResult{Server: p.Server, Op: p.Op, Tools: changes}, nil
}
