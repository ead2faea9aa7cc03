package vault

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/99designs/keyring"

	"github.com/pikod/pikod/contracts"
)

const (
	// credentialName is the systemd credential that holds the file key.
	credentialName = "pikod-vault-key"
	// checkName is the item read on open to prove the key is right.
	checkItemName = "pikod-vault-check"
	// kdfFileName holds the passphrase KDF parameters of a file-unlock
	// vault (not secret). Its name is not 64 hex digits, so it is never
	// taken for an item.
	kdfFileName = "pikod-vault-kdf.json"
	// stagingDirName is where writes are encrypted before the rename.
	stagingDirName = ".staging"
	// minKeyLen is the shortest key file content accepted.
	minKeyLen = 16
	// maxKeyLen caps what is read from a key file.
	maxKeyLen = 4096
)

// checkValue is the plaintext of the check item.
var checkValue = []byte("pikod vault check v1")

// kdfIterations is the PBKDF2-SHA256 count for new passphrase vaults
// (OWASP 2023). A variable so tests can make Unlock cheap; the count used
// is stored in the KDF file, bounded by [minKDFIterations, maxKDFIterations].
var kdfIterations = 600_000

const (
	minKDFIterations = 1_000
	maxKDFIterations = 10_000_000
)

// fileVault is the state of a file or file-unlock vault.
type fileVault struct {
	dir     string
	service string
}

// kdfParams is the content of the KDF file.
type kdfParams struct {
	Version    int    `json:"version"`
	KDF        string `json:"kdf"`
	Iterations int    `json:"iterations"`
	Salt       string `json:"salt"`
}

// inventory is what a vault directory holds, learnt without writing.
type inventory struct {
	items    int  // item files other than the check item
	hasCheck bool // the check item exists
	hasKDF   bool // the KDF file exists
}

// prepareFileDir makes sure the vault directory of cfg exists (0700) and
// says what it holds, without writing anything in it.
func prepareFileDir(cfg Config) (*fileVault, inventory, error) {
	if cfg.Dir == "" {
		return nil, inventory{}, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"the file vault needs a directory (Config.Dir)")
	}
	fv := &fileVault{dir: cfg.Dir, service: cfg.Service}
	if err := ensureDir(fv.dir); err != nil {
		return nil, inventory{}, err
	}
	inv, err := fv.inventory()
	if err != nil {
		return nil, inventory{}, err
	}
	return fv, inv, nil
}

// openFile opens the file backend with a key from the credentials
// directory or the key file. prefix starts the status note ("auto: ...").
func (v *Vault) openFile(cfg Config, prefix string) error {
	fv, inv, err := prepareFileDir(cfg)
	if err != nil {
		return err
	}
	var key Secret
	var from string
	credPath := ""
	if cfg.CredentialsDir != "" {
		credPath = filepath.Join(cfg.CredentialsDir, credentialName)
	}
	switch {
	case credPath != "" && exists(credPath):
		key, err = readKeyFile(credPath)
		if err != nil {
			return err
		}
		from = "the systemd credential " + credentialName
	default:
		if !exists(cfg.KeyFile) {
			if inv.items > 0 || inv.hasCheck {
				return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyMissing,
					"the key file %s is missing but %s holds a vault; nothing was written", cfg.KeyFile, fv.dir),
					"restore the key file from your backup")
			}
			if err := generateKeyFile(cfg.KeyFile); err != nil {
				return err
			}
			v.log.Info().Str("key_file", cfg.KeyFile).Msg("vault key file generated")
		}
		key, err = readKeyFile(cfg.KeyFile)
		if err != nil {
			return err
		}
		from = "a key in " + cfg.KeyFile + " (0600)"
	}
	st, err := fv.open(key, inv, cfg.OpTimeout, func() error {
		hint := "restore the right key file"
		if inv.hasKDF {
			hint = "this vault was made with a passphrase: use the file-unlock backend"
		}
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyMismatch,
			"the vault key does not match the vault in %s: %s; nothing was written", fv.dir, hint), hint)
	})
	if err != nil {
		return err
	}
	v.backend = BackendFile
	v.file = fv
	v.st = st
	v.note = prefix + "encrypted at rest with " + from +
		": protects copies of the vault directory without the key, not a process running as you"
	return nil
}

