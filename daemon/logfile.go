package daemon

import (
	"fmt"
	"os"
	"sync"
)

// DefaultLogMaxBytes is how large pikod.log grows before it is rotated:
// the state directory holds at most this file and the previous one
// (pikod.log.1), whatever the daemon's uptime.
const DefaultLogMaxBytes = 16 << 20

// MinLogMaxBytes is the smallest --log-max-bytes pikod takes.
const MinLogMaxBytes = 64 << 10

// LogFile is pikod.log, bounded: a write that would take it past its limit
// first renames it to pikod.log.1 (replacing the previous one) and starts a
// new file, so the log of a daemon that runs for months takes at most twice
// the limit. Each Write is one whole log event (zerolog writes so), so no
// event is ever split between the two files. It is safe for concurrent use.
type LogFile struct {
	path string
	max  int64

	// mu guards the fields that follow.
	mu   sync.Mutex
	f    *os.File
	size int64
	// retryAt, after a rotation failed, is the size at which the next
	// one is tried (not at every event after it).
	retryAt int64
}

// OpenLog opens (creating, 0600) the log file of stateDir for appending,
// rotated at maxBytes.
func OpenLog(stateDir string, maxBytes int64) (*LogFile, error) {
	if maxBytes < MinLogMaxBytes {
		return nil, fmt.Errorf("a log limit of %d bytes is too small: use at least %d", maxBytes, MinLogMaxBytes)
	}
	l := &LogFile{path: LogPath(stateDir), max: maxBytes}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *LogFile) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening log file: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends one log event, rotating first when it would not fit. When
// the rotation fails the event goes to the current file: a log line is
// never dropped for the sake of the bound.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(p)) > max(l.max, l.retryAt) {
		if !l.rotate() {
			l.retryAt = l.size + l.max/16
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the full file to pikod.log.1 and opens a new one, saying
// whether it did; l.mu is held.
func (l *LogFile) rotate() bool {
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return false
	}
	old, oldSize := l.f, l.size
	if err := l.open(); err != nil {
		// Keep writing to the renamed file rather than nowhere.
		l.f, l.size = old, oldSize
		return false
	}
	old.Close()
	l.retryAt = 0
	return true
}

// Close closes the file; later writes fail.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
