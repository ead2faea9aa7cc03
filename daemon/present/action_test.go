package present

import (
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// TestAdvice: every state tells the owner what they can do, and never
// suggests sending again what may have had an effect.
func TestAdvice(t *testing.T) {
	for _, c := range []struct {
		a    approvals.Action
		want []string
	}{
		{approvals.Action{ID: "act_1", State: contracts.ActionPrepared}, []string{"pikoctl mcp review act_1", "approve or reject"}},
		{approvals.Action{State: contracts.ActionApproved}, []string{"about to send"}},
		{approvals.Action{State: contracts.ActionDispatched}, []string{"the call is out"}},
		{approvals.Action{State: contracts.ActionCompleted, ReceiptID: "rcpt_1"}, []string{"done; receipt rcpt_1"}},
		{approvals.Action{State: contracts.ActionCompleted}, []string{"done"}},
		{approvals.Action{State: contracts.ActionFailed}, []string{"nothing more will happen"}},
		{approvals.Action{State: contracts.ActionFailed, NotSent: true}, []string{"nothing was sent", "make the call again"}},
		{approvals.Action{State: contracts.ActionUncertain, Server: "files"}, []string{"check files", "will not resend"}},
		{approvals.Action{State: contracts.ActionRejected}, []string{"nothing was sent"}},
		{approvals.Action{State: contracts.ActionExpired}, []string{"nothing was sent", "prepare a new action"}},
		{approvals.Action{State: contracts.ActionStale}, []string{"nothing was sent", "current server"}},
	} {
		adv := Advice(c.a)
		for _, w := range c.want {
			if !strings.Contains(adv, w) {
				t.Errorf("%s (notSent %v): advice %q lacks %q", c.a.State, c.a.NotSent, adv, w)
			}
		}
	}
}

// TestSummary: the list's view of an action carries what the record
// holds, its times in UTC, and its advice.
func TestSummary(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 0, 0, time.FixedZone("x", 3600))
	a := approvals.Action{ID: "act_1", State: contracts.ActionCompleted, Kind: contracts.ReceiptTaskCancel, Server: "s", Tool: "t",
		CreatedAt: at, UpdatedAt: at, ExpiresAt: at, ReceiptID: "rcpt_1", NotSent: true, ArgumentsPruned: true,
		Caller: contracts.Caller{PID: 7}}
	s := Summary(a)
	if s.ID != a.ID || s.State != a.State || s.Kind != contracts.ReceiptTaskCancel || s.ReceiptID != "rcpt_1" || !s.NotSent ||
		!s.ArgumentsPruned || s.Caller != a.Caller || s.Advice != Advice(a) {
		t.Errorf("Summary = %+v", s)
	}
	if s.CreatedAt != "2026-12-01T17:00:00Z" || s.ExpiresAt != "2026-12-01T17:00:00Z" {
		t.Errorf("times %q, %q; want UTC RFC 3339", s.CreatedAt, s.ExpiresAt)
	}
	if s := Summary(approvals.Action{}); s.ExpiresAt != "" {
		t.Errorf("an action without expiry shows %q", s.ExpiresAt)
	}
}
