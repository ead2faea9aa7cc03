package rpc

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("PIKO_RPC_FAKE_DAEMON"); path != "" {
		fakeDaemon(path)
		return
	}
	// The server and client promise to wait for every goroutine they
	// start; any leftover after the whole package ran is a bug.
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", "disabled:")
	goleak.VerifyTestMain(m)
}
