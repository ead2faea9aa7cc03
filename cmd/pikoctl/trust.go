package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newTrustCmds() []*cobra.Command {
	return []*cobra.Command{a.newDiffCmd(), a.newTrustCmd()}
}

func (a *app) trustDiff(ctx context.Context, server, tool string) (*contracts.TrustResult, json.RawMessage, error) {
	var raw json.RawMessage
	params := contracts.TrustParams{Server: server, Tool: tool, Op: contracts.TrustDiff}
	if err := a.call(ctx, contracts.MethodMCPTrust, params, &raw); err != nil {
		return nil, nil, err
	}
	var res contracts.TrustResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, nil, fmt.Errorf("decoding the %s result: %w", contracts.MethodMCPTrust, err)
	}
	return &res, raw, nil
}

func (a *app) newDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff SERVER [TOOL]",
		Short: "Show how granted tools' definitions changed since their grants were pinned",
		Long: `diff shows, for each tool in readOnlyTools or autonomousTools whose definition
the server changed (or for TOOL alone), the definition its grant covers and
the current one, as a line diff. Such a grant is suspended (calls become
prepared actions) until 'pikoctl mcp trust' accepts the new definition.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tool := ""
			if len(args) == 2 {
				tool = args[1]
			}
			res, raw, err := a.trustDiff(cmd.Context(), args[0], tool)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			w := &errWriter{w: a.stdout}
			if len(res.Tools) == 0 {
				fmt.Fprintf(w, "no granted tool of %s has a changed definition\n", clean(res.Server))
				return w.err
			}
			for i := range res.Tools {
				writeToolChange(w, res.Server, &res.Tools[i])
			}
			return w.err
		},
	}
}

func (a *app) newTrustCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "trust SERVER [TOOL]",
		Short: "Accept the changed definitions of granted tools, restoring their grants",
		Long: `trust shows the changed definitions of a server's granted tools (or of TOOL
alone), as 'pikoctl mcp diff' does, and asks you to type the server id to
accept them. Accepting pins the current definitions: their readOnlyTools or
autonomousTools grants apply again. It needs you at an interactive terminal
(the daemon checks too); anything but the server id accepts nothing.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: onCancel("nothing was accepted", func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], ""
			if len(args) == 2 {
				tool = args[1]
			}
			hint := "run 'pikoctl mcp trust " + strings.Join(args, " ") + "' yourself in your terminal"
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: trusting needs you typing at the terminal, not a pipe"), hint)
			}
			tty, err := a.openTTY()
			if err != nil {
				return contracts.WithHint(err, hint)
			}
			defer tty.Close()
			res, _, err := a.trustDiff(cmd.Context(), server, tool)
			if err != nil {
				return err
			}
			var changed []contracts.ToolChange
			for _, c := range res.Tools {
				if c.Pin == contracts.PinChanged {
					changed = append(changed, c)
				}
			}
			if len(changed) == 0 {
				what := "no granted tool of " + clean(server) + " has a changed definition"
				if tool != "" {
					what = "the definition of " + clean(tool) + " is the one its grant covers"
				}
				fmt.Fprintf(a.stderr, "%s; nothing to trust\n", what)
				return nil
			}
			w := &errWriter{w: a.stderr}
			for i := range changed {
				writeToolChange(w, server, &changed[i])
			}
			if w.err != nil {
				return w.err
			}
			gate, err := a.approvalGate(cmd.Context())
			if err != nil {
				return err
			}
			answer, err := tty.Ask(fmt.Sprintf("\nAccepting pins these %d definition(s) and restores their grants.\nType the server id (%s) to accept, anything else to keep them suspended: ",
				len(changed), clean(server)))
			if err != nil {
				return err
			}
			if strings.TrimSpace(answer) != server {
				fmt.Fprintln(a.stderr, "not accepted: the grants stay suspended")
				return &statusExit{code: exitFailure, msg: "not accepted"}
			}
			digests := map[string]string{}
			for _, c := range changed {
				digests[c.Tool] = c.CurrentDigest
			}
			params := contracts.TrustParams{Server: server, Tool: tool, Op: contracts.TrustAccept, Digests: digests}
			if gate.PassphraseSet {
				if params.Passphrase, err = askPassphrase(tty, "approval passphrase: "); err != nil {
					return err
				}
			}
			var acc contracts.TrustResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPTrust, params, &acc); printed || err != nil {
				return err
			}
			out := &errWriter{w: a.stdout}
			for _, c := range acc.Tools {
				fmt.Fprintf(out, "trusted %s on %s: grant %s restored (definition %s)\n", clean(c.Tool), clean(acc.Server), clean(c.Grant), short(c.CurrentDigest))
			}
			return out.err
		}),
	}
}

// writeToolChange prints one granted tool's pinned and current
// definitions and their line diff.
func writeToolChange(w *errWriter, server string, c *contracts.ToolChange) {
	state := "definition changed: grant " + clean(c.Grant) + " suspended"
	if c.Pin != contracts.PinChanged {
		state = "definition pinned: grant " + clean(c.Grant) + " applies"
	}
	fmt.Fprintf(w, "%s on %s: %s\n", clean(c.Tool), clean(server), state)
	pinned := "pinned:  " + short(c.PinnedDigest)
	if c.PinnedAt != "" {
		pinned += " at " + clean(c.PinnedAt) + " by " + clean(c.PinnedBy)
	}
	fmt.Fprintf(w, "  %s\n  current: %s\n", pinned, short(c.CurrentDigest))
	if c.Pin != contracts.PinChanged {
		return
	}
	old, cur := definitionLines(c.Pinned), definitionLines(c.Current)
	fmt.Fprintln(w, "--- pinned")
	fmt.Fprintln(w, "+++ current")
	for _, l := range lineDiff(old, cur) {
		fmt.Fprintln(w, clean(l))
	}
	fmt.Fprintln(w)
}

// definitionLines renders a definition as indented JSON with sorted keys,
// one line per member, so a diff shows which parts changed. Strings stay
// JSON-escaped: nothing a server wrote can reach the terminal raw.
func definitionLines(raw json.RawMessage) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []string{"(none)"}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []string{string(raw)}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return []string{string(raw)}
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// lineDiff returns a unified-style diff of a and b: every line, prefixed
// with "  " (both), "- " (only a) or "+ " (only b), from a longest common
// subsequence. Definitions are small, so the quadratic table is fine; past
// 2,000 lines each it prints both whole instead.
func lineDiff(a, b []string) []string {
	if len(a) > 2000 || len(b) > 2000 {
		var out []string
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, "- "+a[i])
	}
	for ; j < len(b); j++ {
		out = append(out, "+ "+b[j])
	}
	return out
}
