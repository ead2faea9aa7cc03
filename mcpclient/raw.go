package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/mcpclient/netguard"
)

// rawRequester sends requests with raw JSON params and returns raw results,
// so what pikod hashes, stores and passes on is exactly what went over the
// wire. mcp-go's typed helpers re-encode tool definitions through structs
// that drop schema keywords; these requests bypass them while keeping the
// protocol metadata a 2026-07-28 connection requires on every request.
type rawRequester struct {
	client       *client.Client
	clientInfo   mcp.Implementation
	capabilities mcp.ClientCapabilities
	// ids are strings so they never collide with mcp-go's numeric ids on
	// the same connection.
	next atomic.Uint64
	// written, for stdio, counts the bytes that went into the server's
	// stdin (Process.StdinWritten); nil for HTTP and SSE.
	written func() uint64
	// logLevel, when set, returns the log level the owner chose ("" for
	// none): 2026-07-28 requests carry it in _meta, as that revision has
	// no logging/setLevel.
	logLevel func() string
	// version is the protocol version in effect (see setVersion); empty
	// before the handshake.
	version atomic.Pointer[string]
}

// reqOpts are the less common parts of one request.
type reqOpts struct {
	// header holds HTTP headers to send besides the standard ones
	// (Mcp-Param-* of a tools/call).
	header http.Header
	// id, when set, is the request's JSON-RPC id (a subscription stream
	// must know its id before anything arrives on it).
	id *mcp.RequestId
	// noCancel: never follow the request with notifications/cancelled
	// (the server/discover probe: a legacy server must see nothing before
	// initialize).
	noCancel bool
}

// setVersion makes version the one every later request declares: in
// _meta (2026-07-28) and, over HTTP, in the MCP-Protocol-Version header
// ("" sends none, as before a handshake).
func (r *rawRequester) setVersion(version string) {
	r.version.Store(&version)
	if h, ok := r.client.GetTransport().(transport.HTTPConnection); ok {
		h.SetProtocolVersion(version)
	}
}

// protocolVersion returns the version set last.
func (r *rawRequester) protocolVersion() string {
	if v := r.version.Load(); v != nil {
		return *v
	}
	return ""
}

// newID returns a request id unique on the connection.
func (r *rawRequester) newID() mcp.RequestId {
	return mcp.NewRequestId("pikod-" + strconv.FormatUint(r.next.Add(1), 10))
}

// UpstreamError is an error response from the MCP server itself.
type UpstreamError struct {
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("server error %d: %s", e.Code, e.Message)
}

// request sends method with params (a JSON object or nil) and returns the
// raw result. When ctx ends first, the server is told with
// notifications/cancelled where the transport needs it (see cancel). A
// failure that provably happened before any byte of the request left
// pikod is a *requestNotSentError.
func (r *rawRequester) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return r.requestWith(ctx, method, params, reqOpts{})
}

// requestWith is request with options.
func (r *rawRequester) requestWith(ctx context.Context, method string, params json.RawMessage, opts reqOpts) (json.RawMessage, error) {
	version := r.protocolVersion()
	params, err := r.withMeta(version, params)
	if err != nil {
		return nil, &requestNotSentError{err: err}
	}
	var header http.Header
	if std := mcp.StandardHeaders(version, mcp.MCPMethod(method), params); len(std) > 0 || len(opts.header) > 0 {
		header = http.Header{}
		for k, v := range opts.header {
			header[k] = v
		}
		for k, v := range std {
			header.Set(k, v)
		}
	}
	id := r.newID()
	if opts.id != nil {
		id = *opts.id
	}
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Header: header}
	if params != nil {
		req.Params = params
	}
	if err := ctx.Err(); err != nil {
		return nil, &requestNotSentError{err: err}
	}
	var before uint64
	if r.written != nil {
		before = r.written()
	}
	resp, err := r.client.GetTransport().SendRequest(ctx, req)
	if err != nil {
		if r.sentNothing(err, before) {
			// The server never saw the request: nothing to cancel.
			return nil, &requestNotSentError{err: err}
		}
		if errors.Is(err, transport.ErrSessionTerminated) && mcp.IsModernProtocol(version) {
			// 2026-07-28 has no sessions: a 404 is the server saying it
			// serves no such method (mcp-go drops the body that says so).
			return nil, &UpstreamError{Code: mcp.METHOD_NOT_FOUND, Message: "HTTP 404 Not Found: the server does not serve " + method}
		}
		if ctx.Err() != nil && !opts.noCancel {
			r.cancel(id, ctx.Err())
		}
		return nil, err
	}
	if resp.Error != nil {
		var data json.RawMessage
		if resp.Error.Data != nil {
			data, _ = json.Marshal(resp.Error.Data)
		}
		return nil, &UpstreamError{Code: resp.Error.Code, Message: resp.Error.Message, Data: data}
	}
	return resp.Result, nil
}

// sentNothing reports whether the failed SendRequest provably wrote not one
// byte of the request. On stdio the request is one frame on stdin: its own
// write failed having written nothing (the stdin writer's record), or no
// byte at all went into stdin while it was out (mcp-go returns before the
// write when the transport is closed or ctx is done; if the frame had been
// written, the count would have moved). On HTTP and SSE the guarded client
// records it on the request's POST.
func (r *rawRequester) sentNothing(err error, before uint64) bool {
	if r.written != nil {
		return unsentFrame(err) || r.written() == before
	}
	return netguard.PostNotSent(err)
}

// withMeta merges the per-request metadata of the modern protocol into
// params; legacy connections send params untouched.
func (r *rawRequester) withMeta(version string, params json.RawMessage) (json.RawMessage, error) {
	if !mcp.IsModernProtocol(version) {
		return params, nil
	}
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(params)) > 0 && !bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		if err := json.Unmarshal(params, &fields); err != nil {
			return nil, fmt.Errorf("params must be a JSON object: %w", err)
		}
	}
	meta := map[string]any{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("params._meta must be a JSON object: %w", err)
		}
	}
	meta[mcp.MetaKeyProtocolVersion] = version
	meta[mcp.MetaKeyClientCapabilities] = r.capabilities
	meta[mcp.MetaKeyClientInfo] = r.clientInfo
	if r.logLevel != nil {
		if level := r.logLevel(); level != "" {
			meta[mcp.MetaKeyLogLevel] = level
		}
	}
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	fields["_meta"] = m
	return json.Marshal(fields)
}

// cancel tells the server to stop a request whose caller went away, with
// notifications/cancelled: always on stdio; on legacy Streamable HTTP and
// on HTTP+SSE as a POST of its own, since there a dropped stream is not a
// cancellation (and on SSE the answer does not even travel on the
// request's own stream). Never on a 2026-07-28 Streamable HTTP connection:
// there closing the request's stream (mcp-go does when ctx ends) is the
// cancellation, and a notification POST is refused. Best effort and
// bounded: the caller waits for it, at most a few seconds.
func (r *rawRequester) cancel(id mcp.RequestId, cause error) {
	tr := r.client.GetTransport()
	limit := 2 * time.Second
	if _, ok := tr.(transport.HTTPConnection); ok {
		if _, streamable := tr.(*transport.StreamableHTTP); streamable && mcp.IsModernProtocol(r.protocolVersion()) {
			return
		}
		limit = 5 * time.Second
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": cause.Error()}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_ = tr.SendNotification(ctx, n)
}

// isUpstream reports whether err is the server's own error response.
func isUpstream(err error) (*UpstreamError, bool) {
	var u *UpstreamError
	ok := errors.As(err, &u)
	return u, ok
}
