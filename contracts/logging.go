package contracts

import "encoding/json"

// Log levels of MCP servers (RFC 5424 severities, as MCP names them), from
// the least to the most severe.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevelRank returns the position of level in LogLevels, or -1 for a
// name that is not a level.
func LogLevelRank(level string) int {
	for i, l := range LogLevels {
		if l == level {
			return i
		}
	}
	return -1
}

// Operations of extensions.mcp.logging.
const (
	// LoggingRead returns the recent log entries pikod kept for a server
	// (the default op).
	LoggingRead = "read"
	// LoggingSetLevel sets the lowest level the server sends.
	LoggingSetLevel = "setLevel"
)

// LoggingParams is the params of extensions.mcp.logging.
//
// Op "read" (the default) returns the entries pikod kept for Server,
// oldest first: those at Level or above (default: all), newer than Since
// (RFC 3339) and with an id above After, at most Limit of them (the newest;
// default 100, at most 1000). It never connects. With Follow, the
// connection the request came on also gets every later log entry of the
// server as an extensions.mcp.event notification of kind log (see
// extensions.mcp.watch; {"stop": true} or closing the connection ends it).
//
// Op "setLevel" sets the lowest level the server sends from now on (one of
// LogLevels), connecting it first: on a legacy connection with
// logging/setLevel, on a 2026-07-28 one by adding the level to the _meta of
// every request (that revision has no ambient log). pikod remembers the
// level for the server's settings and applies it again on every
// reconnect.
type LoggingParams struct {
	Server string `json:"server"`
	Op     string `json:"op,omitempty"`
	Level  string `json:"level,omitempty"`
	Since  string `json:"since,omitempty"`
	After  uint64 `json:"after,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Follow bool   `json:"follow,omitempty"`
}

// LoggingResult is the result of extensions.mcp.logging.
type LoggingResult struct {
	Server string `json:"server"`
	Op     string `json:"op"`
	// Level is the level set for the server ("" when none was: the
	// server's own default).
	Level string `json:"level"`
	// Applied says how a setLevel reached the server: "logging/setLevel"
	// (legacy) or "requestMeta" (2026-07-28: on each request).
	Applied         string `json:"applied,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Entries (read) are oldest first.
	Entries []LogEntry `json:"entries"`
	// Kept is how many entries the server's ring holds now; Evicted how
	// many older ones it pushed out to stay within its bounds; LastID the
	// id of the newest entry kept (0: none yet).
	Kept    int    `json:"kept"`
	Evicted uint64 `json:"evicted"`
	LastID  uint64 `json:"lastId"`
	// Following is true when Follow subscribed this connection.
	Following bool `json:"following,omitempty"`
}

// LogEntry is one notifications/message a server sent, as pikod kept it.
// It is also the Data of an EventLog event.
type LogEntry struct {
	// ID numbers the server's entries, increasing, for as long as pikod
	// keeps its ring (until its settings change or pikod restarts).
	ID uint64 `json:"id"`
	// Time is when pikod received it, RFC 3339 UTC.
	Time string `json:"time"`
	// Level is the level the server gave (made safe to show; one of
	// LogLevels for a well-behaved server).
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	// Data is the message's data: every string in it (keys too) redacted
	// and made safe to show, bounded in depth and size. When it was too
	// large, Data is a string holding the start of its JSON text and
	// Truncated is true.
	Data      json.RawMessage `json:"data,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}
