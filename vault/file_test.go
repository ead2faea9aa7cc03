package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
)

// fileConfig returns a file-backend config in a fresh state directory.
func fileConfig(t *testing.T, log *bytes.Buffer) Config {
	t.Helper()
	state := t.TempDir()
	cfg := Config{Backend: BackendFile, Dir: filepath.Join(state, "vault"), Service: "pikod-test"}
	if log != nil {
		cfg.Log = zerolog.New(log)
	}
	return cfg
}

func mustOpen(t *testing.T, cfg Config) *Vault {
	t.Helper()
	v, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg.Backend, err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// reason returns the wire reason of err.
func reason(err error) string { return contracts.ToError(err).Reason() }

// snapshot records every file under dir (path, mode, bytes).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = fmt.Sprintf("dir %v", fi.Mode())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%v %x", fi.Mode(), b)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

func writeKey(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestFileSetGetDelete(t *testing.T) {
	var logs bytes.Buffer
	cfg := fileConfig(t, &logs)
	v := mustOpen(t, cfg)
	if st := v.Status(); st.Backend != "file" || !strings.Contains(st.Note, "vault.key") || st.Locked {
		t.Errorf("Status() = %+v", st)
	}
	big := bytes.Repeat([]byte("x"), 64<<10)
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"server:learn/env.TOKEN", []byte(canary)},
		{"../../etc/passwd", []byte("traversal")},
		{"empty", []byte{}},
		{"binary", []byte{0, 1, 2, 255, '\n'}},
		{"big", big},
	} {
		if err := v.Set(tc.name, tc.value); err != nil {
			t.Fatalf("Set(%q): %v", tc.name, err)
		}
		got, err := v.Get(tc.name)
		if err != nil || !bytes.Equal(got, tc.value) {
			t.Fatalf("Get(%q) = %d bytes, %v; want %d bytes", tc.name, len(got), err, len(tc.value))
		}
	}
	if err := v.Set("server:learn/env.TOKEN", []byte("second")); err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Get("server:learn/env.TOKEN"); string(got) != "second" {
		t.Errorf("after overwrite Get = %q", got)
	}
	if err := v.Delete("binary"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := v.Get("binary"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := v.Get("never-set"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Get(never-set): %v, want ErrNotFound", err)
	}
	if err := v.Delete("binary"); err != nil {
		t.Errorf("Delete of an absent name: %v", err)
	}
	if _, err := v.Get(""); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("Get(\"\"): %v, want ErrInvalidArgument", err)
	}

	// Layout: private dir, 0600 key file, hashed names only, nothing in clear.
	for path, want := range map[string]os.FileMode{cfg.Dir: 0o700, filepath.Join(filepath.Dir(cfg.Dir), "vault.key"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	ents, _ := os.ReadDir(cfg.Dir)
	for _, e := range ents {
		if e.IsDir() {
			if e.Name() != stagingDirName {
				t.Errorf("unexpected directory %s", e.Name())
			}
			continue
		}
		if !isItemName(e.Name()) {
			t.Errorf("file %q is not a hashed item name", e.Name())
		}
		b, _ := os.ReadFile(filepath.Join(cfg.Dir, e.Name()))
		for _, clear := range []string{canary, "second", "traversal", "server:learn"} {
			if bytes.Contains(b, []byte(clear)) {
				t.Errorf("item %s holds %q in clear", e.Name(), clear)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg.Dir), "etc")); err == nil {
		t.Errorf("a name escaped the vault directory")
	}
	if strings.Contains(logs.String(), canary) {
		t.Errorf("the log shows a secret value")
	}
}

func TestFileReopen(t *testing.T) {
	cfg := fileConfig(t, nil)
	v := mustOpen(t, cfg)
	if err := v.Set("a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	v.Close()
	if _, err := v.Get("a"); reason(err) != "vault_closed" {
		t.Errorf("Get after Close: %v, want vault_closed", err)
	}
	v2 := mustOpen(t, cfg)
	if got, err := v2.Get("a"); err != nil || string(got) != "one" {
		t.Errorf("after reopen Get = %q, %v", got, err)
	}
	// Another service name sees none of it.
	cfg.Service = "pikod-other"
	cfg.Dir = filepath.Join(t.TempDir(), "vault")
	v3 := mustOpen(t, cfg)
	if _, err := v3.Get("a"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("other service Get: %v", err)
	}
}

func TestFileWrongKey(t *testing.T) {
	cfg := fileConfig(t, nil)
	v := mustOpen(t, cfg)
	for _, n := range []string{"a", "b", "c"} {
		if err := v.Set(n, []byte("value-"+n)); err != nil {
			t.Fatal(err)
		}
	}
	v.Close()
	keyFile := filepath.Join(filepath.Dir(cfg.Dir), "vault.key")
	goodKey, _ := os.ReadFile(keyFile)

	tests := []struct {
		name       string
		setup      func(t *testing.T)
		wantReason string
		wantText   string
	}{
		{"other key", func(t *testing.T) { writeKey(t, keyFile, 0o600) }, "vault_key_mismatch", "does not match"},
		{"missing key", func(t *testing.T) { os.Remove(keyFile) }, "vault_key_missing", "missing"},
		{"key file 0644", func(t *testing.T) { os.WriteFile(keyFile, goodKey, 0o600); os.Chmod(keyFile, 0o644) }, "vault_key_file_mode", "chmod 600"},
		{"key file 0640", func(t *testing.T) { os.WriteFile(keyFile, goodKey, 0o600); os.Chmod(keyFile, 0o640) }, "vault_key_file_mode", "readable only by you"},
		{"short key", func(t *testing.T) { os.WriteFile(keyFile, []byte("short\n"), 0o600); os.Chmod(keyFile, 0o600) }, "vault_key_file_invalid", "16"},
		{"symlinked key", func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "k")
			os.WriteFile(other, goodKey, 0o600)
			os.Remove(keyFile)
			os.Symlink(other, keyFile)
		}, "vault_key_file_invalid", "regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(keyFile)
			os.WriteFile(keyFile, goodKey, 0o600)
			tc.setup(t)
			before := snapshot(t, filepath.Dir(cfg.Dir))
			_, err := Open(cfg)
			if err == nil || reason(err) != tc.wantReason || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("Open = %v (reason %q), want reason %q mentioning %q", err, reason(err), tc.wantReason, tc.wantText)
			}
			sameSnapshot(t, tc.name, before, snapshot(t, filepath.Dir(cfg.Dir)))
		})
	}
	// The right key still opens it, and every item reads back.
	os.Remove(keyFile)
	os.WriteFile(keyFile, goodKey, 0o600)
	v = mustOpen(t, cfg)
	for _, n := range []string{"a", "b", "c"} {
		if got, err := v.Get(n); err != nil || string(got) != "value-"+n {
			t.Errorf("Get(%q) = %q, %v", n, got, err)
		}
	}
}

