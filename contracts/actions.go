package contracts

import "encoding/json"

// Action states. prepared → approved → dispatched → completed | failed |
// uncertain; prepared → rejected | expired | stale; dispatched → stale when
// the tool's definition moved before the request was written (nothing was
// sent).
const (
	ActionPrepared   = "prepared"
	ActionApproved   = "approved"
	ActionDispatched = "dispatched"
	ActionCompleted  = "completed"
	ActionFailed     = "failed"
	ActionUncertain  = "uncertain"
	ActionRejected   = "rejected"
	ActionExpired    = "expired"
	ActionStale      = "stale"
)

// Decisions of extensions.mcp.actions.approve.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Fingerprints bind a prepared action to the world the owner reviewed:
// approval is refused when any of them moved.
type Fingerprints struct {
	// Settings is the digest of the server's settings entry.
	Settings string `json:"settings"`
	// CredentialGeneration counts changes to the server's credentials.
	CredentialGeneration uint64 `json:"credentialGeneration"`
	// ConnectionGeneration counts the server's successful connects.
	ConnectionGeneration uint64 `json:"connectionGeneration"`
	// Tool is the digest of the tool's definition.
	Tool string `json:"tool"`
}

// ActionsListParams is the params of extensions.mcp.actions.list. State
// filters by state; Limit bounds the answer (default 100, newest first).
type ActionsListParams struct {
	State string `json:"state,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// ActionsListResult is the result of extensions.mcp.actions.list.
type ActionsListResult struct {
	Actions []ActionSummary `json:"actions"`
}

// ActionSummary is one action in a list. Advice tells the owner what to
// do, notably for uncertain actions.
type ActionSummary struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Kind is what approving sends: mcp_approved (a tools/call),
	// mcp_task_create (a task-augmented tools/call that creates a task) or
	// mcp_task_cancel (tasks/cancel; Tool is then "tasks/cancel"); for
	// direct calls the receipt kind they leave.
	Kind      string `json:"kind,omitempty"`
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	CreatedAt string `json:"createdAt"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	UpdatedAt string `json:"updatedAt"`
	Reason    string `json:"reason,omitempty"`
	Advice    string `json:"advice,omitempty"`
	ReceiptID string `json:"receiptId,omitempty"`
	// NotSent is true for a failed action that provably never reached the
	// server ("failed (not sent)"): it can be prepared again.
	NotSent bool `json:"notSent,omitempty"`
	// ArgumentsPruned is true for an action that ended longer ago than
	// retention.actions.maxAge: its arguments and tool description were
	// dropped (its digest, state and receipt stay, as long as the receipt
	// is kept).
	ArgumentsPruned bool `json:"argumentsPruned,omitempty"`
	// Caller is who asked for the call (absent for actions recorded
	// before pikod kept callers). In an ActionReview its text is already
	// made safe to show.
	Caller Caller `json:"caller,omitzero"`
}

// ActionParams names one action: the params of
// extensions.mcp.actions.review and extensions.mcp.actions.result.
type ActionParams struct {
	ActionID string `json:"actionId"`
}

// ActionReview is the result of extensions.mcp.actions.review: exactly
// what approving would send. Every server-supplied string is made safe to
// show (control, escape, bidi and zero-width characters rendered visibly as
// \u{…}); Arguments is the exact JSON that would be sent.
type ActionReview struct {
	ActionSummary
	ToolName        string          `json:"toolName"`
	ToolDescription string          `json:"toolDescription,omitempty"`
	Arguments       json.RawMessage `json:"arguments"`
	// ArgumentsText is Arguments, indented and made safe to show.
	ArgumentsText string       `json:"argumentsText"`
	Fingerprints  Fingerprints `json:"fingerprints"`
	// Digest is what approve must quote.
	Digest string `json:"digest"`
}

// ApproveParams is the params of extensions.mcp.actions.approve. Digest
// must be the one the owner reviewed. Approving is terminal-only: the
// caller must be a person at the owner's terminal, and Passphrase must be
// the owner approval passphrase when one is set (checked before the
// handler runs; never stored or logged). The result is the executed
// call's CallResult (receipt mcp_approved). Rejecting needs neither and
// returns the action's summary in a CallResult with status "rejected".
type ApproveParams struct {
	ActionID   string `json:"actionId"`
	Digest     string `json:"digest"`
	Decision   string `json:"decision"`
	Passphrase string `json:"passphrase,omitempty"`
}

// MaxActionResultBytes is the largest retained result that
// extensions.mcp.actions.result rebuilds whole; a larger one is answered
// with its preview cut short (truncated), to be read with source.read.
const MaxActionResultBytes = 64 << 20

// extensions.mcp.actions.result {actionId} answers, for an action that has
// ended (completed, failed, uncertain, or any end without effect), the
// same CallResult its approver got: status, the bounded preview of the
// retained result, the receipt, and for an end without a call
// (rejected, expired, stale) the state as Status with nothing sent. It is
// how a caller that prepared an action (an agent through pikoctl mcp
// serve) learns the outcome of the owner's decision. An action still
// prepared, approved or dispatched is an error of class
// ErrFailedPrecondition (reason action_pending).
