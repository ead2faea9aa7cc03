package contracts

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RetentionSettings bound what pikod keeps on disk for months of use. Every
// bound is optional; zero means the default, and pruning always goes
// oldest first, in the background, in short transactions.
type RetentionSettings struct {
	// Receipts: a receipt is pruned once it is older than MaxAge, or the
	// receipts kept number more than MaxCount or take more than MaxBytes.
	// Pruning writes a checkpoint the chain continues from. Defaults:
	// DefaultReceiptMaxAge and DefaultReceiptMaxBytes, no count limit.
	Receipts *RetentionBounds `json:"receipts,omitempty"`
	// Sources: retained original results beyond MaxBytes (default
	// DefaultSourceMaxBytes) or older than MaxAge (default: no age bound)
	// are evicted, oldest first; an evicted source keeps a tombstone
	// until its receipt is pruned, and goes with it.
	Sources *RetentionBounds `json:"sources,omitempty"`
	// Actions: an action that ended (completed, failed, rejected,
	// expired, stale) longer than MaxAge ago (default
	// DefaultActionMaxAge) leaves the list; its record stays, without its
	// arguments, as long as its receipt does. The record of an action
	// that is prepared, approved, dispatched or uncertain never goes.
	Actions *RetentionBounds `json:"actions,omitempty"`
}

// RetentionBounds is one kind's limits. MaxAge is a duration such as
// "180d", "36h" or "90m"; MaxBytes a size such as "2GiB", "500MB" or a
// whole number of bytes.
type RetentionBounds struct {
	MaxAge   string `json:"maxAge,omitempty"`
	MaxCount int64  `json:"maxCount,omitempty"`
	MaxBytes string `json:"maxBytes,omitempty"`
}

// Retention defaults.
const (
	DefaultReceiptMaxAge   = 180 * 24 * time.Hour
	DefaultReceiptMaxBytes = 2 << 30
	DefaultSourceMaxBytes  = 1 << 30
	DefaultActionMaxAge    = 30 * 24 * time.Hour
	// MinRetentionAge is the shortest MaxAge accepted.
	MinRetentionAge = time.Minute
	// MinRetentionBytes is the smallest MaxBytes accepted.
	MinRetentionBytes = 64 << 10
)

// Retention is RetentionSettings resolved: every bound as a number, with
// the defaults filled in; zero means no bound.
type Retention struct {
	ReceiptMaxAge   time.Duration
	ReceiptMaxCount int64
	ReceiptMaxBytes int64
	SourceMaxAge    time.Duration
	SourceMaxBytes  int64
	ActionMaxAge    time.Duration
}

// Resolved returns the bounds with their defaults (r may be nil). Call it
// on validated settings: a malformed value resolves to its default.
func (r *RetentionSettings) Resolved() Retention {
	out := Retention{ReceiptMaxAge: DefaultReceiptMaxAge, ReceiptMaxBytes: DefaultReceiptMaxBytes,
		SourceMaxBytes: DefaultSourceMaxBytes, ActionMaxAge: DefaultActionMaxAge}
	if r == nil {
		return out
	}
	set := func(b *RetentionBounds, age *time.Duration, bytes *int64, count *int64) {
		if b == nil {
			return
		}
		if d, err := ParseRetentionAge(b.MaxAge); err == nil && b.MaxAge != "" && age != nil {
			*age = d
		}
		if n, err := ParseRetentionBytes(b.MaxBytes); err == nil && b.MaxBytes != "" && bytes != nil {
			*bytes = n
		}
		if count != nil && b.MaxCount > 0 {
			*count = b.MaxCount
		}
	}
	set(r.Receipts, &out.ReceiptMaxAge, &out.ReceiptMaxBytes, &out.ReceiptMaxCount)
	set(r.Sources, &out.SourceMaxAge, &out.SourceMaxBytes, nil)
	set(r.Actions, &out.ActionMaxAge, nil, nil)
	return out
}

// ParseRetentionAge reads "180d", "36h", "90m" or any Go duration.
func ParseRetentionAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, fmt.Errorf("%q is not a number of days (1 to 36500)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a duration such as \"180d\", \"36h\" or \"90m\"", s)
	}
	return d, nil
}

// ParseRetentionBytes reads "2GiB", "500MB", "64KiB" or a whole number of
// bytes.
func ParseRetentionBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as \"2GiB\", \"500MB\" or a number of bytes", s)
	}
	return n * mult, nil
}

// validate checks one kind's bounds; count tells whether MaxCount applies.
func (c *checker) retentionBounds(field string, b *RetentionBounds, count, bytes bool) {
	if b == nil {
		return
	}
	if b.MaxAge != "" {
		if d, err := ParseRetentionAge(b.MaxAge); err != nil {
			c.add(field+".maxAge", "%v", err)
		} else if d < MinRetentionAge {
			c.add(field+".maxAge", "must be at least %s", MinRetentionAge)
		}
	}
	if b.MaxBytes != "" {
		switch n, err := ParseRetentionBytes(b.MaxBytes); {
		case !bytes:
			c.add(field+".maxBytes", "does not apply here: only maxAge does")
		case err != nil:
			c.add(field+".maxBytes", "%v", err)
		case n < MinRetentionBytes:
			c.add(field+".maxBytes", "must be at least %d bytes (64KiB)", MinRetentionBytes)
		}
	}
	switch {
	case b.MaxCount < 0:
		c.add(field+".maxCount", "must be a positive number (omit it for no limit)")
	case b.MaxCount > 0 && !count:
		c.add(field+".maxCount", "does not apply here: only receipts have a count limit")
	}
}

func (c *checker) retention(r *RetentionSettings) {
	if r == nil {
		return
	}
	c.retentionBounds("retention.receipts", r.Receipts, true, true)
	c.retentionBounds("retention.sources", r.Sources, false, true)
	c.retentionBounds("retention.actions", r.Actions, false, false)
}
