package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

func searchTool() mcp.Tool {
	return mcp.NewTool(ToolSearch,
		mcp.WithDescription("Search the tools of the MCP servers pikod exposes here (names, descriptions and schemas, ranked). "+
			"Call one with "+ToolCall+", giving its name and arguments matching its inputSchema."),
		mcp.WithString("query", mcp.Required(), mcp.Description("what the tool should do")),
		mcp.WithNumber("limit", mcp.Description("how many results, 1 to 100 (default 10)")),
		mcp.WithReadOnlyHintAnnotation(true),
	)
}

func callTool() mcp.Tool {
	return mcp.NewTool(ToolCall,
		mcp.WithDescription("Call a tool found with "+ToolSearch+" by its name. A call without the owner's grant waits "+
			"for the owner's approval (or returns its action id); nothing is sent before."),
		mcp.WithString("name", mcp.Required(), mcp.Description("the tool's name as "+ToolSearch+" gave it")),
		mcp.WithObject("arguments", mcp.Description("the tool's arguments, matching its inputSchema")),
	)
}

func actionStatusTool() mcp.Tool {
	return mcp.NewTool(ToolActionStatus,
		mcp.WithDescription("The state of an action pikod prepared for the owner's approval, and once it ran, its result. "+
			"It cannot approve anything: only the owner does, at a terminal."),
		mcp.WithString("actionId", mcp.Required(), mcp.Description("the action id a call returned")),
		mcp.WithReadOnlyHintAnnotation(true),
	)
}

// handleTool is the handler of the exposed tool named name.
func (b *Bridge) handleTool(name string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return b.call(ctx, req, name, rawArguments(req.Params.Arguments))
	}
}

// handleCallTool serves pikod_call_tool: the same call path as an exposed
// tool.
func (b *Bridge) handleCallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(req, &p); err != nil || p.Name == "" {
		return mcp.NewToolResultError(`pikod_call_tool needs "name" (a tool's name from ` + ToolSearch + `) and "arguments" (an object)`), nil
	}
	b.catMu.Lock()
	_, ok := b.tools[p.Name]
	b.catMu.Unlock()
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("no tool %q is exposed here: find one with %s", clip(p.Name, 200), ToolSearch)), nil
	}
	return b.call(ctx, req, p.Name, p.Arguments)
}

