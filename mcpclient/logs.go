package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
)

// A server's log messages (notifications/message) are kept in a ring per
// session: it outlives reconnects of the same settings and goes with them
// (a settings change makes a new session). Only what the log budget admits
// reaches it (see noise), so a flood costs a bounded amount of work, and
// the ring's own bounds cap its memory.

// Default bounds of a server's log ring (Options.LogEntries, LogBytes).
const (
	DefaultLogEntries = 1000
	DefaultLogBytes   = 1 << 20
)

// Bounds of one log entry's data.
const (
	// maxLogData bounds the JSON text of one entry's data; a larger one is
	// kept as a string holding its start (maxLogDataChars characters).
	maxLogData      = 8 << 10
	maxLogDataChars = 4000
	// maxLogString bounds each string inside the data, in characters.
	maxLogString = 4000
	// maxLogDepth bounds the nesting of the data kept.
	maxLogDepth = 16
)

// logRing keeps the newest log entries of one server within a count and a
// byte bound. Safe for concurrent use; add never blocks for long.
type logRing struct {
	maxEntries int
	maxBytes   int

	// mu guards the fields that follow.
	mu      sync.Mutex
	items   []logItem // oldest first
	bytes   int       // sum of items' size
	lastID  uint64
	evicted uint64
}

type logItem struct {
	entry contracts.LogEntry
	at    time.Time
	rank  int // severity for filters (unknown levels count as debug)
	size  int
}

func newLogRing(maxEntries, maxBytes int) *logRing {
	if maxEntries <= 0 {
		maxEntries = DefaultLogEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultLogBytes
	}
	return &logRing{maxEntries: maxEntries, maxBytes: maxBytes}
}

// add keeps e (its ID and Time are set here) and returns it; the oldest
// entries go when a bound is passed. The newest entry always stays.
func (r *logRing) add(e contracts.LogEntry, at time.Time) contracts.LogEntry {
	size := len(e.Data) + len(e.Level) + len(e.Logger) + 64
	rank := max(contracts.LogLevelRank(e.Level), 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastID++
	e.ID = r.lastID
	e.Time = at.UTC().Format(time.RFC3339Nano)
	r.items = append(r.items, logItem{entry: e, at: at, rank: rank, size: size})
	r.bytes += size
	drop := 0
	for len(r.items)-drop > 1 && (len(r.items)-drop > r.maxEntries || r.bytes > r.maxBytes) {
		r.bytes -= r.items[drop].size
		drop++
	}
	if drop > 0 {
		r.evicted += uint64(drop)
		// Copy rather than reslice: the dropped entries' data must not
		// stay reachable behind the slice.
		n := copy(r.items, r.items[drop:])
		clear(r.items[n:])
		r.items = r.items[:n]
	}
	return e
}

// logQuery selects entries of a ring.
type logQuery struct {
	minRank int       // lowest severity shown
	since   time.Time // only entries received after it (zero: all)
	after   uint64    // only entries with a larger id
	limit   int       // at most this many, the newest
}

// read returns the entries q selects, oldest first, and the ring's state.
func (r *logRing) read(q logQuery) (entries []contracts.LogEntry, kept int, evicted, lastID uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Ids increase along the ring: skip what is not after q.after at once.
	start := sort.Search(len(r.items), func(i int) bool { return r.items[i].entry.ID > q.after })
	for _, it := range r.items[start:] {
		if it.rank < q.minRank || (!q.since.IsZero() && !it.at.After(q.since)) {
			continue
		}
		entries = append(entries, it.entry)
	}
	if q.limit > 0 && len(entries) > q.limit {
		entries = entries[len(entries)-q.limit:]
	}
	if entries == nil {
		entries = []contracts.LogEntry{}
	}
	return entries, len(r.items), r.evicted, r.lastID
}

// logEntryOf turns the params of a notifications/message into an entry:
// level and logger made safe to show in one line, data made safe, redacted
// and bounded (safeLogData).
func (s *Supervisor) logEntryOf(params map[string]any) contracts.LogEntry {
	str := func(v any, max int) string {
		text, _ := v.(string)
		return s.clean(text, max)
	}
	e := contracts.LogEntry{Level: str(params["level"], 32), Logger: str(params["logger"], 200)}
	if e.Level == "" {
		e.Level = "unknown"
	}
	if data, ok := params["data"]; ok {
		e.Data, e.Truncated = s.safeLogData(data)
	}
	return e
}

// safeLogData encodes a log message's data with every string in it (object
// keys too) redacted and made safe to show, each at most maxLogString
// characters, nesting cut at maxLogDepth; a result over maxLogData bytes
// becomes a string holding the start of its JSON text. truncated says
// whether anything was cut.
func (s *Supervisor) safeLogData(v any) (data json.RawMessage, truncated bool) {
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		if depth > maxLogDepth {
			truncated = true
			return "…"
		}
		switch v := v.(type) {
		case string:
			text := contracts.SafeText(s.redact(v), contracts.Lines, 0)
			if utf8.RuneCountInString(text) > maxLogString {
				truncated = true
				text = contracts.SafeText(text, contracts.Lines, maxLogString)
			}
			return text
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[contracts.SafeText(s.redact(k), contracts.OneLine, 200)] = walk(e, depth+1)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e, depth+1)
			}
			return out
		case nil, bool, float64, json.Number:
			return v
		}
		// Decoded JSON holds nothing else; anything that does is shown
		// as text.
		return contracts.SafeText(s.redact(fmt.Sprint(v)), contracts.OneLine, 200)
	}
	b, err := json.Marshal(walk(v, 0))
	if err != nil {
		b, _ = json.Marshal("(data that could not be encoded)")
		return b, true
	}
	if len(b) > maxLogData {
		b, _ = json.Marshal(clip(string(b), maxLogDataChars))
		return b, true
	}
	return b, truncated
}

