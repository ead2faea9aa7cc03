package present

import (
	"fmt"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// Advice says what the owner can do about a in its state.
func Advice(a approvals.Action) string {
	switch a.State {
	case contracts.ActionPrepared:
		return fmt.Sprintf("review with 'pikoctl mcp review %s', then approve or reject", a.ID)
	case contracts.ActionApproved:
		return "approved; pikod is about to send it"
	case contracts.ActionDispatched:
		return "the call is out; its result will be recorded here"
	case contracts.ActionCompleted:
		if a.ReceiptID != "" {
			return "done; receipt " + a.ReceiptID
		}
		return "done"
	case contracts.ActionFailed:
		if a.NotSent {
			return "nothing was sent; make the call again to prepare it again (an approval must be given again)"
		}
		return "nothing more will happen"
	case contracts.ActionUncertain:
		return fmt.Sprintf("the outcome is unknown: check %s for the effect before preparing the call again; pikod will not resend it", a.Server)
	case contracts.ActionRejected:
		return "nothing was sent"
	case contracts.ActionExpired:
		return "nothing was sent; make the call again to prepare a new action"
	case contracts.ActionStale:
		return "nothing was sent; make the call again to prepare an action against the current server"
	}
	return ""
}

// Summary is a as extensions.mcp.actions.list shows it.
func Summary(a approvals.Action) contracts.ActionSummary {
	s := contracts.ActionSummary{
		ID: a.ID, State: a.State, Kind: a.Kind, Server: a.Server, Tool: a.Tool,
		CreatedAt: a.CreatedAt.UTC().Format(time.RFC3339),
		UpdatedAt: a.UpdatedAt.UTC().Format(time.RFC3339),
		Reason:    a.Reason, Advice: Advice(a), ReceiptID: a.ReceiptID, NotSent: a.NotSent,
		ArgumentsPruned: a.ArgumentsPruned, Caller: a.Caller,
	}
	if !a.ExpiresAt.IsZero() {
		s.ExpiresAt = a.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return s
}
