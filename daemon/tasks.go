package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon/present"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
	"github.com/rs/zerolog"
)

// Tasks (the legacy tasks utility): creating a task and cancelling one
// are prepared actions that only the owner approves, whatever the tool's
// grant; listing, getting and fetching a result are reads. The tasks pikod
// created are recorded (approvals.TaskRecord) with every status pikod saw.

// methodTasksCancel is the Tool of a cancellation action: the method it
// sends.
const methodTasksCancel = "tasks/cancel"

// prepareTask prepares the action that creates a task: a task-augmented
// tools/call, as the supervisor prepared it (its arguments validated, the
// tool selected, a task possible there).
func (d *daemon) prepareTask(pc *mcpclient.PreparedCall, caller contracts.Caller) (any, error) {
	server, tool := pc.Server(), pc.Tool()
	a, err := d.ledger.PrepareKind(contracts.ReceiptTaskCreate, server, tool.OriginalName, pc.Arguments(), d.red.Text(tool.Description),
		d.fingerprints(pc), caller)
	if err != nil {
		return nil, err
	}
	d.log.Info().Str("action", a.ID).Str("server", server).Str("tool", tool.OriginalName).Msg("task creation prepared")
	return contracts.CallResult{
		Status: contracts.CallApprovalRequired, Server: server, Tool: tool.OriginalName,
		ActionID: a.ID, Digest: a.Digest, ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339),
	}, nil
}

// dispatchEnd records how an approved task action ended: its receipt,
// then the action's end. It fills res's status, receipt and error.
func (d *daemon) dispatchEnd(a approvals.Action, res *contracts.CallResult, err error) {
	state, reason := contracts.ActionCompleted, ""
	if err != nil {
		state, reason = d.failedEnd(err, res, nil)
	} else {
		res.Status = contracts.CallCompleted
	}
	rec := approvals.Receipt{Kind: a.Kind, Server: a.Server, Tool: d.red.Text(a.Tool), ArgumentsDigest: contracts.SHA256Hex(a.Arguments),
		ActionID: a.ID, Status: res.Status, SourceID: res.OriginalResultSourceID, NotSent: res.NotSent, Caller: a.Caller}
	if res.Error != nil {
		rec.Error = d.red.Text(res.Error.Message)
	}
	rec, rerr := d.ledger.AddReceipt(rec)
	if rerr != nil {
		d.log.Error().Err(rerr).Str("action", a.ID).Str("kind", a.Kind).Msg("writing a receipt failed; the task action has no receipt")
	}
	res.ReceiptID, res.ReceiptKind = rec.ID, a.Kind
	var ferr error
	if res.NotSent {
		_, ferr = d.ledger.FinishNotSent(a.ID, reason, rec.ID)
	} else {
		_, ferr = d.ledger.Finish(a.ID, state, reason, rec.ID, res.OriginalResultSourceID)
	}
	if ferr != nil {
		d.log.Error().Err(ferr).Str("action", a.ID).Msg("recording the end of a task action")
	}
	d.log.Info().Str("server", a.Server).Str("tool", a.Tool).Str("kind", a.Kind).Str("status", res.Status).Bool("not_sent", res.NotSent).
		Str("receipt", rec.ID).Str("action", a.ID).Msg("task action")
}

// retain keeps a server's answer (redacted) as a source; a failure makes
// the outcome uncertain, as for calls.
func (d *daemon) retain(server, name string, raw json.RawMessage) (string, error) {
	meta, err := d.sources.Put(server, name, d.red.JSON(raw))
	if err != nil {
		d.log.Error().Err(err).Str("server", server).Msg("retaining a task answer")
		return "", fmt.Errorf("the server answered but its answer could not be retained: %v: %w", err, contracts.ErrOutcomeUnknown)
	}
	return meta.ID, nil
}