func TestFileItemsWithoutCheck(t *testing.T) {
	cfg := fileConfig(t, nil)
	os.MkdirAll(cfg.Dir, 0o700)
	os.WriteFile(filepath.Join(cfg.Dir, itemKey("someone-else", "x")), []byte("junk"), 0o600)
	writeKey(t, filepath.Join(filepath.Dir(cfg.Dir), "vault.key"), 0o600)
	before := snapshot(t, filepath.Dir(cfg.Dir))
	if _, err := Open(cfg); reason(err) != "vault_key_mismatch" || !strings.Contains(err.Error(), "no check item") {
		t.Fatalf("Open = %v, want vault_key_mismatch about the missing check item", err)
	}
	sameSnapshot(t, "items without check", before, snapshot(t, filepath.Dir(cfg.Dir)))
}

func TestFileDirMode(t *testing.T) {
	cfg := fileConfig(t, nil)
	os.MkdirAll(cfg.Dir, 0o755)
	os.Chmod(cfg.Dir, 0o755)
	if _, err := Open(cfg); reason(err) != "vault_dir_mode" {
		t.Fatalf("Open with a 0755 vault directory = %v, want vault_dir_mode", err)
	}
}

func TestFileCredentialsDirectory(t *testing.T) {
	cfg := fileConfig(t, nil)
	cfg.CredentialsDir = t.TempDir()
	writeKey(t, filepath.Join(cfg.CredentialsDir, "pikod-vault-key"), 0o400)
	v := mustOpen(t, cfg)
	if st := v.Status(); !strings.Contains(st.Note, "systemd credential pikod-vault-key") {
		t.Errorf("Status().Note = %q, want the systemd credential named", st.Note)
	}
	if err := v.Set("a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	v.Close()
	keyFile := filepath.Join(filepath.Dir(cfg.Dir), "vault.key")
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a key file was generated although the credential was used: %v", err)
	}
	v = mustOpen(t, cfg)
	if got, err := v.Get("a"); err != nil || string(got) != "one" {
		t.Errorf("Get = %q, %v", got, err)
	}
	v.Close()

	// Without the credential the vault is not opened with a fresh key file.
	noCred := cfg
	noCred.CredentialsDir = t.TempDir()
	if _, err := Open(noCred); reason(err) != "vault_key_missing" {
		t.Errorf("Open without the credential = %v, want vault_key_missing", err)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a key file was generated for an existing vault")
	}
	// A different credential is a wrong key.
	writeKey(t, filepath.Join(cfg.CredentialsDir, "pikod-vault-key"), 0o400)
	if _, err := Open(cfg); reason(err) != "vault_key_mismatch" {
		t.Errorf("Open with another credential = %v, want vault_key_mismatch", err)
	}
}

