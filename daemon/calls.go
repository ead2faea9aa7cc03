package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon/present"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// call serves extensions.mcp.call: the supervisor prepares the call once
// (the tool looked up, the arguments canonicalised and validated, the
// selection and task mode checked, the fingerprints taken), then its
// grant decides: executed at once, or prepared as an action for the
// owner.
//
// Every error answer of a call comes before anything was sent (an
// executed call always answers with a CallResult): its row marks them so
// (unsent).
func (d *daemon) call(ctx context.Context, req *rpc.Request, p *contracts.CallParams) (any, error) {
	pc, err := d.sup.Prepare(ctx, mcpclient.CallSpec{Server: p.Server, Tool: p.Tool, Name: p.Name, Arguments: p.Arguments,
		Task: p.Task, Check: d.checkRotated})
	if err != nil {
		return nil, err
	}
	server, tool := pc.Server(), pc.Tool()
	// A paused server's granted tools wait for the owner like any other.
	grant, held := tool.Grant, ""
	if pause, ok := d.pauseOf(server); ok {
		held = heldReason(server, pause)
		grant = contracts.GrantApproval
	}
	// Who asked: recorded with the action and the receipt the call leaves.
	caller := req.Caller()
	if pc.Task() {
		return d.prepareTask(pc, caller)
	}
	switch grant {
	case contracts.GrantRead:
		return d.execute(ctx, req, execution{kind: contracts.ReceiptRead, server: server, tool: tool.OriginalName, args: pc.Arguments(),
			call: pc, caller: caller})
	case contracts.GrantAutonomous:
		a, err := d.ledger.BeginDirect(contracts.ReceiptAutonomous, server, tool.OriginalName, pc.Arguments(), d.fingerprints(pc), caller)
		if err != nil {
			return nil, d.storageFull(err, "the call was refused before anything was sent")
		}
		return d.execute(ctx, req, execution{kind: contracts.ReceiptAutonomous, server: server, tool: tool.OriginalName, args: pc.Arguments(),
			actionID: a.ID, call: pc, caller: a.Caller})
	}
	// Bound to the very definition the arguments were validated against.
	// The description is the server's text, kept in pikod.db for review.
	a, err := d.ledger.Prepare(server, tool.OriginalName, pc.Arguments(), d.red.Text(tool.Description), d.fingerprints(pc), caller)
	if err != nil {
		return nil, d.storageFull(err, "no action was prepared and nothing was sent")
	}
	// The caller's declared names are untrusted text: only its pid is logged.
	d.log.Info().Str("action", a.ID).Str("server", server).Str("tool", tool.OriginalName).Bool("held", held != "").
		Int("caller_pid", caller.PID).Msg("action prepared")
	return contracts.CallResult{
		Status: contracts.CallApprovalRequired, Server: server, Tool: tool.OriginalName,
		ActionID: a.ID, Digest: a.Digest, ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339),
		Held: held,
	}, nil
}

// fingerprints is what an approval of a prepared call is bound to: what
// the supervisor took under the session's lock, and the server's
// credential generation.
func (d *daemon) fingerprints(pc *mcpclient.PreparedCall) contracts.Fingerprints {
	fp := pc.Fingerprints()
	fp.CredentialGeneration = d.creds.generation(pc.Server())
	return fp
}

func (d *daemon) serverSettings(id string) (contracts.ServerSettings, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.settings.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return contracts.ServerSettings{}, false
}

// execution is one call about to be sent.
type execution struct {
	kind     string // receipt kind
	server   string
	tool     string
	args     []byte
	actionID string // ledger action of approved and autonomous calls
	// call is the call as the supervisor prepared it; refused, when call
	// is nil, is why an approved action's call could not be prepared (it
	// ends like a call that failed before anything was sent).
	call    *mcpclient.PreparedCall
	refused error
	// bound says the call is an approved action's, pinned to the
	// connection, settings and definition it was approved for.
	bound bool
	// caller is who asked: the requester of a direct call, the one who
	// asked for an approved call's action (zero when unknown).
	caller contracts.Caller
}

