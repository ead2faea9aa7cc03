package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
)

// The soak (make soak): a simulated month of use in minutes. Millions of
// read and autonomous calls at full speed against one daemon whose
// retention is set low, so that pruning and compaction run all along; the
// report shows whether the database and pikod's memory plateau, the p99
// latency while pruning or compacting against the rest, and the receipt
// chain verified at the end.

// soakConfig is what -soak chooses.
type soakConfig struct {
	calls    int
	workers  int
	sample   time.Duration
	compact  time.Duration
	interval time.Duration
	out      string
}

// soakRetention is the low retention the soak runs under: what a month of
// a busy owner's calls would meet with the defaults, scaled to minutes.
var soakRetention = map[string]any{
	"receipts": map[string]any{"maxCount": 100_000},
	"sources":  map[string]any{"maxBytes": "64MiB"},
	"actions":  map[string]any{"maxAge": "1m"},
}

// soakSample is one window of the soak.
type soakSample struct {
	at          time.Duration
	calls       int64
	rate        float64
	dbBytes     int64
	freeBytes   int64
	stateBytes  int64
	rss, anon   int64
	receipts    uint64
	p50, p99    time.Duration
	pruned      bool
	compacted   bool
	compactHeld float64
}

func (r *runner) soak(sc soakConfig) error {
	d, err := startDaemon(r.bin, r.cfg.stateRoot, "--retention-interval", sc.interval.String())
	if err != nil {
		return err
	}
	report, serr := r.soakRun(d, sc)
	err = errors.Join(serr, d.stop())
	if err != nil {
		// The instance directory goes at exit: keep pikod's stderr.
		kept := sc.out + ".pikod-stderr"
		if b, rerr := os.ReadFile(d.stderrPath); rerr == nil && os.WriteFile(kept, b, 0o644) == nil {
			r.logf("pikod's stderr is kept in %s", kept)
		}
	}
	if report != "" {
		fmt.Print("\n" + report)
		if werr := os.WriteFile(sc.out, []byte(report), 0o644); werr != nil {
			err = errors.Join(err, fmt.Errorf("writing the soak report: %w", werr))
		} else {
			r.logf("soak report written to %s", sc.out)
		}
	}
	return err
}

