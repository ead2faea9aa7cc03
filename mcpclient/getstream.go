package mcpclient

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
)

// Backoff of the legacy GET listening stream after a refusal: mcp-go's
// listener asks again a second after each failure; getStream adds
// getBackoffBase × 2^(n-2) (n ≥ 2 refusals in a row), at most
// getBackoffMax, ±20 % jitter. Variables for tests.
var (
	getBackoffBase = time.Second
	getBackoffMax  = 5 * time.Minute
)

// getOpenedLong is how long a stream must have stayed open for its end
// not to count as a refusal: a server that accepts the GET and hangs up
// at once is backed off like one that refuses it.
const getOpenedLong = 30 * time.Second

// getStream gates and watches the legacy Streamable HTTP GET listening
// stream of one transport. mcp-go's listener sends the GET as soon as the
// headers of the initialize answer arrive, before notifications/initialized
// and without the MCP-Protocol-Version header, and asks again every second
// for the life of the connection. getStream, in the transport's client,
// holds every GET until the handshake completed (begin), adds the
// negotiated version header when missing, backs refusals off, and keeps
// the stream's state for status and the log.
type getStream struct {
	next  http.RoundTripper
	log   zerolog.Logger
	clean func(string, int) string
	ready chan struct{} // closed by begin
	once  sync.Once
	done  <-chan struct{} // the connection's end

	// mu guards the fields that follow.
	mu       sync.Mutex
	version  string
	state    string
	lastErr  string
	refusals uint64 // in a row
	total    uint64
	since    time.Time
}

func newGetStream(next http.RoundTripper, done <-chan struct{}, log zerolog.Logger, clean func(string, int) string) *getStream {
	return &getStream{next: next, done: done, log: log, clean: clean, ready: make(chan struct{}), state: contracts.StreamWaiting}
}

// begin lets the GETs go: the handshake completed with version.
func (g *getStream) begin(version string) {
	g.mu.Lock()
	g.version = version
	g.mu.Unlock()
	g.once.Do(func() { close(g.ready) })
}

func (g *getStream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return g.next.RoundTrip(req)
	}
	select {
	case <-g.ready:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	case <-g.done:
		return nil, context.Canceled
	}
	if d := g.delay(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		}
	}
	g.mu.Lock()
	version := g.version
	g.mu.Unlock()
	if req.Header.Get(transport.HeaderKeyProtocolVersion) == "" && version != "" {
		req = req.Clone(req.Context())
		req.Header.Set(transport.HeaderKeyProtocolVersion, version)
	}
	resp, err := g.next.RoundTrip(req)
	switch {
	case err != nil:
		if req.Context().Err() == nil {
			g.refused(err.Error(), false)
		}
		return nil, err
	case resp.StatusCode == http.StatusMethodNotAllowed:
		g.refused("the server answered 405: it offers no GET stream", true)
	case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted:
		g.refused(fmt.Sprintf("the server answered %d", resp.StatusCode), false)
	default:
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
			g.refused("the server answered with "+g.clean(resp.Header.Get("Content-Type"), 80)+", not an event stream", false)
			break
		}
		g.opened()
		resp.Body = &getBody{ReadCloser: resp.Body, g: g, opened: time.Now()}
	}
	return resp, nil
}

// delay is the wait before the next GET: none until two refusals in a row.
func (g *getStream) delay() time.Duration {
	g.mu.Lock()
	n := g.refusals
	g.mu.Unlock()
	if n < 2 {
		return 0
	}
	d := getBackoffMax
	if n-2 < 20 {
		d = min(getBackoffBase<<(n-2), getBackoffMax)
	}
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

func (g *getStream) refused(why string, final bool) {
	g.mu.Lock()
	g.refusals++
	g.total++
	first := g.refusals == 1
	g.state, g.lastErr, g.since = contracts.StreamRefused, g.clean(why, 300), time.Now().UTC()
	if final {
		g.state = contracts.StreamNotOffered
	}
	n := g.refusals
	g.mu.Unlock()
	ev := g.log.Debug()
	if first || final {
		ev = g.log.Warn()
	}
	ev.Str("problem", g.clean(why, 300)).Uint64("refusals", n).
		Msg("GET listening stream refused: list changes, resource updates and server requests sent on it are not heard; asking again later")
}

func (g *getStream) opened() {
	g.mu.Lock()
	was := g.state
	g.state, g.since = contracts.StreamOpen, time.Now().UTC()
	g.mu.Unlock()
	if was != contracts.StreamOpen {
		g.log.Info().Msg("GET listening stream open")
	}
}

// ended records the end of an open stream; one that ends soon after it
// opened counts as a refusal.
func (g *getStream) ended(opened time.Time, err error) {
	select {
	case <-g.done:
		return
	default:
	}
	why := "the server ended the stream"
	if err != nil && err != io.EOF {
		why = "the stream broke: " + err.Error()
	}
	if time.Since(opened) < getOpenedLong {
		g.refused(why+" soon after it opened", false)
		return
	}
	g.mu.Lock()
	g.refusals = 0
	g.state, g.lastErr, g.since = contracts.StreamEnded, g.clean(why, 300), time.Now().UTC()
	g.mu.Unlock()
	g.log.Info().Str("problem", g.clean(why, 300)).Msg("GET listening stream ended; asking again")
}

// status is the stream's state for ServerStatus.
func (g *getStream) status() *contracts.StreamStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := &contracts.StreamStatus{Kind: contracts.StreamGET, State: g.state, LastError: g.lastErr, Refusals: g.total}
	if !g.since.IsZero() {
		st.Since = g.since.Format(time.RFC3339)
	}
	return st
}

// note is the status note while the stream is not open.
func (g *getStream) note() string {
	st := g.status()
	switch st.State {
	case contracts.StreamRefused, contracts.StreamNotOffered:
		return "GET listening stream " + st.State + " (" + st.LastError + "): list changes, resource updates and server requests sent on it are not heard"
	}
	return ""
}

// getBody reports the end of an open stream once.
type getBody struct {
	io.ReadCloser
	g      *getStream
	opened time.Time
	once   sync.Once
}

func (b *getBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(func() { b.g.ended(b.opened, err) })
	}
	return n, err
}

func (b *getBody) Close() error {
	b.once.Do(func() { b.g.ended(b.opened, nil) })
	return b.ReadCloser.Close()
}
