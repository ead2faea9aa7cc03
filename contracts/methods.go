package contracts

// APIVersion is the version of the owner API described by this package. It
// changes only when a method or a shape changes incompatibly; pikoctl warns
// when the daemon reports a different one.
const APIVersion = "1"

// Method names of the owner API. Each is documented with its params and
// result types next to those types.
const (
	MethodHello     = "system.hello"
	MethodConfigure = "extensions.configure"
	MethodSettings  = "extensions.settings"
	MethodSecret    = "extensions.secret"
	MethodCancel    = "$/cancelRequest"

	MethodMCPStatus          = "extensions.mcp.status"
	MethodMCPConnect         = "extensions.mcp.connect"
	MethodMCPDisconnect      = "extensions.mcp.disconnect"
	MethodMCPPing            = "extensions.mcp.ping"
	MethodMCPAuth            = "extensions.mcp.auth"
	MethodMCPAuthCancel      = "extensions.mcp.auth.cancel"
	MethodMCPLogout          = "extensions.mcp.logout"
	MethodMCPCatalog         = "extensions.mcp.catalog"
	MethodMCPCall            = "extensions.mcp.call"
	MethodMCPResource        = "extensions.mcp.resource"
	MethodMCPPrompt          = "extensions.mcp.prompt"
	MethodMCPComplete        = "extensions.mcp.complete"
	MethodMCPSkills          = "extensions.mcp.skills"
	MethodMCPTasks           = "extensions.mcp.tasks"
	MethodMCPLogging         = "extensions.mcp.logging"
	MethodMCPRequests        = "extensions.mcp.requests"
	MethodMCPRequestsRead    = "extensions.mcp.requests.read"
	MethodMCPRequestsRespond = "extensions.mcp.requests.respond"
	MethodMCPArtifact        = "extensions.mcp.artifact"
	MethodMCPImport          = "extensions.mcp.import"
	MethodMCPPause           = "extensions.mcp.pause"
	MethodMCPResume          = "extensions.mcp.resume"
	MethodMCPActionsList     = "extensions.mcp.actions.list"
	MethodMCPActionsReview   = "extensions.mcp.actions.review"
	MethodMCPActionsApprove  = "extensions.mcp.actions.approve"
	MethodMCPActionsResult   = "extensions.mcp.actions.result"
	MethodMCPTrust           = "extensions.mcp.trust"
	MethodMCPReceipts        = "extensions.mcp.receipts"
	MethodMCPCompact         = "extensions.mcp.compact"
	MethodMCPWatch           = "extensions.mcp.watch"
	MethodMCPSearch          = "extensions.mcp.search"
	MethodMCPRequestsPropose = "extensions.mcp.requests.propose"
	MethodPassphrase         = "extensions.approvals.passphrase"
	MethodSourceRead         = "source.read"

	// Notifications the daemon sends to the connection that made a call.
	NotifyMCPProgress = "extensions.mcp.progress"
	NotifyMCPEvent    = "extensions.mcp.event"
)

// MethodFlags are the properties of a method that the socket server
// enforces before any handler runs.
type MethodFlags uint8

const (
	// TerminalOnly methods decide for the owner (approve, respond, resume,
	// trust, the passphrase, moving the vault): the caller must be a person at the owner's
	// terminal, and must give the owner approval passphrase when one is
	// set. Local tools may ask; only the owner decides.
	TerminalOnly MethodFlags = 1 << iota
	// Control methods never wait behind tool calls, catalog fetches or
	// resource reads: they are how the owner sees and stops what is going on.
	Control
)

// Exemption names the one params value that takes a call of a
// TerminalOnly method out of the terminal check: a rejection or a diff
// decides nothing. A call whose params lack the member, or carry any other
// value, is checked.
type Exemption struct {
	Field, Value string
}

// MethodInfo is one row of the method table.
type MethodInfo struct {
	Name   string
	Flags  MethodFlags
	Exempt *Exemption
}

// TerminalOnly reports whether calls of m need the owner at a terminal
// (unless exempt).
func (m MethodInfo) TerminalOnly() bool { return m.Flags&TerminalOnly != 0 }

// Control reports whether m is on the control lane.
func (m MethodInfo) Control() bool { return m.Flags&Control != 0 }

// MethodTable lists every request method of the owner API, in
// documentation order, with its flags. A method in this table that the
// daemon does not serve yet answers with ErrNotImplemented, never with a
// made-up result.
var MethodTable = []MethodInfo{
	{Name: MethodHello, Flags: Control},
	{Name: MethodConfigure},
	{Name: MethodSettings},
	{Name: MethodSecret},
	{Name: MethodMCPStatus, Flags: Control},
	{Name: MethodMCPConnect},
	{Name: MethodMCPDisconnect, Flags: Control},
	{Name: MethodMCPPing},
	{Name: MethodMCPAuth},
	{Name: MethodMCPAuthCancel, Flags: Control},
	{Name: MethodMCPLogout},
	{Name: MethodMCPCatalog},
	{Name: MethodMCPCall},
	{Name: MethodMCPResource},
	{Name: MethodMCPPrompt},
	{Name: MethodMCPComplete},
	{Name: MethodMCPSkills},
	{Name: MethodMCPTasks},
	{Name: MethodMCPLogging},
	{Name: MethodMCPRequests, Flags: Control},
	{Name: MethodMCPRequestsRead, Flags: Control},
	{Name: MethodMCPRequestsRespond, Flags: Control | TerminalOnly},
	{Name: MethodMCPRequestsPropose, Flags: Control},
	{Name: MethodMCPArtifact},
	{Name: MethodMCPImport},
	{Name: MethodMCPPause, Flags: Control},
	{Name: MethodMCPResume, Flags: Control | TerminalOnly},
	{Name: MethodMCPTrust, Flags: TerminalOnly, Exempt: &Exemption{Field: "op", Value: "diff"}},
	{Name: MethodMCPWatch, Flags: Control},
	{Name: MethodMCPSearch},
	{Name: MethodMCPActionsList, Flags: Control},
	{Name: MethodMCPActionsReview, Flags: Control},
	{Name: MethodMCPActionsApprove, Flags: Control | TerminalOnly, Exempt: &Exemption{Field: "decision", Value: DecisionReject}},
	{Name: MethodMCPActionsResult},
	{Name: MethodMCPReceipts, Flags: Control},
	{Name: MethodMCPCompact, Flags: Control},
	{Name: MethodPassphrase, Flags: Control | TerminalOnly},
	{Name: MethodSourceRead, Flags: Control},
	{Name: MethodVaultUnlock, Flags: Control},
	{Name: MethodVaultMigrate, Flags: TerminalOnly},
}

// Methods lists the names of MethodTable, in the same order.
var Methods = func() []string {
	out := make([]string, len(MethodTable))
	for i, m := range MethodTable {
		out[i] = m.Name
	}
	return out
}()

// LookupMethod returns the table row of a method name.
func LookupMethod(name string) (MethodInfo, bool) {
	for _, m := range MethodTable {
		if m.Name == name {
			return m, true
		}
	}
	return MethodInfo{}, false
}
