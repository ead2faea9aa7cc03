package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

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
// answer comes from the person at the terminal, never from stdin.
type devTTY struct{ f *os.File }

// openDevTTY opens /dev/tty; it fails without a controlling terminal.
func openDevTTY() (ttyIO, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the terminal (/dev/tty): %w; this needs you at your own terminal", err)
	}
	return &devTTY{f: f}, nil
}

func (t *devTTY) Close() error { return t.f.Close() }

func (t *devTTY) prompt(p string) error {
	if err := flushInput(int(t.f.Fd())); err != nil {
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

// readLine reads one line. The terminal is in canonical mode, so reads
// end at a line; reading byte by byte consumes nothing after it.
func (t *devTTY) readLine() (string, error) {
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
	fd := int(t.f.Fd())
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
