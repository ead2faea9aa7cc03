package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// Resource subscriptions and, on 2026-07-28 connections, the
// subscriptions/listen stream. Both belong to one connection: a
// disconnect (or a lost connection) ends them, and nothing carries them
// over to the next connection.

// subscriptions are the resource URIs a connection is subscribed to.
type subscriptions struct {
	// change serialises subscribe and unsubscribe on the connection, so
	// the server and the set (and a stream's filter) agree.
	change sync.Mutex
	// mu guards uris.
	mu   sync.Mutex
	uris map[string]bool
}

func (s *subscriptions) has(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uris[uri]
}

func (s *subscriptions) set(uri string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uris == nil {
		s.uris = map[string]bool{}
	}
	if on {
		s.uris[uri] = true
	} else {
		delete(s.uris, uri)
	}
}

// list returns the URIs, sorted.
func (s *subscriptions) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.uris))
	for u := range s.uris {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Subscribe subscribes the server's connection (connecting it first) to
// updates of the resource at uri: resources/subscribe on a legacy
// connection, a subscription stream reopened with uri in its filter on a
// 2026-07-28 one (the server must acknowledge uri). Each update then
// arrives as an EventResource event. It refuses when the settings disable
// resources or the server does not offer subscriptions. A subscription
// ends with the connection.
func (s *Supervisor) Subscribe(ctx context.Context, server, uri string) (contracts.ResourceSubscribeResult, error) {
	return s.changeSubscription(ctx, server, uri, true)
}

// Unsubscribe ends the subscription to uri, if the connection has one.
func (s *Supervisor) Unsubscribe(ctx context.Context, server, uri string) (contracts.ResourceSubscribeResult, error) {
	return s.changeSubscription(ctx, server, uri, false)
}

func (s *Supervisor) changeSubscription(ctx context.Context, server, uri string, on bool) (contracts.ResourceSubscribeResult, error) {
	res := contracts.ResourceSubscribeResult{Server: server, URI: uri}
	sess, err := s.session(server)
	if err != nil {
		return res, err
	}
	if !sess.cfg.ResourcesEnabled() {
		return res, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonResourcesDisabled, "resources of server %q are disabled by its settings", server),
			`set "resources": true in its settings to use them`)
	}
	if err := checkURI(uri); err != nil {
		return res, err
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return res, err
	}
	defer release()
	c, err := sess.connect(ctx)
	if err != nil {
		return res, err
	}
	c.subs.change.Lock()
	defer c.subs.change.Unlock()
	if c.subs.has(uri) == on {
		res.Subscribed = on
		return res, nil
	}
	if on && !c.caps.subscribe {
		return res, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSubscribeUnsupported,
			"server %q does not offer resource subscriptions (its resources capability has no subscribe)", server)
	}
	op := "resources/unsubscribe"
	if on {
		op = "resources/subscribe"
	}
	what := op + " " + s.clip(uri, 200)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(sess.settings().Timeout())*time.Millisecond)
	defer cancel()
	if mcp.IsModernProtocol(c.protocol) {
		// 2026-07-28 has no resources/subscribe: the URI goes into the
		// filter of a new subscription stream.
		c.subs.set(uri, on)
		honoured, err := c.listen.refilter(rctx)
		switch {
		case err != nil && on:
			c.subs.set(uri, false)
			return res, contracts.WithReason(fmt.Errorf("%s on %q: the subscription stream could not be reopened with it: %s: %w",
				what, server, s.clean(err.Error(), 500), contracts.ErrUnavailable), contracts.ReasonSubscribeFailed)
		case on && !slices.Contains(honoured.ResourceSubscriptions, uri):
			c.subs.set(uri, false)
			return res, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSubscribeRefused,
				"%s on %q: the server's acknowledgment of the subscription stream leaves the URI out", what, server)
		case err != nil:
			// Gone from the set all the same: an update for it is dropped
			// until the stream is reopened without it.
			sess.log.Warn().Err(err).Msg("subscription stream not reopened after an unsubscribe")
		}
	} else {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := c.raw.request(rctx, op, params); err != nil {
			return res, s.requestError(rctx, sess, c, what, err)
		}
		c.subs.set(uri, on)
	}
	sess.log.Info().Str("uri", s.clip(uri, 200)).Bool("subscribed", on).Msg("resource subscription changed")
	res.Subscribed, res.Changed = on, true
	return res, nil
}

// checkURI refuses what cannot be a resource URI to pass on.
func checkURI(uri string) error {
	switch {
	case uri == "":
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingURI, `missing "uri": name the resource URI, as the server lists it`)
	case len(uri) > maxURIBytes:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidURI, "the resource URI is %d bytes long; at most %d", len(uri), maxURIBytes)
	case !utf8.ValidString(uri) || strings.ContainsFunc(uri, unicode.IsControl):
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidURI, "the resource URI must be valid UTF-8 without control characters")
	}
	return nil
}

