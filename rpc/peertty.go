package rpc

import (
	"fmt"

	"github.com/pikod/pikod/contracts"
)

// TerminalError says which terminal check a peer failed. Check is one of
// the contracts.Terminal* names; Detail is a sentence for the person (it
// names devices, uids and pids, never params).
type TerminalError struct {
	Check  string
	Detail string
}

func (e *TerminalError) Error() string { return e.Detail }

func terminalErr(check, format string, args ...any) *TerminalError {
	return &TerminalError{Check: check, Detail: fmt.Sprintf(format, args...)}
}

// uncheckedErr is the refusal when a check cannot be made: terminal-only
// methods refuse rather than guess.
func uncheckedErr(pid int, err error) *TerminalError {
	return terminalErr(contracts.TerminalUnchecked,
		"cannot check the terminal of the caller (pid %d): %v", pid, err)
}

// terminalRefusal is the wire error for a peer that failed a terminal
// check on a call of method.
func terminalRefusal(method string, te *TerminalError) *contracts.Error {
	msg := te.Detail
	switch te.Check {
	case contracts.TerminalNone:
		msg = "the caller has no controlling terminal: " + method + " needs you at the owner's terminal, not a script, service or detached job"
	case contracts.TerminalStdin:
		msg = "stdin is not the terminal: " + method + " needs you typing at the terminal, not a pipe or a file"
	case contracts.TerminalBackground:
		msg = "the caller is a background job: " + method + " needs the job in the terminal's foreground, where you type"
	case contracts.TerminalOwner, contracts.TerminalUnchecked:
		msg = te.Detail + ": " + method + " refused"
	}
	we := contracts.ToError(contracts.WithHint(
		contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonTerminalRequired, "%s", msg),
		"run the pikoctl command yourself, in your own terminal (not through an agent, a script or a pipe)"))
	we.Data.Check = te.Check
	return we
}
