//go:build linux

package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// childEnv names the scenario a re-executed test binary runs. keyring
// registers its secret-service backend, and godbus caches the session bus,
// once per process at init, so each scenario needs a process whose
// DBUS_SESSION_BUS_ADDRESS points at the private bus from the start.
const childEnv = "PIKOD_VAULT_TEST_CHILD"

// fakeBus listens on a unix socket, accepts connections and never answers.
func fakeBus(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "bus")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int32)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "unix:path=" + path, accepted
}

// TestHungBus: a session bus that accepts and never answers costs auto at
// most BusProbe (then the file backend, with the reason in Status), and an
// explicit secret-service Open returns vault_timeout instead of hanging.
func TestHungBus(t *testing.T) {
	addr, accepted := fakeBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)

	cfg := fileConfig(t, nil)
	cfg.Backend = BackendAuto
	cfg.BusProbe = 300 * time.Millisecond
	v := mustOpen(t, cfg)
	st := v.Status()
	if st.Backend != "file" || !strings.Contains(st.Note, "auto: no keyring") || !strings.Contains(st.Note, "did not answer") {
		t.Errorf("auto on a hung bus: Status() = %+v, want the file backend and the reason", st)
	}
	if err := v.Set("a", []byte("one")); err != nil {
		t.Errorf("the fallback vault does not serve: %v", err)
	}

	_, err := Open(Config{Backend: BackendSecretService, OpTimeout: 300 * time.Millisecond})
	if !errors.Is(err, contracts.ErrUnavailable) || reason(err) != "vault_timeout" {
		t.Errorf("Open(secret-service) on a hung bus = %v (reason %q), want vault_timeout", err, reason(err))
	}
	if n := accepted.Load(); n < 2 {
		t.Errorf("the fake bus saw %d connections, want one per Open", n)
	}
}

func TestNoBus(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"disabled:", "disabled"},
		{"unix:path=/nonexistent/pikod-test-bus", "cannot reach the session bus"},
		{"", "not set"},
		{"nonce-tcp:host=127.0.0.1,port=1", "unsupported bus address"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			t.Setenv("DBUS_SESSION_BUS_ADDRESS", tc.addr)
			cfg := fileConfig(t, nil)
			cfg.Backend = BackendAuto
			v := mustOpen(t, cfg)
			if st := v.Status(); st.Backend != "file" || !strings.Contains(st.Note, tc.want) {
				t.Errorf("auto: Status() = %+v, want file and %q", st, tc.want)
			}
			_, err := Open(Config{Backend: BackendSecretService})
			if reason(err) != "vault_unavailable" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(secret-service) = %v, want vault_unavailable mentioning %q", err, tc.want)
			}
		})
	}
}

func TestDecodeBusPath(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/org/freedesktop/secrets/collection/login", "login", true},
		{"/org/freedesktop/secrets/collection/my_20keys", "my keys", true},
		{"/org/freedesktop/secrets/collection/", "", false},
		{"/org/freedesktop/secrets/aliases/default", "", false},
	} {
		got, ok := collectionName(dbus.ObjectPath(tc.path))
		if got != tc.want || ok != tc.ok {
			t.Errorf("collectionName(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	if got := unescapeBusValue("/tmp/a%2cb"); got != "/tmp/a,b" {
		t.Errorf("unescapeBusValue = %q", got)
	}
}

// requireTool fails (never skips, unless PIKO_SKIP_SECRET_SERVICE=1) when
// a program the secret-service tests need is missing.
func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("PIKO_SKIP_SECRET_SERVICE") == "1" {
				t.Skipf("%s not installed and PIKO_SKIP_SECRET_SERVICE=1", n)
			}
			t.Fatalf("%s is not installed: the secret-service tests need it "+
				"(apt-get install gnome-keyring dbus dbus-x11), or set PIKO_SKIP_SECRET_SERVICE=1", n)
		}
	}
}

