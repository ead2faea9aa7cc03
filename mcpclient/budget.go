package mcpclient

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// A server sends notifications whenever it likes: progress, list_changed,
// resource updates, log messages. Each one costs pikod a read and a decode
// on the connection's reader, so a server that never stops would hold a
// core. Budgets bound that: per connection, a rate and a byte volume for
// log messages and for all other notifications. Past a budget a message is
// dropped (counted, nothing else done with it); a server that stays over
// budget for OverBudgetLimit is disconnected, which is what brings pikod's
// CPU back to idle. The defaults are far above what a healthy server sends.

// Default budgets (see Budgets).
const (
	DefaultNotificationsPerSecond     = 300
	DefaultNotificationBytesPerMinute = 8 << 20
	DefaultLogMessagesPerSecond       = 300
	DefaultLogBytesPerMinute          = 4 << 20
	DefaultOverBudgetLimit            = 30 * time.Second
	// budgetQuietGap is how long a server must go without a dropped
	// message for its over-budget spell to end.
	budgetQuietGap = 2 * time.Second
)

// Budget bounds one kind of message a server sends unasked.
type Budget struct {
	// PerSecond is the sustained rate; a burst of one second's worth
	// passes at once.
	PerSecond int
	// BytesPerMinute bounds the volume (the size of each message's JSON
	// params, approximately); a burst of one minute's worth passes at
	// once.
	BytesPerMinute int64
}

// Budgets are a server's budgets for what it sends unasked. Zero fields
// take the defaults.
type Budgets struct {
	// Notifications covers every notification except log messages.
	Notifications Budget
	// Log covers notifications/message.
	Log Budget
	// OverBudgetLimit is how long a server may stay over a budget (with no
	// gap of 2 s without a drop) before it is disconnected.
	OverBudgetLimit time.Duration
}

func (b Budgets) withDefaults() Budgets {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&b.Notifications.PerSecond, DefaultNotificationsPerSecond)
	def64(&b.Notifications.BytesPerMinute, DefaultNotificationBytesPerMinute)
	def(&b.Log.PerSecond, DefaultLogMessagesPerSecond)
	def64(&b.Log.BytesPerMinute, DefaultLogBytesPerMinute)
	if b.OverBudgetLimit <= 0 {
		b.OverBudgetLimit = DefaultOverBudgetLimit
	}
	return b
}

// noiseKind is the budget a message counts against.
type noiseKind int

const (
	// noiseNotification: any notification but a log message. A
	// list_changed refetch is admitted through it too (see
	// conn.onNotification and conn.watch).
	noiseNotification noiseKind = iota
	// noiseLog: notifications/message, and whatever keeps log lines (a
	// log ring admits a line only when this budget does).
	noiseLog
	noiseKinds
)

func (k noiseKind) plural() string {
	if k == noiseLog {
		return "log messages"
	}
	return "notifications"
}

// noiseOf is the budget a notification counts against.
func noiseOf(method string) noiseKind {
	if method == string(mcp.MethodNotificationMessage) {
		return noiseLog
	}
	return noiseNotification
}

// noise meters one connection's unasked messages against its budgets. It
// is called from the transport's reader: admit only counts, under a mutex
// no one holds for long, and never blocks.
type noise struct {
	budgets Budgets
	log     zerolog.Logger
	// dropped counts, per kind, what was dropped; the session's counters,
	// which outlive the connection.
	dropped *[noiseKinds]atomic.Uint64

	// mu guards the fields that follow.
	mu      sync.Mutex
	meters  [noiseKinds]meter
	tripped bool
}

func newNoise(b Budgets, dropped *[noiseKinds]atomic.Uint64, log zerolog.Logger) *noise {
	n := &noise{budgets: b.withDefaults(), dropped: dropped, log: log}
	n.meters[noiseNotification].budget = n.budgets.Notifications
	n.meters[noiseLog].budget = n.budgets.Log
	return n
}

