package vault

import (
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// recordingLog is a MigrationLog that keeps the calls it got, and can be
// told to fail one of them.
type recordingLog struct {
	// mu guards the fields that follow.
	mu       sync.Mutex
	calls    []string
	last     Migration
	failOn   string
	switched bool
}

func (l *recordingLog) record(call string, m Migration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
	if call != "done" {
		l.last = m
	}
	if call == l.failOn {
		return errors.New("the log refused " + call)
	}
	if call == "switch" {
		l.switched = true
	}
	return nil
}

func (l *recordingLog) Begin(m Migration) error  { return l.record("begin", m) }
func (l *recordingLog) Switch(m Migration) error { return l.record("switch", m) }
func (l *recordingLog) Done() error              { return l.record("done", Migration{}) }

func (l *recordingLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// TestVaultMigrateRefusals: a migration that cannot be made refuses before
// anything is written or recorded, and says why.
func TestVaultMigrateRefusals(t *testing.T) {
	cfg := fileConfig(t, nil)
	v := mustOpen(t, cfg)
	if err := v.Set("server/fx", []byte(canary)); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, cfg.Dir)
	target := func(backend string) Config {
		c := cfg
		c.Backend = backend
		return c
	}
	// A backend this platform does not have: never the desktop's keyring.
	unavailable := BackendKeychain
	if runtime.GOOS == "darwin" {
		unavailable = BackendSecretService
	}
	for _, tc := range []struct {
		to, reason, says string
	}{
		{BackendFile, "vault_migrate_same", "already uses the file backend"},
		{BackendFileUnlock, "vault_migrate_same_place", "same directory"},
		{BackendAuto, "invalid_argument", "auto is not a place"},
		{"plaintext", "invalid_argument", "unknown vault backend"},
		{unavailable, "vault_unavailable", "nothing was changed"},
	} {
		log := &recordingLog{}
		_, err := v.Migrate(MigrateOptions{Target: target(tc.to), Names: []string{"server/fx"}, Log: log})
		if reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Migrate to %s = %v (reason %q), want %s saying %q", tc.to, err, reason(err), tc.reason, tc.says)
		}
		if err != nil && strings.Contains(err.Error(), canary) {
			t.Errorf("Migrate to %s: the error holds the value: %v", tc.to, err)
		}
		if got := log.got(); len(got) > 0 {
			t.Errorf("Migrate to %s recorded %v, want nothing", tc.to, got)
		}
		if v.Backend() != BackendFile {
			t.Errorf("after a refused migration to %s the vault uses %s", tc.to, v.Backend())
		}
	}
	sameSnapshot(t, "the file vault after refused migrations", before, snapshot(t, cfg.Dir))
	if got, err := v.Get("server/fx"); err != nil || string(got) != canary {
		t.Errorf("Get after refused migrations = %q, %v", got, err)
	}

	// A locked vault cannot be read, so it cannot be moved.
	lc := fileConfig(t, nil)
	lc.Backend = BackendFileUnlock
	locked := mustOpen(t, lc)
	log := &recordingLog{}
	_, err := locked.Migrate(MigrateOptions{Target: Config{Backend: unavailable}, Log: log})
	if reason(err) != "vault_locked" || !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Migrate of a locked vault = %v, want vault_locked", err)
	}
	if got := log.got(); len(got) > 0 {
		t.Errorf("Migrate of a locked vault recorded %v", got)
	}
}

// TestVaultCleanUpFile: the copies an interrupted migration left in a file
// directory are removed by name, without the key, and the check item goes
// once no item is left; copies in the backend in use are never touched.
func TestVaultCleanUpFile(t *testing.T) {
	old := kdfIterations
	kdfIterations = minKDFIterations
	t.Cleanup(func() { kdfIterations = old })
	cfg := fileConfig(t, nil)
	v := mustOpen(t, cfg)
	for _, n := range []string{"server/a", "server/b"} {
		if err := v.Set(n, []byte(canary)); err != nil {
			t.Fatal(err)
		}
	}
	v.Close()
	keys := []string{itemKey(cfg.Service, "server/a"), itemKey(cfg.Service, "server/b")}
	m := Migration{From: BackendFile, To: BackendSecretService, Moved: keys}
	if err := CleanUp(m, true, BackendFileUnlock, cfg); reason(err) != "vault_in_use" {
		t.Errorf("CleanUp of the directory in use = %v, want vault_in_use", err)
	}
	if left, _ := itemFiles(cfg.Dir, itemKey(cfg.Service, checkItemName)); len(left) != 2 {
		t.Errorf("after a refused CleanUp the directory holds %d items, want 2", len(left))
	}
	if err := CleanUp(m, true, BackendSecretService, cfg); err != nil {
		t.Fatalf("CleanUp: %v", err)
	}
	snap := snapshot(t, cfg.Dir)
	for name := range snap {
		if name != "." && name != stagingDirName {
			t.Errorf("after CleanUp the directory still holds %s", name)
		}
	}
	// The emptied directory takes a vault of either mode.
	c := cfg
	c.Backend = BackendFileUnlock
	if fu := mustOpen(t, c); fu.Unlock(NewSecret("a passphrase for the emptied dir")) != nil {
		t.Errorf("the emptied directory does not take a passphrase vault")
	}
	if _, err := Open(Config{Backend: BackendFile, Dir: filepath.Join(t.TempDir(), "none"), Service: "x"}); err != nil {
		t.Errorf("Open of a new file vault: %v", err)
	}
}
