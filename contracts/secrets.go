package contracts

// Vault methods.
const (
	MethodVaultUnlock  = "vault.unlock"
	MethodVaultMigrate = "vault.migrate"
)

// Vault backends a migration can move to (VaultMigrateParams.To).
const (
	VaultKeychain      = "keychain"
	VaultSecretService = "secret-service"
	VaultFile          = "file"
	VaultFileUnlock    = "file-unlock"
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

// VaultMigrateParams is the params of vault.migrate: move every
// stored item (each server's credentials with their identity binding, OAuth
// grants, the approval passphrase hash) to the backend To, then make it the
// backend pikod.db pins for the instance. Terminal-only: moving the
// credentials decides for the owner. VaultPassphrase is the passphrase of a
// file-unlock target (set by this call when its directory is empty);
// Passphrase is the owner approval passphrase (the gate's member).
// Overwrite lets the current values replace different ones the target
// already holds under the same names (without it such a conflict refuses
// and changes nothing).
type VaultMigrateParams struct {
	To              string `json:"to"`
	Overwrite       bool   `json:"overwrite,omitempty"`
	VaultPassphrase string `json:"vaultPassphrase,omitempty"`
	Passphrase      string `json:"passphrase,omitempty"`
}

// VaultMigrateResult is the result of vault.migrate. Moved names
// the items moved (server/ID, oauth/ID, approvals/passphrase), never their
// values; Unnamed counts items moved whose server is no longer configured
// (a file vault lists them; pikod remembers their keys for the next
// migration, since a keyring cannot list them). Kept names items the target already
// held that the old backend did not (left as they were: they are in use
// now); KeptUnnamed counts those of no configured server. Replaced counts
// different values the target held that Overwrite replaced. Leftover counts
// old copies that could not be removed (pikod retries at its next start;
// Warning says so).
type VaultMigrateResult struct {
	From        string      `json:"from"`
	To          string      `json:"to"`
	Moved       []string    `json:"moved"`
	Unnamed     int         `json:"unnamed,omitempty"`
	Kept        []string    `json:"kept,omitempty"`
	KeptUnnamed int         `json:"keptUnnamed,omitempty"`
	Replaced    int         `json:"replaced,omitempty"`
	Leftover    int         `json:"leftover,omitempty"`
	Warning     string      `json:"warning,omitempty"`
	Vault       VaultStatus `json:"vault"`
}
