//go:build linux

package rpc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// HasTerminal reports whether the peer process has a controlling terminal
// and is in its foreground process group. Approvals require it. It is a
// guard against automation approving by accident, not a boundary against
// code running as the owner (script(1) provides a terminal). It reads
// /proc/PID/stat.
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
	// fields[0] is field 3 (state): pgrp is field 5, tty_nr 7, tpgid 8.
	if len(fields) < 6 {
		return false, fmt.Errorf("checking the caller's terminal: malformed /proc/%d/stat", p.PID)
	}
	pgrp, err1 := strconv.ParseInt(string(fields[2]), 10, 64)
	tty, err2 := strconv.ParseInt(string(fields[4]), 10, 64)
	tpgid, err3 := strconv.ParseInt(string(fields[5]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return false, fmt.Errorf("checking the caller's terminal: malformed /proc/%d/stat", p.PID)
	}
	// The caller must be in the terminal's foreground process group: a job
	// put in the background (or a daemon that kept a terminal) is not the
	// person typing.
	return tty != 0 && tpgid == pgrp, nil
}
