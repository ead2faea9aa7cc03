package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pikod/pikod/cmd/pikoctl/tui"
	"github.com/pikod/pikod/contracts"
)

func (a *app) newTUICmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Open the owner's console: servers, catalog, actions, settings and events, live",
		Long: `tui opens a full-screen console on pikod: the servers with their state,
protocol, tool count and last error (connect, disconnect, reconnect, pause
and resume, OAuth sign-in and sign-out, credentials entered in a masked
form, add and remove), every connected server's tools, resources, templates
and prompts, with ranked search of the tools (BM25, as 'pikoctl mcp
search'), a schema view, grants (read, autonomous, select, revoke,
deselect) and calls with their progress, prepared actions with review,
approve and reject, the settings (edited as strict JSON in $VISUAL or
$EDITOR, checked, and saved with the revision check), a log of events
(extensions.mcp.watch), and the requests servers send you (elicitation,
sampling), read whole and answered or declined. Every settings change is
checked by pikod first (a dry run that lists what it widens) and saved only
when you press y, with the revision check.

Approving hands the terminal to 'pikoctl mcp approve', which asks for the
digest's last 6 characters (and the approval passphrase, when set) exactly
as it does on its own; answering a request hands it to 'pikoctl mcp
respond' (declining to 'pikoctl mcp respond --decline') the same way, and
resuming a paused server to 'pikoctl mcp resume'. Press ? for every key.
NO_COLOR turns colour off.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not a terminal: the console needs one"),
					"run 'pikoctl tui' in your terminal; scripts use the other commands")
			}
			instance, socket, err := a.target()
			if err != nil {
				return err
			}
			c, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			self, err := a.executable()
			if err != nil {
				c.Close()
				return err
			}
			editor := a.getenv("VISUAL")
			if editor == "" {
				editor = a.getenv("EDITOR")
			}
			// Ctrl-C is a key inside the console; a SIGINT arrives only
			// while a command it runs has the terminal (approve, the
			// editor), and is that command's. SIGTERM and SIGHUP end the
			// console.
			ctx, stop := signal.NotifyContext(context.WithoutCancel(cmd.Context()), syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return tui.Run(ctx, tui.Options{
				Client:   c,
				Instance: instance,
				Approve: func(id string) *exec.Cmd {
					ap := exec.Command(self, "--socket", socket, "mcp", "approve", id)
					ap.Env = os.Environ()
					return ap
				},
				Respond: func(id string, decline bool) *exec.Cmd {
					args := []string{"--socket", socket, "mcp", "respond", id}
					if decline {
						args = append(args, "--decline")
					}
					rc := exec.Command(self, args...)
					rc.Env = os.Environ()
					return rc
				},
				Resume: func(server string) *exec.Cmd {
					rc := exec.Command(self, "--socket", socket, "mcp", "resume", server)
					rc.Env = os.Environ()
					return rc
				},
				Editor:  editor,
				NoColor: a.getenv("NO_COLOR") != "",
			})
		},
	}
}
