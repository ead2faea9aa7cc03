package contracts

import (
	"errors"
	"fmt"
)

// Error classes. Domain packages wrap one of these with %w; the daemon turns
// the class into a wire code with ToError, and the client turns the code back
// into a *Error whose Is method matches the same class, so
// errors.Is(err, contracts.ErrNotFound) works on both sides of the socket.
var (
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrNotFound           = errors.New("not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrPermissionDenied   = errors.New("permission denied")
	ErrUnavailable        = errors.New("unavailable")
	ErrNotImplemented     = errors.New("not implemented yet")
	ErrApprovalRequired   = errors.New("approval required")
	ErrResourceExhausted  = errors.New("resource exhausted")
	ErrDeadlineExceeded   = errors.New("deadline exceeded")
	ErrCanceled           = errors.New("canceled")
	ErrOutcomeUnknown     = errors.New("outcome unknown")
	ErrUpstream           = errors.New("upstream error")
	ErrInternal           = errors.New("internal error")
)

// JSON-RPC 2.0 codes used by the framing layer (reserved band).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// ErrorCode describes one application error code. The table is append-only:
// a code, once published, keeps its number, reason and class forever
// (testdata/error_codes.golden freezes it).
type ErrorCode struct {
	Code   int
	Reason string
	Class  error
}

// ErrorCodes is the application error-code table. Codes live outside
// JSON-RPC's reserved band -32768..-32000. Append only.
var ErrorCodes = []ErrorCode{
	{1001, "invalid_argument", ErrInvalidArgument},
	{1002, "not_found", ErrNotFound},
	{1003, "already_exists", ErrAlreadyExists},
	{1004, "failed_precondition", ErrFailedPrecondition},
	{1005, "permission_denied", ErrPermissionDenied},
	{1006, "unavailable", ErrUnavailable},
	{1007, "not_implemented", ErrNotImplemented},
	{1008, "approval_required", ErrApprovalRequired},
	{1009, "resource_exhausted", ErrResourceExhausted},
	{1010, "deadline_exceeded", ErrDeadlineExceeded},
	{1011, "canceled", ErrCanceled},
	{1012, "outcome_unknown", ErrOutcomeUnknown},
	{1013, "upstream_error", ErrUpstream},
	{1014, "internal", ErrInternal},
}

// Error is an error as it travels on the wire:
// {"code", "message", "data": {"reason", ...}}.
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData carries the machine-readable detail of an Error. Reason is a
// snake_case word scripts may switch on; the other fields appear where they
// apply.
type ErrorData struct {
	Reason string `json:"reason"`
	// Problems lists every problem found in rejected input (settings,
	// params), each naming where it is.
	Problems []Problem `json:"problems,omitempty"`
	// Upstream is an MCP server's own error, kept apart from our codes.
	Upstream *UpstreamError `json:"upstream,omitempty"`
	// Hint says what the user can do next.
	Hint string `json:"hint,omitempty"`
	// NotSent is true when the request this error answers provably never
	// left pikod: not one byte of it reached the server (a refused or
	// failed connection, a closed pipe, a cancellation before sending).
	// Such a call had no effect and may be made again.
	NotSent bool `json:"notSent,omitempty"`
	// Check names the terminal check a terminal_required refusal failed
	// (TerminalNone, TerminalStdin, ...).
	Check string `json:"check,omitempty"`
}

// UpstreamError is an error an MCP server returned, passed through as data.
type UpstreamError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Problem is one thing wrong with some input. Server is the server id
// (empty for instance-wide problems), Field the JSON path inside it.
type Problem struct {
	Server  string `json:"server,omitempty"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) Error() string {
	switch {
	case p.Server != "" && p.Field != "":
		return fmt.Sprintf("server %q: %s: %s", p.Server, p.Field, p.Message)
	case p.Server != "":
		return fmt.Sprintf("server %q: %s", p.Server, p.Message)
	case p.Field != "":
		return p.Field + ": " + p.Message
	}
	return p.Message
}

func (e *Error) Error() string { return e.Message }

// Class returns the error class of e's code, or nil for codes outside the
// application table (JSON-RPC framing codes, codes from a newer daemon).
func (e *Error) Class() error {
	for _, c := range ErrorCodes {
		if c.Code == e.Code {
			return c.Class
		}
	}
	switch e.Code {
	case CodeInvalidParams:
		return ErrInvalidArgument
	case CodeMethodNotFound:
		return ErrNotFound
	}
	return nil
}

// Is reports whether target is e's class, so errors.Is works on errors that
// crossed the socket.
func (e *Error) Is(target error) bool {
	if t, ok := target.(*Error); ok {
		return t.Code == e.Code
	}
	c := e.Class()
	return c != nil && c == target
}

// Reason returns data.reason, or "" when absent.
func (e *Error) Reason() string {
	if e.Data == nil {
		return ""
	}
	return e.Data.Reason
}

// ToError converts any error into its wire form. This is the one place where
// error classes become codes. An error that already is an *Error (anywhere
// in its chain) is returned as is; an error wrapping a class gets that
// class's code with the full message; anything else is an internal error.
func ToError(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		if IsNotSent(err) && (we.Data == nil || !we.Data.NotSent) {
			out := *we
			data := ErrorData{}
			if we.Data != nil {
				data = *we.Data
			}
			data.NotSent = true
			out.Data = &data
			return &out
		}
		return we
	}
	for _, c := range ErrorCodes {
		if errors.Is(err, c.Class) {
			out := &Error{Code: c.Code, Message: err.Error(), Data: &ErrorData{Reason: c.Reason}}
			var ps interface{ Problems() []Problem }
			if errors.As(err, &ps) {
				out.Data.Problems = ps.Problems()
			}
			var r interface{ Reason() string }
			if errors.As(err, &r) && r.Reason() != "" {
				out.Data.Reason = r.Reason()
			}
			var h interface{ Hint() string }
			if errors.As(err, &h) {
				out.Data.Hint = h.Hint()
			}
			var u interface{ Upstream() *UpstreamError }
			if errors.As(err, &u) {
				out.Data.Upstream = u.Upstream()
			}
			out.Data.NotSent = IsNotSent(err)
			return out
		}
	}
	return &Error{Code: 1014, Message: "internal error: " + err.Error(), Data: &ErrorData{Reason: ReasonInternal, NotSent: IsNotSent(err)}}
}

// MarkNotSent says of err that the request it ends provably never left
// pikod (ToError sets data.notSent). Mark only what is proven: a failure
// after the first byte of a request was written is never "not sent".
func MarkNotSent(err error) error {
	if err == nil || IsNotSent(err) {
		return err
	}
	return &notSentError{err: err}
}

// IsNotSent reports whether err was marked with MarkNotSent, or is a wire
// error whose data.notSent is true.
func IsNotSent(err error) bool {
	var n interface{ NotSent() bool }
	if errors.As(err, &n) && n.NotSent() {
		return true
	}
	var we *Error
	return errors.As(err, &we) && we.Data != nil && we.Data.NotSent
}

type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }
func (e *notSentError) NotSent() bool { return true }

// Errorf builds an error of the given class with a reason word and a
// message. The message must never contain a secret.
func Errorf(class error, reason, format string, args ...any) error {
	return &reasonError{class: class, reason: reason, msg: fmt.Sprintf(format, args...)}
}

// WithHint attaches a next step for the user to err.
func WithHint(err error, hint string) error {
	return &hintError{err: err, hint: hint}
}

type reasonError struct {
	class  error
	reason string
	msg    string
}

func (e *reasonError) Error() string  { return e.msg }
func (e *reasonError) Unwrap() error  { return e.class }
func (e *reasonError) Reason() string { return e.reason }

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }
func (e *hintError) Hint() string  { return e.hint }

// Problems is every problem found in one input. As an error it wraps
// ErrInvalidArgument, and ToError puts the list in data.problems.
type Problems []Problem

func (ps Problems) Error() string {
	if len(ps) == 1 {
		return ps[0].Error()
	}
	s := fmt.Sprintf("%d problems:", len(ps))
	for _, p := range ps {
		s += "\n  - " + p.Error()
	}
	return s
}

// Unwrap makes Problems an ErrInvalidArgument.
func (ps Problems) Unwrap() error { return ErrInvalidArgument }

// Problems returns the list, for ToError.
func (ps Problems) Problems() []Problem { return ps }

// WithReason gives err a more specific data.reason than its class's.
func WithReason(err error, reason string) error {
	return &reasonWrap{err: err, reason: reason}
}

type reasonWrap struct {
	err    error
	reason string
}

func (e *reasonWrap) Error() string  { return e.err.Error() }
func (e *reasonWrap) Unwrap() error  { return e.err }
func (e *reasonWrap) Reason() string { return e.reason }
