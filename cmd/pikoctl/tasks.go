package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newTaskCmds() []*cobra.Command {
	return []*cobra.Command{a.newTasksCmd(), a.newTaskCmd()}
}

func (a *app) newTasksCmd() *cobra.Command {
	var cursor string
	cmd := &cobra.Command{
		Use:   "tasks SERVER",
		Short: "List a server's tasks (legacy tasks utility)",
		Long: `tasks sends tasks/list to SERVER and prints one page of its tasks: id,
status, status message and, for tasks pikod created, the action that created
them. --cursor continues with the next page. Tasks exist only on legacy
(2025-11-25) connections: on a 2026-07-28 connection the request is refused
and nothing is sent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := contracts.TasksParams{Server: args[0], Op: contracts.TaskOpList, Cursor: cursor}
			var res contracts.TasksListResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPTasks, params, &res); printed || err != nil {
				return err
			}
			w := &errWriter{w: a.stdout}
			if len(res.Tasks) == 0 {
				fmt.Fprintln(w, "no tasks")
			} else {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TASK\tSTATUS\tMESSAGE\tUPDATED\tCREATED BY")
				for _, t := range res.Tasks {
					by := "-"
					if t.Recorded {
						by = t.ActionID + " (" + t.Tool + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(clip(t.TaskID, 60)), cell(t.Status), cell(clip(firstLine(t.StatusMessage), 60)),
						cell(t.LastUpdatedAt), cell(clip(by, 60)))
				}
				_ = tw.Flush()
			}
			if res.NextCursor != "" {
				fmt.Fprintf(w, "more: pikoctl mcp tasks %s --cursor %s\n", clean(res.Server), clean(res.NextCursor))
			}
			return w.err
		},
	}
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a list from this cursor")
	return cmd
}

func (a *app) newTaskCmd() *cobra.Command {
	var result, cancel bool
	cmd := &cobra.Command{
		Use:   "task SERVER TASK_ID [--result | --cancel]",
		Short: "Show a task, fetch its result, or prepare its cancellation",
		Long: `task sends tasks/get and shows the task's status (and, for a task pikod
created, the status changes it saw). --result sends tasks/result, which
waits for the task to end (up to the server's timeoutMs), and prints the
result like 'pikoctl mcp call' does: it is retained (pikoctl mcp source
SOURCE) and leaves an mcp_task_result receipt. --cancel prepares a
tasks/cancel action (kind mcp_task_cancel) for 'pikoctl mcp approve'; nothing
is sent until you approve it (exit status 4 until then).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := contracts.TasksParams{Server: args[0], TaskID: args[1], Op: contracts.TaskOpGet}
			switch {
			case result && cancel:
				return fmt.Errorf("--result and --cancel exclude each other")
			case cancel:
				params.Op = contracts.TaskOpCancel
				return a.runCall(cmd.Context(), contracts.MethodMCPTasks, params)
			case result:
				params.Op = contracts.TaskOpResult
			}
			var raw json.RawMessage
			if err := a.call(cmd.Context(), contracts.MethodMCPTasks, params, &raw); err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			w := &errWriter{w: a.stdout}
			if result {
				var res contracts.TaskResultResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decoding the extensions.mcp.tasks result: %w", err)
				}
				cr := contracts.CallResult{Status: contracts.CallCompleted, Server: res.Server, Tool: res.TaskID, Content: res.Content,
					StructuredContent: res.StructuredContent, IsError: res.IsError, Truncated: res.Truncated,
					OriginalResultSourceID: res.OriginalResultSourceID, ReceiptID: res.ReceiptID, ReceiptKind: res.ReceiptKind}
				if res.IsError {
					cr.Status = contracts.CallFailed
				}
				writeCallResult(w, &cr)
				if w.err != nil {
					return w.err
				}
				if res.IsError {
					return &statusExit{code: exitFailure, msg: "the task's result is an error"}
				}
				return nil
			}
			var res contracts.TaskGetResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("decoding the extensions.mcp.tasks result: %w", err)
			}
			writeTask(w, res.Server, &res.Task)
			return w.err
		},
	}
	cmd.Flags().BoolVar(&result, "result", false, "fetch the task's result (tasks/result)")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "prepare an action that cancels the task (tasks/cancel)")
	return cmd
}

// writeTask shows one task.
func writeTask(w *errWriter, server string, t *contracts.TaskInfo) {
	fmt.Fprintf(w, "task:      %s on %s\n", clean(t.TaskID), clean(server))
	line := "status:    " + clean(t.Status)
	if t.StatusMessage != "" {
		line += ": " + cleanLines(t.StatusMessage)
	}
	fmt.Fprintln(w, line)
	if t.LastUpdatedAt != "" {
		fmt.Fprintf(w, "updated:   %s\n", clean(t.LastUpdatedAt))
	}
	if t.PollInterval != nil {
		fmt.Fprintf(w, "poll:      every %d ms\n", *t.PollInterval)
	}
	if !t.Recorded {
		return
	}
	fmt.Fprintf(w, "created:   by action %s (%s), receipt %s\n", clean(t.ActionID), clean(t.Tool), clean(t.ReceiptID))
	if t.CancelActionID != "" {
		fmt.Fprintf(w, "cancel:    action %s\n", clean(t.CancelActionID))
	}
	if t.ResultSourceID != "" {
		fmt.Fprintf(w, "result:    source %s, receipt %s\n", clean(t.ResultSourceID), clean(t.ResultReceiptID))
	}
	for _, u := range t.Updates {
		msg := ""
		if u.StatusMessage != "" {
			msg = ": " + clean(clip(u.StatusMessage, 120))
		}
		fmt.Fprintf(w, "  %s  %s%s (%s)\n", clean(u.At), clean(u.Status), msg, clean(u.Via))
	}
	fmt.Fprintf(w, "next:      pikoctl mcp task %s %s --result | --cancel\n", clean(server), clean(t.TaskID))
}
