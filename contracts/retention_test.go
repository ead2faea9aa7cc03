package contracts

import (
	"strings"
	"testing"
	"time"
)

func TestRetentionSettings(t *testing.T) {
	s, err := ParseMCPSettings([]byte(`{"servers": [], "retention": {"receipts": {"maxAge": "90d", "maxBytes": "500MB", "maxCount": 1000},
		"sources": {"maxBytes": 1048576}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Retention.Resolved()
	if r.ReceiptMaxAge != 90*24*time.Hour || r.ReceiptMaxBytes != 500e6 || r.ReceiptMaxCount != 1000 ||
		r.SourceMaxBytes != 1<<20 || r.SourceMaxAge != 0 || r.ActionMaxAge != DefaultActionMaxAge {
		t.Errorf("resolved %+v", r)
	}
	ages, err := ParseMCPSettings([]byte(`{"servers": [], "retention": {"sources": {"maxAge": "7d"}, "actions": {"maxAge": "36h"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := ages.Retention.Resolved(); r.SourceMaxAge != 7*24*time.Hour || r.ActionMaxAge != 36*time.Hour || r.SourceMaxBytes != DefaultSourceMaxBytes {
		t.Errorf("ages resolved %+v", r)
	}
	if d := (*RetentionSettings)(nil).Resolved(); d.ReceiptMaxAge != DefaultReceiptMaxAge || d.ReceiptMaxBytes != DefaultReceiptMaxBytes ||
		d.SourceMaxBytes != DefaultSourceMaxBytes || d.ActionMaxAge != DefaultActionMaxAge || d.ReceiptMaxCount != 0 {
		t.Errorf("defaults %+v", d)
	}
	// The canonical form reads back the same.
	back, err := ParseMCPSettings(s.Canonical())
	if err != nil || back.Retention.Resolved() != r {
		t.Errorf("canonical form %s: %v", s.Canonical(), err)
	}
	for in, want := range map[string]string{
		`{"receipts": {"maxAge": "soon"}}`:  `retention.receipts.maxAge: "soon" is not a duration`,
		`{"receipts": {"maxAge": "10s"}}`:   "retention.receipts.maxAge: must be at least 1m0s",
		`{"sources": {"maxBytes": "1KB"}}`:  "retention.sources.maxBytes: must be at least 65536 bytes",
		`{"actions": {"maxBytes": "1GiB"}}`: "retention.actions.maxBytes: does not apply here",
		`{"sources": {"maxCount": 5}}`:      "retention.sources.maxCount: does not apply here",
		`{"receipt": {}}`:                   "retention.receipt: unknown property",
		`{"receipts": {"maxAge": "1y"}}`:    `"1y" is not a duration`,
		`{"actions": {"maxAge": "30s"}}`:    "retention.actions.maxAge: must be at least 1m0s",
		`{"sources": {"maxAge": "a week"}}`: `retention.sources.maxAge: "a week" is not a duration`,
		`[]`:                                "retention: must be an object",
	} {
		_, err := ParseMCPSettings([]byte(`{"servers": [], "retention": ` + in + `}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("retention %s: %v, want %q", in, err, want)
		}
	}
}
