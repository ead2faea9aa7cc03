//go:build !(darwin && cgo)

package vault

// keychainBuilt is false: keyring's Keychain backend needs darwin and cgo.
const keychainBuilt = false