// resourceUpdated turns notifications/resources/updated for a subscribed
// URI into an EventResource event. It runs on the transport's reader and
// never blocks. Updates for URIs the connection is not subscribed to are
// dropped: the server must not send them.
func (c *conn) resourceUpdated(p mcp.NotificationParams) {
	uri, _ := p.AdditionalFields["uri"].(string)
	if uri == "" || !c.subs.has(uri) {
		c.s.log.Debug().Str("uri", c.s.sup.clip(uri, 200)).Msg("resource update for no subscription dropped")
		return
	}
	title, _ := p.AdditionalFields["title"].(string)
	if title == "" {
		title = c.resourceTitle(uri)
	}
	c.s.sup.emit(contracts.EventResource, c.s.cfg.ID, contracts.ResourceEventData{
		URI: c.s.sup.clean(uri, maxURIBytes), Title: c.s.sup.clean(title, 200)})
}

// resourceTitle is the title (or name) the catalog lists for uri.
func (c *conn) resourceTitle(uri string) string {
	for _, r := range c.currentCatalog().Resources {
		var d struct {
			URI   string `json:"uri"`
			Title string `json:"title"`
			Name  string `json:"name"`
		}
		if json.Unmarshal(r, &d) != nil || d.URI != uri {
			continue
		}
		if d.Title != "" {
			return d.Title
		}
		return d.Name
	}
	return ""
}

// listener keeps a 2026-07-28 connection's subscriptions/listen stream
// open: for tools, prompts and resources list_changed (as far as the
// server's capabilities offer them and the settings enable them) and the
// subscribed resource URIs. A stream counts once the server acknowledged
// it; notifications are told apart by the subscription id they carry.
// Changing the subscriptions opens a new stream with the new filter and
// closes the old one once the new one is acknowledged. A stream that ends
// (dropped, or ended by the server) is reopened with backoff, and the
// catalog is discovered again, since changes may have gone unheard.
type listener struct {
	c *conn

	// mu guards the fields that follow.
	mu sync.Mutex
	// streams are the streams whose notifications are accepted: the
	// current one, one being opened, and ones being closed.
	streams map[string]*stream
	current *stream
	// problem says why no stream is open (for status), "" when one is or
	// none is needed.
	problem string
	// requests asks the running loop for a new stream; nil until
	// startListening.
	requests chan chan reopenResult
}

// stream is one subscriptions/listen request.
type stream struct {
	id     mcp.RequestId
	key    string
	filter mcp.SubscriptionFilter
	cancel context.CancelFunc
	// acked closes when the server acknowledged; honoured and ackedAt are
	// set before.
	acked    chan struct{}
	ackOnce  sync.Once
	honoured mcp.SubscriptionFilter
	ackedAt  time.Time
	// ended closes when the request returned; err is set before.
	ended chan struct{}
	err   error
}

type reopenResult struct {
	honoured mcp.SubscriptionFilter
	err      error
}

// idKey is how a request id appears in a subscription id.
func idKey(id any) string {
	if s, ok := id.(string); ok {
		return s
	}
	b, _ := json.Marshal(id)
	return string(b)
}

// subscriptionID returns the subscription id a notification carries.
func subscriptionID(p mcp.NotificationParams) (string, bool) {
	v, ok := p.Meta[mcp.MetaKeySubscriptionID]
	if !ok || v == nil {
		return "", false
	}
	return idKey(v), true
}

// accepts reports whether a notification may be handled: untagged ones
// (request-scoped, legacy, or from a stdio server that does not tag) and
// those of a live stream. One tagged with any other id belongs to a stream
// that has ended, or was never pikod's.
func (l *listener) accepts(n mcp.JSONRPCNotification) bool {
	id, tagged := subscriptionID(n.Params)
	if !tagged {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, live := l.streams[id]
	if !live {
		l.c.s.log.Debug().Str("method", l.c.s.sup.clip(n.Method, 100)).Msg("notification of an ended subscription stream dropped")
	}
	return live
}

// acknowledged records notifications/subscriptions/acknowledged.
func (l *listener) acknowledged(p mcp.NotificationParams) {
	id, ok := subscriptionID(p)
	if !ok {
		return
	}
	l.mu.Lock()
	st := l.streams[id]
	l.mu.Unlock()
	if st == nil {
		return
	}
	var honoured mcp.SubscriptionFilter
	if raw, err := json.Marshal(p.AdditionalFields["notifications"]); err == nil {
		_ = json.Unmarshal(raw, &honoured)
	}
	st.ackOnce.Do(func() {
		st.honoured, st.ackedAt = honoured, time.Now()
		close(st.acked)
	})
}

// endedByServer handles notifications/cancelled from the server: on stdio
// that is how it ends a subscription stream, which then counts as dropped.
func (l *listener) endedByServer(p mcp.NotificationParams) {
	rid, ok := p.AdditionalFields["requestId"]
	if !ok {
		return
	}
	l.mu.Lock()
	st := l.streams[idKey(rid)]
	l.mu.Unlock()
	if st != nil {
		st.cancel()
	}
}

// note is the status note when no stream is open although one is needed.
func (l *listener) note() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.problem == "" {
		return ""
	}
	return "subscriptions/listen: " + l.problem + "; list changes and resource updates are not heard until it reopens"
}

