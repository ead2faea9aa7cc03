package contracts

import "encoding/json"

// ExtensionMCP is the only extension pikod serves.
const ExtensionMCP = "mcp"

// ConfigureParams is the params of extensions.configure: replace one
// extension's non-secret settings. Settings is validated strictly (see
// ParseMCPSettings); a rejected configure changes nothing. With DryRun the
// settings are validated and the would-be changes reported, nothing is saved.
// ExpectRevision, when non-zero, makes the save fail with
// ErrFailedPrecondition if the stored revision differs (compare-and-swap).
type ConfigureParams struct {
	Extension      string          `json:"extension"`
	Settings       json.RawMessage `json:"settings"`
	DryRun         bool            `json:"dryRun,omitempty"`
	ExpectRevision uint64          `json:"expectRevision,omitempty"`
}

// ConfigureResult is the result of extensions.configure. Revision is the new
// revision (or, with DryRun, the one it would get). Added, Changed and Removed
// name the server ids whose entries differ from the previous settings;
// Disconnected names the servers that were disconnected because of it.
type ConfigureResult struct {
	Extension    string   `json:"extension"`
	Revision     uint64   `json:"revision"`
	DryRun       bool     `json:"dryRun"`
	Unchanged    bool     `json:"unchanged"`
	Added        []string `json:"added"`
	Changed      []string `json:"changed"`
	Removed      []string `json:"removed"`
	Disconnected []string `json:"disconnected"`
	// Live lists the changed servers whose change (grants, timeouts,
	// roots: see ServerSettings.ConnectionDigest) applied to their live
	// connection without restarting them; their prepared actions stay
	// approvable while the tool stays selected.
	Live []string `json:"live"`
	// Widened lists everything the new settings open up: tools that now
	// run without approval, sampling or elicitation switched on, granted
	// servers that now run another program, an artifactDirectory added or
	// moved, allowPrivateNetwork switched on, more tools selected, or
	// resources or prompts switched on. Never silent.
	Widened []string `json:"widened"`
}

// SettingsParams is the params of extensions.settings.
type SettingsParams struct {
	Extension string `json:"extension"`
}

// SettingsResult is the result of extensions.settings: the stored settings
// exactly as saved (canonical JSON, defaults not filled in) and their
// revision. Revision 0 with empty servers means nothing was ever saved.
type SettingsResult struct {
	Extension string          `json:"extension"`
	Revision  uint64          `json:"revision"`
	Settings  json.RawMessage `json:"settings"`
	// UpdatedAt is RFC 3339 UTC, empty for revision 0.
	UpdatedAt string `json:"updatedAt,omitempty"`
}
