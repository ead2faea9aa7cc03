package contracts

// HelloParams is the params of system.hello. ClientVersion and APIVersion are
// optional and only logged.
//
// Client and Via, also optional, declare who is calling: the program's (or,
// for a bridge, the MCP host's) name and version, and the program relaying
// for it (e.g. "pikoctl mcp serve"). They are recorded for the connection
// and attached, next to the pid and executable the kernel reports, to every
// action and receipt its later requests cause (contracts.Caller). A later
// hello that declares either replaces the declaration; one that declares
// neither keeps it.
// They are claims, never checked: bounded (MaxClientNameChars,
// MaxClientVersionChars, MaxViaChars; longer text is cut) and shown as
// declared.
type HelloParams struct {
	ClientVersion string     `json:"clientVersion,omitempty"`
	APIVersion    string     `json:"apiVersion,omitempty"`
	Client        ClientInfo `json:"client,omitzero"`
	Via           string     `json:"via,omitempty"`
}

// HelloResult is the result of system.hello: who answers on this socket.
type HelloResult struct {
	APIVersion    string `json:"apiVersion"`
	DaemonVersion string `json:"daemonVersion"`
	Instance      string `json:"instance"`
	PID           int    `json:"pid"`
	Socket        string `json:"socket"`
	StateDir      string `json:"stateDir"`
	// StartedAt is RFC 3339 UTC.
	StartedAt string `json:"startedAt"`
}

// CancelParams is the params of the $/cancelRequest notification: the id of
// the caller's own request to cancel.
type CancelParams struct {
	ID any `json:"id"`
}
