package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newPauseCmds() []*cobra.Command {
	return []*cobra.Command{a.newPauseCmd(), a.newResumeCmd()}
}

func (a *app) newPauseCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "pause SERVER",
		Short: "Hand a server over to the owner: hold every new call to it as a prepared action",
		Long: `pause holds every new tool call to SERVER, granted or not, as a prepared action
for the owner to approve, and answers each with why ("server ... is paused").
Anyone who can reach the socket may pause (an agent handing over to you);
only the owner at a terminal can resume ('pikoctl mcp resume SERVER').
The pause survives a daemon restart.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res contracts.PauseResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPPause, contracts.PauseParams{Server: args[0], Reason: reason}, &res); printed || err != nil {
				return err
			}
			since := ""
			if res.Pause != nil {
				since = " since " + clean(res.Pause.Since)
			}
			what := "paused"
			if !res.Changed {
				what = "already paused"
			}
			fmt.Fprintf(a.stdout, "%s %s%s: every new call is held for the owner; resume with 'pikoctl mcp resume %s'\n", clean(res.Server), what, since, clean(res.Server))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown with every held call; at most 200 bytes)")
	return cmd
}

func (a *app) newResumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume SERVER",
		Short: "End a pause: calls to the server run under their grants again (terminal only)",
		Long: `resume ends the pause of SERVER. It needs you at an interactive terminal (the
daemon checks the same as for approve) and asks you to type the server id,
and the approval passphrase when one is set. Actions held during the pause
stay prepared: approve or reject them with 'pikoctl mcp approve'.`,
		Args: cobra.ExactArgs(1),
		RunE: onCancel("nothing was sent: the server stays paused", func(cmd *cobra.Command, args []string) error {
			server := args[0]
			hint := "run 'pikoctl mcp resume " + server + "' yourself in your terminal"
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: resuming needs you typing at the terminal, not a pipe"), hint)
			}
			tty, err := a.openTTY()
			if err != nil {
				return contracts.WithHint(err, hint)
			}
			defer tty.Close()
			gate, err := a.approvalGate(cmd.Context())
			if err != nil {
				return err
			}
			answer, err := tty.Ask(fmt.Sprintf("Resuming lets calls to %s run under their grants again.\nType the server id (%s) to resume, anything else to keep it paused: ", clean(server), clean(server)))
			if err != nil {
				return err
			}
			if strings.TrimSpace(answer) != server {
				fmt.Fprintln(a.stderr, "not resumed: the server stays paused")
				return &statusExit{code: exitFailure, msg: "not resumed"}
			}
			params := contracts.ResumeParams{Server: server}
			if gate.PassphraseSet {
				if params.Passphrase, err = askPassphrase(tty, "approval passphrase: "); err != nil {
					return err
				}
			}
			var res contracts.PauseResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPResume, params, &res); printed || err != nil {
				return err
			}
			if res.Changed {
				fmt.Fprintf(a.stdout, "resumed %s: calls run under their grants again\n", clean(res.Server))
			} else {
				fmt.Fprintf(a.stdout, "%s was not paused\n", clean(res.Server))
			}
			return nil
		}),
	}
}
