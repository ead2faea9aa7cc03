package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/spf13/cobra"
)

// app is one run of pikoctl: its streams, its view of the environment and
// the global flags. Tests build their own with fake streams and environment.
type app struct {
	stdin           io.Reader
	stdout, stderr  io.Writer
	getenv          contracts.Getenv
	stdinIsTerminal func() bool
	// openTTY opens the controlling terminal (/dev/tty) for answers that
	// must come from the person there.
	openTTY    func() (ttyIO, error)
	executable func() (string, error)
	lookPath   func(string) (string, error)
	goos       string
	uid        int

	// Global flags.
	instanceFlag string
	socketFlag   string
	jsonOut      bool
	wide         bool
	// termWidth is stdout's terminal width, 0 when it is not a terminal
	// (nil: never a terminal).
	termWidth func() int

	// started is set once cobra has parsed flags and validated arguments, so
	// any error cobra returned before it is a usage error.
	started bool
}

// usageError is a mistake in how pikoctl was invoked: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// run executes pikoctl with args and returns the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	if args == nil {
		// cobra reads os.Args when given nil.
		args = []string{}
	}
	root := a.newRootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if !a.started {
		err = &usageError{err: err}
	}
	path := root.CommandPath()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return a.report(err, path)
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "pikoctl",
		Short:         "Control pikod, the MCP server supervisor",
		Long:          "pikoctl talks to pikod over its private Unix socket.\n\n" + exitCodeHelp(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			a.started = true
			return nil
		},
	}
	// 'pikoctl completion bash|zsh|fish|powershell' prints a script; the
	// scripts complete server ids, tool names and action ids by asking
	// the daemon (complete.go).
	root.CompletionOptions.HiddenDefaultCmd = false
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })

	pf := root.PersistentFlags()
	pf.StringVar(&a.instanceFlag, "instance", "", "pikod instance (env "+contracts.EnvInstance+", default \""+contracts.DefaultInstance+"\")")
	pf.StringVar(&a.socketFlag, "socket", "", "owner socket path (env "+contracts.EnvSocket+"; default derived from the instance)")
	pf.BoolVar(&a.jsonOut, "json", false, "print results (and daemon errors) as JSON on stdout")
	pf.BoolVar(&a.wide, "wide", false, "tables: show every column whole and times in full (default: fit the terminal's width, ages like \"3m ago\")")

	root.AddCommand(
		a.newVersionCmd(),
		a.newRPCCmd(),
		a.newMCPCmd(),
		a.newServiceCmd(),
		a.newVaultCmd(),
		a.newApprovalsCmd(),
		a.newTUICmd(),
		a.newDoctorCmd(),
		a.newDocsCmd(),
	)
	a.addCompletions(root)
	return root
}

// groupCmd returns a command that only holds subcommands: without arguments
// it prints its help, with an unknown one it is a usage error (cobra itself
// checks unknown subcommands only at the root).
func groupCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

// target resolves the instance and its socket from the flags and the
// environment.
func (a *app) target() (instance, socket string, err error) {
	instance, err = contracts.ResolveInstance(a.instanceFlag, a.getenv)
	if err != nil {
		// A bad --instance or PIKO_INSTANCE is a usage mistake.
		return "", "", &usageError{err: err}
	}
	return instance, contracts.SocketPath(instance, a.socketFlag, a.getenv), nil
}

// connect dials the daemon. An unreachable daemon yields an error that
// names the socket, wraps rpc.ErrUnreachable and carries a hint on how to
// start pikod.
func (a *app) connect(ctx context.Context) (*rpc.Client, error) {
	instance, socket, err := a.target()
	if err != nil {
		return nil, err
	}
	c, err := rpc.Dial(ctx, socket)
	if err != nil {
		if !strings.Contains(err.Error(), socket) {
			err = fmt.Errorf("connecting to pikod at %s: %w", socket, err)
		}
		return nil, contracts.WithHint(err, a.startHint(instance, socket))
	}
	return c, nil
}

