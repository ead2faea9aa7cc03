package rpc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/pikod/pikod/contracts"
)

// Peer is the process at the other end of an accepted connection, as the
// kernel recorded it when that process connected.
type Peer struct {
	UID, GID, PID int
	// Exe is the process's executable path, read when the connection
	// was accepted (/proc/PID/exe on Linux, kern.procargs2 on macOS);
	// "" when it could not be read. It names what PID ran then: a process
	// that exec'd since, or a script's interpreter, reads as that.
	Exe string
}

// PeerOf returns the credentials attached to a connection accepted by a
// Listen listener; ok is false for any other connection.
func PeerOf(c net.Conn) (p Peer, ok bool) {
	pc, ok := c.(*peerConn)
	if !ok {
		return Peer{}, false
	}
	return pc.peer, true
}

// probeTimeout bounds the live-socket probe: a daemon that does not accept
// within it is treated as alive (it holds the socket) rather than removed.
const probeTimeout = 500 * time.Millisecond

// umaskMu serialises our umask changes. The umask is process-wide, so other
// code creating files during bind may see ours; it only ever removes
// permission bits, never adds them.
var umaskMu sync.Mutex

// Listen creates the owner socket at path and returns a listener whose
// Accept hands out only connections from processes running as our uid.
//
// The socket's directory is created 0700 if missing, and must otherwise be
// a real directory (not a symlink) owned by us; a looser mode is tightened
// to 0700. A socket file left by a dead daemon is replaced; a live one makes
// Listen fail with an error wrapping contracts.ErrAlreadyExists. The socket
// is bound under umask 0177 so it is 0600 from the instant it exists.
// Closing the listener removes the socket file if it is still ours.
func Listen(path string, log zerolog.Logger) (net.Listener, error) {
	if path == "" {
		return nil, fmt.Errorf("listening: empty socket path: %w", contracts.ErrInvalidArgument)
	}
	path = filepath.Clean(path)
	if err := prepareDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := clearStale(path, log); err != nil {
		return nil, err
	}

	umaskMu.Lock()
	old := unix.Umask(0o177)
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("binding socket %s: %w", path, err)
	}
	// We unlink ourselves, and only our own inode: a successor daemon may
	// already have replaced the file.
	ul.SetUnlinkOnClose(false)

	fi, err := os.Lstat(path)
	if err == nil && (fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600) {
		err = fmt.Errorf("socket %s has mode %v after bind, want 0600 socket: %w", path, fi.Mode(), contracts.ErrFailedPrecondition)
	}
	if err != nil {
		ul.Close()
		if fi != nil && fi.Mode()&fs.ModeSocket != 0 {
			os.Remove(path)
		}
		return nil, fmt.Errorf("checking socket %s: %w", path, err)
	}
	log.Debug().Str("socket", path).Msg("listening")
	return &listener{ul: ul, path: path, fi: fi, uid: os.Getuid(), log: log}, nil
}

// prepareDir makes dir a 0700 directory owned by us, refusing anything it
// cannot make safe.
func prepareDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating socket directory %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("checking socket directory %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("socket directory %s is a symlink; refusing to use it (remove it or pick another --socket): %w",
			dir, contracts.ErrFailedPrecondition)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory (remove it or pick another --socket): %w",
			dir, contracts.ErrFailedPrecondition)
	}
	// Check and fix through a descriptor opened without following links,
	// so a swap between the Lstat above and here cannot redirect us.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening socket directory %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("checking socket directory %s: %w", dir, err)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("socket directory %s is owned by uid %d, not by us (uid %d); refusing to use it: %w",
			dir, st.Uid, os.Getuid(), contracts.ErrPermissionDenied)
	}
	if uint32(st.Mode)&0o777 != 0o700 {
		// Only a directory of our own naming is ours to tighten: chmod of
		// an arbitrary parent (a home, a shared tmp) would break others.
		base := filepath.Base(dir)
		if base != "pikod" && !strings.HasPrefix(base, "pikod-") && uint32(st.Mode)&0o077 != 0 {
			return fmt.Errorf("socket directory %s can be entered by other users (mode %#o); refusing to use it (pick a --socket in a private directory): %w",
				dir, uint32(st.Mode)&0o777, contracts.ErrPermissionDenied)
		}
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("tightening socket directory %s to 0700: %w", dir, err)
		}
	}
	return nil
}

// clearStale removes a socket file nobody serves, and refuses to touch a
// live socket or anything that is not a socket.
func clearStale(path string, log zerolog.Logger) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking socket path %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to remove it (move it away or pick another --socket): %w",
			path, contracts.ErrFailedPrecondition)
	}
	c, err := net.DialTimeout("unix", path, probeTimeout)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("another pikod is serving socket %s (stop it first, or pick another --instance): %w",
			path, contracts.ErrAlreadyExists)
	case errors.Is(err, syscall.ECONNREFUSED):
		// Stale: a dead daemon's socket.
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case isTimeout(err):
		return fmt.Errorf("socket %s is held by a process that does not answer (stop it first, or pick another --instance): %w",
			path, contracts.ErrAlreadyExists)
	default:
		return fmt.Errorf("probing socket %s: %w (%w)", path, err, contracts.ErrFailedPrecondition)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	log.Info().Str("socket", path).Msg("removed stale socket")
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// listener refuses connections from other uids in Accept.
type listener struct {
	ul   *net.UnixListener
	path string
	fi   fs.FileInfo // the socket file we bound, to recognise it on Close
	uid  int
	log  zerolog.Logger

	closeOnce sync.Once
	closeErr  error
}

// peerConn is an accepted connection with its checked credentials.
type peerConn struct {
	*net.UnixConn
	peer Peer
}

// Accept returns the next connection from a process running as our uid.
// Connections from anyone else are closed before a byte is read and never
// returned.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.ul.AcceptUnix()
		if err != nil {
			return nil, err
		}
		p, err := peerCred(c)
		if err != nil {
			l.log.Warn().Err(err).Msg("refused connection: cannot read peer credentials")
			c.Close()
			continue
		}
		if p.UID != l.uid {
			l.log.Warn().Int("peer_uid", p.UID).Int("peer_pid", p.PID).Msg("refused connection from another user")
			c.Close()
			continue
		}
		// Read now, while the peer most likely still runs what connected;
		// an unreadable path is recorded as unknown, never a refusal.
		p.Exe = peerExe(p.PID)
		return &peerConn{UnixConn: c, peer: p}, nil
	}
}

func peerCred(c *net.UnixConn) (Peer, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var cerr error
	if err := rc.Control(func(fd uintptr) { p, cerr = peerCredFD(int(fd)) }); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("reading peer credentials: %w", cerr)
	}
	return p, nil
}

// Close stops listening and removes the socket file if it is still the one
// we bound.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.ul.Close()
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.fi) {
			if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.log.Warn().Err(err).Str("socket", l.path).Msg("cannot remove socket")
			}
		}
	})
	return l.closeErr
}

// Addr returns the socket's address.
func (l *listener) Addr() net.Addr { return l.ul.Addr() }
