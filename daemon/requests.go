package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// Bounds of the server request queue.
const (
	// maxPendingPerServer bounds the requests of one server waiting for
	// the owner; past it the server is refused at once.
	maxPendingPerServer = 8
	// keepDecided is how many decided (answered, declined, cancelled,
	// expired) requests are still listed.
	keepDecided = 100
	// maxAnswerText bounds a sampling answer or proposal (characters).
	maxAnswerText = 64 << 10
)

// DefaultRequestLimit is how long a server request waits for the owner at
// most (the call it belongs to may end it earlier); Config.RequestLimit
// changes it.
const DefaultRequestLimit = 10 * time.Minute

func (d *daemon) requestLimit() time.Duration {
	if d.cfg.RequestLimit > 0 {
		return d.cfg.RequestLimit
	}
	return DefaultRequestLimit
}

// requestQueue holds the server requests (elicitation, sampling) that wait
// for the owner, and the last decided ones. Answers come only through
// requests.respond (terminal-only); a local tool may attach a proposal.
type requestQueue struct {
	mu      sync.Mutex
	pending map[string]*pendingRequest
	decided []*pendingRequest // oldest first, at most keepDecided
}

type pendingRequest struct {
	info contracts.ServerRequestInfo // shown (redacted, bounded); State under requestQueue.mu
	// params and schema are the server's, exactly (schema: a form
	// elicitation's requestedSchema, for validating the answer).
	params json.RawMessage
	schema json.RawMessage
	// answer receives the result (or refusal) once the owner decided.
	answer chan decision
}

type decision struct {
	result json.RawMessage
	err    error
}

var reqIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func newRequestID() string {
	var b [10]byte
	rand.Read(b[:]) // never fails
	return "req_" + strings.ToLower(reqIDEncoding.EncodeToString(b[:]))
}

// serverRequest is mcpclient.Options.ServerRequest: the request becomes a
// pending request, shown on the watch stream and in the waiting call's
// progress, until the owner answers, the call ends (ctx) or the limit
// passes.
func (d *daemon) serverRequest(ctx context.Context, r mcpclient.ServerRequest) (json.RawMessage, error) {
	q := &d.requests
	now, limit := time.Now().UTC(), d.requestLimit()
	p := &pendingRequest{params: r.Params, answer: make(chan decision, 1)}
	p.info = contracts.ServerRequestInfo{ID: newRequestID(), Server: r.Server, Method: r.Method, State: contracts.RequestPending,
		Tool: d.red.Text(r.Tool), InputRequired: r.InputRequired,
		CreatedAt: now.Format(time.RFC3339Nano), ExpiresAt: now.Add(limit).Format(time.RFC3339Nano)}
	if err := d.describeRequest(p); err != nil {
		return nil, err
	}
	q.mu.Lock()
	n := 0
	for _, o := range q.pending {
		if o.info.Server == r.Server {
			n++
		}
	}
	if n >= maxPendingPerServer {
		q.mu.Unlock()
		d.log.Warn().Str("server", r.Server).Str("method", r.Method).Msg("server request refused: too many waiting")
		return nil, &mcpclient.RequestError{Code: mcp.INTERNAL_ERROR,
			Message: fmt.Sprintf("%s: %d requests of this server already wait for the owner; pikod holds no more", r.Method, maxPendingPerServer)}
	}
	if q.pending == nil {
		q.pending = map[string]*pendingRequest{}
	}
	q.pending[p.info.ID] = p
	// A proposal may change p.info as soon as it is pending: what follows
	// works on this copy.
	info := p.info
	q.mu.Unlock()
	d.log.Info().Str("server", r.Server).Str("method", r.Method).Str("request", info.ID).Str("tool", r.Tool).Msg("server request waits for the owner")
	d.requestEvent(info)
	if r.Asking != nil {
		r.Asking(info.ID, fmt.Sprintf("the server asks: %s — answer with `pikoctl mcp respond %s`", clipText(info.Message, 200), info.ID))
	}

	timer := time.NewTimer(limit)
	defer timer.Stop()
	var why string
	select {
	case dec := <-p.answer:
		return dec.result, dec.err
	case <-ctx.Done():
		why = "the call it belongs to ended (or its connection did) before the owner answered"
	case <-timer.C:
		why = fmt.Sprintf("the owner did not answer within %s", limit)
	}
	if !q.finish(p, contracts.RequestExpired, why) {
		// Decided in the meantime: the decision stands.
		dec := <-p.answer
		return dec.result, dec.err
	}
	q.mu.Lock()
	info = p.info
	q.mu.Unlock()
	d.log.Info().Str("server", r.Server).Str("request", info.ID).Str("reason", why).Msg("server request expired")
	d.requestEvent(info)
	return nil, &mcpclient.RequestError{Code: mcp.REQUEST_INTERRUPTED, Message: r.Method + ": expired: " + why}
}