func (r *runner) soakRun(d *daemonProc, sc soakConfig) (string, error) {
	conf := struct {
		Retention map[string]any `json:"retention"`
		Servers   []server       `json:"servers"`
	}{soakRetention, []server{fixtureConf(r.bin.fixture)}}
	if err := d.configure(conf); err != nil {
		return "", fmt.Errorf("configuring: %w", err)
	}
	if _, err := d.connect("fx"); err != nil {
		return "", fmt.Errorf("connecting fx: %w", err)
	}
	pid := d.pid()
	started := time.Now()
	loadAtStart := loadAverage()

	var (
		done    atomic.Int64
		mu      sync.Mutex
		window  []time.Duration
		failure error
		wg      sync.WaitGroup
	)
	total := int64(sc.calls)
	for w := range sc.workers {
		c, err := d.dial()
		if err != nil {
			return "", err
		}
		defer c.Close()
		// One worker in four makes autonomous calls (a dispatch record
		// and an end, each durable), the rest reads.
		params := readCall
		if w%4 == 3 {
			params = autoCall
		}
		wg.Go(func() {
			// Handed over in small batches, so that every window has
			// its own calls' latencies.
			lat := make([]time.Duration, 0, 16)
			for done.Add(1) <= total {
				t0 := time.Now()
				if err := pikodCall(c, params); err != nil {
					mu.Lock()
					failure = errors.Join(failure, err)
					mu.Unlock()
					done.Store(total)
					break
				}
				lat = append(lat, time.Since(t0))
				if len(lat) == cap(lat) {
					mu.Lock()
					window = append(window, lat...)
					mu.Unlock()
					lat = lat[:0]
				}
			}
			mu.Lock()
			window = append(window, lat...)
			mu.Unlock()
		})
	}

	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	var samples []soakSample
	var lastPrune, lastCompact string
	var prev int64
	prevAt := time.Duration(0)
	nextCompact := time.Now().Add(sc.compact)
	tick := time.NewTicker(sc.sample)
	defer tick.Stop()
	compacting := make(chan contracts.CompactResult, 1)
	for running := true; running; {
		select {
		case <-finished:
			running = false
		case <-tick.C:
		}
		if sc.compact > 0 && time.Now().After(nextCompact) {
			// On demand, with the calls running (pikod also compacts
			// after a prune when enough is free).
			nextCompact = time.Now().Add(sc.compact)
			go func() {
				var res contracts.CompactResult
				_ = d.call(contracts.MethodMCPCompact, contracts.CompactParams{}, &res)
				compacting <- res
			}()
		}
		s := soakSample{at: time.Since(started)}
		s.calls = min(done.Load(), total)
		if dt := (s.at - prevAt).Seconds(); dt > 0 {
			s.rate = float64(s.calls-prev) / dt
		}
		prev, prevAt = s.calls, s.at
		mu.Lock()
		lat := window
		window = nil
		mu.Unlock()
		if len(lat) > 0 {
			sum := summarize(lat)
			s.p50, s.p99 = sum.p50, sum.p99
		}
		s.rss, _ = procStatusBytes(pid, "VmRSS")
		s.anon, _ = procStatusBytes(pid, "RssAnon")
		s.stateBytes = diskBytes(d.stateDir)
		var st contracts.StatusResult
		if err := d.call(contracts.MethodMCPStatus, contracts.StatusParams{}, &st); err == nil && st.Storage != nil {
			s.dbBytes, s.freeBytes, s.receipts = st.Storage.DatabaseBytes, st.Storage.FreeBytes, st.Storage.Receipts
			if p := st.Storage.LastPrune; p != nil && p.At != lastPrune {
				s.pruned, lastPrune = p.Pruned > 0 || p.ActionsRemoved+p.ActionsSlimmed > 0, p.At
			}
			if c := st.Storage.LastCompaction; c != nil && c.At+c.Trigger != lastCompact {
				s.compacted, s.compactHeld, lastCompact = c.Compacted, c.HeldMs, c.At+c.Trigger
			}
		}
		select {
		case res := <-compacting:
			if res.Compacted {
				s.compacted, s.compactHeld = true, res.HeldMs
			}
		default:
		}
		samples = append(samples, s)
		r.logf("soak: %s calls, %.0f/s, db %s, RSS %s (anon %s), p99 %s%s", groupThousands(s.calls), s.rate, fmtMB(s.dbBytes), fmtMB(s.rss), fmtMB(s.anon), fmtDur(s.p99),
			map[bool]string{true: " (pruned)", false: ""}[s.pruned]+map[bool]string{true: " (compacted)", false: ""}[s.compacted])
	}
	elapsed := time.Since(started)
	if failure != nil {
		return "", fmt.Errorf("a call failed during the soak: %w", failure)
	}
	// The chain, verified from its oldest checkpoint, with the actions.
	var ver contracts.ReceiptsResult
	if err := d.call(contracts.MethodMCPReceipts, contracts.ReceiptsParams{Verify: true}, &ver); err != nil {
		return "", fmt.Errorf("verifying the receipt chain: %w", err)
	}
	return soakReport(r, sc, samples, elapsed, loadAtStart, ver.Verification), nil
}

