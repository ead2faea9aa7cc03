//go:build linux

package rpc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
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

func TestPeerBackgroundJobHasNoTerminal(t *testing.T) {
	// A child on the pty but in a process group of its own (a background
	// job) is not in the terminal's foreground group.
	leader := exec.Command("sleep", "30")
	ptmx, err := pty.Start(leader)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { leader.Process.Kill(); leader.Wait(); ptmx.Close() }()
	tty, err := os.OpenFile(ptyName(t, leader.Process.Pid), os.O_RDWR, 0)
	if err != nil {
		t.Skipf("cannot open the pty slave: %v", err)
	}
	defer tty.Close()
	bg := exec.Command("sleep", "30")
	bg.Stdin, bg.Stdout, bg.Stderr = tty, tty, tty
	bg.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bg.Process.Kill(); bg.Wait() }()
	// bg shares the test's session, not the pty's; either way it is not
	// the foreground group of a terminal it controls.
	if got, err := (Peer{PID: bg.Process.Pid}).HasTerminal(); err != nil || got {
		t.Errorf("HasTerminal(background job) = %v, %v; want false", got, err)
	}
}

// ptyName returns the slave device of pid's controlling terminal.
func ptyName(t *testing.T, pid int) string {
	t.Helper()
	name, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/0")
	if err != nil {
		t.Skipf("reading the pty name: %v", err)
	}
	return name
}