func (l *listener) setProblem(p string) {
	l.mu.Lock()
	l.problem = p
	l.mu.Unlock()
}

// filter is what a stream should ask for now.
func (c *conn) listenFilter() mcp.SubscriptionFilter {
	cfg := &c.s.cfg
	f := mcp.SubscriptionFilter{
		ToolsListChanged:     c.caps.toolsListChanged,
		PromptsListChanged:   c.caps.promptsListChanged && cfg.PromptsEnabled(),
		ResourcesListChanged: c.caps.resourcesListChanged && cfg.ResourcesEnabled(),
	}
	if c.caps.subscribe && cfg.ResourcesEnabled() {
		f.ResourceSubscriptions = c.subs.list()
	}
	return f
}

// startListening starts the loop that keeps the stream open and waits
// (at most timeoutMs) for the first stream to be acknowledged. A failure
// is logged and shown in status; the connection goes on without it.
func (c *conn) startListening(ctx context.Context) {
	l := c.listen
	l.mu.Lock()
	l.requests = make(chan chan reopenResult)
	l.mu.Unlock()
	c.wg.Add(1)
	go l.run()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(c.s.settings().Timeout())*time.Millisecond)
	defer cancel()
	if _, err := l.refilter(rctx); err != nil {
		c.s.log.Warn().Err(err).Msg("subscription stream not opened")
	}
}

// refilter asks the loop for a stream with the current filter and returns
// what the server acknowledged. With nothing to ask for, the stream is
// closed and the empty filter returned.
func (l *listener) refilter(ctx context.Context) (mcp.SubscriptionFilter, error) {
	l.mu.Lock()
	requests := l.requests
	l.mu.Unlock()
	if requests == nil {
		return mcp.SubscriptionFilter{}, fmt.Errorf("the connection has no subscription stream")
	}
	reply := make(chan reopenResult, 1)
	select {
	case requests <- reply:
	case <-ctx.Done():
		return mcp.SubscriptionFilter{}, ctx.Err()
	case <-l.c.ctx.Done():
		return mcp.SubscriptionFilter{}, fmt.Errorf("the connection ended")
	}
	select {
	case r := <-reply:
		return r.honoured, r.err
	case <-l.c.ctx.Done():
		return mcp.SubscriptionFilter{}, fmt.Errorf("the connection ended")
	}
}

// Backoff between attempts to reopen a stream that ended.
const (
	listenBackoffMin = time.Second
	listenBackoffMax = 30 * time.Second
)

// run owns the streams: it opens them on request, and reopens the current
// one when it ends. It ends with the connection.
func (l *listener) run() {
	c := l.c
	defer c.wg.Done()
	defer l.closeAll()
	backoff := listenBackoffMin
	var (
		retry   *time.Timer
		retryCh <-chan time.Time
	)
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		l.mu.Lock()
		cur := l.current
		l.mu.Unlock()
		var ended <-chan struct{}
		if cur != nil {
			ended = cur.ended
		}
		select {
		case <-c.ctx.Done():
			return
		case reply := <-l.requests:
			honoured, err := l.replace()
			reply <- reopenResult{honoured, err}
		case <-ended:
			l.mu.Lock()
			if l.current == cur {
				l.current = nil
			}
			l.mu.Unlock()
			if c.ctx.Err() != nil {
				return
			}
			why := "the server ended it"
			if cur.err != nil {
				why = c.s.sup.clean(cur.err.Error(), 300)
			}
			c.s.log.Warn().Str("reason", why).Msg("subscription stream ended; reopening")
			l.setProblem("the stream ended (" + why + ")")
			if time.Since(cur.ackedAt) > 10*time.Second {
				backoff = listenBackoffMin
			}
			retry = time.NewTimer(backoff)
			retryCh = retry.C
		case <-retryCh:
			retryCh = nil
			honoured, err := l.replace()
			if err != nil {
				if _, refused := isUpstream(err); refused {
					// The server answered the stream with an error: asking
					// again would get the same.
					c.s.log.Warn().Err(err).Msg("subscription stream refused; not reopening")
					continue
				}
				backoff = min(2*backoff, listenBackoffMax)
				retry = time.NewTimer(backoff)
				retryCh = retry.C
				continue
			}
			if !honoured.IsEmpty() {
				// What changed while no stream was open went unheard.
				now := time.Now()
				for _, m := range []string{mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationPromptsListChanged,
					mcp.MethodNotificationResourcesListChanged} {
					c.listChanged(m, true, now)
				}
			}
		}
	}
}

