package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// errInterrupted is a prompt ended by Ctrl-C (SIGINT, or SIGTERM) while it
// waited for an answer. report turns it into "cancelled: ..." and exit
// status exitInterrupted.
var errInterrupted = errors.New("interrupted at the prompt")

// promptCancelled is errInterrupted with what it left undone, said the way
// the command that asked knows it: "nothing was approved".
type promptCancelled struct{ what string }

func (e *promptCancelled) Error() string { return "cancelled: " + e.what }
func (e *promptCancelled) Unwrap() error { return errInterrupted }

// cancelledWith names what a Ctrl-C at one of the command's prompts left
// undone; any other error is returned as it is.
func cancelledWith(err error, what string) error {
	var pc *promptCancelled
	if errors.Is(err, errInterrupted) && !errors.As(err, &pc) {
		return &promptCancelled{what: what}
	}
	return err
}

// ttyIO asks the person at the controlling terminal. Every question first
// discards type-ahead, so nothing typed (or injected) before the question
// was shown can answer it.
type ttyIO interface {
	// Ask shows prompt and returns one typed line without its newline.
	Ask(prompt string) (string, error)
	// AskHidden is Ask with echo off.
	AskHidden(prompt string) (string, error)
	Close() error
}

// devTTY is the process's controlling terminal, opened as /dev/tty: the
// answer comes from the person at the terminal, never from stdin. A
// question waiting when ctx ends (Ctrl-C) returns errInterrupted.
type devTTY struct {
	f   *os.File
	ctx context.Context
}

// openDevTTY opens /dev/tty; it fails without a controlling terminal.
func openDevTTY(ctx context.Context) (ttyIO, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the terminal (/dev/tty): %w; this needs you at your own terminal", err)
	}
	return &devTTY{f: f, ctx: ctx}, nil
}

func (t *devTTY) Close() error { return t.f.Close() }

// fd is the terminal's descriptor, read without os.File.Fd, which would
// put the file back in blocking mode.
func (t *devTTY) fd() int {
	fd := -1
	if rc, err := t.f.SyscallConn(); err == nil {
		_ = rc.Control(func(v uintptr) { fd = int(v) })
	}
	return fd
}

func (t *devTTY) prompt(p string) error {
	if t.ctx.Err() != nil {
		// Ctrl-C came while pikoctl was busy: ask nothing more.
		return errInterrupted
	}
	if err := flushInput(t.fd()); err != nil {
		// Without the flush a line typed earlier could answer: refuse.
		return fmt.Errorf("discarding type-ahead on the terminal: %w", err)
	}
	if _, err := t.f.WriteString(p); err != nil {
		return fmt.Errorf("writing to the terminal: %w", err)
	}
	return nil
}

func (t *devTTY) Ask(p string) (string, error) {
	if err := t.prompt(p); err != nil {
		return "", err
	}
	return t.readLine()
}

// readLine reads one line, or returns errInterrupted when ctx ends first
// (Ctrl-C: the terminal's SIGINT cancels ctx, and a read of the terminal
// would go on waiting). The read left behind ends when the terminal is
// closed, or with the process.
func (t *devTTY) readLine() (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := t.readLineNow()
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-t.ctx.Done():
		return "", errInterrupted
	}
}

// readLineNow reads one line. The terminal is in canonical mode, so reads
// end at a line; reading byte by byte consumes nothing after it.
func (t *devTTY) readLineNow() (string, error) {
	var line []byte
	var b [1]byte
	for {
		n, err := t.f.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
			if len(line) > 4096 {
				return "", errors.New("the line typed at the terminal is too long")
			}
		}
		if err != nil {
			if len(line) == 0 {
				return "", fmt.Errorf("reading from the terminal: %w", err)
			}
			break
		}
	}
	return strings.TrimRight(string(line), "\r"), nil
}

// AskHidden turns echo off before it discards type-ahead and shows the
// prompt, so nothing typed after the prompt appears is echoed, and turns
// it back on after the line.
func (t *devTTY) AskHidden(p string) (string, error) {
	fd := t.fd()
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return "", fmt.Errorf("reading the terminal's modes: %w", err)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return "", fmt.Errorf("turning echo off: %w", err)
	}
	defer func() {
		_ = unix.IoctlSetTermios(fd, ioctlSetTermios, old)
		_, _ = t.f.WriteString("\n")
	}()
	if err := t.prompt(p); err != nil {
		return "", err
	}
	return t.readLine()
}

// onCancel wraps a command's RunE so that a Ctrl-C at one of its prompts
// says what it left undone.
func onCancel(what string, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error { return cancelledWith(run(cmd, args), what) }
}
