package mcpclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// legacyServer is a Streamable HTTP server of the 2025-06-18 era written
// by hand, to misbehave exactly: it sends the headers of its initialize
// answer 300 ms before the body, refuses (400) a GET that comes before
// notifications/initialized or without the MCP-Protocol-Version header,
// or every GET with refuseAll. An accepted GET stream carries one
// notifications/tools/list_changed, after which tools/list has two tools.
type legacyServer struct {
	refuseAll bool
	stop      chan struct{}

	mu          sync.Mutex
	events      []string // in arrival order
	gets        []time.Time
	initialized bool
	changed     bool
}

func (l *legacyServer) note(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *legacyServer) snapshot() ([]string, []time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...), append([]time.Time(nil), l.gets...)
}

func (l *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		l.mu.Lock()
		l.gets = append(l.gets, time.Now())
		ready := l.initialized && r.Header.Get("MCP-Protocol-Version") == "2025-06-18"
		l.mu.Unlock()
		if l.refuseAll {
			l.note("get refused (all)")
			http.Error(w, "no stream here", http.StatusInternalServerError)
			return
		}
		if !ready {
			l.note(fmt.Sprintf("get refused (initialized %v, version %q)", l.initialized, r.Header.Get("MCP-Protocol-Version")))
			http.Error(w, "GET before the handshake or without MCP-Protocol-Version", http.StatusBadRequest)
			return
		}
		l.note("get")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		l.mu.Lock()
		l.changed = true
		l.mu.Unlock()
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-l.stop:
		}
		return
	}
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	l.note(msg.Method)
	if msg.ID == nil {
		if msg.Method == "notifications/initialized" {
			l.mu.Lock()
			l.initialized = true
			l.mu.Unlock()
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := `{}`
	switch msg.Method {
	case "initialize":
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"by-the-book","version":"1"}}`
	case "tools/list":
		l.mu.Lock()
		two := l.changed
		l.mu.Unlock()
		result = `{"tools":[{"name":"one","inputSchema":{"type":"object"}}]}`
		if two {
			result = `{"tools":[{"name":"one","inputSchema":{"type":"object"}},{"name":"two","inputSchema":{"type":"object"}}]}`
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "s-1")
	w.WriteHeader(http.StatusOK)
	if msg.Method == "initialize" {
		// The headers first: mcp-go takes them as the end of the
		// handshake.
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
}

func startLegacyServer(t *testing.T, refuseAll bool) (*legacyServer, string) {
	l := &legacyServer{refuseAll: refuseAll, stop: make(chan struct{})}
	srv := httptest.NewServer(l)
	t.Cleanup(func() {
		close(l.stop)
		srv.Close()
	})
	return l, srv.URL + "/mcp"
}

func legacyHTTP(id, url string) contracts.ServerSettings {
	return contracts.ServerSettings{ID: id, Transport: contracts.TransportHTTP, URL: url, AllowPrivateNetwork: true,
		Protocol: &contracts.Protocol{Mode: contracts.ProtocolLegacy}, TimeoutMs: 10_000}
}

// TestGetStreamAfterHandshake: the legacy GET stream leaves only after
// notifications/initialized, with the negotiated version header, even when
// the initialize body comes 300 ms after its headers; what the server sends
// on it is heard.
func TestGetStreamAfterHandshake(t *testing.T) {
	h := newHarness(t, CatalogLimits{})
	l, url := startLegacyServer(t, false)
	h.sup.Apply([]contracts.ServerSettings{legacyHTTP("book", url)})
	if _, err := h.sup.Connect(ctxT(t), "book"); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	h.waitStatus("book", "two tools after the stream's list_changed", func(st contracts.ServerStatus) bool { return st.ToolCount == 2 })
	events, _ := l.snapshot()
	iInit, iGet := -1, -1
	for i, e := range events {
		switch {
		case e == "notifications/initialized" && iInit < 0:
			iInit = i
		case e == "get" && iGet < 0:
			iGet = i
		case strings.HasPrefix(e, "get refused"):
			t.Errorf("the server refused a GET: %s (events %q)", e, events)
		}
	}
	if iInit < 0 || iGet < iInit {
		t.Errorf("GET at %d, notifications/initialized at %d, want the GET after it: %q", iGet, iInit, events)
	}
	st := h.status("book")
	if st.ListenStream == nil || st.ListenStream.State != contracts.StreamOpen {
		t.Errorf("status listenStream = %+v, want open", st.ListenStream)
	}
}

// TestGetStreamBacksOff: a server that refuses every GET is asked less and
// less often, status says the stream is refused and why, and the log
// names the server.
func TestGetStreamBacksOff(t *testing.T) {
	was := getBackoffBase
	getBackoffBase = 150 * time.Millisecond
	t.Cleanup(func() { getBackoffBase = was })
	h := newHarness(t, CatalogLimits{})
	l, url := startLegacyServer(t, true)
	h.sup.Apply([]contracts.ServerSettings{legacyHTTP("shut", url)})
	if _, err := h.sup.Connect(ctxT(t), "shut"); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var gets []time.Time
	for time.Now().Before(deadline) {
		if _, gets = l.snapshot(); len(gets) >= 5 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(gets) < 5 {
		t.Fatalf("%d GETs in 20 s, want 5", len(gets))
	}
	first, last := gets[1].Sub(gets[0]), gets[4].Sub(gets[3])
	// mcp-go asks a second after each refusal; the backoff adds 0, 150,
	// 300 and 600 ms (±20 %) before the 2nd to 5th GET.
	if last < first+300*time.Millisecond {
		t.Errorf("intervals between GETs %v then %v: want them growing (backoff)", first, last)
	}
	st := h.status("shut")
	if st.State != contracts.StateConnected || st.ListenStream == nil || st.ListenStream.State != contracts.StreamRefused ||
		!strings.Contains(st.ListenStream.LastError, "500") || st.ListenStream.Refusals < 5 {
		t.Errorf("status: state %s listenStream %+v, want connected with the stream refused (500)", st.State, st.ListenStream)
	}
	if !strings.Contains(strings.Join(st.Notes, "\n"), "GET listening stream refused") {
		t.Errorf("status notes %q lack the refused stream", st.Notes)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"server":"shut"`) || !strings.Contains(logs, "GET listening stream refused") {
		t.Errorf("the log does not name the server with the refused stream:\n%s", logs)
	}
	warned := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "GET listening stream refused") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d refusals logged as warnings, want the first only (the rest at debug):\n%s", warned, logs)
	}
}
