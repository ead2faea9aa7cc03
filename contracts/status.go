package contracts

// Connection states of a configured server.
const (
	StateDisabled   = "disabled"
	StateIdle       = "idle"
	StateConnecting = "connecting"
	StateConnected  = "connected"
	StateFailed     = "failed"
	StateNeedsAuth  = "needs_auth"
	StatePaused     = "paused"
)

// StatusParams is the params of extensions.mcp.status. Server, when set,
// limits the answer to that server (ErrNotFound if unknown).
type StatusParams struct {
	Server string `json:"server,omitempty"`
}

// StatusResult is the result of extensions.mcp.status.
type StatusResult struct {
	Revision uint64         `json:"revision"`
	Servers  []ServerStatus `json:"servers"`
	Vault    VaultStatus    `json:"vault"`
	// Approvals is the owner approval gate: passphrase and lockout.
	Approvals ApprovalsStatus `json:"approvals"`
	// Storage is pikod's footprint on disk.
	Storage *StorageStatus `json:"storage,omitempty"`
}

// StorageStatus is what pikod keeps on disk and how fast it grows.
type StorageStatus struct {
	// DatabaseBytes is pikod.db's size; FreeBytes the part of it in free
	// pages (bbolt reuses them, it does not give them back).
	DatabaseBytes int64 `json:"databaseBytes"`
	FreeBytes     int64 `json:"freeBytes"`
	// Receipts kept, the bytes of their stored records, and the creation
	// time of the oldest (RFC 3339, empty without receipts).
	Receipts       uint64 `json:"receipts"`
	ReceiptBytes   int64  `json:"receiptBytes"`
	OldestReceipt  string `json:"oldestReceipt,omitempty"`
	SourceBytes    int64  `json:"sourceBytes"`
	SourceCapBytes int64  `json:"sourceCapBytes"`
	// ReceiptsPerDay and BytesPerDay project the receipts' growth from
	// the rate since this pikod started (0 before any receipt).
	ReceiptsPerDay float64 `json:"receiptsPerDay"`
	BytesPerDay    float64 `json:"bytesPerDay"`
	// LastPrune is the last pruning run since this pikod started.
	LastPrune *PruneStatus `json:"lastPrune,omitempty"`
	// LastCompaction is the last compaction since this pikod started (at
	// start, after a pruning run freed enough, or asked).
	LastCompaction *CompactResult `json:"lastCompaction,omitempty"`
	// DiskFreeBytes is what the file system holding the state directory
	// has free for pikod (-1 when unknown).
	DiskFreeBytes int64 `json:"diskFreeBytes"`
	// DiskFull is set while the disk is full: a write failed for want of
	// space (at DiskFullAt, RFC 3339) and the free space has not come
	// back since.
	DiskFull   bool   `json:"diskFull,omitempty"`
	DiskFullAt string `json:"diskFullAt,omitempty"`
	// HeldOutcomes is how many ends of sent calls wait, in memory and in
	// the reserve file, for the disk to have room to record them.
	HeldOutcomes int `json:"heldOutcomes,omitempty"`
}

// CompactParams is the params of extensions.mcp.compact: none. The method
// compacts pikod.db now, whatever its free pages, with pikod running:
// calls wait only for the switch to the compacted copy (HeldMs).
type CompactParams struct{}

