package contracts

// ParamPassphrase is the params member that carries the owner approval
// passphrase on every call of a terminal-only method (when a passphrase
// is set). The daemon reads it in one place, before any handler runs.
const ParamPassphrase = "passphrase"

// Approval passphrase throttling: PassphraseMaxFailures wrong passphrases
// in a row lock every terminal-only method for PassphraseLockSeconds,
// doubling with each further lock until a right passphrase is given.
const (
	PassphraseMaxFailures = 5
	PassphraseLockSeconds = 60
	// PassphraseMinChars is the shortest passphrase accepted by set and
	// change; PassphraseMaxBytes the longest.
	PassphraseMinChars = 8
	PassphraseMaxBytes = 1024
)

// Operations of extensions.approvals.passphrase.
const (
	PassphraseOpSet    = "set"
	PassphraseOpChange = "change"
	PassphraseOpClear  = "clear"
)

// Terminal checks: the value of data.check in a terminal_required error
// says which check the caller failed. Terminal-only methods need all four
// to pass; a check that cannot be made refuses (TerminalUnchecked).
const (
	// TerminalNone: the caller has no controlling terminal (a service, a
	// script started without one, a detached job).
	TerminalNone = "no_terminal"
	// TerminalStdin: the caller's fd 0 is not its controlling terminal (a
	// pipe, a file, /dev/null, another terminal).
	TerminalStdin = "stdin_not_terminal"
	// TerminalOwner: the terminal device belongs to another uid than the
	// daemon's.
	TerminalOwner = "terminal_not_owner"
	// TerminalBackground: the caller is not in its terminal's foreground
	// process group (a background job).
	TerminalBackground = "not_foreground"
	// TerminalUnchecked: the checks could not be made (unknown pid, an
	// unreadable /proc entry, an unsupported system).
	TerminalUnchecked = "unchecked"
)

// PassphraseParams is the params of extensions.approvals.passphrase
// (terminal-only): set, change or clear the owner approval passphrase.
// Op "set" takes NewPassphrase and needs no passphrase set yet; "change"
// takes the current Passphrase and NewPassphrase; "clear" takes the
// current Passphrase. The current passphrase is checked (and throttled)
// before the handler runs, like on every terminal-only call. The daemon
// keeps only an argon2id hash, in the vault.
type PassphraseParams struct {
	Op            string `json:"op"`
	Passphrase    string `json:"passphrase,omitempty"`
	NewPassphrase string `json:"newPassphrase,omitempty"`
}

// PassphraseResult is the result of extensions.approvals.passphrase.
type PassphraseResult struct {
	Op        string          `json:"op"`
	Approvals ApprovalsStatus `json:"approvals"`
}

// ApprovalsStatus is the state of the owner approval gate, in
// extensions.mcp.status.
type ApprovalsStatus struct {
	// PassphraseSet is true when terminal-only calls need the passphrase.
	PassphraseSet bool `json:"passphraseSet"`
	// Failures counts wrong passphrases since the last right one or the
	// last lock.
	Failures int `json:"failures"`
	// Locks counts the locks since the last right passphrase; the next
	// lock lasts PassphraseLockSeconds << Locks seconds.
	Locks int `json:"locks,omitempty"`
	// LockedUntil (RFC 3339 UTC) is set while terminal-only methods are
	// locked after too many wrong passphrases.
	LockedUntil string `json:"lockedUntil,omitempty"`
}
