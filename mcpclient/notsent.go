package mcpclient

import (
	"errors"
	"net/http"

	"github.com/pikod/pikod/mcpclient/proc"
)

// unsentError is the guarded HTTP client's record that one request
// provably never left pikod: it was handed to no connection that could
// have carried a byte of it (the stdin writer keeps its own record, see
// proc.NothingWritten). It is a fact about one write or one HTTP request,
// not yet about a JSON-RPC request: rawRequester decides whether it is the
// request's own (see sentNothing), and only then is the failure reported
// with contracts.MarkNotSent.
type unsentError struct {
	err error
	// method is the HTTP method of the request that was not sent.
	method string
}

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// unsentHTTP returns the record an HTTP request carries in err, if any.
// Only a POST carries a JSON-RPC request in both HTTP transports (mcp-go
// makes exactly one per SendRequest; a GET that resumes the response
// stream comes after the POST went out), so only a POST's record speaks
// for the request.
func unsentHTTP(err error) bool {
	var u *unsentError
	return errors.As(err, &u) && u.method == http.MethodPost
}

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
