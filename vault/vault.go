package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/keyring"
	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
)

// Backend names accepted in Config.Backend.
const (
	BackendAuto          = "auto"
	BackendKeychain      = "keychain"
	BackendSecretService = "secret-service"
	BackendFile          = "file"
	BackendFileUnlock    = "file-unlock"
)

// Defaults for the Config durations.
const (
	DefaultBusProbe  = 2 * time.Second
	DefaultOpTimeout = 5 * time.Second
)

// itemLabel is the label and description of every item: generic, so the
// keyring reveals nothing about which server a credential belongs to.
const itemLabel = "pikod credential"

// Config selects and configures the backend.
type Config struct {
	// Backend is "auto" (the default when empty), "keychain",
	// "secret-service", "file" or "file-unlock".
	Backend string
	// Dir is the file backend's directory, e.g. STATE/vault; created 0700.
	// Required for "file", "file-unlock" and "auto".
	Dir string
	// KeyFile is the file backend's key file; default Dir/../vault.key.
	// It must be a regular file of mode 0600 (or stricter) owned by this
	// uid. Under "auto" and "file" it is generated (32 random bytes,
	// base64) when missing and Dir holds no vault yet.
	KeyFile string
	// CredentialsDir is $CREDENTIALS_DIRECTORY. If it holds a file named
	// "pikod-vault-key", that is the file backend's key (read only, never
	// generated) and KeyFile is not used.
	CredentialsDir string
	// Service is the keyring service name, e.g. "pikod-<instance>"; it is
	// hashed into every item name. Default "pikod".
	Service string
	// BusProbe bounds how long "auto" waits for the session bus and the
	// Secret Service to answer. Default 2s.
	BusProbe time.Duration
	// OpTimeout bounds every keyring call. Default 5s.
	OpTimeout time.Duration
	// Log receives the vault's events; never a secret value.
	Log zerolog.Logger
}

// store is one opened backend. Keys are already hashed. get returns
// keyring.ErrKeyNotFound for an absent key; remove of an absent key is
// not an error.
type store interface {
	get(key string) ([]byte, error)
	set(key string, value []byte) error
	remove(key string) error
}

// Vault is an opened secret store. Its methods are safe for concurrent use;
// the keyring calls themselves are serialised.
type Vault struct {
	service   string
	opTimeout time.Duration
	log       zerolog.Logger

	// infoMu guards the fields that follow. They are set by Open before
	// the Vault is shared and changed only by Migrate, which holds mu and
	// infoMu: code under mu may read them without infoMu, code outside mu
	// (Status, Backend) reads them under infoMu, so it never waits behind
	// a keyring call.
	infoMu  sync.RWMutex
	backend string // "keychain", "secret-service", "file" or "file-unlock"
	note    string
	// reason says why "auto" chose the backend at this Open; "" when the
	// backend was named.
	reason string
	file   *fileVault // file and file-unlock only

	// locked is true while a file-unlock vault waits for Unlock. It is
	// atomic so Status and Locked never wait behind a keyring call.
	locked atomic.Bool

	// mu serialises every keyring call and guards the fields that follow.
	mu sync.Mutex
	// st is the opened backend; nil while locked or after Close.
	st store
	// stuck is closed when the goroutine of a timed-out call returns; nil
	// when no call is stuck.
	stuck  chan struct{}
	closed bool
}

// Open opens the backend cfg names. It never falls through to another
// backend: "auto" decides by the rules in the package comment and says so
// in Status; an explicit backend either opens or returns an error.
func Open(cfg Config) (*Vault, error) {
	if cfg.Backend == "" {
		cfg.Backend = BackendAuto
	}
	if cfg.Service == "" {
		cfg.Service = "pikod"
	}
	if cfg.BusProbe <= 0 {
		cfg.BusProbe = DefaultBusProbe
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.Dir != "" {
		cfg.Dir = filepath.Clean(cfg.Dir)
		if cfg.KeyFile == "" {
			cfg.KeyFile = filepath.Join(filepath.Dir(cfg.Dir), "vault.key")
		}
	}
	v := &Vault{
		service:   cfg.Service,
		opTimeout: cfg.OpTimeout,
		log:       cfg.Log,
	}
	var err error
	switch cfg.Backend {
	case BackendAuto:
		err = v.openAuto(cfg)
	case BackendKeychain:
		err = v.openKeychain(cfg)
	case BackendSecretService:
		err = v.openSecretService(cfg, cfg.OpTimeout)
	case BackendFile:
		err = v.openFile(cfg, "")
	case BackendFileUnlock:
		err = v.openFileUnlock(cfg)
	default:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"unknown vault backend %q: use auto, keychain, secret-service, file or file-unlock", cfg.Backend)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the %s vault: %w", cfg.Backend, err)
	}
	v.log.Info().Str("backend", v.backend).Str("requested", cfg.Backend).Str("reason", v.reason).
		Bool("locked", v.locked.Load()).Msg("vault opened")
	return v, nil
}

