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
	MethodSourceRead         = "source.read"

	// Notifications the daemon sends to the connection that made a call.
	NotifyMCPProgress = "extensions.mcp.progress"
	NotifyMCPEvent    = "extensions.mcp.event"
)

// Methods lists every request method of the owner API, in documentation
// order. A method in this list that the daemon does not serve yet answers
// with ErrNotImplemented, never with a made-up result.
var Methods = []string{
	MethodHello,
	MethodConfigure,
	MethodSettings,
	MethodSecret,
	MethodMCPStatus,
	MethodMCPConnect,
	MethodMCPDisconnect,
	MethodMCPPing,
	MethodMCPAuth,
	MethodMCPAuthCancel,
	MethodMCPLogout,
	MethodMCPCatalog,
	MethodMCPCall,
	MethodMCPResource,
	MethodMCPPrompt,
	MethodMCPComplete,
	MethodMCPTasks,
	MethodMCPLogging,
	MethodMCPRequests,
	MethodMCPRequestsRead,
	MethodMCPRequestsRespond,
	MethodMCPArtifact,
	MethodMCPImport,
	MethodMCPPause,
	MethodMCPResume,
	MethodMCPActionsList,
	MethodMCPActionsReview,
	MethodMCPActionsApprove,
	MethodSourceRead,
	MethodVaultUnlock,
}
