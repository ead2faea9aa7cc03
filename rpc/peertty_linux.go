//go:build linux

package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
)

// CheckTerminal checks that the peer is a person at the terminal of
// ownerUID, the way terminal-only methods need it, and returns a
// *TerminalError naming the first check that failed:
//
//  1. the process has a controlling terminal (tty_nr in /proc/PID/stat);
//  2. its fd 0 is that terminal: /proc/PID/fd/0 is a character device
//     whose device number is tty_nr (not a pipe, a file or another tty);
//  3. the terminal device belongs to ownerUID;
//  4. the process is in the terminal's foreground process group
//     (tpgid == pgrp), so a background job cannot decide.
//
// A check that cannot be made (unknown pid, unreadable /proc entries)
// fails as TerminalUnchecked.
func (p Peer) CheckTerminal(ownerUID int) error {
	if p.PID <= 0 {
		return uncheckedErr(p.PID, errors.New("the caller's pid is unknown"))
	}
	st, err := readProcStat(p.PID)
	if err != nil {
		return uncheckedErr(p.PID, err)
	}
	if st.ttyNr == 0 {
		return terminalErr(contracts.TerminalNone, "pid %d has no controlling terminal", p.PID)
	}
	// tty_nr is the kernel's new_encode_dev of the terminal's device.
	nr := uint32(st.ttyNr)
	ttyMajor := (nr >> 8) & 0xfff
	ttyMinor := (nr & 0xff) | ((nr >> 12) & 0xfff00)

	// stat follows the magic link to the open file itself: for a pipe or
	// a socket it describes that, for a device its inode.
	var fi unix.Stat_t
	fd0 := "/proc/" + strconv.Itoa(p.PID) + "/fd/0"
	if err := unix.Stat(fd0, &fi); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return terminalErr(contracts.TerminalStdin, "pid %d has no stdin", p.PID)
		}
		return uncheckedErr(p.PID, fmt.Errorf("reading %s: %w", fd0, err))
	}
	if fi.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(fi.Rdev) != ttyMajor || unix.Minor(fi.Rdev) != ttyMinor {
		return terminalErr(contracts.TerminalStdin, "the stdin of pid %d is not its controlling terminal", p.PID)
	}
	if int(fi.Uid) != ownerUID {
		name, _ := os.Readlink(fd0)
		return terminalErr(contracts.TerminalOwner, "the terminal %s of pid %d belongs to uid %d, not to the owner (uid %d)",
			name, p.PID, fi.Uid, ownerUID)
	}
	if st.tpgid != st.pgrp {
		return terminalErr(contracts.TerminalBackground, "pid %d (process group %d) is not in its terminal's foreground process group (%d)",
			p.PID, st.pgrp, st.tpgid)
	}
	return nil
}

// procStat holds the fields of /proc/PID/stat that the terminal checks use.
type procStat struct {
	pgrp, ttyNr, tpgid int64
}

func readProcStat(pid int) (procStat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, fmt.Errorf("reading %s: %w", path, err)
	}
	// The command name (field 2) may contain spaces and parentheses: the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed %s", path)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state): pgrp is field 5, tty_nr 7, tpgid 8.
	if len(fields) < 6 {
		return procStat{}, fmt.Errorf("malformed %s", path)
	}
	pgrp, err1 := strconv.ParseInt(string(fields[2]), 10, 64)
	tty, err2 := strconv.ParseInt(string(fields[4]), 10, 64)
	tpgid, err3 := strconv.ParseInt(string(fields[5]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("malformed %s: %w", path, err)
	}
	return procStat{pgrp: pgrp, ttyNr: tty, tpgid: tpgid}, nil
}
