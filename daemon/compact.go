package daemon

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// Compaction gives the pages that pruning freed back to the file system:
// at start (Run, before the file is in use), after a pruning run leaves
// enough free pages (CompactMinFree and CompactRatio, as at start), and on
// demand (extensions.mcp.compact). The last two run with pikod serving:
// calls wait only for the switch to the copy (approvals.DB.Compact).

// compactions runs one compaction at a time and keeps the last result.
type compactions struct {
	run sync.Mutex
	// mu guards last.
	mu   sync.Mutex
	last *contracts.CompactResult
}

func (c *compactions) record(r contracts.CompactResult) {
	c.mu.Lock()
	c.last = &r
	c.mu.Unlock()
}

func (c *compactions) lastRun() *contracts.CompactResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return nil
	}
	r := *c.last
	return &r
}

func compactResult(trigger string, at time.Time, rep approvals.CompactReport, err error) contracts.CompactResult {
	r := contracts.CompactResult{At: at.UTC().Format(time.RFC3339), Trigger: trigger, Compacted: rep.Compacted,
		BeforeBytes: rep.Before, AfterBytes: rep.After, FreeBytes: rep.Free,
		TookMs: float64(rep.Took.Microseconds()) / 1000, HeldMs: float64(rep.Held.Microseconds()) / 1000,
		ReadsHeldMs: float64(rep.ReadsHeld.Microseconds()) / 1000}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// compactNow compacts the open database (force: whatever its free pages)
// unless the disk lacks room for the copy.
func (d *daemon) compactNow(ctx context.Context, trigger string, force bool) (contracts.CompactResult, error) {
	d.compacts.run.Lock()
	defer d.compacts.run.Unlock()
	start := time.Now()
	size, free := d.db.Footprint()
	if !force && (free < CompactMinFree || float64(free) < CompactRatio*float64(size)) {
		return contracts.CompactResult{At: start.UTC().Format(time.RFC3339), Trigger: trigger, BeforeBytes: size, AfterBytes: size, FreeBytes: free}, nil
	}
	// The copy needs about the live part of the file, with room to spare.
	if avail := diskFree(d.cfg.StateDir); avail >= 0 && avail < (size-free)+(size-free)/4+(1<<20) {
		err := contracts.WithHint(contracts.Errorf(contracts.ErrResourceExhausted, contracts.ReasonStorageFull,
			"compacting pikod.db needs about %d bytes free for its copy, and the disk holding %s has %d: the database is unchanged",
			(size-free)+(size-free)/4, d.cfg.StateDir, avail),
			"free space on that disk, then run 'pikoctl mcp compact' again")
		d.compacts.record(compactResult(trigger, start, approvals.CompactReport{Before: size, After: size, Free: free}, err))
		return contracts.CompactResult{}, err
	}
	rep, err := d.db.Compact(ctx, 0, 0, true)
	res := compactResult(trigger, start, rep, err)
	d.compacts.record(res)
	if err != nil {
		d.log.Error().Err(err).Str("trigger", trigger).Msg("compacting the database")
		return res, d.storageFull(err, "the database was not compacted (it is unchanged)")
	}
	d.log.Info().Str("trigger", trigger).Int64("before", rep.Before).Int64("after", rep.After).Int64("free", rep.Free).
		Float64("took_ms", res.TookMs).Float64("held_ms", res.HeldMs).Msg("database compacted")
	return res, nil
}

// compact is extensions.mcp.compact.
func (d *daemon) compact(ctx context.Context, _ *rpc.Request, _ *contracts.CompactParams) (contracts.CompactResult, error) {
	return d.compactNow(ctx, "asked", true)
}

// diskFree is the bytes free for pikod on the file system holding dir, or
// -1 when it cannot be read.
func diskFree(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