func TestFileUnlock(t *testing.T) {
	old := kdfIterations
	kdfIterations = minKDFIterations
	t.Cleanup(func() { kdfIterations = old })

	cfg := fileConfig(t, nil)
	cfg.Backend = BackendFileUnlock
	v := mustOpen(t, cfg)
	if !v.Locked() || v.Status().Backend != "file (locked)" || !v.Status().Locked {
		t.Fatalf("new file-unlock vault: Locked %v, Status %+v", v.Locked(), v.Status())
	}
	if _, err := v.Get("a"); !errors.Is(err, contracts.ErrFailedPrecondition) || reason(err) != "vault_locked" {
		t.Errorf("Get while locked = %v, want vault_locked", err)
	}
	if err := v.Set("a", []byte("x")); reason(err) != "vault_locked" {
		t.Errorf("Set while locked = %v, want vault_locked", err)
	}
	if err := v.Unlock(Secret{}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("Unlock(empty) = %v", err)
	}
	pass := NewSecret("correct horse battery staple")
	if err := v.Unlock(pass); err != nil {
		t.Fatalf("first Unlock: %v", err)
	}
	if v.Locked() || v.Status().Backend != "file" {
		t.Errorf("after Unlock: Locked %v, Status %+v", v.Locked(), v.Status())
	}
	if err := v.Set("a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := v.Unlock(pass); err != nil {
		t.Errorf("Unlock again with the same passphrase: %v", err)
	}
	if err := v.Unlock(NewSecret("wrong")); reason(err) != "vault_wrong_passphrase" {
		t.Errorf("Unlock of an unlocked vault with another passphrase = %v", err)
	}
	v.Close()
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg.Dir), "vault.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file-unlock wrote a key file")
	}

	v = mustOpen(t, cfg)
	before := snapshot(t, filepath.Dir(cfg.Dir))
	err := v.Unlock(NewSecret("Correct horse battery staple"))
	if !errors.Is(err, contracts.ErrPermissionDenied) || reason(err) != "vault_wrong_passphrase" {
		t.Fatalf("Unlock(wrong) = %v, want vault_wrong_passphrase", err)
	}
	sameSnapshot(t, "wrong passphrase", before, snapshot(t, filepath.Dir(cfg.Dir)))
	if !v.Locked() {
		t.Fatalf("vault unlocked by a wrong passphrase")
	}
	if err := v.Unlock(pass); err != nil {
		t.Fatalf("Unlock(right): %v", err)
	}
	if got, err := v.Get("a"); err != nil || string(got) != "one" {
		t.Errorf("Get after Unlock = %q, %v", got, err)
	}
	v.Close()

	// The two file modes refuse each other's vaults.
	keyCfg := cfg
	keyCfg.Backend = BackendFile
	before = snapshot(t, filepath.Dir(cfg.Dir))
	if _, err := Open(keyCfg); err == nil {
		t.Errorf("file backend opened a passphrase vault with a fresh key")
	} else if reason(err) != "vault_key_missing" {
		t.Errorf("file backend on a passphrase vault = %v", err)
	}
	sameSnapshot(t, "file on passphrase vault", before, snapshot(t, filepath.Dir(cfg.Dir)))

	fileCfg := fileConfig(t, nil)
	mustOpen(t, fileCfg).Close()
	fileCfg.Backend = BackendFileUnlock
	if _, err := Open(fileCfg); reason(err) != "vault_key_mismatch" {
		t.Errorf("file-unlock on a key-file vault = %v, want vault_key_mismatch", err)
	}
}

