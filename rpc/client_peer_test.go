//go:build linux

package rpc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestDialRefusesAnotherUsersSocket: in a shared directory another user
// can listen where pikoctl looks for the daemon; the client must notice
// before sending anything (a secret, a passphrase).
func TestDialRefusesAnotherUsersSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a listener as another uid (CI runs as root)")
	}
	dir, err := os.MkdirTemp("", "pkfake")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary must be reachable by uid 65534.
	bin := filepath.Join(dir, "rpc.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "fake.sock")
	cmd := exec.Command(bin)
	cmd.Env = []string{"PIKO_RPC_FAKE_DAEMON=" + sock, "DBUS_SESSION_BUS_ADDRESS=disabled:"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "LISTENING" {
		t.Fatalf("fake daemon did not start: %q", lines.Text())
	}
	got := make(chan string, 16)
	go func() {
		for lines.Scan() {
			got <- lines.Text()
		}
		close(got)
	}()

	_, err = Dial(t.Context(), sock)
	if !errors.Is(err, contracts.ErrPermissionDenied) || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("Dial to another user's socket = %v; want a refusal naming uid 65534", err)
	}
	select {
	case line := <-got:
		t.Errorf("the other user's listener received data: %s", line)
	case <-time.After(300 * time.Millisecond):
		// Nothing arrived; the client closed without writing.
	}
}
