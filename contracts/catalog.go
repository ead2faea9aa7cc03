package contracts

import "encoding/json"

// Grants a catalog tool can have.
const (
	GrantRead        = "read"
	GrantAutonomous  = "autonomous"
	GrantApproval    = "approval"
	GrantNotSelected = "not_selected"
)

// CatalogParams is the params of extensions.mcp.catalog. The server is
// connected first if it is not (a failed server is retried: this is an
// owner request).
type CatalogParams struct {
	Server string `json:"server"`
}

// CatalogResult is the result of extensions.mcp.catalog: everything the
// server offers, discovered across all pages. Complete is false when a limit
// cut discovery short (Problem says which) or a list failed; an incomplete
// catalog is never presented as exhaustive.
type CatalogResult struct {
	Server            string            `json:"server"`
	Tools             []CatalogTool     `json:"tools"`
	Resources         []json.RawMessage `json:"resources"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	Prompts           []json.RawMessage `json:"prompts"`
	// Skills are the entries skills/list gave (exactly as the server sent
	// them), for a server that declares the Skills extension; absent for
	// one that does not. extensions.mcp.skills shows them checked, with
	// their pin states.
	Skills   []json.RawMessage `json:"skills,omitempty"`
	Complete bool              `json:"complete"`
	Problem  string            `json:"problem,omitempty"`
	// Excluded lists the tools the server listed that pikod withholds: on
	// a 2026-07-28 Streamable HTTP connection, a tool whose x-mcp-header
	// annotations are invalid cannot be called correctly, so it is left
	// out of Tools (and cannot be called), with the reason. Leaving them
	// out does not make the catalog incomplete.
	Excluded []ExcludedTool `json:"excluded,omitempty"`
	// DiscoveredAt is RFC 3339 UTC.
	DiscoveredAt string `json:"discoveredAt"`
}

// CatalogTool is one tool with its pikod-side names and grant. Schemas and
// annotations pass through untouched.
type CatalogTool struct {
	// Name is the model-facing name mcp_<server>_<tool>: only [A-Za-z0-9_-],
	// at most 64 characters, stable across restarts.
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	OriginalName string          `json:"originalName"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Execution is the tool's "execution" object exactly as the server
	// listed it (absent when it listed none).
	Execution json.RawMessage `json:"execution,omitempty"`
	// TaskSupport is execution.taskSupport on a legacy (2025-11-25)
	// connection: forbidden, optional or required; "" when the tool
	// declares none, which means forbidden. A required tool is only ever
	// called as a task (a prepared action, whatever its grant).
	TaskSupport string `json:"taskSupport,omitempty"`
	// Selected reports whether the settings' tools list selects it.
	Selected bool `json:"selected"`
	// Grant is read, autonomous, approval or not_selected.
	Grant string `json:"grant"`
	// Digest is the hex SHA-256 of the definition (name, title,
	// description, schemas, annotations, and execution when present);
	// approvals bind to it.
	Digest string `json:"digest"`
	// Pin is set for tools the settings grant (readOnlyTools,
	// autonomousTools): pinned when the definition is the one the grant
	// covers, definition_changed or unchecked when it is not. Then Grant
	// is approval and SuspendedGrant names the grant the settings give.
	Pin            string `json:"pin,omitempty"`
	SuspendedGrant string `json:"suspendedGrant,omitempty"`
	// PinnedDigest is the digest the grant covers, when it differs from
	// Digest.
	PinnedDigest string `json:"pinnedDigest,omitempty"`
}

// ExcludedTool is a tool the server listed that the catalog leaves out.
type ExcludedTool struct {
	// Name is the tool's original name.
	Name   string `json:"name"`
	Reason string `json:"reason"`
}
