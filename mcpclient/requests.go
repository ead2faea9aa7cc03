package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// ServerRequest is a request of a server that waits for the owner: an
// elicitation or a sampling (sent by the server, or listed in a
// 2026-07-28 input_required result). Options.ServerRequest receives it.
type ServerRequest struct {
	Server string
	// Method is elicitation/create or sampling/createMessage; Params are
	// its params exactly as the server sent them (already checked: a
	// form elicitation has an object requestedSchema, a url one an
	// http(s) URL, a sampling is text only within MaxSamplingTokens).
	Method string
	Params json.RawMessage
	// Tool is the tool whose call the request belongs to: the call the
	// input_required result answered, or the one call of the server in
	// flight when the request came; "" when none (or several) were.
	Tool          string
	InputRequired bool
	// Asking, when set, tells the call the request belongs to that the
	// owner is asked (its progress shows message; id is the pending
	// request's). While a request is out the call's timeout is paused.
	Asking func(id, message string)
}

// RequestError is the JSON-RPC error a server request is answered with.
type RequestError struct {
	Code    int
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// refuse is a RequestError with a formatted message.
func refuse(code int, format string, a ...any) *RequestError {
	return &RequestError{Code: code, Message: fmt.Sprintf(format, a...)}
}

// clientCapabilities are what pikod declares to a server: roots only when
// the settings list some, with listChanged (a change of the roots alone
// keeps the connection and sends notifications/roots/list_changed, see
// Supervisor.Apply; adding the first roots or removing the last changes
// this declaration, and so reconnects), elicitation (form and url) only
// with elicitation: true, sampling only with sampling: true.
func clientCapabilities(cfg *contracts.ServerSettings) mcp.ClientCapabilities {
	var caps mcp.ClientCapabilities
	if len(cfg.Roots) > 0 {
		caps.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	}
	if cfg.Elicitation {
		caps.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	}
	if cfg.Sampling {
		caps.Sampling = &mcp.SamplingCapability{}
	}
	return caps
}

// keeps reports whether cfg can be applied to the session without a new
// connection: it differs from the settings in force only in pikod's live
// policy (grants, timeouts) or in its roots, the session having roots and
// cfg still some (or neither), so the declared capabilities stay the same.
func (s *session) keeps(cfg *contracts.ServerSettings) bool {
	return s.rest == cfg.ConnectionDigest() && (len(s.settings().Roots) > 0) == (len(cfg.Roots) > 0)
}

// liveChange is what retarget changed on a live connection.
type liveChange struct {
	conn   *conn // the live connection, nil when there is none
	roots  bool  // the roots differ: tell the server
	grants bool  // the tool grants differ: re-grant the catalog
}

// retarget makes cfg (see keeps) the session's settings: the catalog's
// grants, roots/list and timeouts follow it from now on, and approvals
// bind to its approval digests (an action stays approvable while its tool
// stays selected and nothing else an approval covers moved).
func (s *session) retarget(cfg *contracts.ServerSettings) liveChange {
	next := *cfg
	prev := s.live.Swap(&next)
	ch := liveChange{
		roots: !slices.Equal(prev.Roots, next.Roots),
		grants: !equalTools(prev.Tools, next.Tools) || !slices.Equal(prev.ReadOnlyTools, next.ReadOnlyTools) ||
			!slices.Equal(prev.AutonomousTools, next.AutonomousTools),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.digest = cfg.Digest()
	ch.conn = s.conn
	return ch
}

// equalTools compares two tools selections (nil: every tool).
func equalTools(a, b *[]string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return slices.Equal(*a, *b)
}

// rootsChanged sends notifications/roots/list_changed, so that the server
// asks roots/list again. A 2026-07-28 connection has no session to tell:
// its server asks for roots with each input_required and gets the current
// ones. A failure to send is logged; the roots are current all the same.
func (c *conn) rootsChanged() {
	if mcp.IsModernProtocol(c.protocol) {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: mcp.MethodNotificationRootsListChanged},
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	if err := c.client.GetTransport().SendNotification(ctx, n); err != nil {
		c.s.log.Warn().Str("problem", c.s.sup.clean(err.Error(), 300)).Msg("notifications/roots/list_changed not sent")
		return
	}
	c.s.log.Info().Int("roots", len(c.s.settings().Roots)).Msg("roots changed: notifications/roots/list_changed sent")
}

// callTrack is one tools/call in flight on a connection, for the server
// requests that belong to it.
type callTrack struct {
	tool string
	done chan struct{} // closed when the call ends
	// asking counts the server requests of the call the owner is asked;
	// note is the latest "the server asks" message not yet shown.
	asking atomic.Int32
	note   atomic.Pointer[progressUpdate]
	signal chan struct{} // capacity 1: asking or note changed
}

func newCallTrack(tool string) *callTrack {
	return &callTrack{tool: tool, done: make(chan struct{}), signal: make(chan struct{}, 1)}
}

func (t *callTrack) poke() {
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// calls are the tools/calls in flight on a connection.
type callSet struct {
	mu  sync.Mutex
	set map[*callTrack]struct{}
}

func (cs *callSet) add(t *callTrack) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.set == nil {
		cs.set = map[*callTrack]struct{}{}
	}
	cs.set[t] = struct{}{}
}

func (cs *callSet) remove(t *callTrack) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.set, t)
	close(t.done)
}