// execute sends the call, retains the original result, and answers with a
// bounded preview and a receipt. It never retries.
func (d *daemon) execute(ctx context.Context, req *rpc.Request, ex execution) (contracts.CallResult, error) {
	res := contracts.CallResult{Server: ex.server, Tool: ex.tool, ReceiptKind: ex.kind}
	// The answer carries the server's output: it is redacted as one
	// (vault.View); what is kept is redacted of every value.
	view, kept := d.answerView(req, ex.server), d.keptView(req)
	progress := func(pp contracts.ProgressParams) {
		pp.RequestID = req.ID
		_ = req.Notify(contracts.NotifyMCPProgress, pp)
	}
	out, err := (*mcpclient.CallOutcome)(nil), ex.refused
	if ex.call != nil {
		out, err = ex.call.Send(ctx, mcpclient.SendOptions{Progress: progress, Redact: view.Text})
	}
	if err != nil && ex.bound && ex.actionID != "" && contracts.ToError(err).Reason() == contracts.ReasonDefinitionChanged {
		return d.staleAtDispatch(ex, err)
	}
	state, reason := contracts.ActionCompleted, ""
	var staged *approvals.StagedSource
	var text []byte
	switch {
	case err != nil:
		state, reason = d.failedEnd(err, &res, view)
	default:
		// Redacted before it is retained or previewed: every cut comes
		// after. The retained result is the answer's whole form, redacted
		// as the answer is, so reading it back tells nothing more.
		text = view.JSON(out.Result)
		var meta approvals.SourceMeta
		var perr error
		if ex.kind == contracts.ReceiptRead {
			// A read's record may trail by milliseconds; effects never do.
			meta, perr = d.sources.PutDeferred(ex.server, ex.tool, text)
		} else if staged, perr = d.sources.Stage(ex.server, ex.tool, text); perr == nil {
			// Committed with the receipt and the action's end, below.
			meta = staged.Meta()
		}
		if perr != nil {
			d.log.Error().Err(perr).Str("server", ex.server).Msg("retaining a call result")
			res.Status, state = contracts.CallUncertain, contracts.ActionUncertain
			res.Error = contracts.ToError(d.storageFull(fmt.Errorf("the call was answered but its result could not be retained: %w", perr),
				"the result was not retained: the call was sent and answered, and is recorded as uncertain"))
			reason = kept.Text(res.Error.Message)
			break
		}
		res.OriginalResultSourceID = meta.ID
		content, structured, isError, truncated, perr := present.Preview(text, present.PreviewLimits{})
		if perr != nil {
			res.Status, state = contracts.CallFailed, contracts.ActionFailed
			res.Error = contracts.ToError(fmt.Errorf("the server's result is not a tool result (%v): read it with source.read: %w", perr, contracts.ErrUpstream))
			reason = kept.Text(res.Error.Message)
			break
		}
		res.Content, res.StructuredContent, res.IsError, res.Truncated = content, structured, isError, truncated
		res.OutputSchemaError = out.OutputSchemaError
		res.Status = contracts.CallCompleted
		if isError {
			res.Status, state = contracts.CallFailed, contracts.ActionFailed
			reason = "the tool reported an error (isError)"
		}
	}
	// Receipts are kept for good and listed to anyone on the socket:
	// every string a server could have influenced is redacted here.
	rec := approvals.Receipt{
		Kind: ex.kind, Server: ex.server, Tool: kept.Text(ex.tool), ArgumentsDigest: contracts.SHA256Hex(ex.args),
		ActionID: ex.actionID, Status: res.Status, SourceID: res.OriginalResultSourceID, NotSent: res.NotSent,
		Caller: ex.caller,
	}
	if res.Error != nil {
		rec.Error = kept.Text(maskSent(res.Error.Message, ex.args))
	}
	reason = maskSent(reason, ex.args)
	if ex.kind == contracts.ReceiptRead {
		rec = d.ledger.AddReceiptAsync(rec)
	} else {
		rec = d.settle(&res, ex, rec, staged, state, reason)
	}
	res.ReceiptID = rec.ID
	if res.Status == contracts.CallCompleted && rec.ID != "" {
		res.Captures = d.captures(ex.server, rec.ID, text)
	}
	// The call's one log line. Calls with effects are logged at info,
	// reads at debug (this line is on every call's path), any that ended
	// without a result at info.
	ev := d.log.Info()
	if ex.kind == contracts.ReceiptRead && err == nil {
		ev = d.log.Debug()
	}
	ev = ev.Str("server", ex.server).Str("tool", ex.tool).Str("kind", ex.kind).Str("status", res.Status).Bool("not_sent", res.NotSent).
		Str("receipt", rec.ID).Str("action", ex.actionID)
	if out != nil {
		ev = ev.Dur("elapsed", out.Elapsed).Int("input_rounds", out.InputRounds).Int("result_bytes", len(out.Result)).
			Bool("output_schema_mismatch", out.OutputSchemaError != "")
	}
	if res.Error != nil {
		ev = ev.Str("error", kept.Text(maskSent(res.Error.Message, ex.args)))
	}
	ev.Msg("call")
	return res, nil
}

