package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// Tasks: the legacy (2025-11-25) tasks utility, as mcp-go v1.2.1 speaks
// it (tasks/list, tasks/get, tasks/result, tasks/cancel, and tools/call
// with a "task" member). 2026-07-28 moved tasks out of the protocol into
// an extension pikod does not declare: on such a connection every task
// request is refused here, before anything is sent.

// TaskState is a task as a server described it.
type TaskState struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	LastUpdatedAt string `json:"lastUpdatedAt,omitempty"`
	TTL           *int64 `json:"ttl,omitempty"`
	PollInterval  *int64 `json:"pollInterval,omitempty"`
}

// maxTaskIDLen bounds a task id pikod sends or keeps.
const maxTaskIDLen = 512

// tasksUnsupported is the refusal of a task request on a 2026-07-28
// connection.
func tasksUnsupported(server, version string) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonTasksUnsupported,
		"tasks are not part of this protocol revision: server %q speaks %s; nothing was sent", server, version),
		"tasks exist only on legacy connections (2025-11-25); set the server's \"protocol\" to \"legacy\" to use them")
}

// checkTaskCall checks a tools/call against the tool's taskSupport: a task
// call needs a legacy connection, a tool that supports tasks and a server
// that offers task-augmented tools/call; a plain call is refused for a
// tool that requires a task.
func (s *Supervisor) checkTaskCall(sess *session, c *conn, tool contracts.CatalogTool, task bool) error {
	name := strconv.Quote(s.clip(tool.OriginalName, 200))
	if !task {
		if tool.TaskSupport == string(mcp.TaskSupportRequired) {
			return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonTaskRequired,
				"tool %s of server %q can only be called as a task (execution.taskSupport is required); nothing was sent", name, sess.cfg.ID),
				"call it through extensions.mcp.call, which prepares a task-creating action")
		}
		return nil
	}
	if mcp.IsModernProtocol(c.protocol) {
		return tasksUnsupported(sess.cfg.ID, c.protocol)
	}
	switch tool.TaskSupport {
	case string(mcp.TaskSupportOptional), string(mcp.TaskSupportRequired):
	default:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonTaskForbidden,
			"tool %s of server %q does not support tasks (its execution.taskSupport is %s); nothing was sent",
			name, sess.cfg.ID, strconv.Quote(orForbidden(tool.TaskSupport)))
	}
	if !c.caps.tasksToolCalls {
		return sess.notOffered("task-augmented tool calls", "tasks.requests.tools.call", contracts.ReasonTasksRequestsToolsCallNotOffered)
	}
	return nil
}

func orForbidden(s string) string {
	if s == "" {
		return "forbidden (not declared)"
	}
	return s
}

// taskOutcome reads the answer to a task-augmented tools/call: a
// CreateTaskResult whose task has an id and a status.
func (s *Supervisor) taskOutcome(raw json.RawMessage) (*CallOutcome, error) {
	var r struct {
		Task *TaskState `json:"task"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Task == nil {
		return nil, contracts.WithReason(fmt.Errorf("the server answered a task-augmented call without a task (no CreateTaskResult); the outcome is unknown: %w",
			contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
	}
	if err := s.checkTask(r.Task); err != nil {
		return nil, contracts.WithReason(fmt.Errorf("the server's CreateTaskResult is invalid (%v); the outcome is unknown: %w",
			err, contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
	}
	return &CallOutcome{Result: raw, Task: r.Task}, nil
}

// checkTask checks a task's id and status and makes its strings safe.
func (s *Supervisor) checkTask(t *TaskState) error {
	switch {
	case t.TaskID == "":
		return fmt.Errorf("the task has no taskId")
	case len(t.TaskID) > maxTaskIDLen:
		return fmt.Errorf("the task's taskId is longer than %d bytes", maxTaskIDLen)
	case t.Status == "":
		return fmt.Errorf("task %s has no status", strconv.Quote(s.clip(t.TaskID, 80)))
	}
	t.Status = s.clean(t.Status, 40)
	t.StatusMessage = s.clean(t.StatusMessage, 1000)
	t.CreatedAt, t.LastUpdatedAt = s.clean(t.CreatedAt, 60), s.clean(t.LastUpdatedAt, 60)
	return nil
}

// TaskRequest is one request of the tasks utility: Method is tasks/list,
// tasks/get, tasks/result or tasks/cancel; TaskID names the task (all but
// list); Cursor continues a list.
type TaskRequest struct {
	Server, Method, TaskID, Cursor string
	// Bound, for tasks/cancel, pins the request to the connection and
	// settings the owner's approval was checked against (ToolDigest is
	// ignored): a task lives in the session that created it.
	Bound *Binding
}

// TaskAnswer is a server's answer to a TaskRequest. Raw is the result
// exactly as received. Tasks is the list (tasks/list), Task the task
// (tasks/get, tasks/cancel); for tasks/result neither is set.
type TaskAnswer struct {
	Raw        json.RawMessage
	Tasks      []TaskState
	NextCursor string
	Task       *TaskState
}

// CheckTasks connects the server and checks that req could be sent (the
// era, the server's capabilities, the task id) without sending anything:
// what prepares a cancellation runs it. It returns the connection's
// generation.
func (s *Supervisor) CheckTasks(ctx context.Context, req TaskRequest) (uint64, error) {
	sess, err := s.session(req.Server)
	if err != nil {
		return 0, err
	}
	c, err := sess.connect(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.checkTaskRequest(sess, c, req); err != nil {
		return 0, err
	}
	return c.gen, nil
}

func (s *Supervisor) checkTaskRequest(sess *session, c *conn, req TaskRequest) error {
	if mcp.IsModernProtocol(c.protocol) {
		return tasksUnsupported(sess.cfg.ID, c.protocol)
	}
	switch req.Method {
	case string(mcp.MethodTasksList):
		if req.TaskID != "" {
			return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedTask, `op "list" takes no "taskId"`)
		}
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksResult), string(mcp.MethodTasksCancel):
		switch {
		case req.TaskID == "":
			return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingTask, `missing "taskId": list the server's tasks with 'pikoctl mcp tasks %s'`, sess.cfg.ID)
		case len(req.TaskID) > maxTaskIDLen:
			return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidTask, `"taskId" is longer than %d bytes`, maxTaskIDLen)
		case req.Cursor != "":
			return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedCursor, `only op "list" takes a "cursor"`)
		}
	default:
		return fmt.Errorf("unknown tasks method %q: %w", req.Method, contracts.ErrInvalidArgument)
	}
	switch {
	case !c.caps.tasks:
		return sess.notOffered("tasks", "tasks", contracts.ReasonTasksNotOffered)
	case req.Method == string(mcp.MethodTasksList) && !c.caps.tasksList:
		return sess.notOffered("a list of its tasks", "tasks.list", contracts.ReasonTasksListNotOffered)
	case req.Method == string(mcp.MethodTasksCancel) && !c.caps.tasksCancel:
		return sess.notOffered("task cancellation", "tasks.cancel", contracts.ReasonTasksCancelNotOffered)
	}
	return nil
}

