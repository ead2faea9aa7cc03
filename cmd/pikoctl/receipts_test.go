package main

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-03-01T12:00:00Z", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		{"2026-03-01T13:00:00.5+01:00", time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC)},
		{"90m", now.Add(-90 * time.Minute)},
		{"24h", now.Add(-24 * time.Hour)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"1.5d", now.Add(-36 * time.Hour)},
		{"0s", now},
	} {
		got, err := parseSince(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-03-01", "-5m", "d", "7days", "2026-03-01 12:00:00"} {
		if got, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) = %v, want an error", bad, got)
		}
	}
}
