//go:build linux

package rpc

import (
	"os/exec"
	"testing"

	"github.com/creack/pty"
)

func TestPeerHasTerminal(t *testing.T) {
	// A child started with a pty as its controlling terminal has one; a
	// child started with setsid and no terminal has none.
	withTTY := exec.Command("sleep", "30")
	ptmx, err := pty.Start(withTTY)
	if err != nil {
		t.Fatalf("starting a child on a pty: %v", err)
	}
	defer func() { withTTY.Process.Kill(); withTTY.Wait(); ptmx.Close() }()
	if got, err := (Peer{PID: withTTY.Process.Pid}).HasTerminal(); err != nil || !got {
		t.Errorf("HasTerminal(child on a pty) = %v, %v; want true", got, err)
	}

	noTTY := exec.Command("setsid", "sleep", "30")
	noTTY.Stdin, noTTY.Stdout, noTTY.Stderr = nil, nil, nil
	if err := noTTY.Start(); err != nil {
		t.Fatalf("starting setsid child: %v", err)
	}
	defer func() { noTTY.Process.Kill(); noTTY.Wait() }()
	if got, err := (Peer{PID: noTTY.Process.Pid}).HasTerminal(); err != nil || got {
		t.Errorf("HasTerminal(setsid child without terminal) = %v, %v; want false", got, err)
	}

	if _, err := (Peer{PID: 0}).HasTerminal(); err == nil {
		t.Error("HasTerminal(pid 0) succeeded; want an error")
	}
}
