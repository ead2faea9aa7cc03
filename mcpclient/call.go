package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// maxHardTimeout caps how long progress can keep one call alive.
const maxHardTimeout = time.Hour

// Binding is the connection, settings and tool definition an approved
// call must go to.
type Binding struct {
	ConnectionGeneration uint64
	// SettingsDigest is the server's settings' approval digest for the
	// call (contracts.ServerSettings.ApprovalDigest).
	SettingsDigest string
	// ToolDigest, when set, is the definition digest the approval covered:
	// right before the request is written, the connection's current
	// catalog (no re-discovery pending) must still define the tool with
	// it, or nothing is sent and Call fails with reason
	// definition_changed.
	ToolDigest string
}

// testHookBeforeDefinitionCheck, when set (by tests only), runs right
// before a bound call's last definition check.
var testHookBeforeDefinitionCheck func()

// CallRequest is one tools/call.
type CallRequest struct {
	// Server is the server id; Tool is the tool's original name.
	Server, Tool string
	// Arguments are canonical (CanonicalArguments) and sent exactly; nil
	// means {}.
	Arguments []byte
	// Progress receives the server's progress notifications while the call
	// runs. It may be nil. It is called from a goroutine of the call (never
	// the transport's reader), one notification at a time; when it is
	// slower than the server, intermediate notifications are coalesced into
	// the latest. It is never called after Call returns.
	Progress func(p contracts.ProgressParams)
	// HardMax bounds the whole call however much progress the server
	// reports. Default 10 × the server's timeoutMs; at most 1 h.
	HardMax time.Duration
	// Bound, when set, pins the call to the connection and settings an
	// approval was checked against: if the server is not connected on that
	// very connection (generation) with those settings (digest), nothing
	// is sent and Call fails with reason connection_changed; if the tool's
	// definition is not the bound one (Binding.ToolDigest) when the
	// request is about to be written, nothing is sent and Call fails with
	// reason definition_changed. Call never connects for a bound call.
	Bound *Binding
	// Redact, when set, redacts the server's error message for the answer
	// to this call instead of Options.Redact: the daemon's view of the
	// request, which leaves what the caller itself sent as sent, so that
	// an error echoing the caller's arguments is no test of a guess
	// against a stored secret.
	Redact func(string) string
	// Task makes the call task-augmented (the legacy tasks utility): the
	// params carry "task": {} and the answer must be a CreateTaskResult
	// (CallOutcome.Task). The tool's taskSupport must be optional or
	// required, the connection legacy and the server's tasks capability
	// must offer tools/call; otherwise nothing is sent. A tool whose
	// taskSupport is required is refused without Task.
	Task bool
}

// CallOutcome is what the server answered.
type CallOutcome struct {
	// Result is the raw MCP CallToolResult exactly as received.
	Result json.RawMessage
	// IsError is the result's isError.
	IsError bool
	// inputRequired is set on a 2026-07-28 input_required result, which
	// Call answers itself (a returned outcome never has it).
	inputRequired bool
	// OutputSchemaError describes how structuredContent fails the tool's
	// outputSchema ("" when it matches, or the tool has none, or the result
	// is an error). The result is returned all the same: a mismatch is
	// reported, never hidden.
	OutputSchemaError string
	// Task is the created task (a task-augmented call), as the server
	// described it in its CreateTaskResult.
	Task *TaskState
	// Elapsed is how long the call took from the first write to the
	// answer; InputRounds how many input_required rounds it answered.
	Elapsed     time.Duration
	InputRounds int
}

// Call prepares and sends one tools/call (Prepare, then Send) and waits
// for its result. Its Arguments must be canonical already (the bytes sent
// are the bytes hashed); a tool whose taskSupport is required is refused
// without Task. Tests and callers with nothing to decide between the two
// steps use it; the daemon prepares, decides and then sends.
func (s *Supervisor) Call(ctx context.Context, req CallRequest) (*CallOutcome, error) {
	p, err := s.Prepare(ctx, CallSpec{Server: req.Server, Tool: req.Tool, Arguments: req.Arguments, Canonical: true,
		Task: req.Task, Bound: req.Bound})
	if err != nil {
		return nil, err
	}
	if p.task && !req.Task {
		return nil, s.beforeSending(p.server, p.tool.OriginalName, s.checkTaskCall(p.sess, p.c, p.tool, false))
	}
	return p.Send(ctx, SendOptions{Progress: req.Progress, HardMax: req.HardMax, Redact: req.Redact})
}

// maxInputRounds bounds how often one call answers input_required.
const maxInputRounds = 10

type wireAnswer struct {
	raw json.RawMessage
	err error
}