// Tasks sends one request of the tasks utility and returns the answer.
// Nothing is sent on a 2026-07-28 connection (reason tasks_unsupported),
// for a request the server's tasks capability does not offer, or, for a
// bound request, on any connection but the bound one. The request is
// bounded by the server's timeoutMs (tasks/result waits for the task to
// end within it). Errors are classified as for calls.
func (s *Supervisor) Tasks(ctx context.Context, req TaskRequest) (*TaskAnswer, error) {
	sess, err := s.session(req.Server)
	if err != nil {
		return nil, contracts.MarkNotSent(err)
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return nil, contracts.MarkNotSent(err)
	}
	defer release()
	var c *conn
	if req.Bound != nil {
		sess.mu.Lock()
		c = sess.conn
		sess.mu.Unlock()
		if c == nil || c.gen != req.Bound.ConnectionGeneration || sess.settings().ApprovalDigest(req.Method) != req.Bound.SettingsDigest {
			return nil, contracts.MarkNotSent(contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonConnectionChanged,
				"server %q is no longer connected with the connection and settings the approval was given for; nothing was sent", req.Server),
				"a task lives in the session that created it: a new connection may not know it"))
		}
	} else if c, err = sess.connect(ctx); err != nil {
		return nil, contracts.MarkNotSent(err)
	}
	if err := s.checkTaskRequest(sess, c, req); err != nil {
		return nil, contracts.MarkNotSent(err)
	}
	params := map[string]string{}
	if req.TaskID != "" {
		params["taskId"] = req.TaskID
	}
	if req.Cursor != "" {
		params["cursor"] = req.Cursor
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, contracts.MarkNotSent(err)
	}
	what := req.Method
	if req.TaskID != "" {
		what += " " + strconv.Quote(s.clip(req.TaskID, 80))
	}
	raw, err := s.ask(ctx, sess, c, req.Method, p, what)
	if err != nil {
		return nil, err
	}
	ans := &TaskAnswer{Raw: raw}
	switch req.Method {
	case string(mcp.MethodTasksList):
		var r struct {
			Tasks      []TaskState `json:"tasks"`
			NextCursor string      `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.Tasks == nil {
			return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server's answer to tasks/list on %q has no list of tasks", req.Server)
		}
		for i := range r.Tasks {
			if err := s.checkTask(&r.Tasks[i]); err != nil {
				return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server's answer to tasks/list on %q: %v", req.Server, err)
			}
		}
		ans.Tasks, ans.NextCursor = r.Tasks, s.clean(r.NextCursor, 1000)
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel):
		// GetTaskResult and CancelTaskResult are the task itself.
		var t TaskState
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server's answer to %s on %q is not a task", req.Method, req.Server)
		}
		if err := s.checkTask(&t); err != nil {
			return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server's answer to %s on %q: %v", req.Method, req.Server, err)
		}
		if t.TaskID != req.TaskID {
			return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server answered %s for task %s with task %s",
				req.Method, strconv.Quote(s.clip(req.TaskID, 80)), strconv.Quote(s.clip(t.TaskID, 80)))
		}
		ans.Task = &t
	}
	return ans, nil
}

// methodTaskStatus is the legacy tasks utility's status notification.
const methodTaskStatus = "notifications/tasks/status"

// TaskStatusNote is a notifications/tasks/status a server sent (shown to
// watchers as an EventTask event).
type TaskStatusNote struct {
	Server string
	Task   TaskState
}

// taskStatusNote reads a notifications/tasks/status: its params are the
// task.
func (s *Supervisor) taskStatusNote(server string, params mcp.NotificationParams) (TaskStatusNote, bool) {
	b, err := json.Marshal(params.AdditionalFields)
	if err != nil || bytes.Equal(b, []byte("null")) {
		return TaskStatusNote{}, false
	}
	var t TaskState
	if json.Unmarshal(b, &t) != nil || s.checkTask(&t) != nil {
		return TaskStatusNote{}, false
	}
	return TaskStatusNote{Server: server, Task: t}, true
}
