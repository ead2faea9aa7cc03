package contracts

import "encoding/json"

// Limits of calls.
const (
	// MaxArgumentsChars caps a call's arguments, counted in characters of
	// their JSON text.
	MaxArgumentsChars = 800_000
	// ApprovalTTLMinutes is how long a prepared action can be approved.
	ApprovalTTLMinutes = 15
)

// Call statuses.
const (
	CallCompleted        = "completed"
	CallFailed           = "failed"
	CallUncertain        = "uncertain"
	CallApprovalRequired = "approval_required"
)

// Receipt kinds.
const (
	ReceiptRead       = "mcp_read"
	ReceiptAutonomous = "mcp_autonomous"
	ReceiptApproved   = "mcp_approved"
	// ReceiptTaskCreate: an approved task-augmented tools/call; the
	// retained source is the server's CreateTaskResult. Also the kind of
	// the prepared action that creates a task.
	ReceiptTaskCreate = "mcp_task_create"
	// ReceiptTaskCancel: an approved tasks/cancel; the retained source is
	// the server's answer. Also the kind of the prepared action that
	// cancels a task.
	ReceiptTaskCancel = "mcp_task_cancel"
	// ReceiptTaskResult: a tasks/result answered; the retained source is
	// the task's result.
	ReceiptTaskResult = "mcp_task_result"
)

// CallParams is the params of extensions.mcp.call: a tool named either by
// Server and Tool (its original name) or by its model-facing Name.
// Arguments is a JSON object (absent means {}); it is validated against the
// tool's input schema before anything is sent.
type CallParams struct {
	Server    string          `json:"server,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Task asks for a task-augmented call (legacy tasks utility) of a tool
	// whose taskSupport is optional. A tool whose taskSupport is required
	// is always called as a task. Creating a task is always a prepared
	// action, whatever the tool's grant.
	Task bool `json:"task,omitempty"`
}

// CallResult is the result of extensions.mcp.call, of an approving
// extensions.mcp.actions.approve and of extensions.mcp.actions.result.
//
// Executed calls have Status completed (the server answered with a result,
// IsError false), failed (the server answered with an error or IsError
// true, or the call could not be sent) or uncertain (no definite answer:
// timeout, lost connection, cancellation after sending; pikod never sends
// it again). A failed call with NotSent true provably never left pikod (a
// refused connection, a closed pipe, a cancellation before sending): it had
// no effect and may be made again. Content and
// StructuredContent are a bounded preview; when Truncated, the whole
// original result is at OriginalResultSourceID (read it with source.read).
//
// A call without a grant returns Status approval_required with ActionID,
// Digest and ExpiresAt, and nothing was sent.
type CallResult struct {
	Status string `json:"status"`
	Server string `json:"server"`
	Tool   string `json:"tool"`

	Content           json.RawMessage `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// OutputSchemaError reports structuredContent that does not match the
	// tool's outputSchema (the content is still returned).
	OutputSchemaError string `json:"outputSchemaError,omitempty"`
	// Error says why a failed or uncertain call ended so.
	Error *Error `json:"error,omitempty"`
	// NotSent is true when not one byte of the call reached the server
	// (Status is then failed, and Error.Data.NotSent is true too).
	NotSent bool `json:"notSent,omitempty"`

	Truncated              bool   `json:"truncated"`
	OriginalResultSourceID string `json:"originalResultSourceId,omitempty"`
	ReceiptID              string `json:"receiptId,omitempty"`
	ReceiptKind            string `json:"receiptKind,omitempty"`

	ActionID  string `json:"actionId,omitempty"`
	Digest    string `json:"digest,omitempty"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Held says why a call its grant would have run was prepared as an
	// action instead (the server is paused: extensions.mcp.pause).
	Held string `json:"held,omitempty"`
	// Captures are the files a completed call of a browser server
	// (settings "browser") reported inside its artifactDirectory, each
	// imported as a retained source linked to this call's receipt: read
	// them with source.read instead of repeating the call.
	Captures []Capture `json:"captures,omitempty"`

	// Task is the task an approved task creation or cancellation is about,
	// as the server answered (status and all).
	Task *TaskInfo `json:"task,omitempty"`
}

// ProgressParams is the params of the extensions.mcp.progress notification
// sent to the connection that made a call while it runs. RequestID is that
// call's JSON-RPC id.
type ProgressParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Progress  float64         `json:"progress"`
	Total     float64         `json:"total,omitempty"`
	Message   string          `json:"message,omitempty"`
	// ServerRequest, when set, is the id of a server request the call
	// waits on: Message then says what the server asks and how to answer
	// ('pikoctl mcp respond ID').
	ServerRequest string `json:"serverRequest,omitempty"`
}

// SourceReadParams is the params of source.read: a window of a retained
// original result. Offset and Length count characters (Unicode code
// points) of its text form; Length 0 means a default window of 65,536.
type SourceReadParams struct {
	SourceID string `json:"sourceId"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length,omitempty"`
}

// SourceReadResult is the result of source.read. Total is the length of
// the whole text in characters; EOF is true when the window reaches its
// end.
type SourceReadResult struct {
	SourceID string `json:"sourceId"`
	Text     string `json:"text"`
	Offset   int64  `json:"offset"`
	Total    int64  `json:"total"`
	EOF      bool   `json:"eof"`
}