// sendAndWait sends one tools/call request and waits for its answer. The
// call may take timeoutMs; every progress notification extends that to
// timeoutMs from its arrival, never past hardMax from the start. While the
// owner is asked a server request of the call, the clock stops (the
// request's own limit bounds that wait) and starts afresh after it.
// expired says why the wait ended without an answer ("" when answered).
func (s *Supervisor) sendAndWait(ctx context.Context, sess *session, c *conn, track *callTrack, params json.RawMessage, opts reqOpts,
	updates <-chan progressUpdate, fwd *forwarder, timeout, hardMax time.Duration) (wireAnswer, string) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answered := make(chan wireAnswer, 1)
	start := time.Now()
	go func() {
		raw, err := c.raw.requestWith(callCtx, string(mcp.MethodToolsCall), params, opts)
		answered <- wireAnswer{raw, err}
	}()

	limit := start.Add(hardMax)
	timer := time.NewTimer(min(timeout, hardMax))
	defer timer.Stop()
	var (
		asking  bool
		askedAt time.Time
	)
	for {
		select {
		case ans := <-answered:
			return ans, ""
		case u := <-updates:
			if asking {
				fwd.offer(u)
				continue
			}
			next := time.Now().Add(timeout)
			if next.After(limit) {
				next = limit
			}
			timer.Reset(time.Until(next))
			fwd.offer(u)
		case <-track.signal:
			if n := track.note.Swap(nil); n != nil {
				fwd.offer(*n)
			}
			now := track.asking.Load() > 0
			switch {
			case now && !asking:
				asking, askedAt = true, time.Now()
				timer.Stop()
			case !now && asking:
				// The owner's time does not count against the call.
				asking = false
				limit = limit.Add(time.Since(askedAt))
				timer.Reset(min(timeout, time.Until(limit)))
			}
		case <-timer.C:
			if asking {
				continue
			}
			expired := fmt.Sprintf("got no answer or progress within timeoutMs (%d ms)", sess.settings().Timeout())
			if !time.Now().Before(limit) {
				expired = fmt.Sprintf("was still running at its hard limit of %s (progress extends timeoutMs only up to it)", hardMax)
			}
			cancel()
			return <-answered, expired
		}
	}
}

// continueWithInput answers the input requests of an input_required
// result (each one as if the server had sent it, so capabilities and
// bounds apply alike) and returns the params of the call's next round:
// the original params with inputResponses and the requestState echoed
// verbatim. An input request refused, or left unanswered until it
// expired, ends the call: failed, with that reason.
func (s *Supervisor) continueWithInput(ctx context.Context, c *conn, track *callTrack, fwd *forwarder, params, result json.RawMessage) (json.RawMessage, error) {
	var ir struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal(result, &ir); err != nil {
		return nil, contracts.WithReason(fmt.Errorf("the server's input_required result is unreadable (%v): %w", err, contracts.ErrUpstream), contracts.ReasonInvalidResult)
	}
	if len(ir.InputRequests) > 16 {
		return nil, contracts.WithReason(fmt.Errorf("the server asked for %d inputs at once; pikod answers at most 16: %w", len(ir.InputRequests), contracts.ErrUpstream), contracts.ReasonInputRefused)
	}
	type got struct {
		key string
		raw json.RawMessage
		err error
	}
	results := make(chan got, len(ir.InputRequests))
	for key, r := range ir.InputRequests {
		go func() {
			raw, err := c.answer(ctx, r.Method, r.Params, track)
			results <- got{key, raw, err}
		}()
	}
	responses := map[string]json.RawMessage{}
	var failed []string
	for range ir.InputRequests {
		var g got
	wait:
		for {
			select {
			case g = <-results:
				break wait
			case <-track.signal:
				// What the owner is asked shows in the call's progress.
				if n := track.note.Swap(nil); n != nil {
					fwd.offer(*n)
				}
			}
		}
		if g.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", s.clip(g.key, 100), asRequestError(g.err).Message))
			continue
		}
		responses[g.key] = g.raw
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonInputNotGiven,
			"the server asked for input that was not given (%s); the call did not complete", strings.Join(failed, "; ")),
			"make the call again and answer with 'pikoctl mcp respond REQ_ID' while it waits")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return nil, err
	}
	delete(fields, "inputResponses")
	delete(fields, "requestState")
	if len(responses) > 0 {
		b, err := json.Marshal(responses)
		if err != nil {
			return nil, err
		}
		fields["inputResponses"] = b
	}
	if len(ir.RequestState) > 0 && string(ir.RequestState) != "null" {
		fields["requestState"] = ir.RequestState
	}
	return json.Marshal(fields)
}