// settle records the end of a call with effects: its retained result, its
// receipt and its action's end, in one durable transaction shared with
// concurrent calls (approvals.Ledger.Settle), before the caller is
// answered. When that fails nothing of it is stored: the answer says the
// outcome is unknown, and the receipt and the action's end are written
// again without the result.
func (d *daemon) settle(res *contracts.CallResult, ex execution, rec approvals.Receipt, staged *approvals.StagedSource, state, reason string) approvals.Receipt {
	settle := approvals.Settlement{Receipt: rec, Source: staged, ActionID: ex.actionID, State: state, Reason: reason, NotSent: res.NotSent}
	st, err := d.ledger.Settle(settle)
	if err != nil && staged != nil {
		d.log.Error().Err(err).Str("server", ex.server).Msg("retaining a call result")
		res.Status, res.OriginalResultSourceID = contracts.CallUncertain, ""
		res.Error = contracts.ToError(d.storageFull(fmt.Errorf("the call was answered but its result could not be retained: %w", err),
			"the result was not retained: the call was sent and answered, and is recorded as uncertain"))
		settle.Source, settle.State, settle.Reason = nil, contracts.ActionUncertain, res.Error.Message
		settle.Receipt.Status, settle.Receipt.SourceID, settle.Receipt.Error = res.Status, "", d.red.Text(res.Error.Message)
		st, err = d.ledger.Settle(settle)
	}
	if err != nil && isDiskFull(err) {
		// Not even the outcome fits: held in memory and in the reserve
		// file, recorded once the disk has room (or at the next start).
		// What it holds is what was to be recorded (a retained result
		// is never held: it was dropped above), so the action ends as
		// it would have; the caller learns only that it is not recorded.
		settle.Source = nil
		r, saved, herr := d.ledger.Hold(settle)
		if herr == nil {
			where := "in memory and in pikod's reserve file"
			if !saved {
				where = "in memory only (the reserve file could not take it: if pikod stops first, the action is settled as uncertain at start)"
			}
			res.Status, res.OriginalResultSourceID = contracts.CallUncertain, ""
			res.Content, res.StructuredContent, res.Truncated = nil, nil, false
			res.Error = contracts.ToError(d.storageFull(err,
				fmt.Sprintf("the call was sent and answered, and its outcome is held %s until it can be recorded; see 'pikoctl mcp action %s' once space is freed", where, ex.actionID)))
			return r
		}
		err = errors.Join(err, herr)
	}
	if err != nil {
		d.log.Error().Err(err).Str("server", ex.server).Str("tool", ex.tool).Str("kind", ex.kind).
			Str("action", ex.actionID).Str("status", res.Status).Msg("writing a receipt failed; the call has no receipt")
		return approvals.Receipt{}
	}
	if st.FinishErr != nil {
		d.log.Error().Err(st.FinishErr).Str("action", ex.actionID).Msg("recording the end of a call")
	}
	return st.Receipt
}

