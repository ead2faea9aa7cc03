package mcpclient

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// A server announces that one of its lists changed (tools, prompts,
// resources) with a list_changed notification: on a legacy connection as
// it likes, on a 2026-07-28 one on its subscriptions/listen stream. Both
// paths call listChanged; watch refetches just those lists in the
// background and publishes a new catalog in one step, so readers see the
// old catalog or the new one, never a mix.

// Retry delays of a refetch that failed: the first, doubled after each
// failure up to the last.
const (
	refetchRetryFirst = 2 * time.Second
	refetchRetryMax   = time.Minute
)

// listChanged is where every "this list changed" goes: a legacy
// list_changed notification, one from a 2026-07-28 subscription stream,
// and a stream reopened after a drop (which may have missed some). method
// is the notification's (notifications/tools/list_changed,
// .../resources/list_changed, which covers the resource templates too, or
// .../prompts/list_changed). It records the lists and wakes watch to
// refetch them. Catalog requests wait for the refetch, except for a
// notification over the server's budget (admitted false) or while the
// server is over budget: the refetch waits then, and they get the current
// catalog. It never blocks.
func (c *conn) listChanged(method string, admitted bool, now time.Time) {
	var which listSet
	switch method {
	case string(mcp.MethodNotificationToolsListChanged):
		which = which.with(listTools)
	case string(mcp.MethodNotificationResourcesListChanged):
		// Skill files are resources, and the Skills extension defines no
		// notification of its own: a change of the resources is one of
		// the skills too.
		which = which.with(listResources).with(listTemplates).with(listSkills)
	case string(mcp.MethodNotificationPromptsListChanged):
		which = which.with(listPrompts)
	default:
		return
	}
	c.pendMu.Lock()
	c.pending |= which
	c.pendMu.Unlock()
	if admitted && !c.noise.over(now) {
		c.invalidateCatalog()
	}
	select {
	case c.changed <- struct{}{}:
	default: // a refetch is already pending
	}
}

// takePending returns the lists announced as changed since the last call
// and forgets them.
func (c *conn) takePending() listSet {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	p := c.pending
	c.pending = 0
	return p
}

func (c *conn) hasPending() bool {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	return c.pending != 0
}

// refetch reads the lists of which again, publishes the new catalog and
// tells the watchers. It returns the lists whose refetch failed (to try
// again later). Lists the server does not offer, or the settings turn off,
// are not read: a change to them changes nothing.
func (c *conn) refetch(which listSet) (failed listSet) {
	cfg := c.s.settings()
	for k := range numLists {
		if which.has(k) && !offered(k, c.caps, cfg) {
			which &^= 1 << k
		}
	}
	if which == 0 {
		// Catalog requests waiting for it go on with the catalog as it is.
		c.markReady()
		return 0
	}
	cat, failed := refetchLists(c.ctx, c.fetchPage, cfg, c.caps, c.s.sup.opts.Limits, c.currentCatalog(), which)
	if c.ctx.Err() != nil {
		// The connection is closing: what was read goes with it.
		return 0
	}
	c.publish(cat)
	cur := c.currentCatalog()
	ev := c.s.log.Info()
	if !cur.Complete {
		ev = c.s.log.Warn().Str("problem", cur.Problem)
	}
	ev.Strs("lists", which.names()).Int("tools", len(cur.Tools)).Bool("complete", cur.Complete).
		Msg("catalog refetched after list_changed")
	c.s.sup.emit(contracts.EventCatalog, cfg.ID, catalogEvent(cur, which.names()))
	return failed
}

// catalogEvent is the catalog event for cur after lists changed.
func catalogEvent(cur *Catalog, lists []string) contracts.CatalogEventData {
	return contracts.CatalogEventData{
		Lists: lists, Complete: cur.Complete, Problem: cur.Problem,
		Counts: contracts.CatalogCounts{Tools: len(cur.Tools), Resources: len(cur.Resources),
			ResourceTemplates: len(cur.ResourceTemplates), Prompts: len(cur.Prompts), Skills: len(cur.Skills)},
		ChangedTools: changedTools(cur),
	}
}

// markReady lets catalog requests waiting for a refetch go on with the
// current catalog, unless another change is pending (as setCatalog).
func (c *conn) markReady() {
	c.catMu.Lock()
	defer c.catMu.Unlock()
	if c.catalog == nil || (c.hasPending() && !c.noise.over(time.Now())) {
		return
	}
	select {
	case <-c.catReady:
	default:
		close(c.catReady)
	}
}