// createTask sends an approved task creation and records the task.
func (d *daemon) createTask(ctx context.Context, req *rpc.Request, a approvals.Action, bound *mcpclient.Binding) (contracts.CallResult, error) {
	res := contracts.CallResult{Server: a.Server, Tool: a.Tool, ActionID: a.ID}
	progress := func(pp contracts.ProgressParams) {
		pp.RequestID = req.ID
		_ = req.Notify(contracts.NotifyMCPProgress, pp)
	}
	var out *mcpclient.CallOutcome
	pc, err := d.sup.Prepare(ctx, mcpclient.CallSpec{Server: a.Server, Tool: a.Tool, Arguments: a.Arguments, Canonical: true, Task: true,
		Bound: bound})
	if err == nil {
		out, err = pc.Send(ctx, mcpclient.SendOptions{Progress: progress})
	}
	if err != nil && contracts.ToError(err).Reason() == contracts.ReasonDefinitionChanged {
		return d.staleAtDispatch(execution{server: a.Server, tool: a.Tool, actionID: a.ID}, err)
	}
	if err == nil {
		res.OriginalResultSourceID, err = d.retain(a.Server, a.Tool, out.Result)
	}
	d.dispatchEnd(a, &res, err)
	if err != nil || out.Task == nil {
		return res, nil
	}
	t := out.Task
	rec := approvals.TaskRecord{Server: a.Server, TaskID: t.TaskID, Tool: a.Tool, ActionID: a.ID, ReceiptID: res.ReceiptID,
		Status: d.red.Text(t.Status), StatusMessage: d.red.Text(t.StatusMessage), CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt,
		TTL: t.TTL, PollInterval: t.PollInterval}
	if rerr := d.ledger.RecordTask(rec); rerr != nil {
		d.log.Error().Err(rerr).Str("action", a.ID).Msg("recording a created task")
	}
	info, _, _ := d.taskInfo(a.Server, *t, "")
	res.Task = &info
	d.log.Info().Str("server", a.Server).Str("tool", a.Tool).Str("action", a.ID).Str("status", t.Status).Msg("task created")
	return res, nil
}

// cancelTask sends an approved tasks/cancel on the connection it was
// approved for.
func (d *daemon) cancelTask(ctx context.Context, a approvals.Action, bound *mcpclient.Binding) (contracts.CallResult, error) {
	res := contracts.CallResult{Server: a.Server, Tool: a.Tool, ActionID: a.ID}
	var args struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(a.Arguments, &args); err != nil || args.TaskID == "" {
		err = contracts.MarkNotSent(contracts.Errorf(contracts.ErrInternal, contracts.ReasonInvalidAction, "action %s names no task to cancel; nothing was sent", a.ID))
		d.dispatchEnd(a, &res, err)
		return res, nil
	}
	ans, err := d.sup.Tasks(ctx, mcpclient.TaskRequest{Server: a.Server, Method: methodTasksCancel, TaskID: args.TaskID, Bound: bound})
	if err == nil {
		res.OriginalResultSourceID, err = d.retain(a.Server, methodTasksCancel, ans.Raw)
	}
	d.dispatchEnd(a, &res, err)
	if err != nil {
		return res, nil
	}
	if cerr := d.ledger.TaskCancelled(a.Server, args.TaskID, a.ID); cerr != nil {
		d.log.Error().Err(cerr).Str("action", a.ID).Msg("recording a task cancellation")
	}
	info, _, _ := d.taskInfo(a.Server, *ans.Task, methodTasksCancel)
	res.Task = &info
	return res, nil
}

// taskInfo records what the server reported of a task (when pikod created
// it; via "" records nothing new) and returns it with pikod's record.
func (d *daemon) taskInfo(server string, t mcpclient.TaskState, via string) (contracts.TaskInfo, bool, error) {
	t.Status, t.StatusMessage = d.red.Text(t.Status), d.red.Text(t.StatusMessage)
	var (
		rec approvals.TaskRecord
		ok  bool
		err error
	)
	if via != "" {
		rec, ok, err = d.ledger.ObserveTask(server, t.TaskID, approvals.TaskObservation{Status: t.Status, StatusMessage: t.StatusMessage,
			LastUpdatedAt: t.LastUpdatedAt, Via: via})
	} else {
		rec, ok, err = d.ledger.Task(server, t.TaskID)
	}
	if err != nil {
		d.log.Error().Err(err).Str("server", server).Msg("recording a task's status")
	}
	info := contracts.TaskInfo{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTL, PollInterval: t.PollInterval}
	if ok {
		r := rec.Info()
		r.Status, r.StatusMessage, r.CreatedAt, r.LastUpdatedAt, r.TTL, r.PollInterval =
			info.Status, info.StatusMessage, info.CreatedAt, info.LastUpdatedAt, info.TTL, info.PollInterval
		info = r
	}
	info.TaskID = contracts.SafeText(info.TaskID, contracts.OneLine, 0)
	return info, ok, err
}