// unsent marks an error answer of a call-shaped method (call, approve),
// all of which come before anything was sent, and gives a bare
// cancellation (the caller went away, say with Ctrl-C, while the server
// was still connecting) a message that says nothing was sent.
func unsent(err error, what string) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled) && !errors.Is(err, contracts.ErrCanceled):
		err = contracts.Errorf(contracts.ErrCanceled, contracts.ReasonCanceled, "%s was canceled before it was sent; nothing was sent", what)
	case errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, contracts.ErrDeadlineExceeded):
		err = contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonDeadlineExceeded, "%s ran out of time before it was sent; nothing was sent", what)
	}
	return contracts.MarkNotSent(err)
}

// redactError is err for a result, its messages redacted within view
// (nil: of every value).
func (d *daemon) redactError(err error, view *vault.View) *contracts.Error {
	text := d.red.Text
	if view != nil {
		text = view.Text
	}
	e := *contracts.ToError(err)
	e.Message = text(e.Message)
	if e.Data != nil {
		data := *e.Data
		if data.Upstream != nil {
			u := *data.Upstream
			u.Message = text(u.Message)
			data.Upstream = &u
		}
		e.Data = &data
	}
	return &e
}

// actionsList serves extensions.mcp.actions.list. Prepared actions whose
// fingerprints moved are recorded stale first.
func (d *daemon) actionsList(ctx context.Context, req *rpc.Request, p *contracts.ActionsListParams) (any, error) {
	if p.Limit <= 0 || p.Limit > 1000 {
		p.Limit = 100
	}
	list, err := d.ledger.List(p.State, p.Limit)
	if err != nil {
		return nil, err
	}
	if p.State == contracts.ActionStale {
		// Prepared actions may turn out stale below: list them too,
		// newest first with the others.
		prepared, err := d.ledger.List(contracts.ActionPrepared, p.Limit)
		if err != nil {
			return nil, err
		}
		list = append(list, prepared...)
		slices.SortStableFunc(list, func(a, b approvals.Action) int { return b.CreatedAt.Compare(a.CreatedAt) })
	}
	out := contracts.ActionsListResult{Actions: make([]contracts.ActionSummary, 0, len(list))}
	now := map[[2]string]contracts.Fingerprints{}
	for _, a := range list {
		if a.State == contracts.ActionPrepared {
			// Shown as approvable only if it still is.
			key := [2]string{a.Server, a.Tool}
			cur, ok := now[key]
			if !ok {
				cur = d.currentFingerprints(ctx, a.Server, a.Tool, false)
				now[key] = cur
			}
			a = d.revalidate(a, cur)
		}
		if p.State != "" && a.State != p.State {
			continue
		}
		if len(out.Actions) < p.Limit {
			out.Actions = append(out.Actions, present.Summary(a))
		}
	}
	return out, nil
}

// currentFingerprints returns what an action on server's tool would be
// bound to now, without ever connecting: zero settings for a server no
// longer configured, generation 0 and no tool digest when it is not
// connected, no tool digest when its catalog lacks the tool. With wait, a
// catalog re-discovery in progress is waited for.
func (d *daemon) currentFingerprints(ctx context.Context, server, tool string, wait bool) contracts.Fingerprints {
	cfg, ok := d.serverSettings(server)
	if !ok {
		return contracts.Fingerprints{}
	}
	fp := contracts.Fingerprints{Settings: cfg.ApprovalDigest(tool), CredentialGeneration: d.creds.generation(server)}
	gen, t, found, err := d.sup.LiveTool(ctx, server, tool, wait)
	if err != nil {
		return fp
	}
	fp.ConnectionGeneration = gen
	if found {
		fp.Tool = t.Digest
	}
	return fp
}

// revalidate records a prepared action as stale when a fingerprint moved
// (list and review call it before showing the action as approvable). A
// locked vault hides the credential generation: that alone never makes an
// action stale here (approving it is refused while the vault is locked).
func (d *daemon) revalidate(a approvals.Action, cur contracts.Fingerprints) approvals.Action {
	if d.creds.v.Locked() {
		cur.CredentialGeneration = a.Fingerprints.CredentialGeneration
	}
	if len(approvals.Moved(a.Fingerprints, cur)) == 0 {
		return a
	}
	b, err := d.ledger.Revalidate(a.ID, cur)
	if err != nil {
		d.log.Error().Err(err).Str("action", a.ID).Msg("recording a stale action")
		return a
	}
	return b
}