// TestSecretService runs the real Secret Service scenarios, each in a child
// process on a private bus.
func TestSecretService(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child process")
	}
	requireTool(t, "dbus-daemon", "gnome-keyring-daemon")
	for _, scenario := range []string{"roundtrip", "hang", "migrate"} {
		t.Run(scenario, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "pk")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			addr := testsupport.PrivateBus(t, dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DBUS_SESSION_BUS_ADDRESS=disabled:"})
			for _, d := range []string{"home", "data", "run", "config", "cache"} {
				os.MkdirAll(filepath.Join(dir, d), 0o700)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSecretServiceChild$", "-test.v", "-test.count=1")
			var env []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				switch k {
				case "DBUS_SESSION_BUS_ADDRESS", "HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", childEnv:
					continue
				}
				env = append(env, kv)
			}
			cmd.Env = append(env,
				childEnv+"="+scenario,
				"DBUS_SESSION_BUS_ADDRESS="+addr,
				"HOME="+filepath.Join(dir, "home"),
				"XDG_DATA_HOME="+filepath.Join(dir, "data"),
				"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"),
				"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
				"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
			)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("--- PASS: TestSecretServiceChild")) {
				t.Fatalf("child %s: %v\n%s", scenario, err, out)
			}
			t.Logf("child %s:\n%s", scenario, out)
		})
	}
}

// TestSecretServiceChild is the child half of TestSecretService; run
// alone it does nothing.
func TestSecretServiceChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		return
	case "roundtrip":
		childRoundtrip(t)
	case "hang":
		childHang(t)
	case "migrate":
		childMigrate(t)
	default:
		t.Fatalf("unknown scenario %q", os.Getenv(childEnv))
	}
}

// keyringDaemon runs gnome-keyring-daemon (secrets only) on the session
// bus, with the login keyring unlocked by a password on stdin, and tracks
// who owns org.freedesktop.secrets.
type keyringDaemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr bytes.Buffer
	sigs   chan *dbus.Signal
	conn   *dbus.Conn
}

func newKeyringDaemon(t *testing.T) *keyringDaemon {
	t.Helper()
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		t.Fatalf("connecting to the private bus: %v", err)
	}
	if err := conn.Auth(nil); err != nil {
		t.Fatalf("auth on the private bus: %v", err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatalf("hello on the private bus: %v", err)
	}
	k := &keyringDaemon{t: t, conn: conn, sigs: make(chan *dbus.Signal, 16)}
	conn.Signal(k.sigs)
	rule := "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" + ssName + "'"
	if err := conn.BusObject().Call("org.freedesktop.DBus.AddMatch", 0, rule).Err; err != nil {
		t.Fatalf("AddMatch: %v", err)
	}
	t.Cleanup(func() {
		k.stop()
		conn.Close()
	})
	return k
}

func (k *keyringDaemon) owned() bool {
	var has bool
	if err := k.conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, ssName).Store(&has); err != nil {
		k.t.Fatalf("NameHasOwner: %v", err)
	}
	return has
}

// waitOwner waits for the NameOwnerChanged signal that makes the name
// owned (or released), checking the current state first.
func (k *keyringDaemon) waitOwner(want bool) {
	k.t.Helper()
	if k.owned() == want {
		return
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-k.sigs:
			if s.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(s.Body) == 3 {
				if newOwner, _ := s.Body[2].(string); (newOwner != "") == want {
					return
				}
			}
		case <-timeout:
			k.t.Fatalf("org.freedesktop.secrets owned=%v never came\n%s", want, k.stderr.String())
		}
	}
}

func (k *keyringDaemon) start() {
	k.t.Helper()
	cmd := exec.Command("gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock")
	cmd.Stdin = strings.NewReader("test-password") // --unlock reads it to EOF
	cmd.Stderr = &k.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		k.t.Fatalf("starting gnome-keyring-daemon: %v", err)
	}
	k.cmd = cmd
	k.waitOwner(true)
}

func (k *keyringDaemon) stop() {
	if k.cmd == nil {
		return
	}
	k.cmd.Process.Signal(syscall.SIGCONT)
	k.cmd.Process.Kill()
	k.cmd.Wait()
	k.cmd = nil
	k.waitOwner(false)
}

