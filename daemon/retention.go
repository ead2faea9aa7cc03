package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// DefaultRetentionInterval is how often the receipts are pruned to the
// settings' retention bounds (and once a minute after start).
const DefaultRetentionInterval = 10 * time.Minute

// pruner applies the receipts' retention bounds in the background: once a
// minute after start, then every interval, and when asked (op prune). One
// run at a time; each works in short batches (approvals.PruneReceipts),
// so calls wait for one batch at most.
type pruner struct {
	d        *daemon
	interval time.Duration
	run      sync.Mutex // one prune at a time

	// mu guards last.
	mu   sync.Mutex
	last contracts.PruneStatus
}

// startPruner runs the pruner until ctx ends; the returned function waits
// for it to stop.
func (d *daemon) startPruner(ctx context.Context, interval time.Duration) (wait func()) {
	if interval <= 0 {
		interval = DefaultRetentionInterval
	}
	p := &pruner{d: d, interval: interval}
	d.pruner = p
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(min(time.Minute, interval))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := p.prune(ctx); err != nil && ctx.Err() == nil {
				d.log.Error().Err(err).Msg("pruning receipts")
			}
			t.Reset(interval)
		}
	}()
	return func() { <-done }
}

// prune applies the bounds of the settings in force now.
func (p *pruner) prune(ctx context.Context) (contracts.PruneStatus, error) {
	p.run.Lock()
	defer p.run.Unlock()
	p.d.mu.Lock()
	r := p.d.settings.Retention.Resolved()
	p.d.mu.Unlock()
	start := time.Now()
	// Receipts first (their sources and slimmed actions go with them),
	// then the ended actions' age bound, then the sources' bounds.
	rep, err := p.d.ledger.PruneReceipts(ctx, r.ReceiptMaxAge, uint64(r.ReceiptMaxCount), r.ReceiptMaxBytes, start, 0, p.d.sources)
	var acts approvals.ActionPruneReport
	if err == nil {
		acts, err = p.d.ledger.PruneActions(ctx, r.ActionMaxAge, start, 0)
	}
	evicted := 0
	if err == nil {
		p.d.sources.SetCap(r.SourceMaxBytes)
		evicted, err = p.d.sources.EvictOlder(ctx, r.SourceMaxAge, start, 0)
	}
	st := contracts.PruneStatus{At: start.UTC().Format(time.RFC3339), Pruned: rep.Pruned, Batches: rep.Batches + acts.Batches,
		Kept: rep.Kept, KeptBytes: rep.KeptBytes, ActionsRemoved: acts.Removed, ActionsSlimmed: acts.Slimmed,
		SourcesEvicted: evicted, TookMs: time.Since(start).Milliseconds()}
	if err != nil {
		st.Error = err.Error()
	}
	p.mu.Lock()
	p.last = st
	p.mu.Unlock()
	if err == nil && rep.Pruned+uint64(acts.Removed)+uint64(evicted) > 0 {
		// What pruning freed goes back to the file system once it is
		// worth a copy (as at start).
		_, _ = p.d.compactNow(ctx, "prune", false)
	}
	if rep.Pruned > 0 || acts.Removed+acts.Slimmed > 0 || evicted > 0 {
		p.d.log.Info().Uint64("pruned", rep.Pruned).Int("batches", st.Batches).Uint64("kept", rep.Kept).
			Int64("kept_bytes", rep.KeptBytes).Int("actions_removed", acts.Removed).Int("actions_slimmed", acts.Slimmed).
			Int("sources_evicted", evicted).Int64("took_ms", st.TookMs).Msg("pruned to the retention bounds")
	}
	return st, err
}

func (p *pruner) lastRun() contracts.PruneStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// storageStatus is pikod's footprint for status; a part that cannot be
// read is left zero (and logged).
func (d *daemon) storageStatus() *contracts.StorageStatus {
	st := &contracts.StorageStatus{}
	st.DatabaseBytes, st.FreeBytes = d.db.Footprint()
	count, bytes, oldest, err := d.ledger.ReceiptFootprint()
	if err != nil {
		d.log.Error().Err(err).Msg("reading the receipts' footprint")
	}
	st.Receipts, st.ReceiptBytes = count, bytes
	if !oldest.IsZero() {
		st.OldestReceipt = oldest.UTC().Format(time.RFC3339)
	}
	st.SourceBytes, st.SourceCapBytes = d.sources.UsedBytes(), d.sources.Cap()
	if head, err := d.ledger.ReceiptsHead(); err == nil && count > 0 {
		if up := time.Since(d.started); up > time.Minute && head.Seq > d.startSeq {
			perDay := float64(head.Seq-d.startSeq) / up.Hours() * 24
			st.ReceiptsPerDay, st.BytesPerDay = perDay, perDay*float64(bytes)/float64(count)
		}
	}
	if d.pruner != nil {
		if last := d.pruner.lastRun(); last.At != "" {
			st.LastPrune = &last
		}
	}
	st.LastCompaction = d.compacts.lastRun()
	free, full, at := d.diskState()
	st.DiskFreeBytes, st.DiskFull = free, full
	st.HeldOutcomes = d.ledger.HeldOutcomes()
	if full {
		st.DiskFullAt = at.UTC().Format(time.RFC3339)
	}
	return st
}