// actionsReview serves extensions.mcp.actions.review: exactly what
// approving would send, safe to show. A prepared action whose
// fingerprints moved is recorded stale first, with the reason.
func (d *daemon) actionsReview(ctx context.Context, _ *rpc.Request, p *contracts.ActionParams) (any, error) {
	a, err := d.requestedAction(ctx, p.ActionID)
	if err != nil {
		return nil, err
	}
	return present.Review(a), nil
}

// requestedAction is the action a request's params name, recorded stale
// first when it is prepared and a fingerprint moved.
func (d *daemon) requestedAction(ctx context.Context, id string) (approvals.Action, error) {
	a, err := d.ledger.Get(id)
	if err != nil {
		return approvals.Action{}, err
	}
	if a.State == contracts.ActionPrepared {
		a = d.revalidate(a, d.currentFingerprints(ctx, a.Server, a.Tool, false))
	}
	return a, nil
}

// actionsApprove serves extensions.mcp.actions.approve. Approving is
// terminal-only (checked by rpc.Server before this runs); rejecting is
// exempt.
//
// As for call, an error answer means nothing was sent: its row marks
// them so (unsent).
func (d *daemon) actionsApprove(ctx context.Context, req *rpc.Request, p *contracts.ApproveParams) (any, error) {
	switch p.Decision {
	case contracts.DecisionReject:
		a, err := d.ledger.Reject(p.ActionID, p.Digest)
		if err != nil {
			return nil, err
		}
		d.log.Info().Str("action", a.ID).Msg("action rejected")
		return contracts.CallResult{Status: contracts.ActionRejected, Server: a.Server, Tool: a.Tool, ActionID: a.ID, Digest: a.Digest}, nil
	case contracts.DecisionApprove:
	default:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidDecision, `"decision" must be "approve" or "reject"`)
	}
	// The caller is the owner at a terminal (and gave the passphrase when
	// one is set): rpc.Server checked that before this handler ran.
	a, err := d.ledger.Get(p.ActionID)
	if err != nil {
		return nil, err
	}
	// Never connects: a disconnected server's connection moved anyway, and
	// a refused approval must not start anything. A tool or server that is
	// gone leaves zero fingerprints: the action cannot be what was
	// reviewed and turns stale.
	current := d.currentFingerprints(ctx, a.Server, a.Tool, true)
	if a, err = d.ledger.Approve(p.ActionID, p.Digest, current); err != nil {
		return nil, d.storageFull(err, "the approval was not recorded and nothing was sent (the action is still prepared)")
	}
	if a, err = d.ledger.MarkDispatched(a.ID); err != nil {
		return nil, d.storageFull(err, "its dispatch was not recorded and nothing was sent")
	}
	d.log.Info().Str("action", a.ID).Str("kind", a.Kind).Str("server", a.Server).Str("tool", a.Tool).Msg("action approved; dispatching")
	bound := &mcpclient.Binding{ConnectionGeneration: a.Fingerprints.ConnectionGeneration, SettingsDigest: a.Fingerprints.Settings,
		ToolDigest: a.Fingerprints.Tool}
	switch a.Kind {
	case contracts.ReceiptTaskCreate:
		return d.createTask(ctx, req, a, bound)
	case contracts.ReceiptTaskCancel:
		return d.cancelTask(ctx, a, bound)
	}
	// The arguments were validated when the action was prepared, against
	// the definition whose digest approval just confirmed unchanged.
	// The call goes to the very connection and settings the approval was
	// checked against, or nowhere; a call that cannot be prepared so ends
	// the action as not sent.
	// The receipt names who asked for the action, not the owner approving.
	pc, perr := d.sup.Prepare(ctx, mcpclient.CallSpec{Server: a.Server, Tool: a.Tool, Arguments: a.Arguments, Canonical: true, Bound: bound})
	return d.execute(ctx, req, execution{kind: contracts.ReceiptApproved, server: a.Server, tool: a.Tool, args: a.Arguments,
		actionID: a.ID, call: pc, refused: perr, bound: true, caller: a.Caller})
}

