//go:build linux

package rpc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pikod/pikod/contracts"
)

// wantCheck asserts that pid fails exactly the terminal check want ("" for
// none).
func wantCheck(t *testing.T, what string, pid int, want string) {
	t.Helper()
	err := Peer{PID: pid}.CheckTerminal(os.Getuid())
	var te *TerminalError
	switch {
	case want == "" && err != nil:
		t.Errorf("CheckTerminal(%s) = %v, want it to pass", what, err)
	case want != "" && (!errors.As(err, &te) || te.Check != want):
		t.Errorf("CheckTerminal(%s) = %v, want check %s", what, err, want)
	case want != "":
		t.Logf("%s: %s", what, te.Detail)
	}
}

// startOnTTY starts cmd as a session leader whose controlling terminal is
// tty; stdin, stdout and stderr are tty unless set.
func startOnTTY(t *testing.T, cmd *exec.Cmd, tty *os.File) {
	t.Helper()
	if cmd.Stdin == nil {
		cmd.Stdin = tty
	}
	if cmd.Stdout == nil {
		cmd.Stdout = tty
	}
	if cmd.Stderr == nil {
		cmd.Stderr = tty
	}
	// Ctty is a descriptor number in the child: fd 2 is always the tty
	// here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s on a pty: %v", cmd.Path, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("cannot open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	return master, tty
}

func TestCheckTerminalAtThePTY(t *testing.T) {
	_, tty := openPTY(t)
	cmd := exec.Command("sleep", "30")
	startOnTTY(t, cmd, tty)
	wantCheck(t, "a session leader on a pty with the pty as stdin", cmd.Process.Pid, "")
}

func TestCheckTerminalNoTerminal(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	wantCheck(t, "a new session without a terminal", cmd.Process.Pid, contracts.TerminalNone)
}

func TestCheckTerminalStdinNotTerminal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin func(t *testing.T) *os.File
	}{
		{"a pipe", func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return r
		}},
		{"/dev/null", func(t *testing.T) *os.File {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
		{"another pty", func(t *testing.T) *os.File {
			_, other := openPTY(t)
			return other
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tty := openPTY(t)
			cmd := exec.Command("sleep", "30")
			cmd.Stdin = tc.stdin(t)
			startOnTTY(t, cmd, tty)
			wantCheck(t, "stdin "+tc.name+" in the foreground of a pty", cmd.Process.Pid, contracts.TerminalStdin)
		})
	}
}

func TestCheckTerminalBackgroundJob(t *testing.T) {
	// A shell with job control on the pty puts "sleep &" in a process
	// group of its own that is not the terminal's foreground group; its
	// stdin stays the terminal.
	master, tty := openPTY(t)
	cmd := exec.Command("sh", "-c", `set -m; sleep 30 & echo "BG=$!"; wait`)
	startOnTTY(t, cmd, tty)
	pid := readTagged(t, master, "BG=")
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	wantCheck(t, "a background job of a shell on a pty", pid, contracts.TerminalBackground)
	wantCheck(t, "the shell in the foreground", cmd.Process.Pid, "")
}

func TestCheckTerminalOtherOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a pty to another uid (CI runs as root)")
	}
	_, tty := openPTY(t)
	if err := os.Chown(tty.Name(), 65534, -1); err != nil {
		t.Skipf("cannot chown %s to uid 65534: %v", tty.Name(), err)
	}
	cmd := exec.Command("sleep", "30")
	startOnTTY(t, cmd, tty)
	wantCheck(t, "a process on a pty owned by uid 65534", cmd.Process.Pid, contracts.TerminalOwner)
}

// readTagged reads the pty until a line "TAGnumber" and returns the number.
func readTagged(t *testing.T, master *os.File, tag string) int {
	t.Helper()
	found := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), tag); ok {
				if n, err := strconv.Atoi(s); err == nil {
					found <- n
					return
				}
			}
		}
		close(found)
	}()
	select {
	case n, ok := <-found:
		if !ok {
			t.Fatalf("the pty ended before %s", tag)
		}
		return n
	case <-time.After(waitLimit):
		t.Fatalf("no %s on the pty", tag)
	}
	return 0
}