// logMessage keeps one admitted notifications/message and tells the
// watchers. It runs on the transport's reader: the work is bounded (the
// budget admitted the message; the ring and the event hook never block).
func (s *session) logMessage(n mcp.JSONRPCNotification) {
	e := s.logs.add(s.sup.logEntryOf(n.Params.AdditionalFields), time.Now())
	s.sup.emit(contracts.EventLog, s.cfg.ID, e)
}

// currentLogLevel is the level set for the server ("" when none was).
func (s *session) currentLogLevel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

// restoreLogLevel sends the level the owner set again on a new legacy
// connection (a new connection starts at the server's default), before
// the connection serves anything. A failure is logged: the connection is
// still good. 2026-07-28 connections carry the level on every request
// instead (rawRequester.logLevel).
func (c *conn) restoreLogLevel(ctx context.Context) {
	level := c.s.currentLogLevel()
	if level == "" || !c.caps.logging || mcp.IsModernProtocol(c.protocol) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.s.settings().Timeout())*time.Millisecond)
	defer cancel()
	if _, err := c.raw.request(ctx, string(mcp.MethodSetLogLevel), setLevelParams(level)); err != nil && ctx.Err() == nil {
		c.s.log.Warn().Str("log_level", level).Str("error", c.s.sup.clean(err.Error(), 500)).Msg("setting the log level again on the new connection")
		return
	}
	c.s.log.Debug().Str("log_level", level).Msg("log level set again on the new connection")
}

func setLevelParams(level string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"level": level})
	return b
}

func checkLevel(level string) error {
	if contracts.LogLevelRank(level) < 0 {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidLogLevel,
			"unknown log level %q: use one of %s", clip(level, 40), strings.Join(contracts.LogLevels, ", "))
	}
	return nil
}

