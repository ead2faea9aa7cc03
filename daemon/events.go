package daemon

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/rs/zerolog"
)

// events numbers the supervisor's events and delivers them to the socket
// connections watching (extensions.mcp.watch, extensions.mcp.logging with
// follow). Publishing never blocks: each watching connection has a bounded
// queue (oldest dropped first, the next event delivered counting the drops)
// and a writer goroutine of its own, whose writes the socket's write
// timeout bounds.
type events struct {
	log zerolog.Logger
	now func() time.Time

	// mu guards the fields that follow; never held across a write.
	mu       sync.Mutex
	seq      uint64
	watchers map[*rpc.Conn]*watcher
	closed   bool
	wg       sync.WaitGroup // writer goroutines
}

func newEvents(log zerolog.Logger) *events {
	return &events{log: log, now: time.Now, watchers: map[*rpc.Conn]*watcher{}}
}

// watcher is one watching connection.
type watcher struct {
	conn *rpc.Conn
	stop chan struct{} // closed when the subscription ends
	wake chan struct{} // signalled (never blocking) when the queue gains an event

	// mu guards the fields that follow (under events.mu when both are
	// held).
	mu sync.Mutex
	// kinds and servers filter: nil lets every kind (server) through, an
	// empty set none.
	kinds, servers map[string]bool
	// follow holds the servers whose log events pass whatever the
	// filters say (extensions.mcp.logging follow).
	follow map[string]bool
	queue  eventQueue
}

func (w *watcher) wants(ev *contracts.EventParams) bool {
	if ev.Kind == contracts.EventLog && w.follow[ev.Server] {
		return true
	}
	return (w.kinds == nil || w.kinds[ev.Kind]) && (w.servers == nil || w.servers[ev.Server])
}

// publish numbers ev, stamps it and queues it for every connection that
// wants it. It is mcpclient.Options.Event: called from the supervisor's
// goroutines (a transport's reader among them), it never waits on a
// client.
func (e *events) publish(ev contracts.EventParams) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	ev.Seq = e.seq
	ev.Time = e.now().UTC().Format(time.RFC3339Nano)
	for _, w := range e.watchers {
		w.mu.Lock()
		if w.wants(&ev) {
			w.queue.push(ev)
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		w.mu.Unlock()
	}
}

// watcherOf returns conn's watcher, starting one (with its writer) when
// there is none; nil when the daemon is shutting down or the connection
// has ended. Call with e.mu held.
func (e *events) watcherOf(conn *rpc.Conn, queue int) *watcher {
	if w := e.watchers[conn]; w != nil {
		return w
	}
	if e.closed {
		return nil
	}
	select {
	case <-conn.Done():
		return nil
	default:
	}
	w := &watcher{conn: conn, stop: make(chan struct{}), wake: make(chan struct{}, 1),
		kinds: map[string]bool{}, servers: nil, follow: map[string]bool{}}
	w.queue.limit, w.queue.maxBytes = queue, watchQueueBytes
	e.watchers[conn] = w
	e.wg.Add(1)
	go e.write(w)
	return w
}

// watchQueueBytes bounds the Data held in one watcher's queue.
const watchQueueBytes = 4 << 20

// watch sets conn's filters (nil: everything) and queue bound, and
// returns the subscription as it is now.
func (e *events) watch(conn *rpc.Conn, kinds, servers []string, queue int) (contracts.WatchResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.watcherOf(conn, queue)
	if w == nil {
		return contracts.WatchResult{}, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonShuttingDown, "pikod is shutting down")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kinds, w.servers = setOf(kinds), setOf(servers)
	w.queue.limit = queue
	w.queue.trim()
	return w.describe(e.seq), nil
}

// follow makes conn receive the log events of server, whatever its
// filters say.
func (e *events) follow(conn *rpc.Conn, server string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.watcherOf(conn, contracts.DefaultWatchQueue)
	if w == nil {
		return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonShuttingDown, "pikod is shutting down")
	}
	w.mu.Lock()
	w.follow[server] = true
	w.mu.Unlock()
	return nil
}

