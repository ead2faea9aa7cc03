package proc

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// MarkInheritedCloseOnExec sets close-on-exec on every open descriptor
// above 2, so that every server pikod starts gets exactly stdin, stdout and
// stderr. Descriptors Go opens are close-on-exec already; the ones that
// are not were inherited from whatever started pikod (a shell redirection,
// a parent that leaked a file, a service manager) and would otherwise pass
// through every exec to every server. Call it first in main, before any
// process is started. It returns the descriptors that lacked the flag.
//
// The open descriptors are read from the descriptor directory (Linux
// /proc/self/fd, macOS /dev/fd); without it every number below the
// RLIMIT_NOFILE soft limit is tried.
func MarkInheritedCloseOnExec() ([]int, error) {
	fds, err := openDescriptors()
	if err != nil {
		return nil, err
	}
	var marked []int
	var errs []error
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			// EBADF: the directory's own descriptor, closed since.
			continue
		}
		if flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			errs = append(errs, fmt.Errorf("marking descriptor %d close-on-exec: %w", fd, err))
			continue
		}
		marked = append(marked, fd)
	}
	return marked, errors.Join(errs...)
}

// maxDescriptorScan bounds the fallback scan when the soft limit is huge.
const maxDescriptorScan = 1 << 20

// openDescriptors lists the open descriptors, sorted.
func openDescriptors() ([]int, error) {
	names, err := readDirNames(descriptorDir)
	if err == nil {
		fds := make([]int, 0, len(names))
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil {
				fds = append(fds, fd)
			}
		}
		sort.Ints(fds)
		return fds, nil
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil, fmt.Errorf("listing open descriptors: %s unreadable and no RLIMIT_NOFILE: %w", descriptorDir, err)
	}
	n := uint64(maxDescriptorScan)
	if lim.Cur < n {
		n = lim.Cur
	}
	fds := make([]int, 0, 16)
	for fd := 0; uint64(fd) < n; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
