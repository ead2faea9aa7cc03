package rpc

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchHangup reports when the peer of nc has closed the connection for
// good, as opposed to shutting down only its sending side (which a read
// cannot tell apart: both read as end of file). It checks the socket for
// POLLHUP whenever the runtime's poller sees activity on it: on Linux a
// Unix socket reports it once both directions are shut. stop ends the
// watch and returns once its goroutine has; call it exactly once. A
// connection without a file descriptor is never reported gone.
func watchHangup(nc net.Conn) (gone <-chan struct{}, stop func()) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, func() {}
	}
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := rc.Read(func(fd uintptr) bool {
			// POLLHUP and POLLERR are reported whatever is asked for.
			fds := []unix.PollFd{{Fd: int32(fd)}}
			n, err := unix.Poll(fds, 0)
			return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
		})
		if err == nil {
			close(ch)
		}
	}()
	return ch, func() {
		// A deadline in the past wakes the read at once.
		_ = nc.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = nc.SetReadDeadline(time.Time{})
	}
}

// discardQueued reads and drops, without waiting, what the peer has
// already sent (at most 1 MiB): closing a Unix socket with unread data
// makes the peer's next read fail with ECONNRESET instead of returning
// what was written to it last.
func discardQueued(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		buf := make([]byte, 64<<10)
		for range 16 {
			n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			if err != nil || n <= 0 {
				return
			}
		}
	})
}
