package contracts

import "encoding/json"

// Kinds of extensions.mcp.event notifications.
const (
	// EventState: a server's state changed (connected, failed, idle, ...).
	EventState = "state"
	// EventCatalog: a server's catalog was replaced after list_changed, or
	// marked incomplete because a re-discovery failed.
	EventCatalog = "catalog"
	// EventResource: the server said a subscribed resource changed
	// (notifications/resources/updated).
	EventResource = "resource"
	// EventLog: a log message from a server (notifications/message).
	EventLog = "log"
	// EventRequest: a server request waits for the owner (or was answered,
	// cancelled or expired).
	EventRequest = "request"
)

// EventParams is the params of an extensions.mcp.event notification, sent
// to the connections that asked for it with extensions.mcp.watch (and to a
// call's own connection for the events of that call). Data holds the
// kind's details as JSON; every string in it that came from a server is
// bounded and made safe to show, and known secrets are redacted.
type EventParams struct {
	// Seq numbers the daemon's events, increasing; a gap tells a watcher
	// that events were dropped (a slow reader).
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Server string `json:"server"`
	// Time is RFC 3339 with fractional seconds, UTC.
	Time string          `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
	// RequestID is set on events sent to a call's own connection: the id of
	// the request they belong to.
	RequestID json.RawMessage `json:"requestId,omitempty"`
}

// StateEventData is the Data of an EventState event: the server's state as
// extensions.mcp.status would show it now.
type StateEventData struct {
	State     string `json:"state"`
	LastError string `json:"lastError,omitempty"`
}