func childRoundtrip(t *testing.T) {
	k := newKeyringDaemon(t)
	k.start()
	cfg := Config{Backend: BackendSecretService, Service: "pikod-test"}
	v := mustOpen(t, cfg)
	if st := v.Status(); st.Backend != "secret-service" || !strings.Contains(st.Note, `"login"`) {
		t.Fatalf("Status() = %+v", st)
	}
	const name = "server:learn/headers.Authorization"
	if _, err := v.Get(name); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Get before Set = %v, want ErrNotFound", err)
	}
	if err := v.Set(name, []byte(canary)); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got, err := v.Get(name); err != nil || string(got) != canary {
		t.Fatalf("Get = %q, %v", got, err)
	}

	// The keyring daemon restarts; the item is in its keyring file.
	k.stop()
	k.start()
	if got, err := v.Get(name); err != nil || string(got) != canary {
		t.Fatalf("Get after the keyring daemon restarted = %q, %v", got, err)
	}
	// A vault for another service does not see it; auto picks the service.
	other := mustOpen(t, Config{Backend: BackendAuto, Service: "pikod-other", Dir: filepath.Join(t.TempDir(), "vault")})
	if st := other.Status(); st.Backend != "secret-service" || !strings.HasPrefix(st.Note, "auto: ") {
		t.Errorf("auto with a secret service: Status() = %+v", st)
	}
	if _, err := other.Get(name); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("other service Get = %v, want ErrNotFound", err)
	}

	if err := v.Delete(name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := v.Get(name); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := v.Delete(name); err != nil {
		t.Errorf("Delete of an absent item: %v", err)
	}
	v2 := mustOpen(t, cfg)
	if _, err := v2.Get(name); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Get from a new vault after Delete = %v, want ErrNotFound", err)
	}

	// A locked collection is an error, not an unlock prompt nobody answers.
	if err := v.Set(name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	var unlocked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	err := k.conn.Object(ssName, ssPath).Call("org.freedesktop.Secret.Service.Lock", 0,
		[]dbus.ObjectPath{ssCollectionPath + "login"}).Store(&unlocked, &prompt)
	if err != nil || prompt != "/" {
		t.Fatalf("locking the collection: %v (prompt %q)", err, prompt)
	}
	if _, err := v.Get(name); reason(err) != "vault_locked" {
		t.Errorf("Get from a locked collection = %v, want vault_locked", err)
	}
	if _, err := v.Get(name); reason(err) != "vault_locked" {
		t.Errorf("second Get from a locked collection = %v, want vault_locked (not a stuck call)", err)
	}
	fmt.Fprintln(os.Stderr, "roundtrip done")
}

func childHang(t *testing.T) {
	k := newKeyringDaemon(t)
	k.start()
	v := mustOpen(t, Config{Backend: BackendSecretService, Service: "pikod-test", OpTimeout: time.Second})
	if err := v.Set("a", []byte("one")); err != nil {
		t.Fatalf("Set: %v", err)
	}

	// The keyring daemon stops answering; the bus itself still does.
	if err := k.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get("a"); !errors.Is(err, contracts.ErrUnavailable) || reason(err) != "vault_timeout" {
		t.Fatalf("Get from a stopped keyring = %v, want vault_timeout", err)
	}
	if _, err := v.Get("a"); reason(err) != "vault_timeout" || !strings.Contains(err.Error(), "still busy") {
		t.Errorf("second Get = %v, want an immediate vault_timeout", err)
	}
	if st := v.Status(); st.Backend != "secret-service" {
		t.Errorf("Status while stuck = %+v", st)
	}
	_, err := Open(Config{Backend: BackendSecretService, OpTimeout: time.Second})
	if reason(err) != "vault_timeout" {
		t.Errorf("Open(secret-service) with a stopped keyring = %v, want vault_timeout", err)
	}
	auto := mustOpen(t, Config{Backend: BackendAuto, BusProbe: time.Second, Dir: filepath.Join(t.TempDir(), "vault")})
	if st := auto.Status(); st.Backend != "file" || !strings.Contains(st.Note, "did not answer") {
		t.Errorf("auto with a stopped keyring: Status() = %+v", st)
	}

	// It answers again: the stuck call returns and the vault serves.
	v.mu.Lock()
	stuck := v.stuck
	v.mu.Unlock()
	if stuck == nil {
		t.Fatal("no stuck call recorded")
	}
	if err := k.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stuck:
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck call never returned after SIGCONT")
	}
	if got, err := v.Get("a"); err != nil || string(got) != "one" {
		t.Errorf("Get after the keyring resumed = %q, %v", got, err)
	}
}

