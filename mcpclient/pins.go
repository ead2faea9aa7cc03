package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/pikod/pikod/contracts"
)

// Pins keeps the tool definitions that grants cover. A readOnlyTools or
// autonomousTools grant holds only while the server's definition of the
// tool has the pinned digest; the daemon stores the pins (in pikod.db) and
// decides what a settings save or a trust pins. mcpclient reads them at
// every discovery and adds the pins of granted tools it sees for the first
// time.
type Pins interface {
	// Load returns the pins of one server's tools, by original name.
	Load(server string) (map[string]ToolPin, error)
	// AddMissing pins each tool of pins that has no pin yet; existing pins
	// are left as they are.
	AddMissing(server string, pins []ToolPin) error
}

// ToolPin is the definition a grant covers: its digest (ToolDigest) and
// the definition itself (Definition), kept so a change can be shown.
type ToolPin struct {
	Tool       string
	Digest     string
	Definition json.RawMessage
}

// Definition returns the parts of t's definition that its digest covers,
// as one JSON object with sorted keys: name, title, description,
// inputSchema, outputSchema and annotations (absent ones omitted; schemas
// and annotations as the server sent them).
func Definition(t contracts.CatalogTool) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	member := func(key string, raw []byte) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(&b, key)
		b.WriteByte(':')
		b.Write(raw)
	}
	str := func(key, v string) {
		if v == "" {
			return
		}
		var s bytes.Buffer
		writeString(&s, v)
		member(key, s.Bytes())
	}
	obj := func(key string, v json.RawMessage) {
		v = bytes.TrimSpace(v)
		if len(v) == 0 || !json.Valid(v) {
			return
		}
		member(key, v)
	}
	// Keys in sorted order.
	obj("annotations", t.Annotations)
	str("description", t.Description)
	obj("inputSchema", t.InputSchema)
	str("name", t.OriginalName)
	obj("outputSchema", t.OutputSchema)
	str("title", t.Title)
	b.WriteByte('}')
	return b.Bytes()
}

// PinOf returns the pin that covers t's current definition.
func PinOf(t contracts.CatalogTool) ToolPin {
	return ToolPin{Tool: t.OriginalName, Digest: t.Digest, Definition: Definition(t)}
}

func granted(grant string) bool {
	return grant == contracts.GrantRead || grant == contracts.GrantAutonomous
}

