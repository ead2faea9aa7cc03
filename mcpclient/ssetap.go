package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Server requests over HTTP are pikod's to answer. The legacy HTTP+SSE
// transport of mcp-go reads them off the SSE stream and drops them (it
// only matches responses to its own requests); the Streamable HTTP one
// answers them, but gives the answer at most 30 s. sseTap takes them out
// of the event streams before mcp-go sees them and answers them itself:
// with a POST to the endpoint the server named (SSE), or to the server's
// URL in its session (Streamable HTTP), as the transports' own messages
// go.

// sseTap is the RoundTripper of an http or sse connection's HTTP client:
// every event stream it receives (the SSE transport's GET; a Streamable
// HTTP POST's response stream and its GET stream) passes through
// sseFilter.
type sseTap struct {
	next http.RoundTripper
	c    *conn
}

func (t *sseTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &sseFilter{rc: resp.Body, src: bufio.NewReader(resp.Body), onRequest: t.c.sseRequest}
	return resp, nil
}

// sseFilter passes an SSE stream through, event by event, except the
// events that carry a JSON-RPC request: those go to onRequest.
type sseFilter struct {
	rc        io.ReadCloser
	src       *bufio.Reader
	out       bytes.Buffer
	onRequest func(id, method string, rawID, params json.RawMessage)
}

func (f *sseFilter) Close() error { return f.rc.Close() }

func (f *sseFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 {
		ev, err := f.event()
		if len(ev) > 0 && !f.take(ev) {
			f.out.Write(ev)
		}
		if err != nil {
			if f.out.Len() > 0 {
				break
			}
			return 0, err
		}
	}
	return f.out.Read(p)
}

// event reads one event: its lines up to and including the blank line
// that ends it (or what is left at the end of the stream).
func (f *sseFilter) event() ([]byte, error) {
	var ev []byte
	for {
		line, err := f.src.ReadBytes('\n')
		ev = append(ev, line...)
		if err != nil {
			return ev, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return ev, nil
		}
	}
}

// take hands a request event to onRequest and reports whether it did.
func (f *sseFilter) take(ev []byte) bool {
	name := ""
	var data []string
	for _, line := range strings.Split(strings.TrimRight(string(ev), "\r\n"), "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if (name != "" && name != "message") || len(data) == 0 {
		return false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal([]byte(strings.Join(data, "\n")), &msg) != nil || msg.Method == "" ||
		len(msg.ID) == 0 || string(msg.ID) == "null" {
		return false
	}
	f.onRequest(string(msg.ID), msg.Method, msg.ID, msg.Params)
	return true
}

// sseRequest answers a request the server sent on the SSE stream, on a
// goroutine of the connection (the stream reader never waits for the
// owner).
func (c *conn) sseRequest(_, method string, rawID, params json.RawMessage) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		type rpcError struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		reply := struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   *rpcError       `json:"error,omitempty"`
		}{JSONRPC: mcp.JSONRPC_VERSION, ID: rawID}
		res, err := c.answer(c.ctx, method, params, nil)
		if err != nil {
			re := asRequestError(err)
			reply.Error = &rpcError{Code: re.Code, Message: re.Message}
		} else {
			reply.Result = res
		}
		body, err := json.Marshal(reply)
		if err != nil {
			return
		}
		if err := c.postToEndpoint(body); err != nil {
			c.s.log.Warn().Err(err).Str("method", method).Msg("answering a server request on the sse endpoint failed")
		}
	}()
}

// postToEndpoint POSTs one message as the transport's own messages go:
// to the SSE transport's endpoint, or to a Streamable HTTP server's URL
// in its session.
func (c *conn) postToEndpoint(body []byte) error {
	target, session := "", ""
	switch tr := c.client.GetTransport().(type) {
	case *transport.SSE:
		if tr.GetEndpoint() == nil {
			return errNoEndpoint
		}
		target = tr.GetEndpoint().String()
	case *transport.StreamableHTTP:
		target, session = c.s.cfg.URL, tr.GetSessionId()
	default:
		return errNoEndpoint
	}
	ctx, cancel := context.WithTimeout(c.ctx, time.Duration(c.s.settings().Timeout())*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(transport.HeaderKeySessionID, session)
	}
	if v := c.raw.protocolVersion(); v != "" {
		req.Header.Set(transport.HeaderKeyProtocolVersion, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &UpstreamError{Code: mcp.INTERNAL_ERROR, Message: "the sse endpoint answered HTTP " + resp.Status}
	}
	return nil
}

var errNoEndpoint = &UpstreamError{Code: mcp.INTERNAL_ERROR, Message: "the sse transport has no endpoint yet"}