// finish moves a pending request to state (under the queue lock) and
// reports whether it was still pending.
func (q *requestQueue) finish(p *pendingRequest, state, reason string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p.info.State != contracts.RequestPending {
		return false
	}
	p.info.State, p.info.Reason = state, reason
	delete(q.pending, p.info.ID)
	q.decided = append(q.decided, p)
	if len(q.decided) > keepDecided {
		q.decided = slices.Delete(q.decided, 0, len(q.decided)-keepDecided)
	}
	return true
}

func (d *daemon) requestEvent(info contracts.ServerRequestInfo) {
	data, _ := json.Marshal(contracts.RequestEventData{ID: info.ID, Method: info.Method, State: info.State, Tool: info.Tool,
		Message: clipText(info.Message, 500), Reason: info.Reason})
	d.events.publish(contracts.EventParams{Kind: contracts.EventRequest, Server: info.Server, Data: d.red.JSON(data)})
}

// describeRequest fills what the owner is shown of a request (mcpclient
// checked the params already).
func (d *daemon) describeRequest(p *pendingRequest) error {
	show := func(s string, n int) string { return contracts.SafeText(d.red.Text(s), contracts.Lines, n) }
	switch p.info.Method {
	case string(mcp.MethodElicitationCreate):
		var e struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			URL             string          `json:"url"`
		}
		if err := json.Unmarshal(p.params, &e); err != nil {
			return &mcpclient.RequestError{Code: mcp.INVALID_PARAMS, Message: "elicitation/create: unreadable params"}
		}
		p.info.Kind, p.info.Mode, p.info.Message = contracts.RequestKindElicitation, contracts.ElicitForm, show(e.Message, 4000)
		if e.Mode == contracts.ElicitURL {
			u, err := mcpclient.ElicitationURL(e.URL)
			if err != nil {
				return &mcpclient.RequestError{Code: mcp.INVALID_PARAMS, Message: "elicitation/create: " + err.Error()}
			}
			p.info.Mode, p.info.URL, p.info.Domain = contracts.ElicitURL, show(u.String(), 2000), show(u.Hostname(), 300)
			describeDomain(&p.info, u.Hostname())
		} else {
			p.schema = e.RequestedSchema
			p.info.Schema = d.red.JSON(e.RequestedSchema)
		}
	case string(mcp.MethodSamplingCreateMessage):
		var s struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"maxTokens"`
		}
		if err := json.Unmarshal(p.params, &s); err != nil || len(s.Messages) == 0 {
			return &mcpclient.RequestError{Code: mcp.INVALID_PARAMS, Message: "sampling/createMessage: unreadable params"}
		}
		last, _ := mcpclient.SamplingText(s.Messages[len(s.Messages)-1].Content)
		p.info.Kind, p.info.Message, p.info.MaxTokens = contracts.RequestKindSampling, show(last, 4000), s.MaxTokens
	}
	return nil
}

// describeDomain adds the other spelling of a url elicitation's host to
// what the owner sees: the punycode form of an internationalised domain
// (or the Unicode form of one sent as punycode), and the scripts it mixes.
// Shown in Unicode alone, аccounts.google.com (a Cyrillic а) reads as
// Google's.
func describeDomain(info *contracts.ServerRequestInfo, host string) {
	uni := host
	if dec, ok := contracts.HostUnicode(host); ok {
		uni = dec
		info.DomainUnicode = contracts.SafeText(dec, contracts.Exact, 300)
	}
	if ascii, ok, err := contracts.HostASCII(host); err == nil && ok {
		info.DomainASCII = contracts.SafeText(ascii, contracts.Exact, 300)
	}
	info.DomainScripts = contracts.MixedScripts(uni)
}

// lookup returns a copy of a request's info, and the request.
func (q *requestQueue) lookup(id string) (*pendingRequest, contracts.ServerRequestInfo, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p, ok := q.pending[id]; ok {
		return p, p.info, true
	}
	for _, p := range q.decided {
		if p.info.ID == id {
			return p, p.info, true
		}
	}
	return nil, contracts.ServerRequestInfo{}, false
}

func unknownRequest(id string) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownRequest, "no server request %q", clipText(id, 60)),
		"'pikoctl mcp requests' lists the requests waiting for you")
}

// requestsList serves extensions.mcp.requests.
func (d *daemon) requestsList(_ context.Context, req *rpc.Request, p *contracts.RequestsParams) (any, error) {
	q := &d.requests
	q.mu.Lock()
	all := make([]contracts.ServerRequestInfo, 0, len(q.pending)+len(q.decided))
	for _, r := range q.pending {
		all = append(all, r.info)
	}
	for _, r := range q.decided {
		all = append(all, r.info)
	}
	q.mu.Unlock()
	out := contracts.RequestsResult{Requests: []contracts.ServerRequestInfo{}}
	for _, r := range all {
		if (p.Server != "" && r.Server != p.Server) || (p.State != "" && r.State != p.State) {
			continue
		}
		r.Schema = nil
		out.Requests = append(out.Requests, r)
	}
	slices.SortStableFunc(out.Requests, func(a, b contracts.ServerRequestInfo) int { return strings.Compare(b.CreatedAt, a.CreatedAt) })
	return out, nil
}

// find is lookup for a handler: a request named by id (its row checked
// that one is named), or the error that says it names no request.
func (q *requestQueue) find(id string) (*pendingRequest, contracts.ServerRequestInfo, error) {
	r, info, ok := q.lookup(id)
	if !ok {
		return nil, info, unknownRequest(id)
	}
	return r, info, nil
}

// requestsRead serves extensions.mcp.requests.read: one request exactly
// (its params as the server sent them, redacted).
func (d *daemon) requestsRead(_ context.Context, req *rpc.Request, p *contracts.RequestReadParams) (any, error) {
	r, info, err := d.requests.find(p.RequestID)
	if err != nil {
		return nil, err
	}
	info.Params = d.red.JSON(r.params)
	return info, nil
}

// requestsPropose serves extensions.mcp.requests.propose: a local tool
// attaches a proposed answer to a pending sampling request. Nothing is
// sent: the owner decides at the terminal.
func (d *daemon) requestsPropose(_ context.Context, req *rpc.Request, p *contracts.ProposeParams) (any, error) {
	if p.Text == "" || utf8.RuneCountInString(p.Text) > maxAnswerText || !utf8.ValidString(p.Text) {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidProposal, `"text" must be 1 to %d characters of UTF-8`, maxAnswerText)
	}
	q := &d.requests
	q.mu.Lock()
	r, ok := q.pending[p.RequestID]
	if !ok {
		q.mu.Unlock()
		if _, info, found := q.lookup(p.RequestID); found {
			return nil, notPending(info)
		}
		return nil, unknownRequest(p.RequestID)
	}
	if r.info.Kind != contracts.RequestKindSampling {
		q.mu.Unlock()
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNotSampling, "request %s is an elicitation: only the owner answers it; proposals are for sampling requests", r.info.ID)
	}
	r.info.Proposal, r.info.ProposalDigest = p.Text, contracts.ProposalDigest(p.Text)
	info := r.info
	q.mu.Unlock()
	d.log.Info().Str("request", info.ID).Str("server", info.Server).Msg("sampling answer proposed")
	d.requestEvent(info)
	return contracts.RespondResult{RequestID: info.ID, State: info.State}, nil
}

func notPending(info contracts.ServerRequestInfo) error {
	msg := fmt.Sprintf("request %s is %s and cannot be answered again", info.ID, info.State)
	if info.Reason != "" {
		msg += " (" + info.Reason + ")"
	}
	return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonRequestDecided, "%s", msg)
}

// requestsRespond serves extensions.mcp.requests.respond. It is
// terminal-only: rpc.Server checked the caller (and the passphrase)
// before this runs. The answer is checked against the request before
// anything is sent; a request decided before cannot be answered again.
func (d *daemon) requestsRespond(_ context.Context, req *rpc.Request, p *contracts.RespondParams) (any, error) {
	r, info, err := d.requests.find(p.RequestID)
	if err != nil {
		return nil, err
	}
	if info.State != contracts.RequestPending {
		return nil, notPending(info)
	}
	var (
		dec   decision
		state string
	)
	switch p.Action {
	case contracts.RespondDecline, contracts.RespondCancel:
		state = contracts.RequestDeclined
		if p.Action == contracts.RespondCancel {
			state = contracts.RequestCancelled
		}
		if info.Kind == contracts.RequestKindSampling {
			// Sampling has no decline result: the spec's refusal is an error.
			dec.err = &mcpclient.RequestError{Code: -1, Message: "the owner " + state + " the sampling request"}
		} else {
			dec.result, _ = json.Marshal(map[string]string{"action": p.Action})
		}
	case contracts.RespondAccept:
		state = contracts.RequestAnswered
		if err := d.refusePassphrase(info, *p); err != nil {
			return nil, err
		}
		var err error
		if dec.result, err = d.acceptAnswer(r, info, *p); err != nil {
			return nil, err
		}
	default:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidAction, `"action" must be "accept", "decline" or "cancel"`)
	}
	if !d.requests.finish(r, state, "") {
		_, now, _ := d.requests.lookup(p.RequestID)
		return nil, notPending(now)
	}
	r.answer <- dec
	d.log.Info().Str("request", info.ID).Str("server", info.Server).Str("state", state).Msg("server request decided by the owner")
	_, now, _ := d.requests.lookup(p.RequestID)
	d.requestEvent(now)
	return contracts.RespondResult{RequestID: info.ID, State: state}, nil
}

// refusePassphrase refuses an accepted answer in which a value the owner
// gave (a string anywhere in content, or the sampling text) is the owner
// approval passphrase: it must never reach a server, however it was asked
// for. respond is terminal-only, and with a passphrase set the owner gate
// has just checked p.Passphrase against its stored argon2id hash (or
// refused the call), so a value equal to p.Passphrase is the passphrase;
// comparing with it costs no further 64 MiB derivation per field. Values
// are compared in constant time; none is logged or repeated.
func (d *daemon) refusePassphrase(info contracts.ServerRequestInfo, p contracts.RespondParams) error {
	if p.Passphrase == "" || !d.gate.state().PassphraseSet {
		return nil
	}
	pass := []byte(p.Passphrase)
	is := func(v string) bool {
		return subtle.ConstantTimeCompare([]byte(v), pass) == 1 ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(v)), pass) == 1
	}
	where := ""
	if is(p.Text) {
		where = "the answer's text"
	}
	if where == "" && len(bytes.TrimSpace(p.Content)) > 0 {
		var content map[string]any
		if json.Unmarshal(p.Content, &content) == nil {
			for name, v := range content {
				if anyString(v, is) {
					where = fmt.Sprintf("the answer to the field %q", contracts.SafeText(name, contracts.Exact, 80))
					break
				}
			}
		}
	}
	if where == "" {
		return nil
	}
	d.log.Warn().Str("request", info.ID).Str("server", info.Server).Msg("answer refused: it holds the owner approval passphrase")
	return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAnswerIsPassphrase,
		"%s is your approval passphrase: pikod never sends it to a server; nothing was sent", where),
		"the server asked for it, or it was typed into the wrong prompt: pikod asks its passphrase only after the server's fields, under \"pikod asks\"; answer again with 'pikoctl mcp respond "+info.ID+"' or decline it")
}

// anyString reports whether match holds for a string in v (a decoded JSON
// value), at any depth.
func anyString(v any, match func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return match(v)
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { return anyString(e, match) })
	case map[string]any:
		for _, e := range v {
			if anyString(e, match) {
				return true
			}
		}
	}
	return false
}

// acceptAnswer builds the result of an accepted request: a form
// elicitation's content with the schema's defaults for the fields left
// out, checked against the requested schema; a url elicitation's bare
// accept; a sampling's text (typed, or the proposal as it is).
func (d *daemon) acceptAnswer(r *pendingRequest, info contracts.ServerRequestInfo, p contracts.RespondParams) (json.RawMessage, error) {
	switch {
	case info.Kind == contracts.RequestKindElicitation && info.Mode == contracts.ElicitURL:
		return json.RawMessage(`{"action":"accept"}`), nil
	case info.Kind == contracts.RequestKindElicitation:
		content := map[string]json.RawMessage{}
		if len(bytes.TrimSpace(p.Content)) > 0 {
			if err := json.Unmarshal(p.Content, &content); err != nil || content == nil {
				return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidContent, `"content" must be a JSON object of the requested fields`)
			}
		}
		var schema struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(r.schema, &schema)
		for name, prop := range schema.Properties {
			if _, ok := content[name]; !ok && len(prop.Default) > 0 {
				content[name] = prop.Default
			}
		}
		b, err := json.Marshal(content)
		if err != nil {
			return nil, err
		}
		problem, err := d.sup.Schemas().Check(r.schema, b)
		if err != nil {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonSchemaInvalid,
				"the requested schema cannot be checked (%v); nothing was sent", err), "decline or cancel the request")
		}
		if problem != "" {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAnswerInvalid,
				"the answer does not match the requested schema: %s; nothing was sent", problem),
				"answer again with 'pikoctl mcp respond "+info.ID+"'")
		}
		return json.Marshal(map[string]any{"action": "accept", "content": json.RawMessage(b)})
	default: // sampling
		text := p.Text
		if p.UseProposal {
			if text != "" {
				return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidAnswer, `give "text" or "useProposal", not both`)
			}
			if info.Proposal == "" {
				return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNoProposal, "request %s has no proposed answer", info.ID)
			}
			// The owner sends the proposal they read, or nothing: a local
			// tool may replace it at any time (requests.propose). info is
			// the copy checked here, so the text sent is the one quoted.
			if p.ProposalDigest == "" {
				return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonProposalDigestRequired,
					`"useProposal" needs "proposalDigest": the proposalDigest of the proposal you were shown`)
			}
			if p.ProposalDigest != info.ProposalDigest {
				d.log.Warn().Str("request", info.ID).Str("server", info.Server).Msg("answer refused: the proposal changed after the owner read it")
				return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonProposalChanged,
					"the proposed answer of request %s changed after you read it: nothing was sent", info.ID),
					"read it again and answer with 'pikoctl mcp respond "+info.ID+"'")
			}
			text = info.Proposal
		}
		if text == "" || utf8.RuneCountInString(text) > maxAnswerText || !utf8.ValidString(text) {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidAnswer, "a sampling answer is 1 to %d characters of UTF-8 text", maxAnswerText)
		}
		return json.Marshal(map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": text},
			"model": "pikod-owner", "stopReason": "endTurn"})
	}
}
