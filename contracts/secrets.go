package contracts

// Vault methods.
const (
	MethodVaultUnlock = "vault.unlock"
)

// SecretParams is the params of extensions.secret: replace one server's
// private credential object. Credentials holds exactly the fields of the
// server's transport: stdio {"env":{NAME:VALUE}}; http and sse
// {"headers":{NAME:VALUE}} and, with oauth configured,
// {"oauthClientSecret":VALUE}. An empty object {} clears what was stored.
// With Merge the given fields replace or add to the stored ones and the
// fields not given stay as stored (an empty value is refused: a full
// replace removes a field); {} then changes nothing. pikoctl sends it
// from private stdin or a masked prompt, never from arguments.
type SecretParams struct {
	Extension   string         `json:"extension,omitempty"`
	Server      string         `json:"server"`
	Credentials map[string]any `json:"credentials"`
	Merge       bool           `json:"merge,omitempty"`
}

// SecretResult is the result of extensions.secret. It names the fields
// stored (env.NAME, headers.NAME, oauthClientSecret), never their values.
// Generation is the server's new credential generation: actions prepared
// under an older one can no longer be approved. ReconnectRequired is true
// when the server is connected with the old credentials: they take effect
// after 'pikoctl mcp disconnect' and 'connect'. Unprotected names the
// fields stored with a value redaction cannot protect (shorter than 6
// characters): they are used, but may appear in output; Warning says so
// in a sentence. Unchanged is true when a merge gave nothing new: nothing
// was written and the generation stayed.
type SecretResult struct {
	Server            string   `json:"server"`
	Fields            []string `json:"fields"`
	Cleared           bool     `json:"cleared"`
	Unchanged         bool     `json:"unchanged,omitempty"`
	Generation        uint64   `json:"generation"`
	ReconnectRequired bool     `json:"reconnectRequired"`
	Unprotected       []string `json:"unprotected,omitempty"`
	Warning           string   `json:"warning,omitempty"`
}

// VaultUnlockParams is the params of vault.unlock: the passphrase of a
// file vault in unlock mode, held in daemon memory only.
type VaultUnlockParams struct {
	Passphrase string `json:"passphrase"`
}

// VaultUnlockResult is the result of vault.unlock.
type VaultUnlockResult struct {
	Vault VaultStatus `json:"vault"`
}
