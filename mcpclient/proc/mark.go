package proc

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// MarkVariable is set in every server's environment to a random token of
// its own (the mark). Descendants inherit it unless they build a new
// environment, so a process carrying a server's mark belongs to that
// server wherever it went: out of the group (setsid), away from the tree
// (its parent exited and it was re-parented to pikod or to init), or past
// the death of the pikod that started it. The token is not a secret: it
// only names the server's processes, and a process that is not a
// descendant cannot get it into its own environment.
const MarkVariable = "PIKOD_SERVER_MARK"

// newMark returns a fresh random mark.
func newMark() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a process mark: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// procKey names one process for good.
type procKey struct {
	pid   int
	ticks uint64
}

// carriesMark reports whether pr's environment holds MarkVariable=mark.
// The start time is read again after the environment, so the answer is
// about pr and not about a process that took over its pid meanwhile. A
// process of another user, or one that is gone, does not carry it.
func carriesMark(pr procInfo, mark string) bool {
	if mark == "" {
		return false
	}
	env, err := readEnviron(pr.PID)
	if err != nil {
		return false
	}
	if again, ok := readProc(pr.PID); !ok || again.Ticks != pr.Ticks {
		return false
	}
	return hasEntry(env, MarkVariable+"="+mark)
}

// hasEntry reports whether a NUL-separated environment block holds the
// entry kv exactly.
func hasEntry(env []byte, kv string) bool {
	for _, e := range bytes.Split(env, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// markedIn returns the live processes in procs that carry mark and started
// no earlier than since (descendants of a leader that started at since).
// cache, when not nil, remembers processes found unmarked: a process's
// initial environment does not change, so each is read once; entries of
// processes no longer in procs are dropped.
func markedIn(procs []procInfo, mark string, since uint64, cache map[procKey]bool) []procInfo {
	var out []procInfo
	live := make(map[procKey]bool, len(procs))
	for _, pr := range procs {
		if pr.Zombie || pr.Ticks < since {
			continue
		}
		k := procKey{pr.PID, pr.Ticks}
		live[k] = true
		if cache != nil && cache[k] {
			continue
		}
		if carriesMark(pr, mark) {
			out = append(out, pr)
		} else if cache != nil {
			cache[k] = true
		}
	}
	for k := range cache {
		if !live[k] {
			delete(cache, k)
		}
	}
	return out
}

// parseProcArgs2 extracts the environment block from a macOS
// kern.procargs2 buffer: argc (int32), the executable path, NUL padding,
// argc arguments, then the environment strings up to an empty one.
func parseProcArgs2(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("procargs2: %d bytes", len(b))
	}
	argc := int(binary.LittleEndian.Uint32(b[:4]))
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil, fmt.Errorf("procargs2: no executable path")
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	for ; argc > 0; argc-- {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, fmt.Errorf("procargs2: arguments cut short")
		}
		rest = rest[i+1:]
	}
	var env [][]byte
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, 0)
		if i <= 0 {
			break
		}
		env = append(env, rest[:i])
		rest = rest[i+1:]
	}
	return bytes.Join(env, []byte{0}), nil
}