// sole returns the one call in flight, nil when none or several are: a
// request that arrives then cannot be tied to a call.
func (cs *callSet) sole() *callTrack {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.set) != 1 {
		return nil
	}
	for t := range cs.set {
		return t
	}
	return nil
}

// serveRequest answers a request the server sent (the transport's request
// handler, stdio and Streamable HTTP). It never returns an error: a
// refusal is the JSON-RPC error the server gets.
func (c *conn) serveRequest(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	var params json.RawMessage
	switch p := r.Params.(type) {
	case nil:
	case json.RawMessage:
		params = p
	default:
		params, _ = json.Marshal(p)
	}
	res, err := c.answer(ctx, r.Method, params, nil)
	if err != nil {
		re := asRequestError(err)
		return transport.NewJSONRPCErrorResponse(r.ID, re.Code, re.Message, nil), nil
	}
	return transport.NewJSONRPCResultResponse(r.ID, res), nil
}

func asRequestError(err error) *RequestError {
	var re *RequestError
	if errors.As(err, &re) {
		return re
	}
	return &RequestError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
}

// answer answers one server request (sent by the server, or an input
// request of an input_required result, then with track set to its call).
// Capabilities pikod did not declare are refused at once with "method
// not found"; malformed or out-of-bounds requests with "invalid params";
// elicitation and sampling wait for the owner (Options.ServerRequest).
func (c *conn) answer(ctx context.Context, method string, params json.RawMessage, track *callTrack) (json.RawMessage, error) {
	cfg := &c.s.cfg
	id := cfg.ID
	switch method {
	case string(mcp.MethodPing):
		return json.RawMessage(`{}`), nil
	case string(mcp.MethodListRoots):
		current := c.s.settings().Roots
		if len(current) == 0 {
			return nil, refuse(mcp.METHOD_NOT_FOUND, "roots/list: pikod offers no roots to server %q (its settings list none)", id)
		}
		roots := make([]mcp.Root, 0, len(current))
		for _, r := range current {
			roots = append(roots, mcp.Root{URI: r.URI, Name: r.Name})
		}
		return json.Marshal(mcp.ListRootsResult{Roots: roots})
	case string(mcp.MethodElicitationCreate):
		if !cfg.Elicitation {
			return nil, refuse(mcp.METHOD_NOT_FOUND, "elicitation/create: pikod did not declare elicitation to server %q (its settings do not set elicitation: true)", id)
		}
		if err := checkElicitation(params); err != nil {
			return nil, err
		}
	case string(mcp.MethodSamplingCreateMessage):
		if !cfg.Sampling {
			return nil, refuse(mcp.METHOD_NOT_FOUND, "sampling/createMessage: pikod did not declare sampling to server %q (its settings do not set sampling: true)", id)
		}
		if err := checkSampling(params); err != nil {
			return nil, err
		}
	default:
		return nil, refuse(mcp.METHOD_NOT_FOUND, "pikod does not serve %q", c.s.sup.clip(method, 100))
	}
	handler := c.s.sup.opts.ServerRequest
	if handler == nil {
		return nil, refuse(mcp.METHOD_NOT_FOUND, "%s: nobody can answer it in this pikod", method)
	}
	inputRequired := track != nil
	if track == nil {
		track = c.calls.sole()
	}
	// The request lives as long as the connection, and the call it
	// belongs to.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	req := ServerRequest{Server: id, Method: method, Params: params, InputRequired: inputRequired}
	if track != nil {
		req.Tool = track.tool
		go func() {
			select {
			case <-track.done:
				cancel()
			case <-wctx.Done():
			}
		}()
		track.asking.Add(1)
		track.poke()
		defer func() {
			track.asking.Add(-1)
			track.poke()
		}()
		req.Asking = func(rid, message string) {
			track.note.Store(&progressUpdate{message: message, request: rid})
			track.poke()
		}
	}
	return handler(wctx, req)
}

