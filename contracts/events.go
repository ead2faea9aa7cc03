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
	// EventTask: a server reported a task's status
	// (notifications/tasks/status, legacy tasks utility); Data is a
	// TaskInfo with taskId, status, statusMessage and lastUpdatedAt.
	EventTask = "task"
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
	// Dropped counts the events this connection was due that pikod
	// dropped right before this one (its queue was full: the watcher did
	// not read fast enough). Seq alone cannot tell, as filters skip
	// numbers too.
	Dropped uint64 `json:"dropped,omitempty"`
}

// StateEventData is the Data of an EventState event: the server's state as
// extensions.mcp.status would show it now.
type StateEventData struct {
	State     string `json:"state"`
	LastError string `json:"lastError,omitempty"`
}

// Lists of a catalog, as EventCatalog events name them.
const (
	ListTools             = "tools"
	ListResources         = "resources"
	ListResourceTemplates = "resourceTemplates"
	ListPrompts           = "prompts"
	ListSkills            = "skills"
)

// CatalogEventData is the Data of an EventCatalog event: a refetch after
// list_changed replaced the lists it names (or, when it failed, kept their
// last entries and marked the catalog incomplete).
type CatalogEventData struct {
	// Lists are the lists refetched: tools, resources, resourceTemplates,
	// prompts.
	Lists []string `json:"lists"`
	// Complete and Problem are the catalog's, as extensions.mcp.catalog
	// would show them now.
	Complete bool          `json:"complete"`
	Problem  string        `json:"problem,omitempty"`
	Counts   CatalogCounts `json:"counts"`
	// ChangedTools lists the granted tools whose definition is not the
	// pinned one (their grants are suspended).
	ChangedTools []string `json:"changedTools,omitempty"`
}

// CatalogCounts counts the entries of each list of a catalog.
type CatalogCounts struct {
	Tools             int `json:"tools"`
	Resources         int `json:"resources"`
	ResourceTemplates int `json:"resourceTemplates"`
	Prompts           int `json:"prompts"`
	Skills            int `json:"skills,omitempty"`
}

// WatchParams is the params of extensions.mcp.watch: it subscribes the
// connection it is sent on to extensions.mcp.event notifications and
// returns at once. Kinds and Servers filter (absent or empty: every kind,
// every server); a second watch on the same connection replaces the
// filters. Stop ends the subscription (closing the connection does too).
//
// Queue is how many events pikod holds for this connection while it is
// not reading (default and maximum 1024, at least 16); past it the oldest
// are dropped and the next event delivered says how many in Dropped.
type WatchParams struct {
	Kinds   []string `json:"kinds,omitempty"`
	Servers []string `json:"servers,omitempty"`
	Stop    bool     `json:"stop,omitempty"`
	Queue   int      `json:"queue,omitempty"`
}

// WatchResult is the result of extensions.mcp.watch. Seq is the last event
// number assigned before the subscription started: the events it delivers
// have larger ones.
type WatchResult struct {
	Watching bool     `json:"watching"`
	Kinds    []string `json:"kinds"`
	Servers  []string `json:"servers"`
	// LogFollow lists the servers whose log events this connection gets
	// through extensions.mcp.logging's follow, whatever Kinds and Servers
	// say.
	LogFollow []string `json:"logFollow,omitempty"`
	Queue     int      `json:"queue,omitempty"`
	Seq       uint64   `json:"seq"`
}

// Bounds of a watcher's queue (WatchParams.Queue).
const (
	DefaultWatchQueue = 1024
	MinWatchQueue     = 16
)

// EventKinds lists every event kind, in documentation order.
var EventKinds = []string{EventState, EventCatalog, EventResource, EventLog, EventRequest, EventTask}
