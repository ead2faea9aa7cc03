package contracts

// HelloParams is the params of system.hello. ClientVersion and APIVersion are
// optional and only logged.
type HelloParams struct {
	ClientVersion string `json:"clientVersion,omitempty"`
	APIVersion    string `json:"apiVersion,omitempty"`
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