// applyPins sets the pin state of every tool the settings grant and
// suspends the grant of those whose definition is not the pinned one:
// their calls become prepared actions. Granted tools without a pin are
// pinned to the definition seen now (the first discovery after the grant).
// A pin store that fails suspends every grant it could not check. tools
// must carry the grants of the settings (toolsFrom); it is changed in
// place. logChanged says whether to warn about each suspended grant (a
// discovery) or not (a refresh after trust).
func (s *session) applyPins(tools []contracts.CatalogTool, logChanged bool) {
	store := s.sup.opts.Pins
	if store == nil {
		return
	}
	var idx []int
	for i := range tools {
		if granted(tools[i].Grant) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	id := s.cfg.ID
	pins, err := store.Load(id)
	if err == nil {
		var missing []ToolPin
		for _, i := range idx {
			if _, ok := pins[tools[i].OriginalName]; !ok {
				missing = append(missing, PinOf(tools[i]))
			}
		}
		if len(missing) > 0 {
			if err = store.AddMissing(id, missing); err == nil {
				// Read back: a pin written meanwhile (a save, a trust) wins.
				pins, err = store.Load(id)
			}
			if err == nil {
				names := make([]string, len(missing))
				for i, p := range missing {
					names[i] = p.Tool
				}
				s.log.Info().Strs("tools", names).Msg("granted tools pinned at first discovery")
			}
		}
	}
	if err != nil {
		s.log.Error().Err(err).Msg("reading tool pins; grants suspended until they can be read")
		for _, i := range idx {
			t := &tools[i]
			t.SuspendedGrant, t.Grant, t.Pin = t.Grant, contracts.GrantApproval, contracts.PinUnchecked
		}
		return
	}
	for _, i := range idx {
		t := &tools[i]
		p, ok := pins[t.OriginalName]
		if ok && p.Digest == t.Digest {
			t.Pin = contracts.PinPinned
			continue
		}
		t.SuspendedGrant, t.Grant, t.Pin, t.PinnedDigest = t.Grant, contracts.GrantApproval, contracts.PinChanged, p.Digest
		if logChanged {
			s.log.Warn().Str("tool", t.OriginalName).Str("grant", t.SuspendedGrant).Str("pinned_digest", p.Digest).
				Str("digest", t.Digest).Msg("granted tool's definition changed; grant suspended until 'pikoctl mcp trust'")
		}
	}
}

// publish applies the pins to a freshly discovered or refetched catalog
// (every one alike, whatever lists it read) and makes it the connection's
// current one. pinMu orders it with refreshPins, so a catalog is never
// published with pins older than a trust that finished before it.
func (c *conn) publish(cat *Catalog) {
	c.excludeInvalidHeaderTools(cat)
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	// The grants of the settings in force now: a live policy change
	// (Supervisor.Apply) may have come while the lists were read.
	live := c.s.settings()
	for i := range cat.Tools {
		t := &cat.Tools[i]
		t.Selected, t.Grant = grantOf(live, t.OriginalName)
	}
	c.s.applyPins(cat.Tools, cat.toolsRead)
	suspendStale(cat)
	// The problem may quote the server (a cursor, a tool name): redacted,
	// then cut.
	cat.Problem = c.s.sup.clean(cat.Problem, 1000)
	c.setCatalog(cat)
}

// refreshPins re-applies the pins to the current catalog (after the pins
// changed) without marking a pending re-discovery as done: that one reads
// the pins itself when it publishes.
func (c *conn) refreshPins() {
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	c.catMu.Lock()
	cur, pending := c.catalog, !isClosed(c.catReady)
	c.catMu.Unlock()
	if cur == nil || pending {
		return
	}
	next := *cur
	next.Tools = slices.Clone(cur.Tools)
	for i := range next.Tools {
		t := &next.Tools[i]
		t.Selected, t.Grant = grantOf(c.s.settings(), t.OriginalName)
		t.Pin, t.SuspendedGrant, t.PinnedDigest = "", "", ""
	}
	c.s.applyPins(next.Tools, false)
	suspendStale(&next)
	next.buildIndex()
	_, _ = c.encodeCatalog(&next)
	c.catMu.Lock()
	c.catalog = &next
	c.catMu.Unlock()
}

// regrant applies a live change of the tool grants (Supervisor.Apply) to
// the current catalog and tells the watchers as a refetch of the tools
// would, so that a bridge's hosts see their tools list change.
func (c *conn) regrant() {
	c.refreshPins()
	cur := c.currentCatalog()
	if cur == nil {
		return
	}
	c.s.log.Info().Int("tools", len(cur.Tools)).Msg("tool grants changed: applied to the live connection")
	c.s.sup.emit(contracts.EventCatalog, c.s.cfg.ID, catalogEvent(cur, []string{"tools"}))
}

// suspendStale suspends the grants of a catalog's tools while their list
// could not be read again after the server announced a change: the
// definitions shown are the last ones read, and the server's may differ.
// Tools whose definition is known to have changed stay as they are.
func suspendStale(cat *Catalog) {
	if !cat.toolsStale {
		return
	}
	for i := range cat.Tools {
		t := &cat.Tools[i]
		if granted(t.Grant) {
			t.SuspendedGrant, t.Grant, t.Pin = t.Grant, contracts.GrantApproval, contracts.PinUnchecked
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// RefreshPins re-applies the stored pins to a server's live catalog, so a
// definition the owner just trusted gets its grant back at once. A server
// that is not connected applies them at its next discovery.
func (s *Supervisor) RefreshPins(server string) error {
	sess, err := s.session(server)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	c := sess.conn
	sess.mu.Unlock()
	if c != nil {
		c.refreshPins()
	}
	return nil
}

// LiveTool looks a tool up on the server's live connection without ever
// connecting. gen is that connection's generation (0: not connected, and
// then ok is false); ok says whether its catalog has the tool. With wait,
// a re-discovery in progress is waited for (bounded by ctx); without, the
// last catalog answers at once.
func (s *Supervisor) LiveTool(ctx context.Context, server, tool string, wait bool) (gen uint64, t contracts.CatalogTool, ok bool, err error) {
	sess, err := s.session(server)
	if err != nil {
		return 0, contracts.CatalogTool{}, false, err
	}
	sess.mu.Lock()
	c := sess.conn
	sess.mu.Unlock()
	if c == nil {
		return 0, contracts.CatalogTool{}, false, nil
	}
	cat := c.currentCatalog()
	if wait {
		if cat, err = c.freshCatalog(ctx); err != nil {
			return 0, contracts.CatalogTool{}, false, err
		}
	}
	t, ok = cat.toolByOriginal(tool)
	return c.gen, t, ok, nil
}

// LiveTools returns the tools of the server's live connection without
// ever connecting (nil, false when it is not connected). With wait, a
// re-discovery in progress is waited for (bounded by ctx).
func (s *Supervisor) LiveTools(ctx context.Context, server string, wait bool) ([]contracts.CatalogTool, bool, error) {
	sess, err := s.session(server)
	if err != nil {
		return nil, false, err
	}
	sess.mu.Lock()
	c := sess.conn
	sess.mu.Unlock()
	if c == nil {
		return nil, false, nil
	}
	cat := c.currentCatalog()
	if wait {
		if cat, err = c.freshCatalog(ctx); err != nil {
			return nil, false, err
		}
	}
	return slices.Clone(cat.Tools), true, nil
}

// changedTools lists the tools of cat whose grant a changed definition
// suspended.
func changedTools(cat *Catalog) []string {
	var out []string
	for _, t := range cat.Tools {
		if t.Pin == contracts.PinChanged {
			out = append(out, t.OriginalName)
		}
	}
	return out
}

// definitionChanged is the error of a bound call whose tool definition is
// no longer the one the approval covered: nothing was sent.
func (s *Supervisor) definitionChanged(server, tool string) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonDefinitionChanged,
		"the definition of tool %q on server %q changed after the call was approved; nothing was sent",
		s.clip(tool, 200), server),
		"see the new definition with 'pikoctl mcp catalog "+server+"', then make the call again")
}

// checkDefinition is the last check before a bound call is written: the
// connection's current catalog, with no re-discovery pending, must still
// define tool with digest want.
func (c *conn) checkDefinition(ctx context.Context, tool, want string) error {
	for {
		if _, err := c.freshCatalog(ctx); err != nil {
			if ctx.Err() != nil {
				return contracts.Errorf(contracts.ErrCanceled, contracts.ReasonCanceled,
					"the call of %q on %q was canceled before it was sent", c.s.sup.clip(tool, 200), c.s.cfg.ID)
			}
			return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonConnectionLost,
				"the connection to %q ended before the call of %q was sent; nothing was sent", c.s.cfg.ID, c.s.sup.clip(tool, 200))
		}
		c.catMu.Lock()
		if !isClosed(c.catReady) {
			// Invalidated again between the wait and the lock.
			c.catMu.Unlock()
			continue
		}
		t, ok := c.catalog.toolByOriginal(tool)
		stale := c.catalog.toolsStale
		c.catMu.Unlock()
		if stale {
			return contracts.WithHint(contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonCatalogStale,
				"the tools of %q could not be read again after the server announced a change, so the definition of %q cannot be checked; nothing was sent",
				c.s.cfg.ID, c.s.sup.clip(tool, 200)),
				"'pikoctl mcp status "+c.s.cfg.ID+"' shows the problem; pikod reads the list again by itself, then make the call again")
		}
		if !ok || t.Digest != want {
			return c.s.sup.definitionChanged(c.s.cfg.ID, tool)
		}
		return nil
	}
}
