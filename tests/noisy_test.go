package tests

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// cpuTicks is a process's CPU time so far (utime + stime from
// /proc/PID/stat), in clock ticks.
func cpuTicks(t testing.TB, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("reading pikod's CPU time: %v", err)
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	// Fields 14 and 15 of stat; f[0] is field 3.
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing %q: %v %v", b, err1, err2)
	}
	return utime + stime
}

// TestNoisyServerThrottled connects a server that sends notifications
// non-stop (log lines and progress nobody asked for, 1,000 a second: 500 of each
// kind against budgets of 300):
// pikod drops what is over the server's budgets and counts it in status
// while the server stays usable, disconnects it once it has been over
// budget for 30 s with a lastError saying so, and then its CPU time stops
// growing. Another server is unaffected throughout.
func TestNoisyServerThrottled(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		stdioFixture("noisy", "--flood-notifications", "1000").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"}),
		stdioFixture("calm").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"})))
	connectServer(t, d, "calm")
	noisy := connectServer(t, d, "noisy")
	connected := time.Now()
	pikod := d.current().pid()
	server := trackProc(t, noisy.PID)

	st := waitServer(t, d, "noisy", "dropping notifications", func(st contracts.ServerStatus) bool {
		return st.Dropped != nil && st.Dropped.Notifications > 0 && st.Dropped.LogMessages > 0
	})
	if st.State != contracts.StateConnected {
		t.Fatalf("noisy is %s once it started dropping, want still connected: %+v", st.State, st)
	}
	// Over budget, not yet for long: both servers answer.
	for _, id := range []string{"noisy", "calm"} {
		if res := callTool(t, d, id, "echo", `{"text":"still here"}`); res.Status != contracts.CallCompleted {
			t.Errorf("echo on %s during the flood: %+v", id, res)
		}
	}
	// The flood costs pikod CPU: the measurement below means something.
	before := cpuTicks(t, pikod)
	time.Sleep(2 * time.Second)
	if during := cpuTicks(t, pikod) - before; during <= 1 {
		t.Fatalf("pikod used %d ticks in 2 s of flood; the CPU check cannot tell idle from busy", during)
	} else {
		t.Logf("pikod used %d ticks in 2 s of flood", during)
	}

	deadline := connected.Add(DefaultBudgetLimit + waitTimeout)
	for st.State == contracts.StateConnected {
		if time.Now().After(deadline) {
			t.Fatalf("noisy still connected %v after connecting, flooding all along: %+v", time.Since(connected).Round(time.Second), st)
		}
		time.Sleep(500 * time.Millisecond)
		st = serverStatus(t, d, "noisy")
	}
	took := time.Since(connected)
	t.Logf("noisy is %s after %v: %s", st.State, took.Round(100*time.Millisecond), st.LastError)
	if took < DefaultBudgetLimit-time.Second {
		t.Errorf("disconnected %v after connecting, before it had been over budget for %v", took, DefaultBudgetLimit)
	}
	m := regexp.MustCompile(`^the server sent (\d+) (notifications|log messages) in 30 s, over the budget of 300 per second and \d+ MiB per minute; disconnected \(pikod does not reconnect by itself: fix the server, then 'pikoctl mcp connect noisy'\)$`).
		FindStringSubmatch(st.LastError)
	if st.State != contracts.StateFailed || m == nil {
		t.Fatalf("state %s, lastError %q; want failed with the budget message", st.State, st.LastError)
	}
	if n, _ := strconv.Atoi(m[1]); n < 30*400 {
		t.Errorf("lastError counts %d %s in 30 s; the fixture sent about 500 a second of each", n, m[2])
	}
	if st.Dropped == nil || st.Dropped.Notifications < 3000 || st.Dropped.LogMessages < 3000 {
		t.Errorf("dropped = %+v, want both in the thousands (about 200 a second each)", st.Dropped)
	}
	poll(t, "the noisy server's process to end", func() bool { return !server.running() }, nil)
	out, _, code := runCtl(t, d, "", "mcp", "status", "noisy")
	if code != 0 || !strings.Contains(out, "dropped:") || !strings.Contains(out, "over the budget of 300 per second") {
		t.Errorf("pikoctl mcp status noisy (exit %d) does not show the drops and the reason:\n%s", code, out)
	}
	if res := callTool(t, d, "calm", "echo", `{"text":"after"}`); res.Status != contracts.CallCompleted {
		t.Errorf("echo on calm after the flood: %+v", res)
	}

	// With the flood gone (and the calm server, whose process pikod
	// watches, disconnected), pikod's CPU time stops growing: two readings
	// 2 s apart within a tick of each other.
	if _, err := d.tryCall(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "calm"}); err != nil {
		t.Fatal(err)
	}
	var last, now uint64
	poll(t, "pikod's CPU time to stop growing", func() bool {
		last = cpuTicks(t, pikod)
		time.Sleep(2 * time.Second)
		now = cpuTicks(t, pikod)
		return now-last <= 1
	}, func() string { return fmt.Sprintf("last 2 s: %d ticks", now-last) })
	t.Logf("pikod idle: %d ticks in 2 s", now-last)
}

// DefaultBudgetLimit is how long a server may stay over budget before
// pikod disconnects it (mcpclient.DefaultOverBudgetLimit; the README's
// number).
const DefaultBudgetLimit = 30 * time.Second