// openFileUnlock opens a passphrase vault in the locked state.
func (v *Vault) openFileUnlock(cfg Config) error {
	fv, inv, err := prepareFileDir(cfg)
	if err != nil {
		return err
	}
	if !inv.hasKDF && (inv.items > 0 || inv.hasCheck) {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyMismatch,
			"the vault in %s was made with a key file, not a passphrase; nothing was written", fv.dir),
			"use the file backend with its key file")
	}
	v.backend = BackendFileUnlock
	v.file = fv
	v.locked.Store(true)
	v.note = "encrypted at rest with a key derived from a passphrase held only in pikod's memory: " +
		"protects the vault while pikod is stopped or locked, not a process running as you while it is unlocked"
	return nil
}

// Unlock derives the key of a file-unlock vault from pass and checks it
// against the check item. A wrong passphrase is refused before anything is
// written and the vault stays locked. The first Unlock of an empty
// directory sets the passphrase. Unlocking an unlocked vault only checks
// the passphrase.
func (v *Vault) Unlock(pass Secret) error {
	if b := v.Backend(); b != BackendFileUnlock {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultNotLockable,
			"the %s vault has no passphrase to unlock", b)
	}
	if pass.IsZero() {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument, "the passphrase is empty")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultClosed, "the vault is closed")
	}
	// Again under mu: Migrate may have moved the vault meanwhile.
	if v.backend != BackendFileUnlock {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultNotLockable,
			"the %s vault has no passphrase to unlock", v.backend)
	}
	fv := v.file
	inv, err := fv.inventory()
	if err != nil {
		return fmt.Errorf("unlocking the vault: %w", err)
	}
	params, fresh, err := fv.kdf(inv)
	if err != nil {
		return fmt.Errorf("unlocking the vault: %w", err)
	}
	key, err := deriveKey(pass, params)
	if err != nil {
		return fmt.Errorf("unlocking the vault: %w", err)
	}
	wrong := func() error {
		return contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonVaultWrongPassphrase,
			"wrong passphrase for the vault in %s; it stays locked and nothing was written", fv.dir)
	}
	if cur, ok := v.st.(*fileStore); ok {
		// Already unlocked: compare keys, touch nothing.
		if subtle.ConstantTimeCompare([]byte(cur.key.Reveal()), []byte(key.Reveal())) != 1 {
			return wrong()
		}
		return nil
	}
	if fresh {
		if err := writeFileAtomic(fv.dir, kdfFileName, params); err != nil {
			return fmt.Errorf("unlocking the vault: %w", err)
		}
	}
	st, err := fv.open(key, inv, v.opTimeout, wrong)
	if err != nil {
		return fmt.Errorf("unlocking the vault: %w", err)
	}
	v.st = st
	v.locked.Store(false)
	v.log.Info().Msg("vault unlocked")
	return nil
}

// kdf returns the directory's KDF parameters, or new ones (fresh) for an
// empty directory.
func (fv *fileVault) kdf(inv inventory) (kdfParams, bool, error) {
	if !inv.hasKDF {
		if inv.items > 0 || inv.hasCheck {
			return kdfParams{}, false, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyMismatch,
				"the vault in %s was made with a key file, not a passphrase", fv.dir)
		}
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return kdfParams{}, false, fmt.Errorf("making a salt: %w", err)
		}
		return kdfParams{Version: 1, KDF: "pbkdf2-sha256", Iterations: kdfIterations,
			Salt: base64.StdEncoding.EncodeToString(salt)}, true, nil
	}
	b, err := readLimited(filepath.Join(fv.dir, kdfFileName), maxKeyLen)
	if err != nil {
		return kdfParams{}, false, fmt.Errorf("reading the KDF parameters: %w", err)
	}
	var p kdfParams
	if err := json.Unmarshal(b, &p); err != nil || p.Version != 1 || p.KDF != "pbkdf2-sha256" {
		return kdfParams{}, false, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultCorrupt,
			"%s is not a pikod KDF file (want version 1, pbkdf2-sha256)", filepath.Join(fv.dir, kdfFileName))
	}
	if p.Iterations < minKDFIterations || p.Iterations > maxKDFIterations {
		return kdfParams{}, false, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultCorrupt,
			"%s has an iteration count outside %d..%d", filepath.Join(fv.dir, kdfFileName), minKDFIterations, maxKDFIterations)
	}
	return p, false, nil
}

