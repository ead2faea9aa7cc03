package approvals

import (
	"sync"
	"time"
)

// BootClock reads the machine's boot clock: an identifier of the current
// boot and the time elapsed since it began, suspend included. Within one
// boot it only moves forward, whatever happens to the wall clock, and it
// is the same clock for every process: a daemon restarted in the same boot
// continues where the last one left off. ok is false where the platform has
// no such clock.
type BootClock func() (boot string, sinceBoot time.Duration, ok bool)

// WithBootClock replaces the system's boot clock (tests move it by hand).
func WithBootClock(c BootClock) LedgerOption {
	return func(l *Ledger) { l.boot = c }
}

// systemBootClock is the platform's boot clock; the boot id is read once.
var systemBootClock BootClock = func() func() (string, time.Duration, bool) {
	var (
		once sync.Once
		id   string
	)
	return func() (string, time.Duration, bool) {
		once.Do(func() { id = bootID() })
		if id == "" {
			return "", 0, false
		}
		since, ok := sinceBoot()
		return id, since, ok
	}
}()
