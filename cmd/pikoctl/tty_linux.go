//go:build linux

package main

import "golang.org/x/sys/unix"

// flushInput discards input typed but not yet read (tcflush TCIFLUSH).
func flushInput(fd int) error { return unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH) }

// Requests that read and set a terminal's modes.
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