// beforeSending marks an error that ended a call before the request was
// handed to the transport: nothing was sent. A bare cancellation (the
// caller went away while the server was connecting, say) gets a message
// that says so.
func (s *Supervisor) beforeSending(server, tool string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) && !errors.Is(err, contracts.ErrCanceled):
		err = contracts.Errorf(contracts.ErrCanceled, contracts.ReasonCanceled,
			"the call of %q on %q was canceled before it was sent; nothing was sent", s.clip(tool, 200), server)
	case errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, contracts.ErrDeadlineExceeded):
		err = contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonDeadlineExceeded,
			"the call of %q on %q ran out of time before it was sent; nothing was sent", s.clip(tool, 200), server)
	}
	return contracts.MarkNotSent(err)
}

// Schemas returns the cache Call validates with, so that validating earlier
// (when preparing an approval) reuses the same compiled schemas. Entries
// are keyed by content: a schema served by many servers compiles once.
func (s *Supervisor) Schemas() *SchemaCache { return s.schemas }

// progressTokens numbers progress tokens; they are unique in the process,
// so a notification can never reach another call.
var progressTokens atomic.Uint64

// toolCallParams builds the params of tools/call by hand so the arguments
// bytes are embedded verbatim. Every part is in the form encoding/json
// produces, so the transport's re-encoding leaves it unchanged.
func toolCallParams(tool string, args []byte, token string, task bool) json.RawMessage {
	var b bytes.Buffer
	b.Grow(len(args) + len(tool) + 64)
	b.WriteString(`{"name":`)
	writeString(&b, tool)
	b.WriteString(`,"arguments":`)
	b.Write(args)
	if task {
		// The server keeps the task for its own default time to live.
		b.WriteString(`,"task":{}`)
	}
	b.WriteString(`,"_meta":{"progressToken":`)
	writeString(&b, token)
	b.WriteString(`}}`)
	return b.Bytes()
}

// outcome reads a CallToolResult just enough: resultType (see
// resultTypeOf), isError and structuredContent, checked against the
// tool's outputSchema.
func (s *Supervisor) outcome(tool contracts.CatalogTool, raw json.RawMessage) (*CallOutcome, error) {
	// The members alias raw (kept as the outcome's Result): the content
	// of a large result is not copied to read isError beside it.
	var fields map[string]contracts.JSONSpan
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, contracts.WithReason(fmt.Errorf("the server answered with a result that is not a JSON object; the outcome is unknown: %w",
			contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
	}
	out := &CallOutcome{Result: raw}
	kind, err := resultTypeOf(fields, s.clean)
	if err != nil {
		return nil, err
	}
	if kind == resultInputRequired {
		// Not an outcome: no content, isError or structuredContent to read.
		out.inputRequired = true
		return out, nil
	}
	if v, ok := fields["isError"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &out.IsError); err != nil {
			return nil, contracts.WithReason(fmt.Errorf("the server answered with a non-boolean isError; the outcome is unknown: %w",
				contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
		}
	}
	if len(bytes.TrimSpace(tool.OutputSchema)) == 0 || out.IsError {
		return out, nil
	}
	sc, ok := fields["structuredContent"]
	if !ok || string(sc) == "null" {
		out.OutputSchemaError = "the tool declares an outputSchema but the result has no structuredContent"
		return out, nil
	}
	problem, err := s.schemas.check(tool.OutputSchema, sc)
	switch {
	case err != nil:
		out.OutputSchemaError = "structuredContent was not checked: " + err.Error()
	case problem != "":
		out.OutputSchemaError = "structuredContent does not match the tool's outputSchema: " + problem
	}
	return out, nil
}

// Tool returns one tool of a server, by original name, from its current
// catalog (connecting first, and waiting for a re-discovery in progress),
// found as Prepare finds it.
func (s *Supervisor) Tool(ctx context.Context, server, tool string) (contracts.CatalogTool, error) {
	return s.liveTool(ctx, server, CallSpec{Server: server, Tool: tool})
}

// ToolByModelName finds a tool by its model-facing name
// (mcp_<server>_<tool>, see ModelNames) and returns its server.
func (s *Supervisor) ToolByModelName(ctx context.Context, name string) (string, contracts.CatalogTool, error) {
	id, ok := modelServer(name)
	if !ok {
		return "", contracts.CatalogTool{}, contracts.WithHint(
			contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool, "%q is not a model-facing tool name (mcp_<server>_<tool>)", clip(name, 200)),
			"list tools and their names with 'pikoctl mcp catalog SERVER'")
	}
	t, err := s.liveTool(ctx, id, CallSpec{Name: name})
	if err != nil {
		return "", contracts.CatalogTool{}, err
	}
	return id, t, nil
}

func (s *Supervisor) liveTool(ctx context.Context, server string, spec CallSpec) (contracts.CatalogTool, error) {
	sess, err := s.session(server)
	if err != nil {
		return contracts.CatalogTool{}, err
	}
	c, err := sess.connect(ctx)
	if err != nil {
		return contracts.CatalogTool{}, err
	}
	cat, err := c.freshCatalog(ctx)
	if err != nil {
		return contracts.CatalogTool{}, err
	}
	return s.findTool(server, spec, cat)
}

func (s *Supervisor) unknownTool(server, tool string, names []string, cat *Catalog) error {
	// The caller's own name, as it sent it: redacting it would tell the
	// caller whether it holds a secret (the daemon's answer filter leaves
	// what a caller sent alone).
	msg := fmt.Sprintf("server %q has no tool %q", server, clip(tool, 200))
	if !cat.Complete {
		msg += " in its catalog, which is incomplete (" + s.clean(cat.Problem, 300) + ")"
	}
	hint := "list its tools with 'pikoctl mcp catalog " + server + "'"
	if close := closeNames(tool, names, 5); len(close) > 0 {
		quoted := make([]string, len(close))
		for i, n := range close {
			quoted[i] = strconv.Quote(s.clip(n, 80))
		}
		hint = "did you mean " + strings.Join(quoted, ", ") + "? " + hint
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool, "%s", msg), hint)
}

