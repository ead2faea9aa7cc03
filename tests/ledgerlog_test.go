package tests

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestLedgerLogsCrashRecovery kills pikod with SIGKILL while an autonomous
// call is out: the next start settles the action as uncertain and its log
// says so, naming the action, server, tool, state and reason (never the
// arguments).
func TestLedgerLogsCrashRecovery(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, callsServer("fx", filepath.Join(t.TempDir(), "calls.log"))))
	connectServer(t, d, "fx")
	c := d.client(t)
	out := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(method string, _ json.RawMessage) {
		if method == contracts.NotifyMCPProgress {
			once.Do(func() { close(out) })
		}
	})
	const args = `{"ms":30123}`
	slow := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var res contracts.CallResult
		slow <- c.Call(ctx, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "sleep", Arguments: json.RawMessage(args)}, &res)
	}()
	select {
	case <-out:
	case err := <-slow:
		t.Fatalf("the slow call ended before it reported progress: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("no progress from the slow call")
	}
	d.kill9()
	<-slow
	d.start(t)

	var list contracts.ActionsListResult
	d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{State: contracts.ActionUncertain}, &list)
	if len(list.Actions) != 1 || list.Actions[0].Tool != "sleep" {
		t.Fatalf("uncertain actions after kill -9 = %+v, want the sleep call", list.Actions)
	}
	id := list.Actions[0].ID
	line := d.waitLog(t, "action settled at startup", id)
	var entry map[string]any
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	if entry["component"] != "ledger" || entry["level"] != "warn" || entry["server"] != "fx" || entry["tool"] != "sleep" ||
		entry["state"] != contracts.ActionUncertain || !strings.Contains(entry["reason"].(string), "may have acted") {
		t.Errorf("recovery log line = %s; want a ledger warning naming fx/sleep, uncertain and why", line)
	}
	d.waitLog(t, "recovered the ledger after an unclean stop", `"uncertain":1`)
	for _, l := range d.logLines(t, id) {
		if strings.Contains(l, "30123") {
			t.Errorf("a log line shows the call's arguments: %s", l)
		}
	}
}