// deriveKey stretches pass with PBKDF2-SHA256. jose2go's own PBES2 uses
// only 8192 rounds, too few for a passphrase; a random key file needs none.
func deriveKey(pass Secret, p kdfParams) (Secret, error) {
	salt, err := base64.StdEncoding.DecodeString(p.Salt)
	if err != nil || len(salt) < 8 {
		return Secret{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultCorrupt, "the KDF salt is invalid")
	}
	k, err := pbkdf2.Key(sha256.New, pass.Reveal(), salt, p.Iterations, 32)
	if err != nil {
		return Secret{}, fmt.Errorf("deriving the vault key: %w", err)
	}
	return NewSecret(base64.StdEncoding.EncodeToString(k)), nil
}

// open builds the keyrings for key and proves the key before any write:
// with a check item it must decrypt to checkValue; without one the
// directory must hold no items, and then the check item is written.
// mismatch makes the error for a wrong key.
func (fv *fileVault) open(key Secret, inv inventory, timeout time.Duration, mismatch func() error) (*fileStore, error) {
	pw := func(string) (string, error) { return key.Reveal(), nil }
	main, err := openRing(keyring.Config{
		AllowedBackends:  []keyring.BackendType{keyring.FileBackend},
		FileDir:          fv.dir,
		FilePasswordFunc: pw,
	}, timeout, "*keyring.fileKeyring")
	if err != nil {
		return nil, err
	}
	stageDir := filepath.Join(fv.dir, stagingDirName)
	stage, err := openRing(keyring.Config{
		AllowedBackends:  []keyring.BackendType{keyring.FileBackend},
		FileDir:          stageDir,
		FilePasswordFunc: pw,
	}, timeout, "*keyring.fileKeyring")
	if err != nil {
		return nil, err
	}
	ck := itemKey(fv.service, checkItemName)
	st := &fileStore{main: main, stage: stage, dir: fv.dir, stageDir: stageDir, key: key, check: ck}
	switch {
	case inv.hasCheck:
		var got []byte
		_, err := runBounded(timeout, func() error {
			b, err := st.get(ck)
			got = b
			return err
		})
		var pe *fs.PathError
		switch {
		case err == nil:
		case errors.Is(err, contracts.ErrUnavailable):
			return nil, err
		case errors.As(err, &pe):
			return nil, fmt.Errorf("reading the vault check item: %w", err)
		default: // jose2go could not decrypt it: another key
			return nil, mismatch()
		}
		if !bytes.Equal(got, checkValue) {
			return nil, mismatch()
		}
	case inv.items > 0:
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyMismatch,
			"%s holds %d items but no check item for service %q, so the key cannot be verified; nothing was written",
			fv.dir, inv.items, fv.service), "check the instance name and the vault directory")
	default:
		_, err := runBounded(timeout, func() error {
			if err := st.set(ck, checkValue); err != nil {
				return err
			}
			b, err := st.get(ck)
			if err != nil {
				return err
			}
			if !bytes.Equal(b, checkValue) {
				return errors.New("the check item reads back differently")
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("writing the vault check item: %w", err)
		}
	}
	// Leftovers of a crash between encrypting and renaming are garbage.
	if ents, err := os.ReadDir(stageDir); err == nil {
		for _, e := range ents {
			_ = os.Remove(filepath.Join(stageDir, e.Name()))
		}
	}
	return st, nil
}

