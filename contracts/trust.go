package contracts

import "encoding/json"

// Pin states of a granted catalog tool (CatalogTool.Pin). A readOnlyTools
// or autonomousTools grant covers one tool definition: the one current when
// the owner saved the settings that granted it (or when the tool was first
// discovered after that save), or the one the owner last accepted with
// extensions.mcp.trust.
const (
	// PinPinned: the definition is the one the grant covers.
	PinPinned = "pinned"
	// PinChanged: the server changed the definition since; the grant is
	// suspended (calls become prepared actions) until the owner accepts
	// the new definition.
	PinChanged = "definition_changed"
	// PinUnchecked: the pin could not be read, or the server's tool list
	// could not be read again after it announced a change (the tool shown
	// is the last one read); the grant is suspended until both can be.
	PinUnchecked = "unchecked"
)

// Operations of extensions.mcp.trust.
const (
	// TrustDiff shows the pinned and current definitions; it decides
	// nothing and needs no terminal.
	TrustDiff = "diff"
	// TrustAccept pins the current definitions; it is terminal-only.
	TrustAccept = "accept"
)

// TrustParams is the params of extensions.mcp.trust.
//
// Op "diff" returns, for the granted tools of Server whose definition
// changed (or for Tool alone, changed or not), the definition the grant
// covers and the current one. The server is connected first if it is not.
//
// Op "accept" pins the current definitions of the changed granted tools of
// Server (or of Tool alone), restoring their grants. It never connects: the
// definitions accepted are the ones the live connection discovered.
// Digests must map every tool accepted to the current digest the owner
// reviewed (from a diff); if any definition moved since, or a listed tool
// has no changed definition, nothing is accepted. Accept is terminal-only.
type TrustParams struct {
	Server  string            `json:"server"`
	Tool    string            `json:"tool,omitempty"`
	Op      string            `json:"op"`
	Digests map[string]string `json:"digests,omitempty"`
	// Passphrase is the owner approval passphrase, needed for accept when
	// one is set (see ParamPassphrase).
	Passphrase string `json:"passphrase,omitempty"`
}

// TrustResult is the result of extensions.mcp.trust: the tools shown (diff)
// or accepted (accept), sorted by name.
type TrustResult struct {
	Server string       `json:"server"`
	Op     string       `json:"op"`
	Tools  []ToolChange `json:"tools"`
}

// ToolChange is one granted tool's pinned and current definitions. Each
// definition is a JSON object {"name","title","description","inputSchema",
// "outputSchema","annotations"} (absent members omitted), exactly the parts
// the digest covers, as the server sent them.
type ToolChange struct {
	Tool string `json:"tool"`
	// Grant is the grant the settings give (read or autonomous), suspended
	// while Pin is definition_changed.
	Grant string `json:"grant"`
	// Pin is pinned or definition_changed (after accept: pinned).
	Pin          string          `json:"pin"`
	PinnedDigest string          `json:"pinnedDigest"`
	Pinned       json.RawMessage `json:"pinned,omitempty"`
	// PinnedAt is RFC 3339 UTC; PinnedBy says what pinned it: settings,
	// discovery or trust.
	PinnedAt      string          `json:"pinnedAt,omitempty"`
	PinnedBy      string          `json:"pinnedBy,omitempty"`
	CurrentDigest string          `json:"currentDigest"`
	Current       json.RawMessage `json:"current,omitempty"`
}
