package mcpclient

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// TestSupervisorNoisyServerDisconnected runs the fixture flooding
// notifications against small budgets: while over budget the connection
// still answers (the flood is dropped and counted), and once over budget
// for the limit the server is disconnected, its process ended, with a
// lastError that says why; the counts stay in status.
func TestSupervisorNoisyServerDisconnected(t *testing.T) {
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.Budgets = Budgets{Notifications: Budget{PerSecond: 50}, Log: Budget{PerSecond: 50}, OverBudgetLimit: 3 * time.Second}
	})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("noisy", "--flood-notifications", "1000")})
	st, err := h.sup.Connect(ctx, "noisy")
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	pid := st.PID
	// Over budget but not yet for long: requests are answered.
	h.waitStatus("noisy", "dropping", func(st contracts.ServerStatus) bool { return st.Dropped != nil })
	if _, err := h.sup.Ping(ctx, "noisy"); err != nil {
		t.Errorf("ping while the server floods: %v", err)
	}
	st = h.waitStatus("noisy", "failed", func(st contracts.ServerStatus) bool { return st.State == contracts.StateFailed })
	if !regexp.MustCompile(`^the server sent \d+ (notifications|log messages) in 3 s, over the budget of 50 per second and \d+ MiB per minute; disconnected \(pikod does not reconnect by itself: fix the server, then 'pikoctl mcp connect noisy'\)$`).MatchString(st.LastError) {
		t.Errorf("lastError = %q", st.LastError)
	}
	if st.Dropped == nil || st.Dropped.Notifications == 0 || st.Dropped.LogMessages == 0 {
		t.Errorf("dropped = %+v, want both kinds counted", st.Dropped)
	}
	deadline := time.Now().Add(15 * time.Second)
	for exists(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the noisy server's process %d still exists after the disconnect", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The log says so once per spell, not once per message.
	if n := strings.Count(h.logs.String(), "server over its budget"); n < 2 || n > 10 {
		t.Errorf("%d log lines about the budget for %+v dropped messages; want one per kind and spell", n, st.Dropped)
	}
	// The counts stay, and stop growing.
	before := h.status("noisy").Dropped
	time.Sleep(200 * time.Millisecond)
	if after := h.status("noisy").Dropped; *after != *before {
		t.Errorf("dropped counts still growing after the disconnect: %+v then %+v", before, after)
	}
}

// TestListChangedDeferredWhileOverBudget: a list_changed that arrives
// while the server is over budget is not acted on at once (catalog
// requests do not wait on it), and not lost either: the catalog is
// re-discovered once the server has been quiet for a while.
func TestListChangedDeferredWhileOverBudget(t *testing.T) {
	h := newHarness(t, CatalogLimits{}, func(o *Options) {
		o.Budgets = Budgets{Log: Budget{PerSecond: 20}, OverBudgetLimit: time.Minute}
	})
	ctx := ctxT(t)
	h.sup.Apply([]contracts.ServerSettings{h.stdio("fx")})
	if _, err := h.sup.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	first, err := h.sup.Catalog(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := h.sup.session("fx")
	sess.mu.Lock()
	c := sess.conn
	sess.mu.Unlock()
	logLine := mcp.JSONRPCNotification{Notification: mcp.Notification{Method: string(mcp.MethodNotificationMessage),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": "info", "data": "noise"}}}}
	for range 100 {
		c.onNotification(logLine)
	}
	if !c.noise.over(time.Now()) {
		t.Fatal("100 log lines at once against a budget of 20 per second: not over budget")
	}
	c.onNotification(mcp.JSONRPCNotification{Notification: mcp.Notification{Method: string(mcp.MethodNotificationToolsListChanged)}})
	during, err := h.sup.Catalog(ctx, "fx")
	if err != nil || during.DiscoveredAt != first.DiscoveredAt {
		t.Fatalf("catalog while over budget = discovered %s, %v; want the current one (%s) without waiting", during.DiscoveredAt, err, first.DiscoveredAt)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		cat, err := h.sup.Catalog(ctx, "fx")
		if err != nil {
			t.Fatal(err)
		}
		if cat.DiscoveredAt != first.DiscoveredAt {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deferred list_changed never led to a re-discovery")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := h.status("fx"); st.State != contracts.StateConnected || st.Dropped == nil || st.Dropped.LogMessages == 0 {
		t.Errorf("status = %s, dropped %+v; want connected with dropped log messages", st.State, st.Dropped)
	}
}