// soakReport writes the soak's Markdown report.
func soakReport(r *runner, sc soakConfig, samples []soakSample, elapsed time.Duration, loadAtStart string, v *contracts.ReceiptsVerification) string {
	var b strings.Builder
	b.WriteString("# pikod soak report\n\n")
	fmt.Fprintf(&b, "Written by `make soak` (bench/cmd/pikobench -soak). %s calls (one worker in four autonomous, the rest reads) "+
		"from %d clients at full speed against one pikod with retention set low (%s), pruning every %s, compacting on demand every %s. "+
		"Nothing here is asserted by a test.\n\n", groupThousands(int64(sc.calls)), sc.workers, retentionText(), sc.interval, sc.compact)
	b.WriteString(r.rep.header + "\n")
	fmt.Fprintf(&b, "Load average at the soak's start: %s; at its end: %s. Elapsed: %.0f s.\n\n", loadAtStart, loadAverage(), elapsed.Seconds())

	// Plateaus: the level (median) of the middle third against the last
	// third's, and the last third's peak against the earlier thirds'
	// peaks: a compaction's copy makes one window's peak, wherever it
	// falls, and says nothing of growth on its own.
	third := len(samples) / 3
	stats := func(ss []soakSample, f func(soakSample) int64) (median, peak int64) {
		vs := make([]int64, 0, len(ss))
		for _, s := range ss {
			vs = append(vs, f(s))
			peak = max(peak, f(s))
		}
		slices.Sort(vs)
		return vs[len(vs)/2], peak
	}
	plateau := func(name string, f func(soakSample) int64) string {
		if third == 0 {
			return fmt.Sprintf("- %s: too few samples to judge\n", name)
		}
		_, firstPeak := stats(samples[:third], f)
		midMedian, midPeak := stats(samples[third:2*third], f)
		lastMedian, lastPeak := stats(samples[2*third:], f)
		growth := 0.0
		if midMedian > 0 {
			growth = float64(lastMedian-midMedian) / float64(midMedian) * 100
		}
		earlierPeak := max(firstPeak, midPeak)
		verdict := "plateaus"
		if growth > 10 || float64(lastPeak) > 1.1*float64(earlierPeak) {
			verdict = "still grows"
		}
		return fmt.Sprintf("- %s: median %s in the middle third, %s in the last third (%+.1f %%); peak %s in the last third, %s before it: %s\n",
			name, fmtMB(midMedian), fmtMB(lastMedian), growth, fmtMB(lastPeak), fmtMB(earlierPeak), verdict)
	}
	b.WriteString("## Plateaus\n\n")
	b.WriteString(plateau("pikod.db size", func(s soakSample) int64 { return s.dbBytes }))
	b.WriteString(plateau("state directory (database, retained results, tombstones, reserve, log)", func(s soakSample) int64 { return s.stateBytes }))
	b.WriteString(plateau("pikod RSS, anonymous (heap, stacks)", func(s soakSample) int64 { return s.anon }))
	b.WriteString(plateau("pikod RSS, all (with the database's mapped pages)", func(s soakSample) int64 { return s.rss }))

	// p99 while pruning or compacting against the rest.
	var busy, calm []time.Duration
	for _, s := range samples {
		if s.p99 == 0 {
			continue
		}
		if s.pruned || s.compacted {
			busy = append(busy, s.p99)
		} else {
			calm = append(calm, s.p99)
		}
	}
	b.WriteString("\n## Latency while pruning and compacting\n\n")
	if len(busy) > 0 && len(calm) > 0 {
		mb, mc := median(busy), median(calm)
		verdict := "within 2 ×"
		if mb > 2*mc {
			verdict = "over 2 ×"
		}
		fmt.Fprintf(&b, "Median of the windows' p99: %s in the %d windows with a prune or compaction, %s in the %d without (%.2f ×: %s).\n",
			fmtDur(mb), len(busy), fmtDur(mc), len(calm), float64(mb)/float64(mc), verdict)
	} else {
		b.WriteString("Not enough windows of both kinds to compare.\n")
	}
	var held []float64
	for _, s := range samples {
		if s.compacted && s.compactHeld > 0 {
			held = append(held, s.compactHeld)
		}
	}
	if len(held) > 0 {
		slices.Sort(held)
		fmt.Fprintf(&b, "Calls held for a compaction's switch: %d compactions, median %.1f ms, longest %.1f ms.\n", len(held), held[len(held)/2], held[len(held)-1])
	}

	b.WriteString("\n## The chain at the end\n\n")
	if v != nil {
		if v.OK {
			fmt.Fprintf(&b, "Intact: %s receipts checked from the oldest checkpoint, %d pruned ranges, %s executed actions cross-checked.\n",
				groupThousands(int64(v.Checked)), len(v.Pruned), groupThousands(int64(v.Actions)))
		} else {
			raw, _ := json.Marshal(v.Break)
			fmt.Fprintf(&b, "BROKEN: %s\n", raw)
		}
	}

	b.WriteString("\n## Samples\n\n")
	t := &table{header: []string{"time", "calls", "calls/s", "pikod.db", "free pages", "state dir", "RSS (anon)", "receipts", "p50", "p99", "event"}}
	for _, s := range samples {
		var ev []string
		if s.pruned {
			ev = append(ev, "pruned")
		}
		if s.compacted {
			ev = append(ev, fmt.Sprintf("compacted (held %.1f ms)", s.compactHeld))
		}
		t.add(fmt.Sprintf("%.0f s", s.at.Seconds()), groupThousands(s.calls), fmtRate(s.rate), fmtMB(s.dbBytes), fmtMB(s.freeBytes),
			fmtMB(s.stateBytes), fmtMB(s.rss)+" ("+fmtMB(s.anon)+")", groupThousands(int64(s.receipts)), fmtDur(s.p50), fmtDur(s.p99), strings.Join(ev, ", "))
	}
	b.WriteString(t.markdown())
	return b.String()
}

func retentionText() string {
	raw, _ := json.Marshal(soakRetention)
	return "`" + string(raw) + "`"
}

// soakOut resolves the soak report's path against the module root.
func soakOut(root, out string) string {
	if filepath.IsAbs(out) {
		return out
	}
	return filepath.Join(root, out)
}
