//go:build darwin && cgo

package vault

// keychainBuilt is true when keyring's Keychain backend is compiled in.
const keychainBuilt = true
