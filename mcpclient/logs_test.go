package mcpclient

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
)

func entry(level, text string) contracts.LogEntry {
	data, _ := json.Marshal(text)
	return contracts.LogEntry{Level: level, Data: data}
}

func TestLogRingBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		r := newLogRing(5, 1<<20)
		at := time.Unix(1000, 0)
		for i := 1; i <= 12; i++ {
			e := r.add(entry("info", fmt.Sprint(i)), at.Add(time.Duration(i)*time.Second))
			if e.ID != uint64(i) {
				t.Fatalf("entry %d got id %d", i, e.ID)
			}
		}
		got, kept, evicted, last := r.read(logQuery{})
		if kept != 5 || evicted != 7 || last != 12 || len(got) != 5 {
			t.Fatalf("kept %d evicted %d last %d entries %d; want 5, 7, 12, 5", kept, evicted, last, len(got))
		}
		for i, e := range got {
			if want := uint64(8 + i); e.ID != want || string(e.Data) != fmt.Sprintf("%q", fmt.Sprint(want)) {
				t.Errorf("entry %d = id %d data %s, want the newest five in order", i, e.ID, e.Data)
			}
		}
	})
	t.Run("bytes", func(t *testing.T) {
		r := newLogRing(1000, 4096)
		big := strings.Repeat("x", 1000)
		for range 50 {
			r.add(entry("info", big), time.Now())
		}
		_, kept, evicted, last := r.read(logQuery{})
		if kept >= 5 || kept < 1 || evicted != uint64(50-kept) || last != 50 {
			t.Fatalf("kept %d evicted %d last %d; want at most 4 KiB kept and the rest evicted", kept, evicted, last)
		}
		r.mu.Lock()
		bytes := r.bytes
		r.mu.Unlock()
		if bytes > 4096 {
			t.Errorf("ring holds %d bytes, over its bound of 4096", bytes)
		}
	})
	t.Run("the newest entry stays even when larger than the bound", func(t *testing.T) {
		r := newLogRing(10, 100)
		r.add(entry("info", "small"), time.Now())
		r.add(entry("info", strings.Repeat("y", 500)), time.Now())
		got, kept, _, _ := r.read(logQuery{})
		if kept != 1 || got[0].ID != 2 {
			t.Fatalf("kept %d (%+v), want only the newest", kept, got)
		}
	})
}

