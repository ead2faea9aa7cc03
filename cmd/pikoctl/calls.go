package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// statusExit is a call outcome that is reported by its exit code; the
// result was already printed.
type statusExit struct {
	code int
	msg  string
}

func (e *statusExit) Error() string { return e.msg }

func (a *app) newCallCmds() []*cobra.Command {
	return []*cobra.Command{a.newCallCmd(), a.newActionsCmd(), a.newReviewCmd(), a.newApproveCmd(), a.newRejectCmd(), a.newSourceCmd()}
}

func (a *app) newCallCmd() *cobra.Command {
	var (
		byName, asTask bool
		kvs            []string
		argsJSON       string
	)
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL | call --name MODEL_NAME",
		Short: "Call a tool; arguments as --arg, --args-json or JSON on stdin",
		Long: `call sends one tool call. Arguments come from --arg NAME=VALUE (repeatable;
each value typed by the tool's input schema: numbers, booleans, and arrays
or objects written as JSON), from --args-json '{...}' (both may be combined),
or else as a JSON object on stdin (none when stdin is a terminal). Secret
arguments belong on stdin: command lines are visible to other programs.
A tool in readOnlyTools or autonomousTools runs at once; any other tool
becomes a prepared action for 'pikoctl mcp approve'.
A tool whose execution.taskSupport is required (or optional, with --task)
is called as a task: always a prepared action, whatever its grant; once
approved, follow the task with 'pikoctl mcp task SERVER TASK_ID'.

Exit status: 0 completed, 1 failed (the tool reported an error, the call
was refused, or it could not be sent: "nothing was sent"), 4 approval
required (nothing was sent), 5 uncertain (the call may have had an effect:
check the server before trying again).

Ctrl-C cancels the call and waits up to 2 s for pikod's verdict: cancelled
before anything was sent (exit 1), or uncertain, with the receipt (exit 5).
A second Ctrl-C quits at once.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if byName {
				return cobra.ExactArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			params := contracts.CallParams{Task: asTask}
			if byName {
				params.Name = args[0]
			} else {
				params.Server, params.Tool = args[0], args[1]
			}
			switch {
			case len(kvs) > 0 || argsJSON != "":
				var typed map[string]any
				if len(kvs) > 0 {
					schema, err := a.toolSchema(cmd.Context(), params)
					if err != nil {
						return err
					}
					if typed, err = typedArgs(kvs, schema); err != nil {
						return err
					}
				}
				obj, err := mergeArgs(argsJSON, typed)
				if err != nil {
					return err
				}
				params.Arguments = obj
			case !a.stdinIsTerminal():
				in, err := readInput(a.stdin, "stdin")
				if err != nil {
					return err
				}
				if len(strings.TrimSpace(string(in))) > 0 {
					obj, err := jsonObjectPrivate(in, "the arguments on stdin")
					if err != nil {
						return err
					}
					params.Arguments = obj
				}
			}
			return a.runCall(cmd.Context(), contracts.MethodMCPCall, params)
		},
	}
	cmd.Flags().BoolVar(&byName, "name", false, "name the tool by its model-facing name (mcp_SERVER_TOOL)")
	cmd.Flags().StringArrayVar(&kvs, "arg", nil, "an argument NAME=VALUE, typed by the tool's input schema (repeatable)")
	cmd.Flags().StringVar(&argsJSON, "args-json", "", "the arguments as one JSON object")
	cmd.Flags().BoolVar(&asTask, "task", false, "call a tool whose taskSupport is optional as a task (always a prepared action)")
	return cmd
}

// toolSchema finds the input schema of the tool a call names, from its
// server's catalog.
func (a *app) toolSchema(ctx context.Context, p contracts.CallParams) (json.RawMessage, error) {
	if p.Name == "" {
		t, _, err := a.findTool(ctx, p.Server, p.Tool)
		return t.InputSchema, err
	}
	var st contracts.StatusResult
	if err := a.call(ctx, contracts.MethodMCPStatus, contracts.StatusParams{}, &st); err != nil {
		return nil, err
	}
	for _, s := range st.Servers {
		if !strings.HasPrefix(p.Name, "mcp_"+s.ID+"_") {
			continue
		}
		if t, _, err := a.findTool(ctx, s.ID, p.Name); err == nil {
			return t.InputSchema, nil
		}
	}
	return nil, contracts.WithHint(
		contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool, "no connected server has a tool named %q", p.Name),
		"name it as SERVER TOOL, or give the arguments with --args-json")
}

// cancelGrace is how long a cancelled call (Ctrl-C) waits for the
// daemon's verdict: sent or not.
var cancelGrace = 2 * time.Second

// runCall makes a call-shaped request (call or approve), shows progress on
// a terminal, prints the result and maps its status to the exit code.
//
// Ctrl-C (ctx ending) sends $/cancelRequest and waits up to cancelGrace
// for the daemon's verdict, which it prints: cancelled before anything was
// sent (exit 1), or uncertain with the receipt (exit 5). No verdict in time
// is uncertain too. A second Ctrl-C ends pikoctl at once (main restores
// the default action after the first).
func (a *app) runCall(ctx context.Context, method string, params any) error {
	c, err := a.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return a.cancelledUnsent()
		}
		return err
	}
	defer c.Close()
	bar := a.progressBar()
	asked := map[string]bool{}
	c.OnNotification(func(m string, raw json.RawMessage) {
		if m != contracts.NotifyMCPProgress {
			return
		}
		var p contracts.ProgressParams
		if json.Unmarshal(raw, &p) != nil {
			return
		}
		if p.ServerRequest != "" {
			// The call waits on the owner: said in full, once, whatever
			// stderr is.
			if !asked[p.ServerRequest] {
				asked[p.ServerRequest] = true
				bar.clear()
				fmt.Fprintf(a.stderr, "pikoctl: %s\n", clean(p.Message))
			}
			return
		}
		bar.update(p)
	})
	var raw json.RawMessage
	err = c.CallVerdict(ctx, cancelGrace, method, params, &raw)
	bar.done()
	cancelled := ctx.Err() != nil
	var ce *contracts.Error
	switch {
	case errors.Is(err, rpc.ErrNoVerdict):
		fmt.Fprintf(a.stderr, "pikoctl: cancelled, but pikod gave no verdict within %s: the call may or may not have been sent\n", cancelGrace)
		fmt.Fprintln(a.stderr, "uncertain: check 'pikoctl mcp actions' and the server for the effect before trying again")
		return &statusExit{code: exitUncertain, msg: "cancelled without a verdict"}
	case errors.Is(err, rpc.ErrConnectionLost):
		// The request was sent: the call may have run. Never "unreachable"
		// (exit 3), which a script could take as "start pikod and retry".
		fmt.Fprintf(a.stderr, "pikoctl: %s\n", cleanLines(err.Error()))
		fmt.Fprintln(a.stderr, "uncertain: the connection to pikod ended while the call was out; check 'pikoctl mcp actions' and the server before trying again")
		return &statusExit{code: exitUncertain, msg: "connection lost during the call"}
	case err != nil && cancelled && !errors.As(err, &ce):
		// Cancelled before the request reached pikod.
		return a.cancelledUnsent()
	case err != nil && cancelled && contracts.IsNotSent(err):
		if a.jsonOut {
			if b, merr := json.Marshal(ce); merr == nil {
				fmt.Fprintf(a.stdout, "%s\n", b)
			}
		}
		return a.cancelledUnsent()
	case err != nil && cancelled:
		// An error answer that does not say whether anything was sent.
		a.report(err, "")
		fmt.Fprintln(a.stderr, "uncertain: the call was cancelled and pikod did not say whether it was sent; check 'pikoctl mcp actions' and the server before trying again")
		return &statusExit{code: exitUncertain, msg: "cancelled with an unclear verdict"}
	case err != nil:
		return err
	}
	var res contracts.CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decoding the %s result: %w", method, err)
	}
	if cancelled && res.Status == contracts.CallFailed && res.NotSent {
		if a.jsonOut {
			_ = printRaw(a.stdout, raw)
		}
		return a.cancelledUnsent()
	}
	if a.jsonOut {
		if err := printRaw(a.stdout, raw); err != nil {
			return err
		}
	} else {
		writeCallResult(&errWriter{w: a.stdout}, &res)
	}
	switch res.Status {
	case contracts.CallCompleted, contracts.ActionRejected:
		if cancelled {
			fmt.Fprintln(a.stderr, "pikoctl: the call completed before the cancellation reached it")
		}
		return nil
	case contracts.CallApprovalRequired:
		return &statusExit{code: exitApprovalRequired, msg: "approval required: nothing was sent"}
	case contracts.CallUncertain:
		if cancelled {
			fmt.Fprintf(a.stderr, "pikoctl: cancelled after the call was sent: its outcome is unknown (receipt %s)\n", clean(res.ReceiptID))
			fmt.Fprintln(a.stderr, "uncertain: the server may have acted on it; check the server for the effect before trying again ('pikoctl mcp actions' lists approved and autonomous calls); pikod will not resend it")
		}
		return &statusExit{code: exitUncertain, msg: "the outcome is uncertain: check the server before trying again"}
	}
	if res.NotSent && a.jsonOut {
		fmt.Fprintln(a.stderr, "pikoctl: the call failed: nothing was sent")
	}
	return &statusExit{code: exitFailure, msg: "the call failed"}
}

// cancelledUnsent reports a call cancelled before anything was sent.
func (a *app) cancelledUnsent() error {
	fmt.Fprintln(a.stderr, "pikoctl: cancelled: nothing was sent")
	return &statusExit{code: exitFailure, msg: "cancelled: nothing was sent"}
}

func writeCallResult(w *errWriter, r *contracts.CallResult) {
	if r.Status == contracts.CallApprovalRequired {
		fmt.Fprintf(w, "approval required: %s on %s was prepared as action %s (nothing was sent)\n", clean(r.Tool), clean(r.Server), clean(r.ActionID))
		if r.Held != "" {
			fmt.Fprintf(w, "  held:    %s\n", clean(r.Held))
		}
		fmt.Fprintf(w, "  expires: %s\n  review:  pikoctl mcp review %s\n  approve: pikoctl mcp approve %s\n", clean(r.ExpiresAt), clean(r.ActionID), clean(r.ActionID))
		return
	}
	if r.Status == contracts.ActionRejected {
		fmt.Fprintf(w, "rejected action %s (%s on %s); nothing was sent\n", clean(r.ActionID), clean(r.Tool), clean(r.Server))
		return
	}
	var blocks []map[string]any
	_ = json.Unmarshal(r.Content, &blocks)
	for _, b := range blocks {
		switch b["type"] {
		case "text":
			s, _ := b["text"].(string)
			fmt.Fprintln(w, cleanLines(s))
		default:
			mime, _ := b["mimeType"].(string)
			data, _ := b["data"].(string)
			fmt.Fprintf(w, "[%s %s, %d bytes of base64]\n", clean(fmt.Sprint(b["type"])), clean(mime), len(data))
		}
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		fmt.Fprintf(w, "structured: %s\n", clean(string(r.StructuredContent)))
	}
	if r.OutputSchemaError != "" {
		fmt.Fprintf(w, "warning: structuredContent does not match the tool's outputSchema: %s\n", clean(r.OutputSchemaError))
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error: %s\n", cleanLines(r.Error.Message))
		if r.Error.Data != nil && r.Error.Data.Upstream != nil {
			fmt.Fprintf(w, "upstream error %d: %s\n", r.Error.Data.Upstream.Code, clean(r.Error.Data.Upstream.Message))
		}
	}
	if r.Task != nil {
		writeTask(w, r.Server, r.Task)
	}
	fmt.Fprintln(w, render.CallStatus(*r))
	if r.Truncated {
		fmt.Fprintf(w, "truncated: the whole result is source %s: pikoctl mcp source %s\n", clean(r.OriginalResultSourceID), clean(r.OriginalResultSourceID))
	}
	for _, c := range r.Captures {
		if c.SourceID == "" {
			fmt.Fprintf(w, "capture: %s not imported: %s\n", clean(c.Path), clean(c.Error))
			continue
		}
		fmt.Fprintf(w, "capture: %s (%d bytes, %s) is source %s: pikoctl mcp source %s\n", clean(c.Path), c.Size, clean(c.Encoding), clean(c.SourceID), clean(c.SourceID))
	}
	if r.Status == contracts.CallUncertain {
		fmt.Fprintln(w, "uncertain: the server may have acted on this call; check it before trying again (pikod will not resend it)")
	}
	if r.NotSent {
		fmt.Fprintln(w, "nothing was sent: the call had no effect; make it again once the server is back (an approved action must be prepared and approved again)")
	}
}

// progress draws a one-line progress bar on stderr when stderr is a
// terminal.
type progress struct {
	w io.Writer

	// mu guards the fields that follow: updates arrive on the client's
	// reader goroutine, done runs on the caller's, possibly at once (a
	// Ctrl-C ends the call while notifications are still arriving).
	mu       sync.Mutex
	last     time.Time
	shown    bool
	finished bool
}

func (a *app) progressBar() *progress {
	f, ok := a.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: f}
}

func (p *progress) update(pp contracts.ProgressParams) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || time.Since(p.last) < 50*time.Millisecond {
		return
	}
	p.last, p.shown = time.Now(), true
	msg := clip(pp.Message, 40)
	if pp.Total > 0 {
		frac := pp.Progress / pp.Total
		if frac > 1 {
			frac = 1
		}
		n := int(frac * 30)
		fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %3.0f%% %s", strings.Repeat("#", n), strings.Repeat(".", 30-n), frac*100, msg)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%v %s", pp.Progress, msg)
}

// clear wipes the bar's line, so that a full line can be written.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = true
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func (a *app) newActionsCmd() *cobra.Command {
	var state string
	var limit int
	cmd := &cobra.Command{
		Use:   "actions",
		Short: "List prepared and past actions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res contracts.ActionsListResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPActionsList, contracts.ActionsListParams{State: state, Limit: limit}, &res); printed || err != nil {
				return err
			}
			w := a.tableOut()
			if len(res.Actions) == 0 {
				fmt.Fprintln(w, "no actions")
				return w.err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTION\tSTATE\tSERVER\tTOOL\tCALLER\tCREATED\tADVICE")
			for _, x := range res.Actions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(x.ID), cell(render.ActionState(x)), cell(x.Server), cell(w.clip(x.Tool, 30)),
					cell(w.caller(x.Caller)), cell(w.when(x.CreatedAt)), cell(w.clip(x.Advice, 70)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return w.err
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only actions in this state (prepared, uncertain, ...)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many")
	return cmd
}

func (a *app) review(ctx context.Context, id string) (*contracts.ActionReview, json.RawMessage, error) {
	var raw json.RawMessage
	err := a.call(ctx, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: id}, &raw)
	if err != nil && len(id) < actionIDLen && (errors.Is(err, contracts.ErrNotFound) || errors.Is(err, contracts.ErrInvalidArgument)) {
		// Not a whole id: a unique prefix of one will do.
		full, rerr := a.resolveActionID(ctx, id)
		if rerr != nil {
			return nil, nil, rerr
		}
		err = a.call(ctx, contracts.MethodMCPActionsReview, contracts.ActionParams{ActionID: full}, &raw)
	}
	if err != nil {
		return nil, nil, err
	}
	var r contracts.ActionReview
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, fmt.Errorf("decoding the review: %w", err)
	}
	return &r, raw, nil
}

// writeReview shows exactly what approving would send (render.Review:
// the console shows the same lines).
func writeReview(w *errWriter, r *contracts.ActionReview) {
	for _, line := range render.Review(*r) {
		fmt.Fprintln(w, line)
	}
}

func (a *app) newReviewCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "review ACTION",
		Short: "Show exactly what approving an action would send",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, raw, err := a.review(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			w := &errWriter{w: a.stdout}
			writeReview(w, r)
			return w.err
		},
	}
}

func (a *app) newApproveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "approve ACTION",
		Short: "Review an action and, if you type its digest's last 6 characters at the terminal, execute it",
		Long: `approve shows the action and asks, on the terminal (/dev/tty, after
discarding anything typed ahead), for the last 6 characters of the action's
digest; anything else approves nothing. When an owner approval passphrase is
set, it is asked too, masked. Approving is terminal-only: run it yourself in
your terminal, with the terminal as stdin; pikod refuses callers that have no
controlling terminal, whose stdin is not that terminal, whose terminal
belongs to another user, or that are not in its foreground job. The call then
runs once, on the connection it was approved for, with an mcp_approved
receipt; exit status as for 'pikoctl mcp call'. Ctrl-C at a question
approves nothing ("cancelled: nothing was approved", exit 130).`,
		Args: cobra.ExactArgs(1),
		RunE: onCancel("nothing was approved", func(cmd *cobra.Command, args []string) error {
			hint := "run 'pikoctl mcp approve " + args[0] + "' yourself in your terminal"
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: approving needs you typing at the terminal, not a pipe"), hint)
			}
			tty, err := a.openTTY()
			if err != nil {
				return contracts.WithHint(err, hint)
			}
			defer tty.Close()
			r, _, err := a.review(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := &errWriter{w: a.stderr}
			writeReview(w, r)
			if r.State != contracts.ActionPrepared {
				// Refused before any question: the daemon checked the
				// action against the current server when reviewing it.
				msg := fmt.Sprintf("action %s is %s and cannot be approved", clean(r.ID), clean(r.State))
				if r.Reason != "" {
					msg += ": " + clean(r.Reason)
				}
				return errors.New(msg)
			}
			gate, err := a.approvalGate(cmd.Context())
			if err != nil {
				return err
			}
			suffix := digestSuffix(r.Digest)
			params := contracts.ApproveParams{ActionID: r.ID, Digest: r.Digest, Decision: contracts.DecisionApprove}
			question := fmt.Sprintf("\nTo approve this call of %s on %s asked by %s, type %s (the last %d characters of its digest).\nAnything else approves nothing: ",
				clean(r.ToolName), clean(r.Server), clip(r.Caller.Short(), 60), suffix, len(suffix))
			offer := !gate.PassphraseSet
			for {
				q := question
				if offer {
					q = noPassphraseOffer + q
				}
				answer, err := tty.Ask(q)
				if err != nil {
					return err
				}
				if offer && strings.EqualFold(strings.TrimSpace(answer), "p") {
					// The offer taken: set it now, then approve with it.
					offer = false
					if params.Passphrase, err = a.setPassphrase(cmd.Context(), tty); err != nil {
						return err
					}
					gate.PassphraseSet = true
					continue
				}
				if suffix == "" || !strings.EqualFold(strings.TrimSpace(answer), suffix) {
					fmt.Fprintln(a.stderr, "not approved: nothing was sent (the action stays prepared until it expires or is rejected)")
					return &statusExit{code: exitFailure, msg: "not approved"}
				}
				break
			}
			if gate.PassphraseSet && params.Passphrase == "" {
				if params.Passphrase, err = askPassphrase(tty, "approval passphrase: "); err != nil {
					return err
				}
			}
			err = a.runCall(cmd.Context(), contracts.MethodMCPActionsApprove, params)
			var ce *contracts.Error
			if params.Passphrase == "" && errors.As(err, &ce) && ce.Reason() == contracts.ReasonPassphraseRequired {
				// Set since we asked: the refusal came before anything ran.
				if params.Passphrase, err = askPassphrase(tty, "an approval passphrase is set; approval passphrase: "); err != nil {
					return err
				}
				err = a.runCall(cmd.Context(), contracts.MethodMCPActionsApprove, params)
			}
			return err
		}),
	}
}

// noPassphraseOffer comes before the digest question while no approval
// passphrase is set: the terminal checks alone cannot tell the owner from
// a child of a program in the terminal's foreground job (an agent) that
// was handed the terminal as its stdin (</dev/pts/N), so pikoctl offers to
// set one, there and then.
const noPassphraseOffer = "\nNo approval passphrase is set. Without one, pikod cannot tell you from a program running in this terminal's " +
	"foreground (an agent) that hands this terminal to a child as its stdin: such a child passes every terminal check. " +
	"Type p to set a passphrase now (as 'pikoctl approvals passphrase set' does), then approve with it.\n"

// setPassphrase sets the owner approval passphrase at the terminal (as
// 'pikoctl approvals passphrase set') and returns it.
func (a *app) setPassphrase(ctx context.Context, tty ttyIO) (string, error) {
	pass, err := askNewPassphrase(tty)
	if err != nil {
		return "", err
	}
	var res contracts.PassphraseResult
	if err := a.call(ctx, contracts.MethodPassphrase, contracts.PassphraseParams{Op: contracts.PassphraseOpSet, NewPassphrase: pass}, &res); err != nil {
		return "", fmt.Errorf("setting the approval passphrase: %w", err)
	}
	fmt.Fprintln(a.stderr, "approval passphrase set: terminal-only commands now ask for it")
	return pass, nil
}

// digestSuffix is what the owner types back to approve: the last 6
// characters of the digest (shown in full in the review).
func digestSuffix(digest string) string {
	d := clean(digest)
	if len(d) < 6 {
		return ""
	}
	return d[len(d)-6:]
}

// askPassphrase asks for a passphrase, masked. An empty answer sends
// nothing.
func askPassphrase(tty ttyIO, prompt string) (string, error) {
	p, err := tty.AskHidden(prompt)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errors.New("no passphrase typed: nothing was sent")
	}
	return p, nil
}

// approvalGate reads the owner approval gate from status, and refuses at
// once while terminal-only methods are locked.
func (a *app) approvalGate(ctx context.Context) (contracts.ApprovalsStatus, error) {
	var st contracts.StatusResult
	if err := a.call(ctx, contracts.MethodMCPStatus, contracts.StatusParams{}, &st); err != nil {
		return contracts.ApprovalsStatus{}, err
	}
	if st.Approvals.LockedUntil != "" {
		return st.Approvals, contracts.WithHint(
			fmt.Errorf("approvals are locked until %s after %d wrong approval passphrases: nothing was asked or sent",
				clean(st.Approvals.LockedUntil), contracts.PassphraseMaxFailures),
			"wait until then and try again")
	}
	return st.Approvals, nil
}

func (a *app) newRejectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reject ACTION",
		Short: "Reject a prepared action (nothing is sent)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, _, err := a.review(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.runCall(cmd.Context(), contracts.MethodMCPActionsApprove,
				contracts.ApproveParams{ActionID: r.ID, Digest: r.Digest, Decision: contracts.DecisionReject})
		},
	}
}

func (a *app) newSourceCmd() *cobra.Command {
	var offset, length int64
	cmd := &cobra.Command{
		Use:   "source SOURCE_ID",
		Short: "Print a retained original result (all of it, or one window)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			all := length == 0
			for {
				var res contracts.SourceReadResult
				if err := c.Call(cmd.Context(), contracts.MethodSourceRead,
					contracts.SourceReadParams{SourceID: args[0], Offset: offset, Length: length}, &res); err != nil {
					return err
				}
				if a.jsonOut {
					b, _ := json.Marshal(res)
					fmt.Fprintf(a.stdout, "%s\n", b)
				} else if _, err := io.WriteString(a.stdout, res.Text); err != nil {
					return err
				}
				if !all || res.EOF || res.Text == "" {
					if !a.jsonOut {
						fmt.Fprintln(a.stdout)
					}
					return nil
				}
				offset += int64(len([]rune(res.Text)))
			}
		},
	}
	cmd.Flags().Int64Var(&offset, "offset", 0, "first character")
	cmd.Flags().Int64Var(&length, "length", 0, "characters to read (0: everything, in windows)")
	return cmd
}

// actionIDLen is the length of a whole action id ("act_" and 26 base32
// characters).
const actionIDLen = 30

// resolveActionID turns a unique prefix of an action id (with or without
// "act_") into the whole id, looking through the newest 1000 actions; a
// whole id is returned as it is.
func (a *app) resolveActionID(ctx context.Context, id string) (string, error) {
	if len(id) >= actionIDLen || id == "" {
		return id, nil
	}
	prefix := id
	if !strings.HasPrefix(prefix, "act_") {
		prefix = "act_" + prefix
	}
	var list contracts.ActionsListResult
	if err := a.call(ctx, contracts.MethodMCPActionsList, contracts.ActionsListParams{Limit: 1000}, &list); err != nil {
		return "", err
	}
	var match []string
	for _, x := range list.Actions {
		if strings.HasPrefix(x.ID, prefix) {
			match = append(match, x.ID)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownAction, "no action id starts with %q", id),
			"'pikoctl mcp actions' lists them")
	}
	n := len(match)
	if n > 5 {
		match = append(match[:5], "...")
	}
	return "", contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAmbiguousAction,
		"%q is the start of %d action ids: %s", id, n, strings.Join(match, ", ")), "type more of the id")
}