// unfollow undoes follow (a read that failed after subscribing).
func (e *events) unfollow(conn *rpc.Conn, server string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.watchers[conn]; w != nil {
		w.mu.Lock()
		delete(w.follow, server)
		w.mu.Unlock()
	}
}

// unwatch ends conn's subscription; its undelivered events are dropped.
func (e *events) unwatch(conn *rpc.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.watchers[conn]
	if w == nil {
		return false
	}
	delete(e.watchers, conn)
	close(w.stop)
	return true
}

// describe is the subscription as extensions.mcp.watch reports it. Call
// with w.mu held.
func (w *watcher) describe(seq uint64) contracts.WatchResult {
	return contracts.WatchResult{Watching: true, Kinds: listOf(w.kinds, contracts.EventKinds), Servers: listOf(w.servers, nil),
		LogFollow: listOf(w.follow, nil), Queue: w.queue.limit, Seq: seq}
}

// write delivers w's events in order until the subscription or the
// connection ends, or a write fails (the socket's write timeout closes a
// connection that does not read).
func (e *events) write(w *watcher) {
	defer e.wg.Done()
	defer func() {
		e.mu.Lock()
		if e.watchers[w.conn] == w {
			delete(e.watchers, w.conn)
		}
		e.mu.Unlock()
	}()
	for {
		select {
		case <-w.stop:
			return
		case <-w.conn.Done():
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			ev, ok := w.queue.pop()
			w.mu.Unlock()
			if !ok {
				break
			}
			select {
			case <-w.stop:
				return
			default:
			}
			if err := w.conn.Notify(contracts.NotifyMCPEvent, ev); err != nil {
				e.log.Debug().Err(err).Int("peer_pid", w.conn.Peer().PID).Msg("watcher gone")
				return
			}
		}
	}
}

// close ends every subscription and waits for the writers. Events
// published later go nowhere.
func (e *events) close() {
	e.mu.Lock()
	e.closed = true
	for conn, w := range e.watchers {
		delete(e.watchers, conn)
		close(w.stop)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// eventQueue is a bounded FIFO of events: past limit events, or maxBytes
// of their Data, the oldest go, and the event after them counts them in
// Dropped.
type eventQueue struct {
	limit    int
	maxBytes int

	items []contracts.EventParams
	bytes int
	// dropped counts every event dropped since the queue was made.
	dropped uint64
}

func eventSize(ev *contracts.EventParams) int { return len(ev.Data) + len(ev.RequestID) + 128 }

func (q *eventQueue) push(ev contracts.EventParams) {
	q.items = append(q.items, ev)
	q.bytes += eventSize(&ev)
	q.trim()
}

// trim drops the oldest events until the queue is within its bounds (the
// newest always stays).
func (q *eventQueue) trim() {
	drop := 0
	var gap uint64
	for len(q.items)-drop > 1 && (len(q.items)-drop > q.limit || q.bytes > q.maxBytes) {
		gap += 1 + q.items[drop].Dropped
		q.bytes -= eventSize(&q.items[drop])
		drop++
	}
	if drop == 0 {
		return
	}
	q.dropped += uint64(drop)
	n := copy(q.items, q.items[drop:])
	clear(q.items[n:])
	q.items = q.items[:n]
	q.items[0].Dropped += gap
}

func (q *eventQueue) pop() (contracts.EventParams, bool) {
	if len(q.items) == 0 {
		return contracts.EventParams{}, false
	}
	ev := q.items[0]
	q.items[0] = contracts.EventParams{}
	q.items = q.items[1:]
	q.bytes -= eventSize(&ev)
	if len(q.items) == 0 {
		q.items = nil // give the array back
	}
	return ev, true
}

// setOf is nil for an empty list (no filter), else the set of its values.
func setOf(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]bool, len(list))
	for _, v := range list {
		m[v] = true
	}
	return m
}

// listOf lists a filter set sorted; a nil set lists all (every one of
// all, or none when all is nil).
func listOf(set map[string]bool, all []string) []string {
	if set == nil {
		return append([]string{}, all...)
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	if all != nil {
		// Documentation order.
		return slices.DeleteFunc(append([]string{}, all...), func(k string) bool { return !set[k] })
	}
	sort.Strings(out)
	return out
}