// CompactResult is what a compaction did: when (RFC 3339), why ("start",
// "prune", "asked"), the file's size before and after, the free pages it
// had, how long the copy took and how long calls were held for the
// switch.
type CompactResult struct {
	At          string  `json:"at"`
	Trigger     string  `json:"trigger"`
	Compacted   bool    `json:"compacted"`
	BeforeBytes int64   `json:"beforeBytes"`
	AfterBytes  int64   `json:"afterBytes"`
	FreeBytes   int64   `json:"freeBytes"`
	TookMs      float64 `json:"tookMs"`
	// HeldMs is how long writes (calls with effects, receipts) waited
	// for the last catch-up and the switch; ReadsHeldMs how long reads
	// waited for the switch alone.
	HeldMs      float64 `json:"heldMs,omitempty"`
	ReadsHeldMs float64 `json:"readsHeldMs,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// ServerStatus is one configured server as the daemon sees it now.
type ServerStatus struct {
	ID              string `json:"id"`
	Enabled         bool   `json:"enabled"`
	Transport       string `json:"transport"`
	State           string `json:"state"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Negotiated says how ProtocolVersion was chosen: "discover" (a
	// 2026-07-28 server/discover answer listed it), "initialize" (the
	// legacy handshake), "pin" (the settings pin it), or "fallback after
	// discover: REASON" (auto fell back to the legacy handshake). Set while
	// connected.
	Negotiated string      `json:"negotiated,omitempty"`
	ServerInfo *ServerInfo `json:"serverInfo,omitempty"`
	PID        int         `json:"pid,omitempty"`
	PGID       int         `json:"pgid,omitempty"`
	// ConnectedSince is RFC 3339 UTC.
	ConnectedSince  string `json:"connectedSince,omitempty"`
	LastError       string `json:"lastError,omitempty"`
	StderrTail      string `json:"stderrTail,omitempty"`
	ToolCount       int    `json:"toolCount"`
	ResourceCount   int    `json:"resourceCount"`
	TemplateCount   int    `json:"resourceTemplateCount"`
	PromptCount     int    `json:"promptCount"`
	CatalogComplete bool   `json:"catalogComplete"`
	// CatalogProblem says why the catalog is incomplete.
	CatalogProblem string `json:"catalogProblem,omitempty"`
	// ChangedTools lists the granted tools whose definition changed since
	// the grant's pin (their grants are suspended; see
	// extensions.mcp.trust). Empty unless connected.
	ChangedTools []string `json:"changedTools,omitempty"`
	// Pause is set while the server is paused (extensions.mcp.pause);
	// State is then "paused" and ConnectionState holds the connection's
	// own state.
	Pause           *PauseInfo `json:"pause,omitempty"`
	ConnectionState string     `json:"connectionState,omitempty"`
	// ExitStatus is how the server's last process ended ("exit status 3").
	ExitStatus string `json:"exitStatus,omitempty"`
	// Generation counts successful connects; prepared actions bind to it.
	Generation uint64 `json:"generation,omitempty"`
	// Notes are standing limitations of this server's transport, and what
	// the connection could not set up (tools excluded for invalid header
	// annotations, a subscription stream the server did not keep open).
	Notes []string `json:"notes,omitempty"`
	// ListenStream is the state of a legacy Streamable HTTP connection's
	// GET listening stream, on which the server sends list changes,
	// resource updates and its requests. Unset for other connections.
	ListenStream *StreamStatus `json:"listenStream,omitempty"`
	// Subscriptions lists the resource URIs this connection is subscribed
	// to (extensions.mcp.resource op subscribe); they end with it.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Credentials is "none", "stored" or "reenter" (stored for another
	// identity: command, args, cwd or URL changed; not used until
	// re-entered), or "unknown" while the vault is locked.
	Credentials string `json:"credentials,omitempty"`
	// CredentialFields names the stored credential fields (env.NAME,
	// headers.NAME, oauthClientSecret, ...), never their values; absent
	// when none are stored or the vault is locked.
	CredentialFields []string `json:"credentialFields,omitempty"`
	// CredentialGeneration counts changes to the server's credentials.
	CredentialGeneration uint64 `json:"credentialGeneration,omitempty"`
	// ReconnectRequired is true when the credentials changed while the
	// server was connected: until it reconnects ('pikoctl mcp
	// reconnect'), calls, resource reads and prompts are refused with
	// reconnect_required, never sent with the old credentials.
	ReconnectRequired bool `json:"reconnectRequired,omitempty"`
	// OAuth is the server's OAuth state (http and sse servers that use or
	// may use OAuth); absent for stdio servers and servers whose stored
	// credentials carry a static Authorization header.
	OAuth *OAuthStatus `json:"oauth,omitempty"`
	// Dropped counts what the server sent unasked past its budgets and
	// pikod dropped, since pikod started or the server's settings last
	// changed; absent when nothing was dropped.
	Dropped *DroppedCounts `json:"dropped,omitempty"`
}

// DroppedCounts are a server's messages dropped over budget: log messages
// (notifications/message) and every other notification.
type DroppedCounts struct {
	Notifications uint64 `json:"notifications"`
	LogMessages   uint64 `json:"logMessages"`
}

// ServerInfo is the name and version a server reported about itself.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// VaultStatus says which secret store holds credentials.
type VaultStatus struct {
	// Backend is the secret store in use; "none" until a vault is set up.
	Backend string `json:"backend"`
	// Note explains what the backend protects against.
	Note string `json:"note,omitempty"`
	// Locked is true while a file vault in unlock mode waits for
	// 'pikoctl vault unlock'.
	Locked bool `json:"locked,omitempty"`
	// Requested is what pikod was asked for (--vault or PIKO_VAULT):
	// "auto" (the default) or a backend name.
	Requested string `json:"requested,omitempty"`
	// Pinned is the backend pikod.db records for this instance: a start
	// with "auto" opens it whatever is reachable then, so credentials
	// never seem to vanish. The first start records what it opened;
	// only 'pikoctl vault migrate' (vault.migrate) moves it.
	Pinned string `json:"pinned,omitempty"`
	// PinnedBy says what recorded Pinned: "auto" or "flag" (the first
	// start), "migrate"; "" for a pin older than this field.
	PinnedBy string `json:"pinnedBy,omitempty"`
	// Reason is why "auto" chose the pinned backend, as recorded when it
	// chose (e.g. "no keyring: the session bus is disabled
	// (DBUS_SESSION_BUS_ADDRESS=disabled:)").
	Reason string `json:"reason,omitempty"`
	// Chosen says in one sentence how Backend was chosen, why, whether it
	// is pinned and how to move the credentials elsewhere.
	Chosen string `json:"chosen,omitempty"`
	// Warning is set when something needs the owner: a --vault that
	// overrides the pinned backend, or copies an interrupted migration
	// left behind.
	Warning string `json:"warning,omitempty"`
}

// StreamStatus is the state of a server-to-client stream.
type StreamStatus struct {
	// Kind is "get" (the legacy Streamable HTTP GET stream).
	Kind string `json:"kind"`
	// State is waiting (for the handshake to complete), open, refused
	// (asked again later, backing off), not_offered (the server answered
	// 405) or ended (asked again).
	State string `json:"state"`
	// LastError is why the stream last failed or ended, redacted.
	LastError string `json:"lastError,omitempty"`
	// Refusals counts the refused or broken streams of this connection.
	Refusals uint64 `json:"refusals,omitempty"`
	// Since is when State was entered, RFC 3339.
	Since string `json:"since,omitempty"`
}

// Stream kinds and states (StreamStatus).
const (
	StreamGET        = "get"
	StreamWaiting    = "waiting"
	StreamOpen       = "open"
	StreamRefused    = "refused"
	StreamNotOffered = "not_offered"
	StreamEnded      = "ended"
)
