package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// Tasks (the legacy tasks utility): server-everything's
// simulate-research-query is task-only (execution.taskSupport required):
// it runs four one-second stages and then stores its report.

const researchTool = "simulate-research-query"

// TestTasksEverything: against server-everything over stdio, a task-only
// tool granted autonomous still becomes a prepared action; approved at a
// terminal it creates a task, which pikod lists, gets and whose result it
// retains; cancelling another task is a prepared action too, and every
// status pikod saw is recorded against the creating action.
func TestTasksEverything(t *testing.T) {
	dir := interopDir(t)
	everything := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, srv{"id": "ev", "transport": "stdio", "command": everything, "args": []string{"stdio"},
		"timeoutMs": 30000, "tools": []string{researchTool, "echo"}, "autonomousTools": []string{researchTool}}))

	var cat contracts.CatalogResult
	d.callInto(t, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "ev"}, &cat)
	var tool *contracts.CatalogTool
	for i := range cat.Tools {
		if cat.Tools[i].OriginalName == researchTool {
			tool = &cat.Tools[i]
		}
	}
	if tool == nil || tool.TaskSupport != "required" || !strings.Contains(string(tool.Execution), `"taskSupport":"required"`) {
		t.Fatalf("catalog entry of %s = %+v, want taskSupport required and its execution object", researchTool, tool)
	}
	if tool.Grant != contracts.GrantAutonomous {
		t.Fatalf("%s has grant %q, want autonomous (the settings grant it)", researchTool, tool.Grant)
	}
	if out := ctlOK(t, d, "", "mcp", "catalog", "ev"); !strings.Contains(firstLine(out, researchTool), "task only (approval)") {
		t.Errorf("pikoctl mcp catalog does not mark %s task only:\n%s", researchTool, out)
	}

	// prepare calls the task-only tool; the grant does not execute it.
	prepare := func(topic string) contracts.CallResult {
		t.Helper()
		var res contracts.CallResult
		d.callInto(t, contracts.MethodMCPCall, contracts.CallParams{Server: "ev", Tool: researchTool,
			Arguments: []byte(`{"topic":"` + topic + `"}`)}, &res)
		if res.Status != contracts.CallApprovalRequired || res.ActionID == "" {
			t.Fatalf("calling the task-only %s: %+v, want approval_required (task creation needs approval, granted or not)", researchTool, res)
		}
		if r := review(t, d, res.ActionID); r.Kind != contracts.ReceiptTaskCreate || r.ToolName != researchTool {
			t.Fatalf("review of the task creation: kind %q tool %q, want %s and %s", r.Kind, r.ToolName, contracts.ReceiptTaskCreate, researchTool)
		}
		return res
	}

	// Create: approved through pikoctl on a terminal.
	created := prepare("tide pools")
	p := ctlTTY(t, d, "mcp", "approve", created.ActionID)
	p.waitFor(t, approvePrompt)
	if !strings.Contains(p.out.String(), "as a task") {
		t.Errorf("the review before approving does not say a task is created:\n%s", p.out.String())
	}
	p.typeLine(t, suffixOf(created.Digest))
	out, code := p.wait(t)
	if code != 0 || !strings.Contains(out, "status: completed") || !strings.Contains(out, "("+contracts.ReceiptTaskCreate+")") {
		t.Fatalf("approving the task creation: exit %d, want 0 with status completed and an %s receipt; terminal:\n%s",
			code, contracts.ReceiptTaskCreate, out)
	}
	m := regexp.MustCompile(`task:\s+(\S+) on ev`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the approval does not show the created task's id:\n%s", out)
	}
	taskID := m[1]
	act := wantState(t, d, created.ActionID, contracts.ActionCompleted)
	if act.ReceiptID == "" {
		t.Errorf("the completed task creation has no receipt")
	}

	// List: the task is there, recorded against its action and receipt.
	var list contracts.TasksListResult
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpList}, &list)
	i := slices.IndexFunc(list.Tasks, func(x contracts.TaskInfo) bool { return x.TaskID == taskID })
	if i < 0 {
		t.Fatalf("tasks/list %+v lacks task %s", list, taskID)
	}
	if x := list.Tasks[i]; !x.Recorded || x.ActionID != created.ActionID || x.ReceiptID != act.ReceiptID || x.Tool != researchTool {
		t.Errorf("listed task %+v, want it recorded with action %s and receipt %s", x, created.ActionID, act.ReceiptID)
	}
	if ctlOut := ctlOK(t, d, "", "mcp", "tasks", "ev"); !strings.Contains(ctlOut, taskID) || !strings.Contains(ctlOut, created.ActionID) {
		t.Errorf("pikoctl mcp tasks ev does not list the task and its action:\n%s", ctlOut)
	}

	// Get: a status, and the creation recorded as the first update.
	var got contracts.TaskGetResult
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpGet, TaskID: taskID}, &got)
	if got.Task.TaskID != taskID || got.Task.Status == "" || len(got.Task.Updates) == 0 || got.Task.Updates[0].Via != "tools/call" {
		t.Fatalf("tasks/get: %+v, want the task with its updates, the first from tools/call", got.Task)
	}

	// Result: waits for the end; retained with a preview and a receipt.
	var res contracts.TaskResultResult
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpResult, TaskID: taskID}, &res)
	if res.ReceiptKind != contracts.ReceiptTaskResult || res.ReceiptID == "" || res.OriginalResultSourceID == "" ||
		!strings.Contains(string(res.Content), "Research Report: tide pools") {
		t.Fatalf("tasks/result: %+v, want the report with a retained source and an %s receipt", res, contracts.ReceiptTaskResult)
	}
	if src := readSourceText(t, d, res.OriginalResultSourceID); !strings.Contains(src, "Research Report: tide pools") {
		t.Errorf("the retained result lacks the report: %q", src)
	}
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpGet, TaskID: taskID}, &got)
	if got.Task.Status != "completed" || got.Task.ResultSourceID != res.OriginalResultSourceID || got.Task.ResultReceiptID != res.ReceiptID {
		t.Errorf("tasks/get after the result: %+v, want completed with the result's source and receipt recorded", got.Task)
	}
	if last := got.Task.Updates[len(got.Task.Updates)-1]; last.Status != "completed" {
		t.Errorf("the last recorded update is %+v, want completed", last)
	}
	// The statuses the server announced (notifications/tasks/status) are
	// recorded too: the last stage began about a second before the end,
	// while tasks/result was waiting, so nothing else can have recorded it.
	poll(t, "the announced task statuses recorded", func() bool {
		d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpGet, TaskID: taskID}, &got)
		seen := map[string]bool{}
		for _, u := range got.Task.Updates {
			if u.Via == "notifications/tasks/status" {
				seen[u.Status+"/"+u.StatusMessage] = true
			}
		}
		return seen["working/Generating report..."]
	}, func() string { return fmt.Sprintf("updates %+v", got.Task.Updates) })
	var receipts contracts.ReceiptsResult
	d.callInto(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{}, &receipts)
	kinds := map[string]string{}
	for _, r := range receipts.Receipts {
		kinds[r.ID] = r.Kind + "/" + r.ActionID
	}
	if kinds[act.ReceiptID] != contracts.ReceiptTaskCreate+"/"+created.ActionID || kinds[res.ReceiptID] != contracts.ReceiptTaskResult+"/"+created.ActionID {
		t.Errorf("receipts %v: want %s for the creation and %s for the result, both on action %s", kinds,
			contracts.ReceiptTaskCreate, contracts.ReceiptTaskResult, created.ActionID)
	}

	// Cancel: a second task, cancelled while it runs. Preparing sends
	// nothing; the approval (from a terminal) sends tasks/cancel.
	ap := startApprover(t)
	second := prepare("slow tides")
	o := ap.approve(d, second.ActionID, second.Digest)
	if o.Result == nil || o.Result.Status != contracts.CallCompleted || o.Result.Task == nil {
		t.Fatalf("approving the second task creation: %s", o)
	}
	secondID := o.Result.Task.TaskID
	var cancel contracts.CallResult
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpCancel, TaskID: secondID}, &cancel)
	if cancel.Status != contracts.CallApprovalRequired || cancel.ActionID == "" {
		t.Fatalf("op cancel: %+v, want approval_required", cancel)
	}
	if r := review(t, d, cancel.ActionID); r.Kind != contracts.ReceiptTaskCancel || !strings.Contains(r.ArgumentsText, secondID) {
		t.Fatalf("review of the cancellation: %+v, want kind %s naming task %s", r, contracts.ReceiptTaskCancel, secondID)
	}
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpGet, TaskID: secondID}, &got)
	if got.Task.Status != "working" {
		t.Fatalf("the second task is %q before its cancellation is approved, want working (preparing sends nothing)", got.Task.Status)
	}
	o = ap.approve(d, cancel.ActionID, cancel.Digest)
	if o.Result == nil || o.Result.Status != contracts.CallCompleted || o.Result.ReceiptKind != contracts.ReceiptTaskCancel ||
		o.Result.Task == nil || o.Result.Task.Status != "cancelled" {
		t.Fatalf("approving the cancellation: %s, want completed with the task cancelled and an %s receipt", o, contracts.ReceiptTaskCancel)
	}
	wantState(t, d, cancel.ActionID, contracts.ActionCompleted)
	d.callInto(t, contracts.MethodMCPTasks, contracts.TasksParams{Server: "ev", Op: contracts.TaskOpGet, TaskID: secondID}, &got)
	if got.Task.Status != "cancelled" || got.Task.CancelActionID != cancel.ActionID {
		t.Errorf("tasks/get after cancelling: %+v, want cancelled with the cancel action recorded", got.Task)
	}
	vias := []string{}
	for _, u := range got.Task.Updates {
		vias = append(vias, u.Status+"/"+u.Via)
	}
	if !slices.Contains(vias, "cancelled/tasks/cancel") {
		t.Errorf("updates %v lack the cancellation", vias)
	}
	if ctlOut := ctlOK(t, d, "", "mcp", "task", "ev", secondID); !strings.Contains(ctlOut, "status:    cancelled") ||
		!strings.Contains(ctlOut, cancel.ActionID) {
		t.Errorf("pikoctl mcp task ev %s:\n%s", secondID, ctlOut)
	}

	// A cancellation prepared through pikoctl exits 4: nothing sent.
	_, stderr, code := runCtl(t, d, "", "mcp", "task", "ev", taskID, "--cancel")
	if code != exitApprovalRequiredCode {
		t.Errorf("pikoctl mcp task --cancel: exit %d (stderr %q), want %d", code, stderr, exitApprovalRequiredCode)
	}
}