// warnAPI warns on stderr when pikod speaks another API than this
// pikoctl, saying what to upgrade (rpc.APIAdvice). Commands that ask
// system.hello anyway call it; on every other connection the rpc client
// asks when the daemon refuses a method or its params (rpc.Client).
func (a *app) warnAPI(hello contracts.HelloResult) {
	if advice := rpc.APIAdvice(hello); advice != "" {
		fmt.Fprintf(a.stderr, "pikoctl: warning: %s\n", clean(advice))
	}
}

// startHint says how to start pikod for instance and socket.
func (a *app) startHint(instance, socket string) string {
	start := "pikod --instance " + instance
	if a.socketFlag != "" || a.getenv(contracts.EnvSocket) != "" {
		start += " --socket " + socket
	}
	return "start it with 'make run' or '" + start + "' (or as a service: 'pikoctl service install')"
}

// call makes one request on a fresh connection.
func (a *app) call(ctx context.Context, method string, params, result any) error {
	c, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, result)
}

// callOrPrint calls method. With --json it prints the result as the
// daemon sent it and reports printed; otherwise it decodes the result into
// res for the caller to show.
func (a *app) callOrPrint(ctx context.Context, method string, params, res any) (printed bool, err error) {
	var raw json.RawMessage
	if err := a.call(ctx, method, params, &raw); err != nil {
		return false, err
	}
	if a.jsonOut {
		return true, printRaw(a.stdout, raw)
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return false, fmt.Errorf("decoding the %s result: %w", method, err)
	}
	return false, nil
}

// report prints err to stderr (and, with --json, a daemon error object to
// stdout) and returns the exit code it maps to.
func (a *app) report(err error, cmdPath string) int {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.stderr, "pikoctl: %s\n", ue.Error())
		fmt.Fprintf(a.stderr, "run '%s --help' for usage\n", cmdPath)
		return exitUsage
	}

	var se *statusExit
	if errors.As(err, &se) {
		return se.code
	}

	if errors.Is(err, errInterrupted) {
		// Ctrl-C at a prompt: said once, on a line of its own (the
		// terminal shows ^C after the question).
		msg := "cancelled: nothing was sent"
		var pc *promptCancelled
		if errors.As(err, &pc) {
			msg = pc.Error()
		}
		fmt.Fprintf(a.stderr, "\npikoctl: %s\n", cleanLines(msg))
		return exitInterrupted
	}

	var ce *contracts.Error
	if errors.As(err, &ce) {
		if a.jsonOut {
			if b, merr := json.Marshal(ce); merr == nil {
				fmt.Fprintf(a.stdout, "%s\n", b)
			}
		}
		if ce.Data != nil && len(ce.Data.Problems) > 0 {
			// The message repeats the problems; a headline from the reason
			// and one line per problem reads better.
			head := strings.ReplaceAll(ce.Reason(), "_", " ")
			if head == "" {
				head = "invalid input"
			}
			fmt.Fprintf(a.stderr, "pikoctl: %s:\n", head)
			for _, p := range ce.Data.Problems {
				fmt.Fprintf(a.stderr, "  - %s\n", clean(p.Error()))
			}
		} else {
			fmt.Fprintf(a.stderr, "pikoctl: %s\n", cleanLines(ce.Message))
		}
		if ce.Data != nil && ce.Data.Upstream != nil {
			fmt.Fprintf(a.stderr, "upstream error %d: %s\n", ce.Data.Upstream.Code, clean(ce.Data.Upstream.Message))
		}
		if ce.Data != nil && ce.Data.Hint != "" {
			fmt.Fprintf(a.stderr, "hint: %s\n", clean(ce.Data.Hint))
		}
		if ce.Data != nil && ce.Data.NotSent {
			fmt.Fprintln(a.stderr, "nothing was sent: the call had no effect")
		}
		return exitFailure
	}

	if errors.Is(err, context.Canceled) {
		// Ctrl-C before anything reached the daemon: never a bare
		// "context canceled".
		fmt.Fprintln(a.stderr, "pikoctl: cancelled")
		return exitFailure
	}

	fmt.Fprintf(a.stderr, "pikoctl: %s\n", cleanLines(err.Error()))
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(a.stderr, "hint: %s\n", h.Hint())
	}
	if errors.Is(err, rpc.ErrUnreachable) {
		return exitUnreachable
	}
	return exitFailure
}