// openAuto picks the platform's keyring when it answers, else the file
// backend, and records why in the note.
func (v *Vault) openAuto(cfg Config) error {
	var why string
	switch runtime.GOOS {
	case "darwin":
		err := v.openKeychain(cfg)
		if err == nil {
			v.note = "auto: " + v.note
			v.reason = "the macOS login Keychain opened"
			return nil
		}
		why = err.Error()
	case "linux":
		err := v.openSecretService(cfg, cfg.BusProbe)
		if err == nil {
			v.note = "auto: " + v.note
			v.reason = "the session bus answers " + ssName + ", which has a default collection"
			return nil
		}
		why = err.Error()
	default:
		why = "no keyring backend on " + runtime.GOOS
	}
	if cfg.Dir == "" {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"no keyring available (%s) and no vault directory configured for the file backend", why)
	}
	v.log.Warn().Str("reason", why).Msg("vault auto: using the file backend")
	v.reason = "no keyring: " + why
	return v.openFile(cfg, "auto: no keyring ("+why+"); ")
}

// Status reports the backend and what it protects against, and why
// "auto" chose it when this Open decided (Reason).
func (v *Vault) Status() contracts.VaultStatus {
	v.infoMu.RLock()
	st := contracts.VaultStatus{Backend: v.backend, Note: v.note, Reason: v.reason}
	backend := v.backend
	v.infoMu.RUnlock()
	switch backend {
	case BackendFileUnlock:
		st.Backend = "file"
		if v.locked.Load() {
			st.Backend = "file (locked)"
			st.Locked = true
			st.Note += "; locked: run 'pikoctl vault unlock'"
		}
	}
	return st
}

// Locked reports whether a file-unlock vault still waits for Unlock.
func (v *Vault) Locked() bool { return v.locked.Load() }

// Get returns the value stored under name. An absent name is an
// ErrNotFound error; a locked vault ErrFailedPrecondition (vault_locked);
// a keyring that does not answer ErrUnavailable (vault_timeout).
func (v *Vault) Get(name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	key := itemKey(v.service, name)
	var out []byte
	err := v.call(func(s store) error {
		b, err := s.get(key)
		out = b
		return err
	})
	if err != nil {
		return nil, v.opError(fmt.Sprintf("reading credential %q", name), err)
	}
	v.log.Debug().Str("name", name).Msg("vault read")
	return out, nil
}

// Set stores value under name, then reads it back and compares: a
// backend that accepted the write but returns something else is an error.
func (v *Vault) Set(name string, value []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	key := itemKey(v.service, name)
	val := bytes.Clone(value) // the call may outlive this method on timeout
	backend := v.Backend()
	err := v.call(func(s store) error {
		if err := s.set(key, val); err != nil {
			return err
		}
		got, err := s.get(key)
		if err != nil {
			return fmt.Errorf("reading the item back: %w", err)
		}
		if !bytes.Equal(got, val) {
			return contracts.Errorf(contracts.ErrInternal, contracts.ReasonVaultVerifyFailed,
				"the %s backend returned a different value than was written", backend)
		}
		return nil
	})
	if err != nil {
		return v.opError(fmt.Sprintf("storing credential %q", name), err)
	}
	v.log.Info().Str("name", name).Msg("vault write")
	return nil
}

// Delete removes name. Removing an absent name is not an error.
func (v *Vault) Delete(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	key := itemKey(v.service, name)
	err := v.call(func(s store) error { return s.remove(key) })
	if err != nil {
		return v.opError(fmt.Sprintf("deleting credential %q", name), err)
	}
	v.log.Info().Str("name", name).Msg("vault delete")
	return nil
}

// Close releases the vault. A call stuck in the keyring is not waited for.
// Later calls fail with reason vault_closed.
func (v *Vault) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	v.st = nil
	return nil
}

// call runs fn on the open store under mu with the operation timeout.
func (v *Vault) call(fn func(store) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultClosed, "the vault is closed")
	}
	if v.st == nil {
		return errLocked()
	}
	s := v.st
	return v.boundedLocked(func() error { return fn(s) })
}

