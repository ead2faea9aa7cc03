package mcpclient

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// feed sends rate messages per second of size bytes, of kind, for d,
// evenly spaced from start; it returns how many passed and the first trip.
func feed(n *noise, kind noiseKind, start time.Time, rate int, size int, d time.Duration) (passed int, trip string, at time.Time) {
	step := time.Second / time.Duration(rate)
	for t := start; t.Before(start.Add(d)); t = t.Add(step) {
		ok, tr := n.admit(kind, size, t)
		if ok {
			passed++
		}
		if tr != "" && trip == "" {
			trip, at = tr, t
		}
	}
	return passed, trip, at
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func TestBudgetHealthyServerNeverDropped(t *testing.T) {
	var dropped [noiseKinds]atomic.Uint64
	n := newNoise(Budgets{}, &dropped, zerolog.Nop())
	// A busy but healthy server: progress 10 times a second and a log
	// line 50 times a second for five minutes, and a burst of 250 at once.
	passed, trip, _ := feed(n, noiseNotification, t0, 10, 120, 5*time.Minute)
	lp, ltrip, _ := feed(n, noiseLog, t0, 50, 300, 5*time.Minute)
	for range 250 {
		if ok, _ := n.admit(noiseLog, 200, t0.Add(5*time.Minute)); ok {
			lp++
		}
	}
	if passed != 3000 || lp != 15250 || trip != "" || ltrip != "" || dropped[0].Load()+dropped[1].Load() != 0 {
		t.Errorf("healthy server: %d/3000 notifications and %d/15250 log lines passed, trips %q %q, dropped %d %d",
			passed, lp, trip, ltrip, dropped[0].Load(), dropped[1].Load())
	}
	if n.over(t0.Add(5 * time.Minute)) {
		t.Error("a healthy server reads as over budget")
	}
}

func TestBudgetFloodDroppedThenDisconnected(t *testing.T) {
	var dropped [noiseKinds]atomic.Uint64
	n := newNoise(Budgets{}, &dropped, zerolog.Nop())
	// 2,000 log lines a second: the budget's 300 pass, the rest are
	// dropped, and 30 s into the spell the server is to be disconnected.
	passed, trip, at := feed(n, noiseLog, t0, 2000, 150, 40*time.Second)
	spell := at.Sub(t0)
	if trip == "" {
		t.Fatal("a server flooding for 40 s was never tripped")
	}
	if spell < DefaultOverBudgetLimit || spell > DefaultOverBudgetLimit+2*time.Second {
		t.Errorf("tripped %v into the flood, want just past %v", spell, DefaultOverBudgetLimit)
	}
	want := regexp.MustCompile(`^the server sent (\d+) log messages in 30 s, over the budget of 300 per second and 4 MiB per minute; disconnected$`)
	m := want.FindStringSubmatch(trip)
	if m == nil {
		t.Fatalf("trip = %q", trip)
	}
	var sent int
	fmt.Sscan(m[1], &sent)
	if sent < 59_000 || sent > 61_000 {
		t.Errorf("trip says %d messages, want about 60,000 (30 s at 2,000/s)", sent)
	}
	if got := dropped[noiseLog].Load(); got == 0 || int(got)+passed != 80_000 {
		t.Errorf("dropped %d, passed %d of 80,000", got, passed)
	}
	if dropped[noiseNotification].Load() != 0 {
		t.Error("a log flood was counted against the notification budget")
	}
	// After the trip nothing passes, of any kind, and there is no second
	// trip.
	if ok, tr := n.admit(noiseNotification, 10, at.Add(time.Hour)); ok || tr != "" {
		t.Errorf("after the trip: admit = %v, %q; want dropped, no second trip", ok, tr)
	}
}

func TestBudgetSpellsEndAfterQuiet(t *testing.T) {
	var dropped [noiseKinds]atomic.Uint64
	n := newNoise(Budgets{}, &dropped, zerolog.Nop())
	// Bursts of 20 s over budget separated by 5 s of silence never add up
	// to 30 s over budget.
	start := t0
	for range 4 {
		if _, trip, _ := feed(n, noiseNotification, start, 1000, 100, 20*time.Second); trip != "" {
			t.Fatalf("tripped by separate 20 s bursts: %q", trip)
		}
		if !n.over(start.Add(20 * time.Second)) {
			t.Error("not over budget right after a burst")
		}
		start = start.Add(25 * time.Second)
		if n.over(start) {
			t.Error("still over budget after 5 s of silence")
		}
	}
	if dropped[noiseNotification].Load() == 0 {
		t.Error("the bursts dropped nothing")
	}
}

func TestBudgetBytes(t *testing.T) {
	var dropped [noiseKinds]atomic.Uint64
	n := newNoise(Budgets{Notifications: Budget{PerSecond: 1000, BytesPerMinute: 1 << 20}, OverBudgetLimit: 10 * time.Second}, &dropped, zerolog.Nop())
	// 20 messages a second is well under the rate; at 64 KiB each they
	// are 75 MiB a minute against a 1 MiB budget.
	passed, trip, _ := feed(n, noiseNotification, t0, 20, 64<<10, 15*time.Second)
	// A minute's worth (16) at once, then 1 MiB a minute (4 in 15 s).
	if passed < 16 || passed > 21 {
		t.Errorf("%d messages of 64 KiB passed in 15 s; the byte budget allows about 20", passed)
	}
	if !strings.Contains(trip, "notifications in 10 s, over the budget of 1000 per second and 1 MiB per minute") {
		t.Errorf("trip = %q", trip)
	}
}

func TestNotificationSize(t *testing.T) {
	small := mcp.JSONRPCNotification{Notification: mcp.Notification{Method: "notifications/progress",
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"progressToken": "t", "progress": 1.0}}}}
	big := mcp.JSONRPCNotification{Notification: mcp.Notification{Method: "notifications/message",
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": "info", "data": []any{strings.Repeat("x", 100_000), map[string]any{"k": nil}}}}}}
	if s := notificationSize(small); s < 50 || s > 200 {
		t.Errorf("size of a small progress notification = %d", s)
	}
	if s := notificationSize(big); s < 100_000 || s > 100_200 {
		t.Errorf("size of a 100 kB log line = %d", s)
	}
}
