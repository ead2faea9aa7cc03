package contracts

import "encoding/json"

// Ops of extensions.mcp.tasks.
const (
	TaskOpList   = "list"
	TaskOpGet    = "get"
	TaskOpResult = "result"
	TaskOpCancel = "cancel"
)

// TasksParams is the params of extensions.mcp.tasks: the legacy
// (2025-11-25) tasks utility of one server. Op list (the default) sends
// tasks/list (one page; Cursor continues), get sends tasks/get for TaskID,
// result sends tasks/result for TaskID (waiting for the task to end, up to
// timeoutMs) and retains the result like a call's, and cancel prepares an
// action (kind mcp_task_cancel) that only the owner can approve; nothing
// is sent until then. On a 2026-07-28 connection every op is refused
// (reason tasks_unsupported) and nothing is sent.
type TasksParams struct {
	Server string `json:"server"`
	Op     string `json:"op,omitempty"`
	TaskID string `json:"taskId,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// TaskInfo is one task as the server last reported it, with what pikod
// recorded of it. Server-supplied strings are made safe to show.
type TaskInfo struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	LastUpdatedAt string `json:"lastUpdatedAt,omitempty"`
	// TTL and PollInterval are milliseconds, as the server gave them.
	TTL          *int64 `json:"ttl,omitempty"`
	PollInterval *int64 `json:"pollInterval,omitempty"`

	// Recorded is true when pikod created the task (an approved action);
	// the fields below come from its record.
	Recorded bool `json:"recorded,omitempty"`
	// Tool is the tool whose call created the task.
	Tool string `json:"tool,omitempty"`
	// ActionID and ReceiptID are the creating action and its receipt
	// (mcp_task_create).
	ActionID  string `json:"actionId,omitempty"`
	ReceiptID string `json:"receiptId,omitempty"`
	// CancelActionID is the approved cancellation, if any.
	CancelActionID string `json:"cancelActionId,omitempty"`
	// ResultSourceID and ResultReceiptID name the retained result of the
	// last tasks/result.
	ResultSourceID  string `json:"resultSourceId,omitempty"`
	ResultReceiptID string `json:"resultReceiptId,omitempty"`
	// Updates are the status changes pikod saw, oldest first (at most the
	// last 50).
	Updates []TaskUpdate `json:"updates,omitempty"`
}

// TaskUpdate is one status change pikod saw. Via names what showed it:
// tools/call (creation), tasks/get, tasks/list, tasks/cancel, tasks/result.
type TaskUpdate struct {
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	Via           string `json:"via"`
	At            string `json:"at"`
}

// TasksListResult is the result of extensions.mcp.tasks with op list.
type TasksListResult struct {
	Server     string     `json:"server"`
	Op         string     `json:"op"`
	Tasks      []TaskInfo `json:"tasks"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// TaskGetResult is the result of extensions.mcp.tasks with op get.
type TaskGetResult struct {
	Server string   `json:"server"`
	Op     string   `json:"op"`
	Task   TaskInfo `json:"task"`
}

// TaskResultResult is the result of extensions.mcp.tasks with op result:
// the task's result as a bounded preview (for a tool's task, a tool
// result's content and structuredContent), the whole of it retained at
// OriginalResultSourceID, and a receipt (mcp_task_result).
type TaskResultResult struct {
	Server                 string          `json:"server"`
	Op                     string          `json:"op"`
	TaskID                 string          `json:"taskId"`
	Content                json.RawMessage `json:"content,omitempty"`
	StructuredContent      json.RawMessage `json:"structuredContent,omitempty"`
	IsError                bool            `json:"isError,omitempty"`
	Truncated              bool            `json:"truncated"`
	OriginalResultSourceID string          `json:"originalResultSourceId"`
	ReceiptID              string          `json:"receiptId"`
	ReceiptKind            string          `json:"receiptKind"`
}
