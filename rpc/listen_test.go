package rpc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// shortDir returns a fresh directory with a short path: Unix socket paths
// must stay under ~100 bytes, which t.TempDir does not promise.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func currentUmask() int {
	old := unix.Umask(0o022)
	unix.Umask(old)
	return old
}

func TestListenPermissions(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // dir is the socket's directory
	}{
		{"missing directory is created", func(t *testing.T, dir string) {}},
		{"0755 directory is tightened", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"0777 directory is tightened", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A directory of pikod's own naming (as the default paths are) is
			// tightened; TestListenRefusesSharedDir covers any other.
			dir := filepath.Join(shortDir(t), "pikod")
			tt.setup(t, dir)
			path := filepath.Join(dir, "p.sock")
			umask := currentUmask()
			ln, err := Listen(path, zerolog.Nop())
			if err != nil {
				t.Fatalf("Listen: %v", err)
			}
			defer ln.Close()
			if got := mode(t, dir); !got.IsDir() || got.Perm() != 0o700 {
				t.Errorf("directory mode = %v, want drwx------", got)
			}
			if got := mode(t, path); got&fs.ModeSocket == 0 || got.Perm() != 0o600 {
				t.Errorf("socket mode = %v, want a 0600 socket", got)
			}
			if got := currentUmask(); got != umask {
				t.Errorf("umask after Listen = %#o, want it restored to %#o", got, umask)
			}
			if err := ln.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("socket still present after Close (err %v)", err)
			}
		})
	}
}

func TestListenRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		class error
		keep  bool // the thing at path must survive
	}{
		{"regular file at path", func(t *testing.T, dir, path string) {
			mustMkdir(t, dir)
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, contracts.ErrFailedPrecondition, true},
		{"directory at path", func(t *testing.T, dir, path string) {
			mustMkdir(t, dir)
			mustMkdir(t, path)
		}, contracts.ErrFailedPrecondition, true},
		{"symlink at path", func(t *testing.T, dir, path string) {
			mustMkdir(t, dir)
			if err := os.Symlink("/etc/passwd", path); err != nil {
				t.Fatal(err)
			}
		}, contracts.ErrFailedPrecondition, true},
		{"directory is a symlink", func(t *testing.T, dir, path string) {
			real := dir + "-real"
			mustMkdir(t, real)
			if err := os.Symlink(real, dir); err != nil {
				t.Fatal(err)
			}
		}, contracts.ErrFailedPrecondition, false},
		{"directory is a file", func(t *testing.T, dir, path string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, contracts.ErrFailedPrecondition, false},
		{"directory owned by another uid", func(t *testing.T, dir, path string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to chown a directory to another uid")
			}
			mustMkdir(t, dir)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, contracts.ErrPermissionDenied, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(shortDir(t), "run")
			path := filepath.Join(dir, "p.sock")
			tt.setup(t, dir, path)
			ln, err := Listen(path, zerolog.Nop())
			if err == nil {
				ln.Close()
				t.Fatalf("Listen succeeded, want an error wrapping %v", tt.class)
			}
			if !errors.Is(err, tt.class) {
				t.Errorf("Listen error = %v, want it to wrap %v", err, tt.class)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("Listen error %q does not name the path", err)
			}
			if tt.keep {
				if _, err := os.Lstat(path); err != nil {
					t.Errorf("Listen removed what was at the path: %v", err)
				}
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func TestListenStaleSocketIsReplaced(t *testing.T) {
	path := filepath.Join(shortDir(t), "p.sock")
	// A socket file nobody listens on, as a killed daemon leaves it.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if mode(t, path)&fs.ModeSocket == 0 {
		t.Fatal("setup: no stale socket file")
	}

	ln, err := Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	if got := mode(t, path); got.Perm() != 0o600 {
		t.Errorf("socket mode = %v, want 0600", got)
	}
}

func TestListenLiveSocketIsKept(t *testing.T) {
	path := filepath.Join(shortDir(t), "p.sock")
	first, err := Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	second, err := Listen(path, zerolog.Nop())
	if err == nil {
		second.Close()
		t.Fatal("second Listen succeeded, want ErrAlreadyExists")
	}
	if !errors.Is(err, contracts.ErrAlreadyExists) || !strings.Contains(err.Error(), "another pikod is serving socket "+path) {
		t.Errorf("second Listen error = %v, want ErrAlreadyExists naming the socket", err)
	}
	// The first daemon's socket must still be there and answering.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("first listener no longer reachable: %v", err)
	}
	c.Close()
}

func TestListenCloseKeepsAReplacement(t *testing.T) {
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's socket now lives at our path (e.g. a successor
	// daemon after ours was presumed dead).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Close removed a socket that was not ours: %v", err)
	}
}

func TestListenRefusesOtherUIDs(t *testing.T) {
	// The real other-uid case runs end to end; here the listener is told
	// that our uid is someone else's, which drives the same branch.
	var logs testsupport.Buffer
	path := filepath.Join(shortDir(t), "p.sock")
	ln, err := Listen(path, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*listener).uid = os.Getuid() + 1

	s := NewServer(Options{})
	var called atomic.Bool
	s.Register("nil", func(context.Context, *Request) (any, error) { called.Store(true); return nil, nil })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()

	c := dial(t, path)
	err = c.Call(callCtx(t), "nil", nil, nil)
	if !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("Call from a refused uid = %v, want ErrUnavailable", err)
	}
	if called.Load() {
		t.Error("handler ran for a refused connection")
	}
	want := fmt.Sprintf(`"peer_uid":%d,"peer_pid":%d`, os.Getuid(), os.Getpid())
	if out := logs.String(); !strings.Contains(out, want) || !strings.Contains(out, "refused connection from another user") {
		t.Errorf("refusal not logged with uid and pid: %s", out)
	}
}

// TestListenRefusesSharedDir: a --socket in a directory pikod did not name
// (a home, a shared tmp) is never chmodded; a group- or world-accessible one
// is refused and left as it was.
func TestListenRefusesSharedDir(t *testing.T) {
	dir := filepath.Join(shortDir(t), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(filepath.Join(dir, "p.sock"), zerolog.Nop())
	if !errors.Is(err, contracts.ErrPermissionDenied) {
		t.Fatalf("Listen in a 1777 directory = %v, want ErrPermissionDenied", err)
	}
	if got := mode(t, dir); got.Perm() != 0o777 || got&fs.ModeSticky == 0 {
		t.Errorf("directory mode after the refusal = %v, want it untouched (drwxrwxrwt)", got)
	}
	// A private directory of any name is fine.
	private := filepath.Join(shortDir(t), "mine")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(filepath.Join(private, "p.sock"), zerolog.Nop())
	if err != nil {
		t.Fatalf("Listen in a private directory: %v", err)
	}
	ln.Close()
}