// boundedLocked runs fn in a goroutine and waits at most opTimeout. On
// timeout it remembers the goroutine; until that returns, every call fails
// at once rather than adding another stuck goroutine. mu must be held.
func (v *Vault) boundedLocked(fn func() error) error {
	if v.stuck != nil {
		select {
		case <-v.stuck:
			v.stuck = nil
		default:
			return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultTimeout,
				"the %s backend is still busy with an earlier call that timed out; try again later", v.backend)
		}
	}
	done, err := runBounded(v.opTimeout, fn)
	if done != nil {
		v.stuck = done
		v.log.Warn().Str("backend", v.backend).Dur("timeout", v.opTimeout).Msg("vault call timed out")
	}
	return err
}

// runBounded runs fn in a goroutine and waits at most d for it. If fn
// finishes in time it returns (nil, fn's error); otherwise it returns a
// channel closed when fn eventually returns, and a vault_timeout error.
func runBounded(d time.Duration, fn func() error) (chan struct{}, error) {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return nil, err
	case <-t.C:
		return done, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultTimeout,
			"the keyring did not answer within %s (a keyring prompt may be waiting, or its daemon is stuck)", d)
	}
}

// opError turns a store error into a classed error naming the operation.
func (v *Vault) opError(what string, err error) error {
	var ce interface{ Reason() string }
	switch {
	case errors.Is(err, keyring.ErrKeyNotFound):
		return fmt.Errorf("%s: not in the vault: %w", what, contracts.ErrNotFound)
	case errors.As(err, &ce), errors.Is(err, contracts.ErrUnavailable), errors.Is(err, contracts.ErrInternal):
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
		"the %s backend failed: %v", v.Backend(), err))
}

func errLocked() error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked,
		"the vault is locked"), "run 'pikoctl vault unlock'")
}

// checkName refuses names no caller should produce.
func checkName(name string) error {
	if name == "" {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument, "credential name is empty")
	}
	return nil
}

// itemKey is the name an item has in the backend: hex SHA-256 of service,
// NUL, name. The hash keeps names out of the keyring and out of file paths.
func itemKey(service, name string) string {
	sum := sha256.Sum256([]byte(service + "\x00" + name))
	return hex.EncodeToString(sum[:])
}

// ringStore is a keychain or secret-service keyring. pre, when set, runs
// before each call (the secret service's lock check).
type ringStore struct {
	ring keyring.Keyring
	pre  func() error
}

func (r *ringStore) get(key string) ([]byte, error) {
	if r.pre != nil {
		if err := r.pre(); err != nil {
			return nil, err
		}
	}
	it, err := r.ring.Get(key)
	if err != nil {
		return nil, err
	}
	return it.Data, nil
}

func (r *ringStore) set(key string, value []byte) error {
	if r.pre != nil {
		if err := r.pre(); err != nil {
			return err
		}
	}
	return r.ring.Set(keyring.Item{
		Key:         key,
		Data:        value,
		Label:       itemLabel,
		Description: itemLabel,
	})
}

func (r *ringStore) remove(key string) error {
	if r.pre != nil {
		if err := r.pre(); err != nil {
			return err
		}
	}
	err := r.ring.Remove(key)
	if errors.Is(err, keyring.ErrKeyNotFound) {
		return nil
	}
	return err
}

// openRing calls keyring.Open for exactly one backend, bounded by d, and
// checks the type of what came back: keyring.Open falls through on error,
// so a list of one is the only way to know which backend answered.
func openRing(kc keyring.Config, d time.Duration, wantType string) (keyring.Keyring, error) {
	if len(kc.AllowedBackends) != 1 {
		panic("vault: openRing needs exactly one backend")
	}
	var ring keyring.Keyring
	_, err := runBounded(d, func() error {
		r, err := keyring.Open(kc)
		ring = r
		return err
	})
	if err != nil {
		if errors.Is(err, keyring.ErrNoAvailImpl) {
			return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
				"the %s backend could not be opened", kc.AllowedBackends[0])
		}
		return nil, err
	}
	if got := fmt.Sprintf("%T", ring); got != wantType {
		return nil, contracts.Errorf(contracts.ErrInternal, contracts.ReasonInternal,
			"keyring opened %s instead of the %s backend", got, kc.AllowedBackends[0])
	}
	return ring, nil
}

// Backend returns the backend in use: keychain, secret-service, file or
// file-unlock.
func (v *Vault) Backend() string {
	v.infoMu.RLock()
	defer v.infoMu.RUnlock()
	return v.backend
}

// Reason says why "auto" chose the backend when Open decided, e.g. "no
// keyring: the session bus is disabled (DBUS_SESSION_BUS_ADDRESS=disabled:)";
// "" when the backend was named. It never holds a secret.
func (v *Vault) Reason() string {
	v.infoMu.RLock()
	defer v.infoMu.RUnlock()
	return v.reason
}
