package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/term"
)

// version is the build's version, set with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, all of them: exitCodes below says what each means.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
	// exitApprovalRequired and exitUncertain end calls that did not
	// complete: prepared as an action (nothing was sent), or sent with an
	// unknown outcome.
	exitApprovalRequired = 4
	exitUncertain        = 5
	// exitInterrupted is a shell's status for a process ended by SIGINT:
	// Ctrl-C at a prompt, which approved, sent and saved nothing.
	exitInterrupted = 130
)

// exitCodes is the one table of pikoctl's exit codes: 'pikoctl --help'
// prints it and docs/reference/exit-codes.md is generated from it.
var exitCodes = []struct {
	code int
	what string
}{
	{exitOK, "success"},
	{exitFailure, "failure: the daemon answered with an error, the input was wrong, a call failed, or you declined"},
	{exitUsage, "usage error: unknown command or flag, wrong arguments"},
	{exitUnreachable, "pikod is unreachable (the message names the socket and how to start pikod)"},
	{exitApprovalRequired, "approval required: the call was prepared as an action; nothing was sent"},
	{exitUncertain, "uncertain: the call may have had an effect; check before trying again"},
	{exitInterrupted, "cancelled at a prompt (Ctrl-C): nothing was approved, sent or saved (the message says which)"},
}

// exitCodeHelp renders exitCodes for --help.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", e.code, e.what)
	}
	return strings.TrimRight(b.String(), "\n")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal cancels the call, restore the default action so
	// a second one ends pikoctl at once even if the daemon does not answer.
	context.AfterFunc(ctx, stop)
	a := &app{
		stdin:           os.Stdin,
		stdout:          os.Stdout,
		stderr:          os.Stderr,
		getenv:          os.Getenv,
		stdinIsTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
		openTTY:         func() (ttyIO, error) { return openDevTTY(ctx) },
		executable:      os.Executable,
		lookPath:        exec.LookPath,
		goos:            runtime.GOOS,
		uid:             os.Getuid(),
		termWidth: func() int {
			w, _, err := term.GetSize(int(os.Stdout.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
	code := a.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
