package mcpclient

import (
	"errors"

	"github.com/pikod/pikod/mcpclient/proc"
)

// unsentFrame reports whether err carries the stdin writer's record that
// not one byte of the frame it failed to write went out.
func unsentFrame(err error) bool { return proc.NothingWritten(err) }

// requestNotSentError is a request that provably never left pikod, as
// rawRequester reports it.
type requestNotSentError struct{ err error }

func (e *requestNotSentError) Error() string { return e.err.Error() }
func (e *requestNotSentError) Unwrap() error { return e.err }

// notSentRequest reports whether err is a request rawRequester found was
// never sent.
func notSentRequest(err error) bool {
	var n *requestNotSentError
	return errors.As(err, &n)
}
