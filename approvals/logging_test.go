package approvals

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
	"github.com/rs/zerolog"
)

// logBuffer collects a ledger's JSON log lines.
type logBuffer struct{ testsupport.Buffer }

// lines returns the decoded log lines whose message contains msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(b.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if s, _ := m["message"].(string); strings.Contains(s, msg) {
			out = append(out, m)
		}
	}
	return out
}

func TestRecoveryIsLogged(t *testing.T) {
	in := newInstance(t)
	approved := in.prepare()
	in.l.Approve(approved.ID, approved.Digest, fp0)
	dispatched := in.prepare()
	in.l.Approve(dispatched.ID, dispatched.Digest, fp0)
	in.l.MarkDispatched(dispatched.ID)
	in.prepare() // still prepared: nothing to settle

	logs := &logBuffer{}
	in.opts = append(in.opts, WithLogger(zerolog.New(logs)))
	in.restart()

	settled := logs.lines(t, "action settled at startup")
	byID := map[string]map[string]any{}
	for _, m := range settled {
		byID[m["action"].(string)] = m
	}
	if len(settled) != 2 {
		t.Fatalf("logged %d settled actions, want 2: %v", len(settled), settled)
	}
	for _, w := range []struct {
		id, state, reason string
		notSent           bool
	}{
		{approved.ID, contracts.ActionFailed, ReasonStoppedBeforeSend, true},
		{dispatched.ID, contracts.ActionUncertain, ReasonStoppedWhileOut, false},
	} {
		m := byID[w.id]
		if m == nil || m["state"] != w.state || m["reason"] != w.reason || m["server"] != "files" || m["tool"] != "write" ||
			m["not_sent"] != w.notSent || m["level"] != "warn" {
			t.Errorf("log for %s = %v; want warn, state %s, not_sent %v, reason %q, server and tool", w.id, m, w.state, w.notSent, w.reason)
		}
	}
	summary := logs.lines(t, "recovered the ledger after an unclean stop")
	if len(summary) != 1 || summary[0]["actions"] != 2.0 || summary[0][contracts.ActionUncertain] != 1.0 || summary[0][contracts.ActionFailed] != 1.0 {
		t.Errorf("recovery summary = %v; want 2 actions, 1 uncertain, 1 failed", summary)
	}
	// The arguments the owner reviewed are never logged.
	if strings.Contains(logs.String(), "<a&b>") || strings.Contains(logs.String(), `\u003ca\u0026b\u003e`) {
		t.Errorf("the log shows an action's arguments:\n%s", logs.String())
	}

	// A clean restart settles nothing and says nothing about it.
	logs.Reset()
	in.restart()
	if got := logs.lines(t, "recover"); len(got) != 0 {
		t.Errorf("a clean restart logged %v", got)
	}
}

func TestReceiptWriteFailureIsLogged(t *testing.T) {
	logs := &logBuffer{}
	in := &instance{t: t, dir: t.TempDir(), clk: newClock(), opts: []LedgerOption{WithLogger(zerolog.New(logs))}}
	in.open()
	r := in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: "files", Tool: "read", Status: "completed"})
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	// The database goes away under the ledger: the next group of read
	// receipts cannot be stored.
	if err := in.db.Close(); err != nil {
		t.Fatal(err)
	}
	in.db = nil
	lost := in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: "files", Tool: "read", Status: "completed"})
	if err := in.l.FlushReceipts(); err == nil {
		t.Fatal("FlushReceipts on a closed database succeeded")
	}
	failed := logs.lines(t, "storing read receipts failed")
	if len(failed) == 0 {
		t.Fatalf("no log line for the failed receipt write; log:\n%s", logs.String())
	}
	m := failed[0]
	ids, _ := m["receipt_ids"].([]any)
	if m["level"] != "error" || m["error"] == nil || m["receipts"] != 1.0 || len(ids) != 1 || ids[0] != lost.ID {
		t.Errorf("failure log = %v; want error level, the error, 1 receipt and its id %s", m, lost.ID)
	}
	if ids[0] == r.ID {
		t.Errorf("the stored receipt %s is named as failed", r.ID)
	}
	if err := in.l.Close(); err == nil {
		t.Error("Close with a receipt it could not store reported no error")
	}
	in.l = nil
}
