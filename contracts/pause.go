package contracts

// MaxPauseReason bounds the reason a pause carries, in bytes.
const MaxPauseReason = 200

// PauseParams is the params of extensions.mcp.pause (any client): from
// now on every new tool call to Server, granted or not, is held as a
// prepared action for the owner instead of being sent, until
// extensions.mcp.resume. Reason, optional (at most MaxPauseReason bytes),
// says why; every held call answers with it. Pausing a paused server
// keeps its first time and replaces the reason.
type PauseParams struct {
	Server string `json:"server"`
	Reason string `json:"reason,omitempty"`
}

// ResumeParams is the params of extensions.mcp.resume (terminal-only):
// calls to Server run under their grants again. Actions held while the
// server was paused stay prepared for the owner to approve or reject.
type ResumeParams struct {
	Server string `json:"server"`
	// Passphrase is the owner approval passphrase, needed when one is set
	// (see ParamPassphrase).
	Passphrase string `json:"passphrase,omitempty"`
}

// PauseResult is the result of extensions.mcp.pause and
// extensions.mcp.resume: the server's pause as it is now.
type PauseResult struct {
	Server string `json:"server"`
	Paused bool   `json:"paused"`
	// Changed is false when the server already was in that state.
	Changed bool `json:"changed"`
	// Pause is set while paused.
	Pause *PauseInfo `json:"pause,omitempty"`
}

// PauseInfo describes a pause: since when (RFC 3339 UTC) and why.
type PauseInfo struct {
	Since  string `json:"since"`
	Reason string `json:"reason,omitempty"`
}
