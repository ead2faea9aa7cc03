package vault

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/pikod/pikod/contracts"
)

// approvalItem is the vault item holding the owner approval passphrase's
// hash. Server credentials live under "server/ID", so it cannot collide.
const approvalItem = "approvals/passphrase"

// Argon2id parameters for new hashes: RFC 9106's second recommended
// option (64 MiB, 3 passes, 4 lanes), a 16-byte random salt and a 32-byte
// key. They are written into every stored hash, so verifying never
// depends on the current defaults.
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 4
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds on parameters read back from the vault: a stored hash must not
// be able to make a check use unbounded memory or time.
const (
	maxArgonTime    = 16
	maxArgonMemory  = 1024 * 1024 // KiB: 1 GiB
	maxArgonThreads = 64
	maxArgonKeyLen  = 64
)

// argonHash is a parsed PHC-style string:
// $argon2id$v=19$m=65536,t=3,p=4$SALT$KEY (unpadded standard base64).
type argonHash struct {
	time, memory uint32
	threads      uint8
	salt, key    []byte
}

func (h argonHash) String() string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, h.memory, h.time, h.threads, b64.EncodeToString(h.salt), b64.EncodeToString(h.key))
}

func parseArgonHash(s string) (argonHash, error) {
	bad := func(what string) (argonHash, error) {
		return argonHash{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonPassphraseHashInvalid,
			"the approval passphrase hash in the vault is not a valid argon2id hash (%s)", what)
	}
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return bad("format")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return bad("version")
	}
	var h argonHash
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return bad("parameters")
		}
		switch k {
		case "m":
			h.memory = uint32(n)
		case "t":
			h.time = uint32(n)
		case "p":
			if n > maxArgonThreads {
				return bad("parameters")
			}
			h.threads = uint8(n)
		default:
			return bad("parameters")
		}
	}
	if h.time < 1 || h.time > maxArgonTime || h.memory < 8*uint32(h.threads) || h.memory > maxArgonMemory || h.threads < 1 {
		return bad("parameters out of range")
	}
	var err1, err2 error
	h.salt, err1 = base64.RawStdEncoding.DecodeString(parts[4])
	h.key, err2 = base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(h.salt) < 8 || len(h.key) < 16 || len(h.key) > maxArgonKeyLen {
		return bad("salt or key")
	}
	return h, nil
}

func derive(pass string, h argonHash) []byte {
	return argon2.IDKey([]byte(pass), h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
}

// ValidateApprovalPassphrase refuses a passphrase SetApprovalPassphrase
// would not store: too short, too long, not UTF-8, or with NUL, CR or LF.
// Its errors never repeat the passphrase.
func ValidateApprovalPassphrase(p Secret) error {
	s := p.Reveal()
	switch {
	case !utf8.ValidString(s):
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonPassphraseInvalid, "the approval passphrase is not valid UTF-8")
	case utf8.RuneCountInString(s) < contracts.PassphraseMinChars:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonPassphraseTooShort,
			"the approval passphrase must have at least %d characters", contracts.PassphraseMinChars)
	case len(s) > contracts.PassphraseMaxBytes:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonPassphraseTooLong,
			"the approval passphrase must have at most %d bytes", contracts.PassphraseMaxBytes)
	case strings.ContainsAny(s, "\x00\r\n"):
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonPassphraseInvalid,
			"the approval passphrase must not contain NUL, CR or LF")
	}
	return nil
}

// SetApprovalPassphrase stores an argon2id hash of p (fresh random salt,
// parameters recorded with it) as the owner approval passphrase,
// replacing any earlier one. The passphrase itself is never stored,
// logged or put in an error.
func (v *Vault) SetApprovalPassphrase(p Secret) error {
	if err := ValidateApprovalPassphrase(p); err != nil {
		return err
	}
	h := argonHash{time: argonTime, memory: argonMemory, threads: argonThreads, salt: make([]byte, argonSaltLen)}
	if _, err := rand.Read(h.salt); err != nil {
		return fmt.Errorf("drawing a salt: %w", err)
	}
	h.key = argon2.IDKey([]byte(p.Reveal()), h.salt, h.time, h.memory, h.threads, argonKeyLen)
	if err := v.Set(approvalItem, []byte(h.String())); err != nil {
		return fmt.Errorf("storing the approval passphrase hash: %w", err)
	}
	return nil
}

// CheckApprovalPassphrase reports whether p is the stored approval
// passphrase, comparing the derived keys in constant time. Without a
// stored hash it returns an error wrapping contracts.ErrNotFound; a
// locked or unreachable vault returns its error, never false.
func (v *Vault) CheckApprovalPassphrase(p Secret) (bool, error) {
	stored, err := v.Get(approvalItem)
	if err != nil {
		return false, err
	}
	h, err := parseArgonHash(string(stored))
	if err != nil {
		return false, err
	}
	got := derive(p.Reveal(), h)
	return subtle.ConstantTimeCompare(got, h.key) == 1, nil
}

// HasApprovalPassphrase reports whether a hash is stored.
func (v *Vault) HasApprovalPassphrase() (bool, error) {
	_, err := v.Get(approvalItem)
	switch {
	case errors.Is(err, contracts.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// ClearApprovalPassphrase removes the stored hash (absent is not an error).
func (v *Vault) ClearApprovalPassphrase() error {
	if err := v.Delete(approvalItem); err != nil {
		return fmt.Errorf("removing the approval passphrase hash: %w", err)
	}
	return nil
}