// tasks serves extensions.mcp.tasks.
func (d *daemon) tasks(ctx context.Context, req *rpc.Request, p *contracts.TasksParams) (any, error) {
	if p.Op == "" {
		p.Op = contracts.TaskOpList
	}
	switch p.Op {
	case contracts.TaskOpList:
		ans, err := d.sup.Tasks(ctx, mcpclient.TaskRequest{Server: p.Server, Method: "tasks/list", TaskID: p.TaskID, Cursor: p.Cursor})
		if err != nil {
			return nil, err
		}
		out := contracts.TasksListResult{Server: p.Server, Op: p.Op, Tasks: make([]contracts.TaskInfo, 0, len(ans.Tasks)),
			NextCursor: ans.NextCursor}
		for _, t := range ans.Tasks {
			info, _, _ := d.taskInfo(p.Server, t, "tasks/list")
			out.Tasks = append(out.Tasks, info)
		}
		return out, nil
	case contracts.TaskOpGet:
		ans, err := d.sup.Tasks(ctx, mcpclient.TaskRequest{Server: p.Server, Method: "tasks/get", TaskID: p.TaskID, Cursor: p.Cursor})
		if err != nil {
			return nil, err
		}
		info, _, _ := d.taskInfo(p.Server, *ans.Task, "tasks/get")
		return contracts.TaskGetResult{Server: p.Server, Op: p.Op, Task: info}, nil
	case contracts.TaskOpResult:
		return d.taskResult(ctx, *p, req.Caller())
	case contracts.TaskOpCancel:
		return d.prepareCancel(ctx, *p, req.Caller())
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp,
		`"op" must be "list", "get", "result" or "cancel", not %q`, clipText(p.Op, 40))
}

// taskResult fetches a task's result: retained like a call's result, a
// bounded preview for the caller, a receipt (mcp_task_result).
func (d *daemon) taskResult(ctx context.Context, p contracts.TasksParams, caller contracts.Caller) (any, error) {
	ans, err := d.sup.Tasks(ctx, mcpclient.TaskRequest{Server: p.Server, Method: "tasks/result", TaskID: p.TaskID, Cursor: p.Cursor})
	if err != nil {
		return nil, err
	}
	text := d.red.JSON(ans.Raw)
	meta, err := d.sources.Put(p.Server, clipText(d.red.Text(p.TaskID), maxReceiptURIChars), text)
	if err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("retaining a task result")
		return nil, fmt.Errorf("the task's result was received but could not be retained: %w", err)
	}
	content, structured, isError, truncated, perr := present.Preview(text, present.PreviewLimits{})
	rec := approvals.Receipt{Kind: contracts.ReceiptTaskResult, Server: p.Server, Tool: clipText(d.red.Text(p.TaskID), maxReceiptURIChars),
		ArgumentsDigest: contracts.SHA256Hex([]byte(p.TaskID)), Status: contracts.CallCompleted, SourceID: meta.ID, Caller: caller}
	if task, ok, _ := d.ledger.Task(p.Server, p.TaskID); ok {
		rec.ActionID = task.ActionID
	}
	if perr != nil {
		rec.Status, rec.Error = contracts.CallFailed, d.red.Text(perr.Error())
	} else if isError {
		rec.Status = contracts.CallFailed
	}
	rec, rerr := d.ledger.AddReceipt(rec)
	if rerr != nil {
		d.log.Error().Err(rerr).Str("server", p.Server).Msg("writing a task result receipt failed")
	}
	if err := d.ledger.TaskResult(p.Server, p.TaskID, meta.ID, rec.ID); err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("recording a task result")
	}
	d.log.Info().Str("server", p.Server).Str("source", meta.ID).Str("receipt", rec.ID).Bool("truncated", truncated).Msg("task result")
	if perr != nil {
		return nil, contracts.WithHint(contracts.WithReason(fmt.Errorf("the server's answer to tasks/result is not a tool result (%v): %w",
			perr, contracts.ErrUpstream), contracts.ReasonInvalidResult), "its answer is retained: read it with source.read at "+meta.ID)
	}
	return contracts.TaskResultResult{Server: p.Server, Op: p.Op, TaskID: p.TaskID, Content: content, StructuredContent: structured,
		IsError: isError, Truncated: truncated, OriginalResultSourceID: meta.ID, ReceiptID: rec.ID, ReceiptKind: rec.Kind}, nil
}