// exitApprovalRequiredCode is pikoctl's exit status for "approval
// required".
const exitApprovalRequiredCode = 4

// TestTasksRefusedOnModern: on a 2026-07-28 connection every task request
// is refused with "tasks are not part of this protocol revision" and
// nothing reaches the server, even for a tool that says it is task-only.
func TestTasksRefusedOnModern(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, stdioFixture("fx", "--protocol", "modern", "--task-tools", "--request-log", log).with(
		"protocol", map[string]string{"pin": modernVersion}, "readOnlyTools", []string{"task-only"})))
	if st := serverStatus(t, d, "fx"); st.State != contracts.StateConnected {
		d.call(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "fx"})
	}
	for _, p := range []contracts.TasksParams{
		{Server: "fx", Op: contracts.TaskOpList},
		{Server: "fx", Op: contracts.TaskOpGet, TaskID: "t1"},
		{Server: "fx", Op: contracts.TaskOpResult, TaskID: "t1"},
		{Server: "fx", Op: contracts.TaskOpCancel, TaskID: "t1"},
	} {
		we := d.callErr(t, contracts.MethodMCPTasks, p)
		if we == nil || we.Reason() != "tasks_unsupported" || !strings.Contains(we.Message, "tasks are not part of this protocol revision") {
			t.Errorf("op %s on 2026-07-28: %+v, want tasks_unsupported", p.Op, we)
		}
	}
	we := d.callErr(t, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "task-only"})
	if we == nil || we.Reason() != "tasks_unsupported" || !strings.Contains(we.Message, "tasks are not part of this protocol revision") {
		t.Errorf("calling a task-only tool on 2026-07-28: %+v, want tasks_unsupported", we)
	}
	var actions contracts.ActionsListResult
	d.callInto(t, contracts.MethodMCPActionsList, contracts.ActionsListParams{}, &actions)
	if len(actions.Actions) != 0 {
		t.Errorf("refused task requests left actions: %+v", actions.Actions)
	}
	_, stderr, code := runCtl(t, d, "", "mcp", "tasks", "fx")
	if code != 1 || !strings.Contains(stderr, "tasks are not part of this protocol revision") {
		t.Errorf("pikoctl mcp tasks on 2026-07-28: exit %d stderr %q", code, stderr)
	}
	for _, m := range receivedMethods(readRequestLog(t, log)) {
		if strings.HasPrefix(m, "tasks/") || m == "tools/call" {
			t.Errorf("the server received %s", m)
		}
	}
}