func TestLogRingRead(t *testing.T) {
	r := newLogRing(100, 1<<20)
	t0 := time.Unix(5000, 0)
	levels := []string{"debug", "info", "warning", "error", "bogus", "emergency"}
	for i, l := range levels {
		r.add(entry(l, l), t0.Add(time.Duration(i)*time.Second))
	}
	ids := func(q logQuery) string {
		got, _, _, _ := r.read(q)
		var s []string
		for _, e := range got {
			s = append(s, fmt.Sprint(e.ID))
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name string
		q    logQuery
		want string
	}{
		{"all", logQuery{}, "1,2,3,4,5,6"},
		{"warning and above (an unknown level counts as debug)", logQuery{minRank: contracts.LogLevelRank("warning")}, "3,4,6"},
		{"after an id", logQuery{after: 4}, "5,6"},
		{"since a time", logQuery{since: t0.Add(2 * time.Second)}, "4,5,6"},
		{"limit keeps the newest", logQuery{limit: 2}, "5,6"},
		{"filters combine", logQuery{minRank: contracts.LogLevelRank("info"), after: 1, limit: 2}, "4,6"},
		{"after the last", logQuery{after: 6}, ""},
	}
	for _, tt := range tests {
		if got := ids(tt.q); got != tt.want {
			t.Errorf("%s: ids %q, want %q", tt.name, got, tt.want)
		}
	}
	if got, _, _, _ := r.read(logQuery{after: 99}); got == nil {
		t.Error("read returned a nil slice; want an empty list (it is JSON [] on the wire)")
	}
}

func TestLogEntryOfIsSafe(t *testing.T) {
	const secret = "sk-live-CANARY-123456"
	sup := NewSupervisor(Options{Log: zerolog.Nop(), Redact: func(s string) string {
		return strings.ReplaceAll(s, secret, "[REDACTED]")
	}})
	defer sup.Close()

	deep := any("bottom")
	for range 40 {
		deep = map[string]any{"d": deep}
	}
	tests := []struct {
		name          string
		params        map[string]any
		wantLevel     string
		wantIn        []string
		wantNotIn     []string
		wantTruncated bool
		maxData       int
	}{
		{
			name:      "string data: redacted, control characters rendered",
			params:    map[string]any{"level": "warning", "logger": "db\x1b[31m", "data": "token " + secret + "\x1b]0;title\x07 end\nline 2"},
			wantLevel: "warning",
			wantIn:    []string{"[REDACTED]", `\\u{001B}]0;title\\u{0007}`, `\nline 2`},
			wantNotIn: []string{secret, "\x1b", "\\u001b"},
		},
		{
			name: "object data: keys and nested strings redacted",
			params: map[string]any{"level": "error", "data": map[string]any{
				secret: []any{"a " + secret, 1.5, true, nil}, "n": 3.0}},
			wantLevel: "error",
			wantIn:    []string{`"[REDACTED]":["a [REDACTED]",1.5,true,null]`, `"n":3`},
			wantNotIn: []string{secret},
		},
		{
			name:          "too deep: cut",
			params:        map[string]any{"level": "info", "data": deep},
			wantLevel:     "info",
			wantIn:        []string{"…"},
			wantNotIn:     []string{"bottom"},
			wantTruncated: true,
		},
		{
			name:          "too large: the start of its JSON as a string",
			params:        map[string]any{"level": "info", "data": []any{strings.Repeat("z", 3000), strings.Repeat("z", 3000), strings.Repeat("z", 3000) + secret}},
			wantLevel:     "info",
			wantIn:        []string{`"[\"zzz`},
			wantNotIn:     []string{secret},
			wantTruncated: true,
			maxData:       maxLogData,
		},
		{
			name:          "a long string: cut, and said so",
			params:        map[string]any{"level": "info", "data": map[string]any{"s": strings.Repeat("w", maxLogString+10)}},
			wantLevel:     "info",
			wantIn:        []string{strings.Repeat("w", maxLogString-1) + "…"},
			wantNotIn:     []string{strings.Repeat("w", maxLogString+1)},
			wantTruncated: true,
		},
		{
			name:      "no level",
			params:    map[string]any{"data": "x"},
			wantLevel: "unknown",
		},
	}
	for _, tt := range tests {
		e := sup.logEntryOf(tt.params)
		data := string(e.Data)
		if e.Level != tt.wantLevel || e.Truncated != tt.wantTruncated || !json.Valid(e.Data) {
			t.Errorf("%s: level %q truncated %v valid %v; want %q, %v, valid", tt.name, e.Level, e.Truncated, json.Valid(e.Data), tt.wantLevel, tt.wantTruncated)
		}
		for _, s := range tt.wantIn {
			if !strings.Contains(data, s) {
				t.Errorf("%s: data %.300s lacks %q", tt.name, data, s)
			}
		}
		for _, s := range tt.wantNotIn {
			if strings.Contains(data, s) || strings.Contains(e.Logger, s) {
				t.Errorf("%s: data %.300s (logger %q) holds %q", tt.name, data, e.Logger, s)
			}
		}
		if tt.maxData > 0 && len(data) > tt.maxData {
			t.Errorf("%s: data is %d bytes, over %d", tt.name, len(data), tt.maxData)
		}
		if strings.ContainsAny(e.Logger, "\x1b\n") {
			t.Errorf("%s: logger %q not made safe", tt.name, e.Logger)
		}
	}
}

// TestSupervisorLogging: setLevel reaches a legacy server (logging/setLevel:
// the server then sends what it filtered before) and a 2026-07-28 one (the
// level in every request's _meta: without it the server sends nothing),
// log messages land in the ring and in log events, the level is set again
// on a reconnect, and the ring survives the reconnect.
func TestSupervisorLogging(t *testing.T) {
	var mu sync.Mutex
	var events []contracts.LogEntry
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.Event = func(ev contracts.EventParams) {
			if ev.Kind != contracts.EventLog {
				return
			}
			var e contracts.LogEntry
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Errorf("log event data %s: %v", ev.Data, err)
			}
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	})
	ctx := ctxT(t)
	modern := h.stdio("modern", "--log-tool")
	modern.Protocol = &contracts.Protocol{Pin: "2026-07-28"}
	h.sup.Apply([]contracts.ServerSettings{h.stdio("legacy", "--log-tool"), modern})

	logAt := func(server, level string, count int) {
		t.Helper()
		args := fmt.Sprintf(`{"count":%d,"level":%q,"text":"from %s"}`, count, level, server)
		if res, err := h.sup.CallTool(ctx, server, "log", json.RawMessage(args)); err != nil || strings.Contains(string(res), `"isError":true`) {
			t.Fatalf("log on %s: %s %v", server, res, err)
		}
	}
	waitLogs := func(server string, n int) contracts.LoggingResult {
		t.Helper()
		var res contracts.LoggingResult
		deadline := time.Now().Add(15 * time.Second)
		for {
			var err error
			if res, err = h.sup.Logs(server, LogQuery{}); err != nil {
				t.Fatal(err)
			}
			if len(res.Entries) >= n {
				return res
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d log entries, want %d", server, len(res.Entries), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	for _, server := range []string{"legacy", "modern"} {
		// mcp-go's legacy default level is error; 2026-07-28 sends nothing
		// for a request that does not ask.
		logAt(server, "info", 2)
		logAt(server, "error", 1)
		if _, err := h.sup.SetLogLevel(ctx, server, "debug"); err != nil {
			t.Fatalf("SetLogLevel %s: %v", server, err)
		}
		logAt(server, "debug", 3)
		want := 3
		if server == "legacy" {
			want = 4 // the error line came through before
		}
		res := waitLogs(server, want)
		time.Sleep(200 * time.Millisecond) // nothing more arrives
		if res, _ = h.sup.Logs(server, LogQuery{}); len(res.Entries) != want || res.Level != "debug" {
			t.Fatalf("%s: %d entries at level %q, want %d at debug: %+v", server, len(res.Entries), res.Level, want, res.Entries)
		}
		last := res.Entries[len(res.Entries)-1]
		if last.Level != "debug" || !strings.Contains(string(last.Data), `"text":"from `+server+`"`) || !strings.Contains(string(last.Data), `"n":3`) {
			t.Errorf("%s: last entry %+v", server, last)
		}
	}
	if _, err := h.sup.SetLogLevel(ctx, "legacy", "loud"); reasonOf(err) != "invalid_log_level" {
		t.Errorf("SetLogLevel with a bad level: %v, want invalid_log_level", err)
	}

	// A reconnect keeps the ring and sets the level again.
	before, _ := h.sup.Logs("legacy", LogQuery{})
	if _, err := h.sup.Disconnect(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	logAt("legacy", "debug", 1)
	after := waitLogs("legacy", len(before.Entries)+1)
	if after.Entries[len(after.Entries)-1].ID != before.LastID+1 {
		t.Errorf("after the reconnect the new entry has id %d, want %d (the ring continues)", after.Entries[len(after.Entries)-1].ID, before.LastID+1)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(events) != 3+4+1 {
		t.Errorf("%d log events, want one per entry kept (8)", len(events))
	}
}
