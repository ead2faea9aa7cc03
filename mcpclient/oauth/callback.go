package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// Callback is the loopback listener of one authorization-code flow: it
// listens on 127.0.0.1 only, answers GET CallbackPath with the exact Host
// of its redirect URI and the flow's exact state, once. Everything else is
// refused with a plain-text answer and leaves the flow waiting; after the
// one callback it refuses everything and the flow owner closes it.
type Callback struct {
	ln    net.Listener
	srv   *http.Server
	host  string // 127.0.0.1:PORT
	state string
	done  chan struct{}

	// results receives the one accepted callback (buffered: never blocks).
	results chan CallbackResult

	// mu guards used.
	mu   sync.Mutex
	used bool
}

// ListenCallback listens on 127.0.0.1:port (port 0: a free one).
func ListenCallback(port int, state string) (*Callback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonOAuthCallbackPortBusy,
				"cannot listen for the sign-in callback on 127.0.0.1:%d: %v", port, errors.Unwrap(err)),
				"another sign-in or program uses oauth.callbackPort: finish or cancel it, or choose another port")
		}
		return nil, fmt.Errorf("listening for the sign-in callback on 127.0.0.1: %w (%w)", err, contracts.ErrUnavailable)
	}
	c := &Callback{ln: ln, host: ln.Addr().String(), state: state, done: make(chan struct{}), results: make(chan CallbackResult, 1)}
	c.srv = &http.Server{
		Handler:           http.HandlerFunc(c.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	go func() {
		defer close(c.done)
		_ = c.srv.Serve(ln)
	}()
	return c, nil
}

// RedirectURI is the redirect URI this listener serves.
func (c *Callback) RedirectURI() string { return "http://" + c.host + CallbackPath }

// Results delivers the one accepted callback.
func (c *Callback) Results() <-chan CallbackResult { return c.results }

// Close stops listening and waits for the server to end.
func (c *Callback) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.srv.Shutdown(ctx); err != nil {
		_ = c.srv.Close()
	}
	<-c.done
}

func (c *Callback) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	answer := func(status int, text string) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte("pikod: " + text + "\n"))
	}
	switch {
	case r.URL.Path != CallbackPath:
		answer(http.StatusNotFound, "not found")
		return
	case r.Method != http.MethodGet:
		h.Set("Allow", http.MethodGet)
		answer(http.StatusMethodNotAllowed, "only GET is accepted here")
		return
	case r.Host != c.host:
		// A page that makes the browser reach 127.0.0.1 under another name
		// (DNS rebinding) arrives with that name as Host.
		answer(http.StatusBadRequest, "this address does not serve the sign-in callback")
		return
	}
	res := ReadCallback(r.URL.Query())
	if err := c.Offer(res); err != nil {
		if contracts.ToError(err).Reason() == contracts.ReasonOAuthCallbackUsed {
			answer(http.StatusBadRequest, "this sign-in was already completed or refused; start again with 'pikoctl mcp auth SERVER' if needed")
		} else {
			answer(http.StatusBadRequest, "this is not the sign-in pikod is waiting for (the state does not match); it was ignored")
		}
		return
	}
	if res.Error != "" {
		answer(http.StatusOK, "the authorization server answered with an error; the waiting 'pikoctl mcp auth' reports it. You can close this window.")
		return
	}
	answer(http.StatusOK, "authorization received; pikod is finishing the sign-in ('pikoctl mcp auth' reports the outcome). You can close this window.")
}

var (
	errUsed     = errors.New("this sign-in already received its callback")
	errBadState = errors.New("the state does not match this sign-in")
)

// Offer delivers a callback (from the listener, or pasted by the owner):
// it must carry the flow's exact state, and only the first such callback
// is accepted.
func (c *Callback) Offer(res CallbackResult) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthCallbackUsed, "%v", errUsed)
	}
	if !SameState(res.State, c.state) {
		return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonOAuthStateMismatch, "%v", errBadState),
			"use the URL of the latest 'pikoctl mcp auth'; an older sign-in's redirect is not accepted")
	}
	c.used = true
	c.results <- res
	return nil
}