// replace opens a stream with the current filter and waits (timeoutMs)
// for its acknowledgment; then it becomes current and the previous one is
// closed. If it is not acknowledged, it is closed and the previous one
// stays. An empty filter closes the current stream and opens none.
func (l *listener) replace() (mcp.SubscriptionFilter, error) {
	c := l.c
	filter := c.listenFilter()
	if filter.IsEmpty() {
		l.mu.Lock()
		old := l.current
		l.current, l.problem = nil, ""
		l.mu.Unlock()
		if old != nil {
			old.cancel()
			l.awaitEnd(old)
		}
		return mcp.SubscriptionFilter{}, nil
	}
	st := l.open(filter)
	timer := time.NewTimer(time.Duration(c.s.settings().Timeout()) * time.Millisecond)
	defer timer.Stop()
	var err error
	select {
	case <-st.acked:
	case <-st.ended:
		err = st.err
		if err == nil {
			err = fmt.Errorf("the server ended the stream without acknowledging it")
		}
	case <-timer.C:
		err = fmt.Errorf("no acknowledgment within timeoutMs (%d ms)", c.s.settings().Timeout())
	case <-c.ctx.Done():
		err = fmt.Errorf("the connection ended")
	}
	if err != nil {
		st.cancel()
		l.mu.Lock()
		if l.current == nil {
			l.problem = "the stream could not be opened (" + c.s.sup.clean(err.Error(), 300) + ")"
		}
		l.mu.Unlock()
		return mcp.SubscriptionFilter{}, err
	}
	if !sameFilter(filter, st.honoured) {
		c.s.log.Info().Interface("asked", filter).Interface("honoured", st.honoured).Msg("the server honoured part of the subscription filter")
	}
	l.mu.Lock()
	old := l.current
	l.current, l.problem = st, ""
	if st.honoured.IsEmpty() {
		// Nothing would ever arrive on it (and a server may end such a
		// stream at once): keep none open.
		l.current = nil
		l.problem = "the server acknowledged none of the notifications asked for"
	}
	l.mu.Unlock()
	if l.current == nil {
		st.cancel()
	}
	if old != nil {
		old.cancel()
		l.awaitEnd(old)
	}
	c.s.log.Debug().Str("subscription", st.key).Msg("subscription stream open")
	return st.honoured, nil
}

// awaitEnd waits until a cancelled stream's request has returned, which
// is after its notifications/cancelled was written (raw.cancel sends it
// before returning): an unsubscribe answers only once the server has
// been told, so a call made next cannot overtake it on the wire. Bounded
// by raw.cancel's own limit.
func (l *listener) awaitEnd(st *stream) {
	t := time.NewTimer(6 * time.Second)
	defer t.Stop()
	select {
	case <-st.ended:
	case <-t.C:
	case <-l.c.ctx.Done():
	}
}

// open sends subscriptions/listen with filter; the request runs until the
// stream ends.
func (l *listener) open(filter mcp.SubscriptionFilter) *stream {
	c := l.c
	ctx, cancel := context.WithCancel(c.ctx)
	id := c.raw.newID()
	st := &stream{id: id, key: idKey(id.Value()), filter: filter, cancel: cancel, acked: make(chan struct{}), ended: make(chan struct{})}
	l.mu.Lock()
	if l.streams == nil {
		l.streams = map[string]*stream{}
	}
	l.streams[st.key] = st
	l.mu.Unlock()
	params, _ := json.Marshal(map[string]any{"notifications": filter})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		_, err := c.raw.requestWith(ctx, string(mcp.MethodSubscriptionsListen), params, reqOpts{id: &id})
		st.err = err
		l.mu.Lock()
		delete(l.streams, st.key)
		l.mu.Unlock()
		close(st.ended)
	}()
	return st
}

// closeAll ends every stream (the connection is ending).
func (l *listener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.streams {
		st.cancel()
	}
	l.current = nil
}

func sameFilter(a, b mcp.SubscriptionFilter) bool {
	as, bs := slices.Clone(a.ResourceSubscriptions), slices.Clone(b.ResourceSubscriptions)
	slices.Sort(as)
	slices.Sort(bs)
	return a.ToolsListChanged == b.ToolsListChanged && a.PromptsListChanged == b.PromptsListChanged &&
		a.ResourcesListChanged == b.ResourcesListChanged && slices.Equal(as, bs)
}