// elicitation params, as far as pikod reads them.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

func checkElicitation(params json.RawMessage) error {
	var p elicitParams
	if err := json.Unmarshal(params, &p); err != nil {
		return refuse(mcp.INVALID_PARAMS, "elicitation/create: the params are not an elicitation request: %v", err)
	}
	switch p.Mode {
	case "", contracts.ElicitForm:
		var schema map[string]json.RawMessage
		if err := json.Unmarshal(p.RequestedSchema, &schema); err != nil || schema == nil {
			return refuse(mcp.INVALID_PARAMS, "elicitation/create: a form elicitation needs an object requestedSchema")
		}
	case contracts.ElicitURL:
		if _, err := ElicitationURL(p.URL); err != nil {
			return refuse(mcp.INVALID_PARAMS, "elicitation/create: %v", err)
		}
	default:
		return refuse(mcp.INVALID_PARAMS, "elicitation/create: unknown mode %q (pikod knows form and url)", clip(p.Mode, 40))
	}
	return nil
}

// ElicitationURL checks the URL of a url-mode elicitation (http or https
// with a host) and returns it parsed.
func ElicitationURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("a url elicitation needs an http or https URL with a host; pikod shows no other")
	}
	return u, nil
}

// samplingParams, as far as pikod reads them.
type samplingParams struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens      int             `json:"maxTokens"`
	IncludeContext string          `json:"includeContext"`
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"toolChoice"`
}

// checkSampling refuses what pikod cannot answer: pikod has no model, the
// owner types the answer, so a sampling is text only and bounded.
func checkSampling(params json.RawMessage) error {
	var p samplingParams
	if err := json.Unmarshal(params, &p); err != nil {
		return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: the params are not a sampling request: %v", err)
	}
	if len(p.Tools) > 0 && string(p.Tools) != "null" || len(p.ToolChoice) > 0 && string(p.ToolChoice) != "null" {
		return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: pikod does not sample with tools (it declared no sampling.tools)")
	}
	if p.IncludeContext != "" && p.IncludeContext != "none" {
		return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: includeContext %q is not supported: pikod shares no context (use \"none\")", clip(p.IncludeContext, 40))
	}
	if p.MaxTokens <= 0 || p.MaxTokens > contracts.MaxSamplingTokens {
		return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: maxTokens must be 1 to %d, not %d", contracts.MaxSamplingTokens, p.MaxTokens)
	}
	if len(p.Messages) == 0 {
		return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: no messages")
	}
	for i, m := range p.Messages {
		if _, err := SamplingText(m.Content); err != nil {
			return refuse(mcp.INVALID_PARAMS, "sampling/createMessage: message %d: %v", i, err)
		}
	}
	return nil
}

// SamplingText returns the text of a sampling message's content: a text
// block or an array of text blocks; anything else (images, audio, tool
// use) is refused.
func SamplingText(content json.RawMessage) (string, error) {
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var one block
	if err := json.Unmarshal(content, &one); err == nil {
		if one.Type != "text" {
			return "", fmt.Errorf("pikod samples text only, not %q content", clip(one.Type, 40))
		}
		return one.Text, nil
	}
	var many []block
	if err := json.Unmarshal(content, &many); err != nil {
		return "", errors.New("the content is neither a content block nor an array of them")
	}
	var b strings.Builder
	for _, x := range many {
		if x.Type != "text" {
			return "", fmt.Errorf("pikod samples text only, not %q content", clip(x.Type, 40))
		}
		b.WriteString(x.Text)
	}
	return b.String(), nil
}
