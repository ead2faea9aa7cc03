package approvals

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
)

// tombstones is the append-only file of decided action ids, kept outside
// the database so that restoring an older copy of pikod.db cannot undo a
// decision. Each line is "ID STATE UNIXTIME\n"; a line is written and
// fsynced before the transaction that records the same change commits.
//
// States written: approved, rejected and stale when the owner's decision
// settles a prepared action, and dispatched right before a call is sent.
type tombstones struct {
	path string

	// mu guards the fields that follow.
	mu     sync.Mutex
	f      *os.File
	states map[string]string
}

// tombRank orders the states one id may collect: dispatched says more
// than approved, and is never overridden by it.
func tombRank(state string) int {
	if state == contracts.ActionDispatched {
		return 2
	}
	return 1
}

// openTombstones reads the file at path (creating it, 0600, if absent),
// drops a torn last line left by a crash mid-append, and opens it for
// appending. Malformed lines are logged and skipped.
func openTombstones(path string, log zerolog.Logger) (*tombstones, error) {
	t := &tombstones{path: path, states: map[string]string{}}
	data, err := os.ReadFile(path)
	created := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return nil, fmt.Errorf("reading tombstone file %s: %w", path, err)
	}
	if created {
		// O_EXCL: a file that appears meanwhile is someone else's; stop.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("creating tombstone file %s: %w", path, err)
		}
		t.f = f
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("creating tombstone file %s: %w", path, err)
		}
		return t, nil
	}
	complete := data
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		complete = data[:i+1]
		log.Warn().Str("path", path).Int("bytes", len(data)-len(complete)).
			Msg("tombstone file ends in a torn line (crash mid-append); dropping it")
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(complete), "\n"), "\n") {
		if line == "" && len(complete) == 0 {
			break
		}
		id, state, err := parseTombstone(line)
		if err != nil {
			log.Error().Str("path", path).Int("line", n+1).Err(err).Msg("skipping malformed tombstone line")
			continue
		}
		t.merge(id, state)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("opening tombstone file %s: %w", path, err)
	}
	if len(complete) < len(data) {
		// Cut the torn tail so the next line starts on its own.
		err := f.Truncate(int64(len(complete)))
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dropping the torn last line of tombstone file %s: %w", path, err)
		}
	}
	t.f = f
	return t, nil
}

func parseTombstone(line string) (id, state string, err error) {
	fields := strings.Split(line, " ")
	if len(fields) != 3 {
		return "", "", fmt.Errorf("want \"ID STATE UNIXTIME\", got %d fields", len(fields))
	}
	id, state = fields[0], fields[1]
	if !validID("act_", id) {
		return "", "", fmt.Errorf("%q is not an action id", id)
	}
	switch state {
	case contracts.ActionApproved, contracts.ActionDispatched, contracts.ActionRejected, contracts.ActionStale:
	default:
		return "", "", fmt.Errorf("%q is not a decided state", state)
	}
	if _, err := strconv.ParseInt(fields[2], 10, 64); err != nil {
		return "", "", fmt.Errorf("time %q is not a unix time", fields[2])
	}
	return id, state, nil
}

// merge records state for id; t.mu is held or t is not yet shared.
func (t *tombstones) merge(id, state string) {
	if old, ok := t.states[id]; ok && tombRank(old) > tombRank(state) {
		return
	}
	t.states[id] = state
}

// add appends "id state time" and fsyncs it; only then does the caller
// commit the change.
func (t *tombstones) add(id, state string, at time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return fmt.Errorf("recording tombstone for %s: the ledger is closed: %w", id, contracts.ErrUnavailable)
	}
	line := fmt.Sprintf("%s %s %d\n", id, state, at.Unix())
	fi, err := t.f.Stat()
	if err != nil {
		return fmt.Errorf("recording tombstone for %s in %s: %w", id, t.path, err)
	}
	if n, err := t.f.WriteString(line); err != nil {
		// A partial line would glue itself to the next one and both would
		// be lost at load: cut the file back to its last whole line. If
		// even that fails, refuse every later decision.
		if n > 0 {
			if terr := t.f.Truncate(fi.Size()); terr != nil {
				t.f.Close()
				t.f = nil
			}
		}
		return fmt.Errorf("recording tombstone for %s in %s: %w", id, t.path, err)
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("recording tombstone for %s in %s: %w", id, t.path, err)
	}
	t.merge(id, state)
	return nil
}

// state returns the strongest state recorded for id.
func (t *tombstones) state(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.states[id]
	return s, ok
}

func (t *tombstones) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	if err != nil {
		return fmt.Errorf("closing tombstone file %s: %w", t.path, err)
	}
	return nil
}

// syncDir fsyncs a directory so a file just created in it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