func TestFileConcurrent(t *testing.T) {
	v := mustOpen(t, fileConfig(t, nil))
	if err := v.Set("shared", []byte("shared-value")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20*3)
	for i := range 20 {
		wg.Go(func() {
			own := fmt.Sprintf("server-%d", i)
			if err := v.Set(own, []byte(own+"-value")); err != nil {
				errs <- err
				return
			}
			if got, err := v.Get(own); err != nil || string(got) != own+"-value" {
				errs <- fmt.Errorf("Get(%s) = %q, %v", own, got, err)
			}
			if got, err := v.Get("shared"); err != nil || string(got) != "shared-value" {
				errs <- fmt.Errorf("Get(shared) = %q, %v", got, err)
			}
			if err := v.Delete(own); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 20 {
		if _, err := v.Get(fmt.Sprintf("server-%d", i)); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("server-%d after Delete: %v", i, err)
		}
	}
}

func TestOpenConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"unknown backend", Config{Backend: "plaintext"}, contracts.ErrInvalidArgument},
		{"file without dir", Config{Backend: BackendFile}, contracts.ErrInvalidArgument},
		{"file-unlock without dir", Config{Backend: BackendFileUnlock}, contracts.ErrInvalidArgument},
	} {
		if _, err := Open(tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%s: Open = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestItemKey(t *testing.T) {
	a := itemKey("pikod-a", "server:x")
	if !isItemName(a) || a != itemKey("pikod-a", "server:x") {
		t.Errorf("itemKey not a stable 64-hex name: %q", a)
	}
	for _, other := range []string{itemKey("pikod-b", "server:x"), itemKey("pikod-a", "server:y"), itemKey("pikod-a\x00server:x", "")} {
		if other == a {
			t.Errorf("itemKey collision: %q", other)
		}
	}
}

// blockingStore is a store whose calls wait for release.
type blockingStore struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (b *blockingStore) wait() error {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	<-b.release
	return nil
}
func (b *blockingStore) get(string) ([]byte, error) { return []byte("v"), b.wait() }
func (b *blockingStore) set(string, []byte) error   { return b.wait() }
func (b *blockingStore) remove(string) error        { return b.wait() }

// TestStuckCallFailsFast checks the timeout path: a hung backend call
// returns vault_timeout, later calls fail at once without starting another
// call, and the vault serves again once the hung call returns.
func TestStuckCallFailsFast(t *testing.T) {
	bs := &blockingStore{release: make(chan struct{})}
	v := &Vault{backend: "test", opTimeout: 50 * 1e6, st: bs}
	_, err := v.Get("a")
	if !errors.Is(err, contracts.ErrUnavailable) || reason(err) != "vault_timeout" {
		t.Fatalf("Get on a hung backend = %v, want vault_timeout", err)
	}
	for _, op := range []func() error{
		func() error { _, err := v.Get("a"); return err },
		func() error { return v.Set("a", []byte("x")) },
		func() error { return v.Delete("a") },
	} {
		if err := op(); reason(err) != "vault_timeout" || !strings.Contains(err.Error(), "still busy") {
			t.Errorf("call while stuck = %v, want an immediate vault_timeout", err)
		}
	}
	bs.mu.Lock()
	calls := bs.calls
	bs.mu.Unlock()
	if calls != 1 {
		t.Errorf("backend saw %d calls while stuck, want 1", calls)
	}
	if st := v.Status(); st.Backend != "test" {
		t.Errorf("Status while stuck = %+v", st)
	}
	v.mu.Lock()
	stuck := v.stuck
	v.mu.Unlock()
	close(bs.release)
	<-stuck
	if got, err := v.Get("a"); err != nil || string(got) != "v" {
		t.Errorf("Get after the hung call returned = %q, %v", got, err)
	}
}
