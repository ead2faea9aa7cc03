package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon/present"
	"github.com/pikod/pikod/rpc"
)

// actionsResult serves extensions.mcp.actions.result: the outcome of an
// action that has ended, as its approver was answered, rebuilt from the
// ledger, the receipt and the retained result. It decides nothing and
// sends nothing: any local tool may ask what became of an action.
func (d *daemon) actionsResult(ctx context.Context, _ *rpc.Request, p *contracts.ActionParams) (any, error) {
	a, err := d.requestedAction(ctx, p.ActionID)
	if err != nil {
		return nil, err
	}
	res := contracts.CallResult{Server: a.Server, Tool: a.Tool, ActionID: a.ID, Digest: a.Digest}
	switch a.State {
	case contracts.ActionPrepared, contracts.ActionApproved, contracts.ActionDispatched:
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionPending,
			"action %s is %s: it has no result yet", a.ID, a.State), present.Advice(a))
	case contracts.ActionRejected, contracts.ActionExpired, contracts.ActionStale:
		res.Status, res.NotSent = a.State, true
		res.Error = contracts.ToError(contracts.Errorf(contracts.ErrFailedPrecondition, endReason(a.State), "%s", endMessage(a)))
		return res, nil
	}
	res.ReceiptKind = a.Kind
	res.ReceiptID = a.ReceiptID
	res.NotSent = a.NotSent
	status := a.State
	if a.ReceiptID != "" {
		rec, err := d.ledger.Receipt(a.ReceiptID)
		if err != nil {
			return nil, err
		}
		status = rec.Status
		if rec.Error != "" {
			res.Error = contracts.ToError(contracts.Errorf(contracts.ErrUpstream, callReason(rec.Status), "%s", rec.Error))
		}
	}
	res.Status = callStatus(status)
	if res.Status != contracts.CallCompleted && res.Error == nil {
		res.Error = contracts.ToError(contracts.Errorf(contracts.ErrUpstream, callReason(res.Status), "%s", endMessage(a)))
	}
	if a.SourceID == "" {
		return res, nil
	}
	res.OriginalResultSourceID = a.SourceID
	text, err := d.sources.Text(a.SourceID, contracts.MaxActionResultBytes)
	var we *contracts.Error
	switch {
	case errors.As(err, &we) && we.Reason() == contracts.ReasonSourceTooLarge:
		res.Truncated = true
		res.Content = present.NoticeContent(fmt.Sprintf("the result is larger than %d bytes: read it whole with source.read %s", contracts.MaxActionResultBytes, a.SourceID))
		return res, nil
	case err != nil:
		return nil, err
	}
	content, structured, isError, truncated, err := present.Preview(text, present.PreviewLimits{})
	if err != nil {
		return nil, fmt.Errorf("the retained result of action %s is not a tool result (%v): read it with source.read %s: %w", a.ID, err, a.SourceID, contracts.ErrUpstream)
	}
	res.Content, res.StructuredContent, res.IsError, res.Truncated = content, structured, isError, truncated
	return res, nil
}

// callStatus maps an ended action's or receipt's state to a call status.
func callStatus(state string) string {
	switch state {
	case contracts.ActionCompleted: // the same word as contracts.CallCompleted
		return contracts.CallCompleted
	case contracts.ActionUncertain: // and contracts.CallUncertain
		return contracts.CallUncertain
	}
	return contracts.CallFailed
}

// endReason is the data.reason of an action that ended without a call
// (rejected, expired or stale).
func endReason(state string) string {
	switch state {
	case contracts.ActionRejected:
		return contracts.ReasonActionRejected
	case contracts.ActionExpired:
		return contracts.ReasonActionExpired
	}
	return contracts.ReasonActionStale
}

// callReason is the data.reason of an ended call's error, by its status
// (a receipt's is completed, failed or uncertain).
func callReason(status string) string {
	switch status {
	case contracts.CallCompleted:
		return contracts.ReasonCallCompleted
	case contracts.CallUncertain:
		return contracts.ReasonCallUncertain
	}
	return contracts.ReasonCallFailed
}

// endMessage says how an action ended and what that means.
func endMessage(a approvals.Action) string {
	msg := fmt.Sprintf("action %s is %s", a.ID, a.State)
	if a.Reason != "" {
		msg += ": " + a.Reason
	}
	if adv := present.Advice(a); adv != "" {
		msg += " (" + adv + ")"
	}
	return msg
}