// closeNames returns up to n names near want: equal ignoring case,
// containing it or contained in it, or a few edits away; nearest first.
func closeNames(want string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	lw := strings.ToLower(want)
	for _, name := range names {
		ln := strings.ToLower(name)
		d := editDistance(lw, ln)
		switch {
		case ln == lw:
			d = 0
		case len(lw) >= 3 && (strings.Contains(ln, lw) || strings.Contains(lw, ln)):
			d = min(d, 1)
		}
		if d <= max(2, len([]rune(want))/3) {
			cands = append(cands, cand{name, d})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cands) && i < n; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance in runes, bounded in work by
// truncating both strings to 64 runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 64)], rb[:min(len(rb), 64)]
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// progressUpdate is one notifications/progress for a call.
type progressUpdate struct {
	progress, total float64
	message         string
	// request is the id of the server request message announces.
	request string
}

// progressRoutes hands notifications/progress from the transport's reader
// to the calls waiting for them. The zero value is ready.
type progressRoutes struct {
	// mu guards routes.
	mu     sync.Mutex
	routes map[string]chan progressUpdate
}

func (r *progressRoutes) add(token string) chan progressUpdate {
	ch := make(chan progressUpdate, 16)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes == nil {
		r.routes = map[string]chan progressUpdate{}
	}
	r.routes[token] = ch
	return ch
}

func (r *progressRoutes) remove(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.routes, token)
}

// route runs on the transport's reader: it never blocks. A call whose
// buffer is full loses the notification; the ones it has extend its
// deadline just as well. clean redacts and bounds the message.
func (r *progressRoutes) route(params mcp.NotificationParams, clean func(string, int) string) {
	token, ok := params.AdditionalFields["progressToken"].(string)
	if !ok {
		return
	}
	r.mu.Lock()
	ch := r.routes[token]
	r.mu.Unlock()
	if ch == nil {
		return
	}
	u := progressUpdate{}
	u.progress, _ = params.AdditionalFields["progress"].(float64)
	u.total, _ = params.AdditionalFields["total"].(float64)
	if m, ok := params.AdditionalFields["message"].(string); ok {
		u.message = clean(m, 500)
	}
	select {
	case ch <- u:
	default:
	}
}

// forwarder calls a CallRequest's Progress off the call's own loop, so a
// slow callback delays neither the deadline nor the result. It keeps only
// the latest update not yet delivered.
type forwarder struct {
	fn           func(contracts.ProgressParams)
	server, tool string
	ch           chan progressUpdate // capacity 1: the latest pending update
	done         chan struct{}
}

func startForwarder(fn func(contracts.ProgressParams), server, tool string) *forwarder {
	f := &forwarder{fn: fn, server: server, tool: tool}
	if f.fn == nil {
		return f
	}
	f.ch = make(chan progressUpdate, 1)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		for u := range f.ch {
			f.fn(contracts.ProgressParams{Server: f.server, Tool: f.tool, Progress: u.progress, Total: u.total, Message: u.message, ServerRequest: u.request})
		}
	}()
	return f
}

// offer queues u, replacing an update the callback has not taken yet. Only
// the call's loop offers, so the second send cannot block.
func (f *forwarder) offer(u progressUpdate) {
	if f.ch == nil {
		return
	}
	select {
	case f.ch <- u:
		return
	default:
	}
	select {
	case <-f.ch:
	default:
	}
	f.ch <- u
}

// stop waits for the callback to finish: it never runs after Call returns.
func (f *forwarder) stop() {
	if f.ch == nil {
		return
	}
	close(f.ch)
	<-f.done
}