// prepareCancel prepares the action that cancels a task: tasks/cancel on
// the connection the server has now (a task lives in its session).
func (d *daemon) prepareCancel(ctx context.Context, p contracts.TasksParams, caller contracts.Caller) (any, error) {
	gen, err := d.sup.CheckTasks(ctx, mcpclient.TaskRequest{Server: p.Server, Method: methodTasksCancel, TaskID: p.TaskID, Cursor: p.Cursor})
	if err != nil {
		return nil, err
	}
	cfg, ok := d.serverSettings(p.Server)
	if !ok {
		return nil, contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", p.Server)
	}
	raw, err := json.Marshal(map[string]string{"taskId": p.TaskID})
	if err != nil {
		return nil, err
	}
	args, err := mcpclient.CanonicalArguments(raw)
	if err != nil {
		return nil, err
	}
	desc := "cancels task " + p.TaskID
	if rec, ok, _ := d.ledger.Task(p.Server, p.TaskID); ok {
		desc += fmt.Sprintf(" (a call of %s, created by action %s, last seen %s)", rec.Tool, rec.ActionID, rec.Status)
	} else {
		desc += " (a task pikod has no record of)"
	}
	fp := contracts.Fingerprints{Settings: cfg.ApprovalDigest(methodTasksCancel), CredentialGeneration: d.creds.generation(p.Server), ConnectionGeneration: gen}
	a, err := d.ledger.PrepareKind(contracts.ReceiptTaskCancel, p.Server, methodTasksCancel, args, d.red.Text(desc), fp, caller)
	if err != nil {
		return nil, err
	}
	d.log.Info().Str("action", a.ID).Str("server", p.Server).Msg("task cancellation prepared")
	return contracts.CallResult{
		Status: contracts.CallApprovalRequired, Server: p.Server, Tool: methodTasksCancel,
		ActionID: a.ID, Digest: a.Digest, ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339),
	}, nil
}

// taskNotes records the task statuses servers announce
// (notifications/tasks/status) against the tasks pikod created. The
// supervisor reports them from a transport's reader, which must never
// wait for a database write: offer only queues, and one goroutine, owned
// by the daemon, writes.
type taskNotes struct {
	ledger *approvals.Ledger
	red    func(string) string
	log    zerolog.Logger
	ch     chan contracts.EventParams
	done   chan struct{}

	// mu guards closed.
	mu     sync.Mutex
	closed bool
}

func startTaskNotes(l *approvals.Ledger, red func(string) string, log zerolog.Logger) *taskNotes {
	n := &taskNotes{ledger: l, red: red, log: log, ch: make(chan contracts.EventParams, 256), done: make(chan struct{})}
	go func() {
		defer close(n.done)
		for ev := range n.ch {
			var t contracts.TaskInfo
			if json.Unmarshal(ev.Data, &t) != nil || t.TaskID == "" {
				continue
			}
			_, _, err := n.ledger.ObserveTask(ev.Server, t.TaskID, approvals.TaskObservation{Status: n.red(t.Status),
				StatusMessage: n.red(t.StatusMessage), LastUpdatedAt: t.LastUpdatedAt, Via: "notifications/tasks/status"})
			if err != nil {
				n.log.Error().Err(err).Str("server", ev.Server).Msg("recording a task status notification")
			}
		}
	}()
	return n
}

// offer queues a task event; a full queue drops it (the next tasks/get
// records the status anyway).
func (n *taskNotes) offer(ev contracts.EventParams) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	select {
	case n.ch <- ev:
	default:
		n.log.Warn().Str("server", ev.Server).Msg("task status notification not recorded: the queue is full")
	}
}

// close stops the writer after it has written what was queued.
func (n *taskNotes) close() {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.ch)
	}
	n.mu.Unlock()
	<-n.done
}
