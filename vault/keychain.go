package vault

import (
	"runtime"

	"github.com/99designs/keyring"

	"github.com/pikod/pikod/contracts"
)

// openKeychain opens the macOS login Keychain. keyring's Keychain backend
// exists only in darwin builds with cgo; keychainBuilt says whether this
// binary has it, so a CGO_ENABLED=0 build explains itself instead of
// reporting an unavailable backend.
func (v *Vault) openKeychain(cfg Config) error {
	if runtime.GOOS != "darwin" {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultUnavailable,
			"the keychain backend exists only on macOS")
	}
	if !keychainBuilt {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultUnavailable,
			"the keychain backend needs a cgo build of pikod (CGO_ENABLED=1)")
	}
	ring, err := openRing(keyring.Config{
		AllowedBackends: []keyring.BackendType{keyring.KeychainBackend},
		ServiceName:     cfg.Service,
		// Trusting the application lets pikod read its own items without a
		// Keychain prompt per read; other programs still prompt.
		KeychainTrustApplication: true,
	}, cfg.OpTimeout, "*keyring.keychain")
	if err != nil {
		return err
	}
	v.backend = BackendKeychain
	v.st = &ringStore{ring: ring}
	v.note = "stored in your macOS login Keychain: encrypted at rest and unlocked with your login; " +
		"protects copies of your disk and other users, not a process running as you that the Keychain lets in"
	return nil
}