// reasonStaleAtDispatch is the reason of an approved action whose tool
// definition moved between approval and the moment it would have been
// written.
const reasonStaleAtDispatch = "the tool's definition changed after approval, before the call was sent; nothing was sent"

// staleAtDispatch ends an approved call that mcpclient refused to write
// because the tool's definition moved: the action is stale, no receipt is
// written (nothing was executed), and the caller gets action_stale.
func (d *daemon) staleAtDispatch(ex execution, cause error) (contracts.CallResult, error) {
	if _, err := d.ledger.Finish(ex.actionID, contracts.ActionStale, reasonStaleAtDispatch, "", ""); err != nil {
		d.log.Error().Err(err).Str("action", ex.actionID).Msg("recording a stale action")
	}
	d.log.Warn().Str("action", ex.actionID).Str("server", ex.server).Str("tool", ex.tool).Msg("approved call not sent: the tool's definition changed")
	return contracts.CallResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionStale,
		"action %s is stale: %s (%s)", ex.actionID, reasonStaleAtDispatch, cause.Error()),
		"see the new definition with 'pikoctl mcp catalog "+ex.server+"', then make the call again")
}

// sourceRead serves source.read.
func (d *daemon) sourceRead(_ context.Context, req *rpc.Request, p *contracts.SourceReadParams) (any, error) {
	// A retained result was redacted when it was kept, as the answer that
	// carried it: read back, it is redacted of what entered the set since,
	// as its server's output, so it tells no more than that answer did.
	if meta, err := d.sources.Meta(p.SourceID); err == nil {
		v := d.answerView(req, meta.Server)
		v.Since(meta.CreatedAt)
	}
	return d.sources.Read(p.SourceID, p.Offset, p.Length)
}

// failedEnd fills res for a call or task action that ended with err and
// returns the action's end state and reason: not sent (provably nothing
// left pikod: a definite failure without effect, which may be made again),
// uncertain (the outcome is unknown), or failed (the server's own error
// answer).
//
// The answer's error is redacted within view (nil: of every value); the
// reason, which the ledger keeps, of every value.
func (d *daemon) failedEnd(err error, res *contracts.CallResult, view *vault.View) (state, reason string) {
	res.Error = d.redactError(err, view)
	msg := d.red.Text(res.Error.Message)
	switch {
	case contracts.IsNotSent(err):
		res.Status, res.NotSent = contracts.CallFailed, true
		return contracts.ActionFailed, "not sent: " + msg
	case errors.Is(err, contracts.ErrOutcomeUnknown):
		res.Status = contracts.CallUncertain
		return contracts.ActionUncertain, msg
	default:
		res.Status = contracts.CallFailed
		return contracts.ActionFailed, msg
	}
}

// maskSent replaces, in text that pikod keeps and shows to every client
// (a receipt's error, an action's reason), every string the caller sent
// in the call's arguments (whole, and each of its words) with
// "[argument]". An error that quotes the caller's argument would
// otherwise show [REDACTED] exactly when that argument equals a stored
// secret: kept text is redacted of every value, and a receipt is no
// place for the caller's guess either way.
func maskSent(text string, args []byte) string {
	if text == "" || len(args) == 0 {
		return text
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return text
	}
	var sent []string
	eachString(v, func(t string) {
		if len(t) >= vault.MinRedactChars {
			sent = append(sent, t)
		}
		for _, w := range strings.Fields(t) {
			if len(w) >= vault.MinRedactChars && w != t {
				sent = append(sent, w)
			}
		}
	})
	// Longest first, so a word never splits a whole string's mask.
	slices.SortFunc(sent, func(a, b string) int { return len(b) - len(a) })
	for _, s := range sent {
		text = strings.ReplaceAll(text, s, "[argument]")
	}
	return text
}

// eachString calls fn with every string in v, a value decoded from JSON
// into any: the strings inside its arrays and the values of its objects,
// at any depth (not the objects' keys).
func eachString(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			eachString(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			eachString(e, fn)
		}
	}
}