// admit counts one message of kind and size bytes arriving at now. ok says
// whether to handle it (false: drop it); trip, when not empty, says the
// server stayed over budget too long and must be disconnected with trip as
// the reason. trip is returned once; after it nothing is admitted.
func (n *noise) admit(kind noiseKind, size int, now time.Time) (ok bool, trip string) {
	n.mu.Lock()
	if n.tripped {
		n.mu.Unlock()
		n.dropped[kind].Add(1)
		return false, ""
	}
	m := &n.meters[kind]
	ok, over := m.admit(size, now)
	budget := m.budget
	switch {
	case ok:
	case over >= n.budgets.OverBudgetLimit:
		n.tripped = true
		trip = fmt.Sprintf("the server sent %d %s in %d s, over the budget of %d per second and %s per minute; disconnected",
			m.spellCount, kind.plural(), int(over/time.Second), budget.PerSecond, sizeText(budget.BytesPerMinute))
	}
	n.mu.Unlock()
	if ok {
		return true, ""
	}
	n.dropped[kind].Add(1)
	if over == 0 {
		// The first drop of a spell: one line, not one per message.
		n.log.Warn().Str("kind", kind.plural()).Int("per_second", budget.PerSecond).Int64("bytes_per_minute", budget.BytesPerMinute).
			Dur("disconnect_after", n.budgets.OverBudgetLimit).Msg("server over its budget: dropping what it sends unasked")
	}
	return false, trip
}

// over reports whether the server is in an over-budget spell now, on any
// budget: deferrable work it caused (a list_changed refetch) waits.
func (n *noise) over(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tripped {
		return true
	}
	for i := range n.meters {
		if n.meters[i].inSpell(now) {
			return true
		}
	}
	return false
}

// meter is a token bucket for messages and one for bytes, and the state of
// the current over-budget spell: from the first drop until a gap of
// budgetQuietGap without one.
type meter struct {
	budget Budget
	msgs   float64 // messages that may pass now
	bytes  float64 // bytes that may pass now
	last   time.Time
	init   bool

	spellStart time.Time // zero outside a spell
	lastDrop   time.Time
	spellCount int64 // messages seen (passed or dropped) during the spell
}

// admit takes one message of size bytes. ok says it passes; over is how
// long the server has been over budget when it does not (0 otherwise).
func (m *meter) admit(size int, now time.Time) (ok bool, over time.Duration) {
	rate, perMin := float64(m.budget.PerSecond), float64(m.budget.BytesPerMinute)
	if !m.init {
		m.msgs, m.bytes, m.last, m.init = rate, perMin, now, true
	}
	if el := now.Sub(m.last).Seconds(); el > 0 {
		m.msgs = min(rate, m.msgs+el*rate)
		m.bytes = min(perMin, m.bytes+el*perMin/60)
		m.last = now
	}
	if !m.spellStart.IsZero() && now.Sub(m.lastDrop) > budgetQuietGap {
		m.spellStart = time.Time{} // back under budget long enough
	}
	if !m.spellStart.IsZero() {
		m.spellCount++
	}
	if m.msgs >= 1 && m.bytes >= float64(size) {
		m.msgs--
		m.bytes -= float64(size)
		return true, 0
	}
	if m.spellStart.IsZero() {
		m.spellStart, m.spellCount = now, 1
	}
	m.lastDrop = now
	return false, now.Sub(m.spellStart)
}

func (m *meter) inSpell(now time.Time) bool {
	return !m.spellStart.IsZero() && now.Sub(m.lastDrop) <= budgetQuietGap
}

// sizeText writes a byte count the way budgets are documented.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// notificationSize is about the size of n's JSON: its method and params,
// measured on the decoded values (the transport does not keep the bytes).
func notificationSize(n mcp.JSONRPCNotification) int {
	size := len(n.Method) + 40
	if n.Params.Meta != nil {
		size += jsonSize(n.Params.Meta)
	}
	if n.Params.AdditionalFields != nil {
		size += jsonSize(n.Params.AdditionalFields)
	}
	return size
}

// jsonSize estimates the encoded size of a decoded JSON value.
func jsonSize(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return len(v) + 2
	case float64, int, int64:
		return 8
	case map[string]any:
		size := 2
		for k, e := range v {
			size += len(k) + 4 + jsonSize(e)
		}
		return size
	case []any:
		size := 2
		for _, e := range v {
			size += 1 + jsonSize(e)
		}
		return size
	}
	return 16
}
