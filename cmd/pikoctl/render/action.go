package render

import (
	"fmt"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// ActionState is an action's state as the owner reads it: a failed action
// that never reached the server is "failed (not sent)".
func ActionState(x contracts.ActionSummary) string {
	if x.State == contracts.ActionFailed && x.NotSent {
		return safe(x.State + " (not sent)")
	}
	return safe(x.State)
}

// ReviewLabelWidth is the width of a review line's label ("asked by:  "):
// a reader that wraps a line indents what follows by it.
const ReviewLabelWidth = 11

// Review is exactly what approving r would send, a line each, as pikoctl
// mcp review prints it and the console shows it: the action, who asked
// (before anything else the owner weighs: the declared names are the
// caller's claim and say so), what the call sends, the arguments byte for
// byte (each line indented by two spaces), what the approval is bound
// to, and the digest whose end the owner types. The daemon already made
// every string safe for a terminal; each is made safe again here. Only
// the tool's description may span several lines.
func Review(r contracts.ActionReview) []string {
	out := []string{
		fmt.Sprintf("action:    %s (%s)", safe(r.ID), ActionState(r.ActionSummary)),
		"server:    " + safe(r.Server),
		"tool:      " + safe(r.ToolName),
		"asked by:  " + safe(r.Caller.Describe()),
	}
	switch r.Kind {
	case contracts.ReceiptTaskCreate:
		out = append(out, "sends:     tools/call as a task (task-augmented): the server creates a task that runs on after the call")
	case contracts.ReceiptTaskCancel:
		out = append(out, "sends:     tasks/cancel: asks the server to cancel the task below")
	}
	if r.ToolDescription != "" {
		out = append(out, "described: "+contracts.SafeText(r.ToolDescription, contracts.Lines, 0))
	}
	out = append(out, "created:   "+safe(r.CreatedAt), "expires:   "+safe(r.ExpiresAt), "arguments (sent exactly as shown):")
	for _, line := range strings.Split(r.ArgumentsText, "\n") {
		out = append(out, "  "+safe(line))
	}
	out = append(out,
		fmt.Sprintf("bound to:  settings %s, connection %d, credentials %d, tool definition %s",
			clip12(r.Fingerprints.Settings), r.Fingerprints.ConnectionGeneration, r.Fingerprints.CredentialGeneration, clip12(r.Fingerprints.Tool)),
		"digest:    "+safe(r.Digest))
	if r.Reason != "" {
		out = append(out, "reason:    "+safe(r.Reason))
	}
	if r.Advice != "" {
		out = append(out, "advice:    "+safe(r.Advice))
	}
	return out
}

// clip12 is a fingerprint cut to its first 12 characters.
func clip12(s string) string { return contracts.SafeText(s, contracts.OneLine, 12) }

// CallStatus is the status line of a call's outcome: its status, whether
// the tool reported an error or nothing was sent, and the receipt it left
// with the receipt's kind.
func CallStatus(r contracts.CallResult) string {
	line := "status: " + safe(r.Status)
	if r.IsError {
		line += " (the tool reported an error)"
	}
	if r.NotSent {
		line += " (not sent)"
	}
	if r.ReceiptID != "" {
		line += ", receipt " + safe(r.ReceiptID) + " (" + safe(r.ReceiptKind) + ")"
	}
	return line
}
