//go:build darwin

package main

import "golang.org/x/sys/unix"

// fread is FREAD of <sys/fcntl.h>: TIOCFLUSH with it discards input only.
const fread = 0x0001

// flushInput discards input typed but not yet read (TIOCFLUSH FREAD, what
// tcflush(TCIFLUSH) does on macOS).
func flushInput(fd int) error { return unix.IoctlSetPointerInt(fd, unix.TIOCFLUSH, fread) }

// Requests that read and set a terminal's modes.
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