// inventory lists the directory without writing.
func (fv *fileVault) inventory() (inventory, error) {
	ents, err := os.ReadDir(fv.dir)
	if err != nil {
		return inventory{}, fmt.Errorf("listing the vault directory: %w", err)
	}
	ck := itemKey(fv.service, checkItemName)
	var inv inventory
	for _, e := range ents {
		switch name := e.Name(); {
		case name == kdfFileName:
			inv.hasKDF = true
		case name == ck:
			inv.hasCheck = true
		case isItemName(name) && e.Type().IsRegular():
			inv.items++
		}
	}
	return inv, nil
}

func isItemName(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// fileStore is an unlocked file vault. Reads and removes go through main;
// writes are encrypted by stage into the staging directory, synced, and
// renamed into place.
type fileStore struct {
	main, stage   keyring.Keyring
	dir, stageDir string
	key           Secret
	check         string // the check item's key
}

// keys lists the item files of the directory, without the check item:
// every item of this vault, whether or not pikod still knows its name.
func (f *fileStore) keys() ([]string, error) {
	return itemFiles(f.dir, f.check)
}

// itemFiles lists the item files of dir other than the check item check.
func itemFiles(dir, check string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the vault directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); n != check && isItemName(n) && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	return out, nil
}

func (f *fileStore) get(key string) ([]byte, error) {
	it, err := f.main.Get(key)
	if err != nil {
		return nil, err
	}
	return it.Data, nil
}

func (f *fileStore) set(key string, value []byte) error {
	if err := f.stage.Set(keyring.Item{Key: key, Data: value, Label: itemLabel, Description: itemLabel}); err != nil {
		return err
	}
	tmp := filepath.Join(f.stageDir, key)
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, key)); err != nil {
		return err
	}
	return syncPath(f.dir)
}

func (f *fileStore) remove(key string) error {
	err := f.main.Remove(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return syncPath(f.dir)
}

// ensureDir creates dir 0700, or checks that an existing one is a
// directory of ours that no one else can enter.
func ensureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating the vault directory: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking the vault directory: %w", err)
	}
	if !fi.IsDir() {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultDirInvalid,
			"%s is not a directory (a symlink is refused too)", dir)
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultDirMode,
			"the vault directory %s has mode %04o: it must be private to you (chmod 700 %s)", dir, fi.Mode().Perm(), dir),
			"chmod 700 "+dir)
	}
	return nil
}

// readKeyFile reads a key that must be a regular file, owned by us, with
// no group or other permission bits, of at least minKeyLen bytes.
func readKeyFile(path string) (Secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return Secret{}, fmt.Errorf("opening the vault key file: %w", err)
	}
	defer f.Close()
	lfi, err := os.Lstat(path)
	if err != nil {
		return Secret{}, fmt.Errorf("checking the vault key file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return Secret{}, fmt.Errorf("checking the vault key file: %w", err)
	}
	if !lfi.Mode().IsRegular() || !os.SameFile(lfi, fi) {
		return Secret{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyFileInvalid,
			"the vault key file %s must be a regular file (a symlink is refused)", path)
	}
	if err := checkOwner(path, fi); err != nil {
		return Secret{}, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Secret{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyFileMode,
			"the vault key file %s has mode %04o: it must be readable only by you (chmod 600 %s)", path, fi.Mode().Perm(), path),
			"chmod 600 "+path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyLen+1))
	if err != nil {
		return Secret{}, fmt.Errorf("reading the vault key file: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if len(b) > maxKeyLen || len(k) < minKeyLen {
		return Secret{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultKeyFileInvalid,
			"the vault key file %s must hold %d to %d bytes of key", path, minKeyLen, maxKeyLen),
			"make one with: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE")
	}
	return NewSecret(k), nil
}

// generateKeyFile writes 32 random bytes, base64, to a new 0600 file and
// syncs it and its directory. An existing file is never overwritten.
func generateKeyFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the key file's directory: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("generating the vault key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating the vault key file: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing the vault key file: %w", err)
	}
	return syncPath(filepath.Dir(path))
}

// writeFileAtomic writes v as JSON to dir/name through a temporary file,
// fsync and rename.
func writeFileAtomic(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return syncPath(dir)
}

// syncPath fsyncs a file or directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return nil
}

func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
