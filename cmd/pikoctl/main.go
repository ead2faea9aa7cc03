// Command pikoctl is the thin command-line client of pikod: every command
// but "service" is one JSON-RPC call on the daemon's owner socket, and the
// CLI keeps no state of its own.
//
// Exit codes: 0 success, 1 failure (the daemon returned an error, or the
// input was invalid), 2 usage error, 3 daemon unreachable.
package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/term"
)

// version is the build's version, set with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
)

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
		openTTY:         openDevTTY,
		executable:      os.Executable,
		lookPath:        exec.LookPath,
		goos:            runtime.GOOS,
		uid:             os.Getuid(),
	}
	code := a.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
