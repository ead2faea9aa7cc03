//go:build linux

package rpc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// HasTerminal reports whether the peer process has a controlling
// terminal. Approvals require one: a person at a terminal, not a
// background script. It reads tty_nr, field 7 of /proc/PID/stat.
func (p Peer) HasTerminal() (bool, error) {
	if p.PID <= 0 {
		return false, fmt.Errorf("checking the caller's terminal: the caller's pid is unknown")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	if err != nil {
		return false, fmt.Errorf("checking the caller's terminal: %w", err)
	}
	// The command name (field 2) may contain spaces and parentheses: the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false, fmt.Errorf("checking the caller's terminal: malformed /proc/%d/stat", p.PID)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); tty_nr is field 7.
	if len(fields) < 5 {
		return false, fmt.Errorf("checking the caller's terminal: malformed /proc/%d/stat", p.PID)
	}
	tty, err := strconv.ParseInt(string(fields[4]), 10, 64)
	if err != nil {
		return false, fmt.Errorf("checking the caller's terminal: malformed tty_nr in /proc/%d/stat", p.PID)
	}
	return tty != 0, nil
}