// handleSearch serves pikod_search_tools with pikod's BM25 search, limited
// to the tools exposed here.
func (b *Bridge) handleSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var p struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decodeArgs(req, &p); err != nil || strings.TrimSpace(p.Query) == "" {
		return mcp.NewToolResultError(`pikod_search_tools needs "query": words saying what the tool should do`), nil
	}
	if p.Limit <= 0 {
		p.Limit = contracts.DefaultSearchLimit
	}
	p.Limit = min(p.Limit, contracts.MaxSearchLimit)
	c, err := b.conn(ctx)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	var res contracts.SearchResult
	// Ask for more than the limit: hits of servers not exposed here are
	// dropped below.
	if err := c.Call(ctx, contracts.MethodMCPSearch, contracts.SearchParams{Query: clip(p.Query, contracts.MaxSearchQuery), Limit: contracts.MaxSearchLimit}, &res); err != nil {
		return mcp.NewToolResultError("searching: " + err.Error()), nil
	}
	type hit struct {
		Name        string          `json:"name"`
		Server      string          `json:"server"`
		Tool        string          `json:"tool"`
		Grant       string          `json:"grant"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	}
	out := struct {
		Results []hit `json:"results"`
	}{Results: []hit{}}
	b.catMu.Lock()
	for _, h := range res.Results {
		t, ok := b.tools[h.Name]
		if !ok || len(out.Results) >= p.Limit {
			continue
		}
		out.Results = append(out.Results, hit{Name: t.Name, Server: t.Server, Tool: t.OriginalName, Grant: t.Grant,
			Description: t.Description, InputSchema: t.InputSchema})
	}
	b.catMu.Unlock()
	text, _ := json.MarshalIndent(out, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}, StructuredContent: out}, nil
}

// handleActionStatus serves pikod_action_status.
func (b *Bridge) handleActionStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var p struct {
		ActionID string `json:"actionId"`
	}
	if err := decodeArgs(req, &p); err != nil || p.ActionID == "" {
		return mcp.NewToolResultError(`pikod_action_status needs "actionId": the id a call returned`), nil
	}
	c, err := b.conn(ctx)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	var rv contracts.ActionReview
	if err := c.Call(ctx, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: p.ActionID}, &rv); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if pending(rv.State) {
		st := map[string]any{"actionId": rv.ID, "state": rv.State, "server": rv.Server, "tool": rv.Tool, "expiresAt": rv.ExpiresAt}
		msg := fmt.Sprintf("action %s (%s on %s) is %s: %s", rv.ID, rv.Tool, rv.Server, rv.State, rv.Advice)
		if rv.State == contracts.ActionPrepared {
			msg = fmt.Sprintf("action %s (%s on %s) waits for the owner's decision; the owner approves it at a terminal with 'pikoctl mcp approve %s' (digest ends %s). Nothing has been sent.",
				rv.ID, rv.Tool, rv.Server, rv.ID, suffix(rv.Digest))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(msg)}, StructuredContent: st}, nil
	}
	return b.actionOutcome(ctx, c, rv.ID)
}

// pending reports whether an action in state has no outcome yet.
func pending(state string) bool {
	switch state {
	case contracts.ActionPrepared, contracts.ActionApproved, contracts.ActionDispatched:
		return true
	}
	return false
}

// call is the one call path of the bridge: pikod's extensions.mcp.call,
// then, for a call without a grant, waiting for the owner (or returning
// the action id).
func (b *Bridge) call(ctx context.Context, req mcp.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return mcp.NewToolResultError(err.Error() + " (nothing was sent)"), nil
	}
	prog := b.progress(ctx, req)
	defer prog.close()
	var res contracts.CallResult
	observe := func(method string, params json.RawMessage) {
		if method != contracts.NotifyMCPProgress {
			return
		}
		var pp contracts.ProgressParams
		if json.Unmarshal(params, &pp) == nil {
			msg := pp.Message
			if pp.ServerRequest != "" && msg == "" {
				msg = "the server asks the owner something (request " + pp.ServerRequest + "): the owner answers with 'pikoctl mcp respond " + pp.ServerRequest + "'"
			}
			prog.send(pp.Progress, pp.Total, msg)
		}
	}
	err = c.CallObserved(ctx, verdictGrace, contracts.MethodMCPCall, contracts.CallParams{Name: name, Arguments: args}, &res, observe)
	if err != nil {
		return callError(err), nil
	}
	if res.Status != contracts.CallApprovalRequired {
		return toolResult(res), nil
	}
	if b.opts.Approval == ApprovalReturn {
		return approvalResult(res), nil
	}
	return b.wait(ctx, c, res, prog)
}

// callError is the host's answer for a call pikod did not answer with a
// result.
func callError(err error) *mcp.CallToolResult {
	switch {
	case errors.Is(err, rpc.ErrNoVerdict):
		return mcp.NewToolResultError("the call was cancelled and pikod gave no verdict in time: its outcome is unknown; pikod will not send it again. See 'pikoctl mcp receipts'.")
	case errors.Is(err, rpc.ErrUnreachable):
		return mcp.NewToolResultError("the connection to pikod was lost while the call was in flight: its outcome is unknown and the bridge will not send it again. " +
			"See 'pikoctl mcp actions' and 'pikoctl mcp receipts' for what happened (" + err.Error() + ")")
	case errors.Is(err, context.Canceled):
		return mcp.NewToolResultError("cancelled before pikod answered (nothing was sent)")
	}
	msg := err.Error()
	var we *contracts.Error
	if errors.As(err, &we) {
		if we.Data != nil && we.Data.Hint != "" {
			msg += " (" + we.Data.Hint + ")"
		}
		// Every error answer of extensions.mcp.call comes before anything
		// was sent.
		msg += "; nothing was sent"
	}
	return mcp.NewToolResultError(msg)
}

// approvalResult is the host's answer in return mode.
func approvalResult(res contracts.CallResult) *mcp.CallToolResult {
	msg := fmt.Sprintf("This call needs the owner's approval. pikod prepared action %s (%s on %s, digest ends %s); nothing was sent. "+
		"The owner approves it at a terminal with 'pikoctl mcp approve %s' before %s. Ask for its outcome with %s {\"actionId\": %q}.",
		res.ActionID, res.Tool, res.Server, suffix(res.Digest), res.ActionID, res.ExpiresAt, ToolActionStatus, res.ActionID)
	if res.Held != "" {
		msg += " (" + res.Held + ")"
	}
	out := mcp.NewToolResultError(msg)
	out.StructuredContent = map[string]any{"status": res.Status, "actionId": res.ActionID, "digest": res.Digest, "expiresAt": res.ExpiresAt,
		"server": res.Server, "tool": res.Tool}
	out.Meta = &mcp.Meta{AdditionalFields: map[string]any{"io.pikod/actionId": res.ActionID, "io.pikod/status": res.Status}}
	return out
}

// wait waits for the owner's decision on a prepared action, telling the
// host every progressEvery what it waits for, up to WaitMax. The host
// cancelling leaves the action prepared for the owner.
func (b *Bridge) wait(ctx context.Context, c *rpc.Client, res contracts.CallResult, prog *progress) (*mcp.CallToolResult, error) {
	waitMsg := fmt.Sprintf("waiting for the owner to approve action %s (%s on %s, digest ends %s): the owner runs 'pikoctl mcp approve %s' at a terminal",
		res.ActionID, res.Tool, res.Server, suffix(res.Digest), res.ActionID)
	if res.Held != "" {
		waitMsg += " (" + res.Held + ")"
	}
	deadline := time.NewTimer(b.opts.WaitMax)
	defer deadline.Stop()
	poll := time.NewTicker(b.opts.Poll)
	defer poll.Stop()
	tell := time.NewTicker(progressEvery)
	defer tell.Stop()
	n := 0.0
	prog.send(n, 0, waitMsg)
	state := contracts.ActionPrepared
	for {
		select {
		case <-ctx.Done():
			return mcp.NewToolResultError(fmt.Sprintf("stopped waiting: action %s stays %s for the owner to decide", res.ActionID, state)), nil
		case <-b.stop:
			return mcp.NewToolResultError(fmt.Sprintf("the bridge is stopping: action %s stays %s for the owner to decide", res.ActionID, state)), nil
		case <-deadline.C:
			out := mcp.NewToolResultError(fmt.Sprintf("no decision within %s: action %s is still %s for the owner (approve with 'pikoctl mcp approve %s'); nothing was sent yet. "+
				"Ask for its outcome later with %s {\"actionId\": %q}.", b.opts.WaitMax, res.ActionID, state, res.ActionID, ToolActionStatus, res.ActionID))
			return out, nil
		case <-tell.C:
			n++
			msg := waitMsg
			if state != contracts.ActionPrepared {
				msg = fmt.Sprintf("action %s was approved by the owner and is running", res.ActionID)
			}
			prog.send(n, 0, msg)
		case <-poll.C:
			var rv contracts.ActionReview
			if err := c.Call(ctx, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: res.ActionID}, &rv); err != nil {
				if ctx.Err() != nil {
					continue
				}
				if errors.Is(err, rpc.ErrUnreachable) {
					// pikod restarted: the action is in its ledger still.
					nc, derr := b.conn(ctx)
					if derr != nil {
						continue
					}
					c = nc
					continue
				}
				return mcp.NewToolResultError(fmt.Sprintf("reading action %s: %v", res.ActionID, err)), nil
			}
			if rv.State != state && rv.State != contracts.ActionPrepared && pending(rv.State) {
				n++
				prog.send(n, 0, fmt.Sprintf("action %s was approved by the owner and is running", res.ActionID))
			}
			state = rv.State
			if !pending(state) {
				return b.actionOutcome(ctx, c, res.ActionID)
			}
		}
	}
}

// actionOutcome is the host's answer for an action that has ended.
func (b *Bridge) actionOutcome(ctx context.Context, c *rpc.Client, id string) (*mcp.CallToolResult, error) {
	var res contracts.CallResult
	if err := c.Call(ctx, contracts.MethodMCPActionsResult, contracts.ActionParams{ActionID: id}, &res); err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("reading the outcome of action %s: %v", id, err)), nil
	}
	return toolResult(res), nil
}

// toolResult is pikod's answer as the host's tool result: the bounded
// preview, structuredContent when it fits, and for a result cut short a
// resource_link to the whole original.
func toolResult(res contracts.CallResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError}
	var blocks []json.RawMessage
	if len(res.Content) > 0 {
		_ = json.Unmarshal(res.Content, &blocks)
	}
	for _, raw := range blocks {
		out.Content = append(out.Content, contentOf(raw))
	}
	if len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		out.StructuredContent = json.RawMessage(res.StructuredContent)
	}
	meta := map[string]any{"io.pikod/status": res.Status}
	if res.ReceiptID != "" {
		meta["io.pikod/receiptId"] = res.ReceiptID
	}
	if res.ActionID != "" {
		meta["io.pikod/actionId"] = res.ActionID
	}
	switch res.Status {
	case contracts.CallCompleted:
	case contracts.CallUncertain:
		out.IsError = true
		out.Content = append(out.Content, mcp.NewTextContent(fmt.Sprintf("pikod: the outcome of this call is unknown (%s); pikod will not send it again. Receipt %s.",
			errText(res.Error), res.ReceiptID)))
	case contracts.CallFailed:
		out.IsError = true
		if res.Error != nil || res.NotSent {
			msg := "pikod: the call failed: " + errText(res.Error)
			if res.NotSent {
				msg += "; nothing was sent"
			}
			out.Content = append(out.Content, mcp.NewTextContent(msg))
		}
	default:
		// rejected, expired, stale: the owner's decision, nothing sent.
		out.IsError = true
		what := map[string]string{
			contracts.ActionRejected: "the owner rejected this call",
			contracts.ActionExpired:  "the owner did not decide in time and the action expired",
			contracts.ActionStale:    "the action went stale (the server or tool changed before the owner approved it)",
		}[res.Status]
		if what == "" {
			what = "the action ended " + res.Status
		}
		out.Content = append(out.Content, mcp.NewTextContent(fmt.Sprintf("pikod: %s; nothing was sent (%s).", what, errText(res.Error))))
	}
	if res.Truncated && res.OriginalResultSourceID != "" {
		uri := SourceURIPrefix + res.OriginalResultSourceID
		out.Content = append(out.Content,
			mcp.NewTextContent("pikod: this result was cut short; read it whole with resources/read "+uri),
			mcp.NewResourceLink(uri, "the whole result", "the original result as the server sent it", "application/json"))
		meta["io.pikod/sourceId"] = res.OriginalResultSourceID
	}
	var captures []map[string]any
	for _, c := range res.Captures {
		if c.SourceID == "" {
			out.Content = append(out.Content, mcp.NewTextContent(fmt.Sprintf("pikod: the capture %s was not kept: %s", c.Path, c.Error)))
			continue
		}
		uri := SourceURIPrefix + c.SourceID
		out.Content = append(out.Content,
			mcp.NewTextContent(fmt.Sprintf("pikod: the capture %s (%d bytes, %s, %d characters) is kept as %s; read it a window at a time with resources/read %s?offset=0&length=4000",
				c.Path, c.Size, c.Encoding, c.Chars, uri, uri)),
			mcp.NewResourceLink(uri, filepath.Base(c.Path), "a file the browser wrote, kept by pikod with this call's receipt", "text/plain"))
		captures = append(captures, map[string]any{"path": c.Path, "sourceId": c.SourceID, "size": c.Size, "encoding": c.Encoding, "chars": c.Chars})
	}
	if captures != nil {
		meta["io.pikod/captures"] = captures
	}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	out.Meta = &mcp.Meta{AdditionalFields: meta}
	return out
}

// contentOf turns one content block of pikod's preview into mcp-go's
// type; a block mcp-go cannot parse is shown as its JSON text.
func contentOf(raw json.RawMessage) mcp.Content {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		if c, err := mcp.ParseContent(m); err == nil {
			return c
		}
	}
	return mcp.NewTextContent(string(raw))
}

func errText(e *contracts.Error) string {
	if e == nil {
		return "no detail"
	}
	return e.Message
}

// suffix is the part of a digest the owner types to approve.
func suffix(digest string) string {
	if len(digest) <= 6 {
		return digest
	}
	return digest[len(digest)-6:]
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// rawArguments is a call's arguments as JSON (absent: {}).
func rawArguments(a any) json.RawMessage {
	if a == nil {
		return json.RawMessage("{}")
	}
	if r, ok := a.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(a)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

func decodeArgs(req mcp.CallToolRequest, v any) error {
	return json.Unmarshal(rawArguments(req.Params.Arguments), v)
}

// progress relays one call's progress to the host, when the host gave a
// progress token, without ever blocking the socket's reader.
type progress struct {
	token mcp.ProgressToken
	ch    chan map[string]any
	done  chan struct{}

	// mu guards the fields below: the socket's reader and the handler
	// both send.
	mu     sync.Mutex
	last   float64
	sent   bool
	closed bool
}

func (b *Bridge) progress(ctx context.Context, req mcp.CallToolRequest) *progress {
	p := &progress{done: make(chan struct{})}
	if req.Params.Meta != nil {
		p.token = req.Params.Meta.ProgressToken
	}
	if p.token == nil {
		// Nothing to relay: no goroutine.
		p.closed = true
		close(p.done)
		return p
	}
	p.ch = make(chan map[string]any, 64)
	go func() {
		defer close(p.done)
		for n := range p.ch {
			_ = b.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), n)
		}
	}()
	return p
}

// send queues a progress notification; progress values only increase, as
// MCP requires.
func (p *progress) send(n, total float64, msg string) {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.sent && n <= p.last {
		n = p.last + 1
	}
	p.last, p.sent = n, true
	params := map[string]any{"progressToken": p.token, "progress": n}
	if total > 0 {
		params["total"] = total
	}
	if msg != "" {
		params["message"] = msg
	}
	select {
	case p.ch <- params:
	default:
	}
}

func (p *progress) close() {
	p.mu.Lock()
	if p.ch != nil && !p.closed {
		close(p.ch)
	}
	p.closed = true
	p.mu.Unlock()
	<-p.done
}
