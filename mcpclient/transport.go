package mcpclient

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/proc"
)

func pinOf(mode string) string {
	if mode == contracts.ProtocolLegacy || mode == contracts.ProtocolAuto {
		return ""
	}
	return mode
}

// transport builds the mcp-go transport for the server's settings. For
// http and sse the guarded client is built once per connection and kept
// on c, so a rebuilt transport reuses it (and its connections).
func (s *session) transport(c *conn, listen bool) (transport.Interface, error) {
	var creds Credentials
	if s.sup.opts.Credentials != nil && (s.cfg.Transport == contracts.TransportStdio || c.hc == nil) {
		var err error
		if creds, err = s.sup.opts.Credentials(&s.cfg); err != nil {
			return nil, err
		}
	}
	switch s.cfg.Transport {
	case contracts.TransportStdio:
		env := map[string]string{}
		for k, v := range s.cfg.Env {
			env[k] = v
		}
		for k, v := range creds.Env {
			env[k] = v
		}
		p, err := proc.Start(proc.Spec{
			ServerID: s.cfg.ID, Command: s.cfg.Command, Args: s.cfg.Args, Cwd: s.cfg.Cwd, Env: env,
			MaxLineBytes: s.cfg.MessageLimit(), RunDir: s.sup.opts.RunDir, PATH: s.sup.opts.PATH,
			CacheDir: s.sup.cacheDir(s.cfg.ID), Redact: s.sup.opts.Redact, ShortTempDir: s.cfg.Browser != nil,
		}, s.sup.opts.Records, s.log)
		if err != nil {
			return nil, err
		}
		c.proc = p
		s.sup.trackProc(p, true)
		s.mu.Lock()
		s.lastProc = p
		s.mu.Unlock()
		stdout := &watchedReader{r: p.Stdout(), onErr: func(err error) { c.stdoutEnded(err) }}
		tr := transport.NewIO(stdout, p.Stdin(), nil)
		transport.WithCommandLogger(sdkLogger(s.log, s.sup.clean))(tr)
		return tr, nil
	case contracts.TransportHTTP, contracts.TransportSSE:
		if c.hc == nil {
			headers := map[string]string{}
			for k, v := range s.cfg.Headers {
				headers[k] = v
			}
			for k, v := range creds.Headers {
				headers[k] = v
			}
			hc, err := netguard.NewClient(netguard.Config{
				URL: s.cfg.URL, AllowPrivateNetwork: s.cfg.AllowPrivateNetwork, Headers: headers,
				MaxBodyBytes: int64(s.cfg.MessageLimit()), Resolver: s.sup.opts.Resolver, TLSPin: s.cfg.TLSPin,
			})
			if err != nil {
				return nil, err
			}
			if oauthFor(&s.cfg, creds) {
				// The server's OAuth token on every request to its origin;
				// a refused token renewed once (see authTransport).
				u, err := url.Parse(s.cfg.URL)
				if err != nil {
					return nil, fmt.Errorf("parsing server url: %w", contracts.ErrInvalidArgument)
				}
				at := &authTransport{base: hc.Transport, origin: netguard.OriginOf(u), cfg: &s.cfg, auth: s.sup.auth(s.cfg.ID), onRefusal: c.noteRefusal}
				if c.staged != nil {
					at.staged.Store(c.staged)
				}
				hc.Transport = at
			}
			// 401 and 403 become errors in mcp-go that lose the
			// challenge: the watch keeps it.
			c.auth = &authWatch{next: hc.Transport}
			hc.Transport = c.auth
			c.hc = hc
		}
		if s.cfg.Transport == contracts.TransportSSE {
			// Never WithHTTPTimeout-style client timeouts: contexts bound
			// every request, and the SSE stream must stay open.
			// Server requests arrive on the event stream; mcp-go drops
			// them, so sseTap takes them out and answers them.
			tapped := *c.hc
			tapped.Transport = &sseTap{next: c.hc.Transport, c: c}
			return transport.NewSSE(s.cfg.URL, transport.WithHTTPClient(&tapped), transport.WithSSELogger(sdkLogger(s.log, s.sup.clean)),
				transport.WithEndpointTimeout(time.Duration(s.settings().Timeout())*time.Millisecond))
		}
		tapped := *c.hc
		next := c.hc.Transport
		c.gets = nil
		if listen {
			// mcp-go's listener sends the GETs; getStream holds them until
			// the handshake completed and backs refusals off.
			c.gets = newGetStream(next, c.ctx.Done(), s.log, s.sup.clean)
			next = c.gets
		}
		tapped.Transport = &sseTap{next: next, c: c}
		opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&tapped),
			transport.WithHTTPLogger(sdkLogger(s.log, s.sup.clean))}
		if listen {
			//lint:ignore SA1019 the legacy era (what this connection speaks) delivers list_changed and server requests on this GET stream.
			opts = append(opts, transport.WithContinuousListening())
		}
		return transport.NewStreamableHTTP(s.cfg.URL, opts...)
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Transport)
}

// watchedReader reports the first read error (EOF included) of the
// server's stdout: that is the end of the connection.
type watchedReader struct {
	r     interface{ Read([]byte) (int, error) }
	once  sync.Once
	onErr func(error)
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil {
		w.once.Do(func() { w.onErr(err) })
	}
	return n, err
}

// stdoutEnded runs when the server's stdout ends or breaks a limit.
func (c *conn) stdoutEnded(err error) {
	why := "the server closed its stdout"
	if errors.Is(err, proc.ErrMessageTooLarge) {
		why = err.Error()
	} else if c.proc != nil {
		// Give the exit status a moment to arrive so the message says it.
		select {
		case <-c.proc.Done():
			why = "the server process exited (" + c.proc.ExitStatus() + ")"
		case <-time.After(time.Second):
		}
	}
	c.s.lostConn(c, why, contracts.StateFailed)
}