// SetLogLevel sets the lowest level of the log messages a server sends,
// connecting it first: logging/setLevel on a legacy connection, the
// _meta of every later request on a 2026-07-28 one. The level is
// remembered for the session (its settings) and set again on every
// reconnect.
func (s *Supervisor) SetLogLevel(ctx context.Context, id, level string) (contracts.LoggingResult, error) {
	if err := checkLevel(level); err != nil {
		return contracts.LoggingResult{}, err
	}
	sess, err := s.session(id)
	if err != nil {
		return contracts.LoggingResult{}, err
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return contracts.LoggingResult{}, err
	}
	defer release()
	c, err := sess.connect(ctx)
	if err != nil {
		return contracts.LoggingResult{}, err
	}
	if !c.caps.logging {
		hint := "this server sends no log messages"
		if sess.cfg.Transport == contracts.TransportStdio {
			hint += "; its stderr shows in 'pikoctl mcp status " + id + "'"
		}
		return contracts.LoggingResult{}, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonLoggingNotOffered,
				"server %q does not offer logging (its capabilities have no \"logging\")", id), hint)
	}
	res := contracts.LoggingResult{Server: id, Op: contracts.LoggingSetLevel, Level: level,
		ProtocolVersion: c.protocol, Entries: []contracts.LogEntry{}}
	if mcp.IsModernProtocol(c.protocol) {
		res.Applied = "requestMeta"
	} else {
		rctx, cancel := context.WithTimeout(ctx, time.Duration(sess.settings().Timeout())*time.Millisecond)
		_, err := c.raw.request(rctx, string(mcp.MethodSetLogLevel), setLevelParams(level))
		if err != nil {
			err = s.requestError(rctx, sess, c, "logging/setLevel", err)
		}
		cancel()
		if err != nil {
			return contracts.LoggingResult{}, err
		}
		res.Applied = string(mcp.MethodSetLogLevel)
	}
	sess.mu.Lock()
	sess.logLevel = level
	sess.mu.Unlock()
	sess.log.Info().Str("log_level", level).Str("applied", res.Applied).Msg("log level set")
	_, res.Kept, res.Evicted, res.LastID = sess.logs.read(logQuery{after: ^uint64(0)})
	return res, nil
}

// LogQuery selects the entries Logs returns.
type LogQuery struct {
	// MinLevel is the lowest level returned ("": every entry); an entry
	// whose level is not one of contracts.LogLevels counts as debug.
	MinLevel string
	// Since keeps entries received after it (zero: all).
	Since time.Time
	// After keeps entries with a larger id.
	After uint64
	// Limit keeps the newest Limit entries (0: all).
	Limit int
}

// Logs returns the log entries kept for a server, oldest first. It never
// connects: the ring outlives connections.
func (s *Supervisor) Logs(id string, q LogQuery) (contracts.LoggingResult, error) {
	rank := 0
	if q.MinLevel != "" {
		if err := checkLevel(q.MinLevel); err != nil {
			return contracts.LoggingResult{}, err
		}
		rank = contracts.LogLevelRank(q.MinLevel)
	}
	sess, err := s.session(id)
	if err != nil {
		return contracts.LoggingResult{}, err
	}
	res := contracts.LoggingResult{Server: id, Op: contracts.LoggingRead, Level: sess.currentLogLevel()}
	sess.mu.Lock()
	if sess.conn != nil {
		res.ProtocolVersion = sess.conn.protocol
	}
	sess.mu.Unlock()
	res.Entries, res.Kept, res.Evicted, res.LastID = sess.logs.read(logQuery{minRank: rank, since: q.Since, after: q.After, limit: q.Limit})
	return res, nil
}

// sdkLogger is the slog logger handed to mcp-go's transports: their lines
// go to the server's log (naming it), redacted, at debug level, since
// pikod logs what matters of them itself (a GET stream refused: see
// getStream) and mcp-go's own lines would otherwise reach stderr unnamed.
func sdkLogger(log zerolog.Logger, clean func(string, int) string) *slog.Logger {
	return slog.New(&sdkHandler{log: log, clean: clean})
}

type sdkHandler struct {
	log   zerolog.Logger
	clean func(string, int) string
	attrs []slog.Attr
}

func (h *sdkHandler) Enabled(context.Context, slog.Level) bool {
	return h.log.GetLevel() <= zerolog.DebugLevel
}

func (h *sdkHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.Debug().Str("from", "mcp-go")
	add := func(a slog.Attr) bool {
		ev = ev.Str(a.Key, h.clean(a.Value.String(), 300))
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	ev.Msg(h.clean(r.Message, 300))
	return nil
}

func (h *sdkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &sdkHandler{log: h.log, clean: h.clean, attrs: append(slices.Clone(h.attrs), attrs...)}
}

func (h *sdkHandler) WithGroup(string) slog.Handler { return h }
