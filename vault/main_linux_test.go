//go:build linux

package vault

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/godbus/dbus"
)

// TestMain stops a session bus that keyring's init launched for this test
// binary. Importing keyring connects to the session bus in init; with
// DBUS_SESSION_BUS_ADDRESS unset, godbus runs dbus-launch, whose bus
// outlives the process. make test sets the variable to "disabled:"; a bare
// go test would otherwise leave one dbus-daemon behind per run.
func TestMain(m *testing.M) {
	pid := launchedBusPID()
	code := m.Run()
	if pid > 0 {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	os.Exit(code)
}

// launchedBusPID returns the pid of the bus godbus started with dbus-launch
// during init, or 0 when the bus came from the environment or from the
// user's runtime directory (which must never be touched).
func launchedBusPID() int {
	initial, err := os.ReadFile("/proc/self/environ") // the environment before init changed it
	if err != nil {
		return 0
	}
	for _, kv := range bytes.Split(initial, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		if k == "DBUS_SESSION_BUS_ADDRESS" && v != "" && v != "autolaunch:" {
			return 0
		}
	}
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	uid := os.Getuid()
	if addr == "" || addr == fmt.Sprintf("unix:path=/run/user/%d/bus", uid) {
		return 0
	}
	if b, err := os.ReadFile(fmt.Sprintf("/run/user/%d/dbus-session", uid)); err == nil && bytes.Contains(b, []byte(addr)) {
		return 0
	}
	conn, err := dbus.SessionBus() // the connection init made
	if err != nil {
		return 0
	}
	var pid uint32
	if err := conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, "org.freedesktop.DBus").Store(&pid); err != nil {
		return 0
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || strings.TrimSpace(string(comm)) != "dbus-daemon" {
		return 0
	}
	fmt.Fprintf(os.Stderr, "vault tests: DBUS_SESSION_BUS_ADDRESS was unset, so keyring's init launched a session bus "+
		"(dbus-daemon pid %d); it is stopped after the tests. Set DBUS_SESSION_BUS_ADDRESS=disabled: to avoid this.\n", pid)
	return int(pid)
}
