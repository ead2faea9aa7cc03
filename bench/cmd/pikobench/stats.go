package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// summary is the distribution of one series of latencies.
type summary struct {
	n                   int
	p50, p90, p99, mean time.Duration
}

// summarize sorts a copy of d and reads its percentiles (nearest rank).
func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var total time.Duration
	for _, v := range s {
		total += v
	}
	return summary{
		n:    len(s),
		p50:  percentile(s, 50),
		p90:  percentile(s, 90),
		p99:  percentile(s, 99),
		mean: total / time.Duration(len(s)),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted s.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(rank, 1)
	rank = min(rank, len(sorted))
	return sorted[rank-1]
}

// median of a small series.
func median(d []time.Duration) time.Duration {
	return summarize(d).p50
}

// fmtDur prints a latency with a unit that suits its size.
func fmtDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", ms)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// fmtRatio prints a/b as "×N.NN".
func fmtRatio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("×%.2f", float64(a)/float64(b))
}

// fmtMB prints bytes in MB (10^6), as RSS targets are stated.
func fmtMB(b int64) string {
	return fmt.Sprintf("%.1f MB", float64(b)/1e6)
}

// fmtRate prints calls per second with thousands separators.
func fmtRate(r float64) string {
	return groupThousands(int64(math.Round(r)))
}

func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + groupThousands(-n)
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