// childMigrate moves a file vault to the Secret Service and on, checking at
// each step that every item reads back the same through the vault and
// through a fresh one, that the old backend is emptied, that a conflict or
// a failed switch changes nothing, and that nothing is written to errors.
func childMigrate(t *testing.T) {
	old := kdfIterations
	kdfIterations = minKDFIterations
	t.Cleanup(func() { kdfIterations = old })
	k := newKeyringDaemon(t)
	k.start()
	state := t.TempDir()
	base := Config{Dir: filepath.Join(state, "vault"), Service: "pikod-migrate"}
	at := func(backend string) Config {
		c := base
		c.Backend = backend
		return c
	}
	items := map[string]string{
		"server/fx":  canary + "-env",
		"oauth/hx":   canary + "-oauth",
		approvalItem: "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
		"server/old": canary + "-a-server-no-longer-configured",
	}
	names := []string{"server/fx", "oauth/fx", "server/hx", "oauth/hx", "server/kept"}
	v := mustOpen(t, at(BackendFile))
	for n, val := range items {
		if err := v.Set(n, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	holds := func(what string, r *Vault, want map[string]string) {
		t.Helper()
		for n, val := range want {
			if got, err := r.Get(n); err != nil || string(got) != val {
				t.Errorf("%s: Get(%s) = %d bytes, %v; want the value stored", what, n, len(got), err)
			}
		}
	}
	holdsNone := func(what string, r *Vault) {
		t.Helper()
		for n := range items {
			if _, err := r.Get(n); !errors.Is(err, contracts.ErrNotFound) {
				t.Errorf("%s: Get(%s) = %v, want not found", what, n, err)
			}
		}
	}
	noFiles := func(what string) {
		t.Helper()
		for name := range snapshot(t, base.Dir) {
			if name != "." && name != stagingDirName {
				t.Errorf("%s: the file vault directory still holds %s", what, name)
			}
		}
	}
	noValue := func(what string, err error) {
		t.Helper()
		if err != nil && strings.Contains(err.Error(), canary) {
			t.Errorf("%s: the error holds a value: %v", what, err)
		}
	}

	// file -> secret-service: every item, the unnamed one too.
	log := &recordingLog{}
	res, err := v.Migrate(MigrateOptions{Target: at(BackendSecretService), Names: names, Log: log})
	if err != nil {
		t.Fatalf("Migrate to secret-service: %v", err)
	}
	if want := []string{approvalItem, "oauth/hx", "server/fx"}; !slices.Equal(res.Names, want) || res.Unnamed != 1 || res.Leftover != 0 || res.Warning != "" {
		t.Errorf("Migrate to secret-service = %+v, want names %v and 1 unnamed", res, want)
	}
	if got := log.got(); !slices.Equal(got, []string{"begin", "switch", "done"}) || log.last.From != BackendFile || len(log.last.Moved) != 4 ||
		len(log.last.Created) != 4 || !slices.Equal(log.last.Unnamed, []string{itemKey(base.Service, "server/old")}) {
		t.Errorf("the log got %v, last %+v", got, log.last)
	}
	// A keyring cannot list this instance's items: the unnamed ones move
	// on only when named by key.
	unnamed := log.last.Unnamed
	if v.Backend() != BackendSecretService || v.Status().Backend != "secret-service" {
		t.Errorf("after the move the vault uses %s (%+v)", v.Backend(), v.Status())
	}
	holds("through the moved vault", v, items)
	holds("through a fresh secret-service vault", mustOpen(t, at(BackendSecretService)), items)
	noFiles("after moving to secret-service")

	// A target holding other values under the same names: refused.
	stale := mustOpen(t, at(BackendFile))
	for n, val := range map[string]string{"server/fx": "a stale value of fx", "server/kept": "kept in the file vault"} {
		if err := stale.Set(n, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	stale.Close()
	log = &recordingLog{}
	_, err = v.Migrate(MigrateOptions{Target: at(BackendFile), Names: names, Keys: unnamed, Log: log})
	if reason(err) != "vault_migrate_conflict" || !strings.Contains(err.Error(), `"server/fx"`) {
		t.Errorf("Migrate onto different values = %v, want vault_migrate_conflict naming server/fx", err)
	}
	noValue("the conflict", err)
	if got := log.got(); len(got) > 0 || v.Backend() != BackendSecretService {
		t.Errorf("a refused conflict recorded %v and left the vault on %s", got, v.Backend())
	}
	// With Overwrite the values in use win; what only the target held stays.
	res, err = v.Migrate(MigrateOptions{Target: at(BackendFile), Names: names, Keys: unnamed, Overwrite: true, Log: &recordingLog{}})
	if err != nil {
		t.Fatalf("Migrate to file with Overwrite: %v", err)
	}
	if res.Replaced != 1 || res.Unnamed != 1 || !slices.Equal(res.Kept, []string{"server/kept"}) || v.Backend() != BackendFile {
		t.Errorf("Migrate to file with Overwrite = %+v, backend %s; want 1 replaced, server/kept kept", res, v.Backend())
	}
	holds("through the vault moved back", v, items)
	holds("the kept item", v, map[string]string{"server/kept": "kept in the file vault"})
	holdsNone("the emptied secret service", mustOpen(t, at(BackendSecretService)))

	// A switch that cannot be recorded changes nothing.
	if err := v.Delete("server/kept"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, base.Dir)
	log = &recordingLog{failOn: "switch"}
	_, err = v.Migrate(MigrateOptions{Target: at(BackendSecretService), Names: names, Log: log})
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("Migrate with a failing switch = %v, want an error saying nothing was changed", err)
	}
	if got := log.got(); !slices.Equal(got, []string{"begin", "switch", "done"}) || v.Backend() != BackendFile {
		t.Errorf("failing switch: the log got %v, the vault uses %s; want begin, switch, done and file", got, v.Backend())
	}
	holdsNone("the secret service after a failed switch", mustOpen(t, at(BackendSecretService)))
	sameSnapshot(t, "the file vault after a failed switch", before, snapshot(t, base.Dir))
	holds("the file vault after a failed switch", v, items)

	// Through the secret service to a passphrase vault in the emptied
	// directory.
	if _, err := v.Migrate(MigrateOptions{Target: at(BackendSecretService), Names: names, Log: &recordingLog{}}); err != nil {
		t.Fatalf("Migrate to secret-service again: %v", err)
	}
	noFiles("after moving to secret-service again")
	if _, err := v.Migrate(MigrateOptions{Target: at(BackendFileUnlock), Names: names, Log: &recordingLog{}}); reason(err) != "invalid_argument" {
		t.Errorf("Migrate to file-unlock without a passphrase = %v, want invalid_argument", err)
	}
	pass := NewSecret("migrate passphrase for the test")
	if _, err := v.Migrate(MigrateOptions{Target: at(BackendFileUnlock), Passphrase: pass, Names: names, Keys: unnamed, Log: &recordingLog{}}); err != nil {
		t.Fatalf("Migrate to file-unlock: %v", err)
	}
	if v.Backend() != BackendFileUnlock || v.Locked() {
		t.Errorf("after moving to file-unlock: backend %s, locked %v", v.Backend(), v.Locked())
	}
	holds("through the vault moved to file-unlock", v, items)
	holdsNone("the secret service emptied again", mustOpen(t, at(BackendSecretService)))
	fresh := mustOpen(t, at(BackendFileUnlock))
	if err := fresh.Unlock(pass); err != nil {
		t.Fatalf("unlocking the new passphrase vault: %v", err)
	}
	holds("through a fresh file-unlock vault", fresh, items)
	if err := v.Unlock(NewSecret("not the passphrase")); reason(err) != "vault_wrong_passphrase" {
		t.Errorf("Unlock of the moved vault with a wrong passphrase = %v", err)
	}

	// CleanUp in a keyring: copies of an interrupted migration that never
	// switched go, and so do old copies of one that did.
	keys := []string{itemKey(base.Service, "server/fx"), itemKey(base.Service, "oauth/hx")}
	for _, switched := range []bool{false, true} {
		ss := mustOpen(t, at(BackendSecretService))
		for _, n := range []string{"server/fx", "oauth/hx"} {
			if err := ss.Set(n, []byte(items[n])); err != nil {
				t.Fatal(err)
			}
		}
		m := Migration{From: BackendFileUnlock, To: BackendSecretService, Moved: keys, Created: keys}
		if switched {
			m = Migration{From: BackendSecretService, To: BackendFileUnlock, Moved: keys}
		}
		if err := CleanUp(m, switched, BackendSecretService, at("")); reason(err) != "vault_in_use" {
			t.Errorf("CleanUp (switched %v) of the backend in use = %v, want vault_in_use", switched, err)
		}
		if err := CleanUp(m, switched, BackendFileUnlock, at("")); err != nil {
			t.Fatalf("CleanUp (switched %v): %v", switched, err)
		}
		holdsNone(fmt.Sprintf("the secret service after CleanUp (switched %v)", switched), mustOpen(t, at(BackendSecretService)))
		holds(fmt.Sprintf("the vault in use after CleanUp (switched %v)", switched), v, items)
	}
	fmt.Fprintln(os.Stderr, "migrate done")
}
