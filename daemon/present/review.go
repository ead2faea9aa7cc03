package present

import (
	"bytes"
	"encoding/json"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// Review describes an action for the owner: exactly what approving sends,
// with every string made safe to show.
func Review(a approvals.Action) contracts.ActionReview {
	sum := Summary(a)
	sum.Server = contracts.SafeText(sum.Server, contracts.Exact, 0)
	sum.Tool = contracts.SafeText(sum.Tool, contracts.Exact, 0)
	sum.Reason = contracts.SafeText(sum.Reason, contracts.OneLine, 0)
	c := &sum.Caller
	c.Executable = contracts.SafeText(c.Executable, contracts.OneLine, 0)
	c.Via = contracts.SafeText(c.Via, contracts.OneLine, 0)
	c.Client.Name = contracts.SafeText(c.Client.Name, contracts.OneLine, 0)
	c.Client.Version = contracts.SafeText(c.Client.Version, contracts.OneLine, 0)
	var indented bytes.Buffer
	switch {
	case a.ArgumentsPruned:
		indented.WriteString("(dropped by retention: the action ended longer ago than retention.actions.maxAge; its digest still binds them)")
	case json.Indent(&indented, a.Arguments, "", "  ") != nil:
		indented.Reset()
		indented.Write(a.Arguments)
	}
	return contracts.ActionReview{
		ActionSummary:   sum,
		ToolName:        contracts.SafeText(a.Tool, contracts.Exact, 0),
		ToolDescription: contracts.SafeText(a.ToolDescription, contracts.Lines, 0),
		Arguments:       a.Arguments,
		ArgumentsText:   contracts.SafeText(indented.String(), contracts.Lines, 0),
		Fingerprints:    a.Fingerprints,
		Digest:          a.Digest,
	}
}
