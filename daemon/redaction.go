package daemon

import (
	"bytes"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// The redaction of answers (see vault.View): every frame leaving the
// socket passes filterFrame, which redacts it within the view of the
// request it answers: values the caller sent in that request come back as
// sent, and an answer narrowed to a server (a call's result, a resource,
// a prompt, a retained result read back) is redacted of that server's
// values and of the values too long to guess. What pikod keeps or shows
// later (receipts, the ledger, stderr tails, logs) is redacted of every
// value, as before. The marks in each connection's answers are counted,
// wherever the redaction was made (here, or when a server's text was
// captured): a caller whose answers carry many is probing, and is logged
// at warn.

// probeWindow and probeWarn: more than probeWarn redaction marks in the
// answers to one connection within probeWindow are logged at warn, once
// a window. A console that reads a status with a redacted stderr line
// every second stays below it.
const (
	probeWindow = time.Minute
	probeWarn   = 100
)

// replyState is how one request's answer is redacted.
type replyState struct {
	view *vault.View
	// kept redacts what is stored or shown later (receipts, ledger
	// reasons): every value.
	kept *vault.View
}

// replyOf returns req's replyState, making it on first use.
func (d *daemon) replyOf(req *rpc.Request) *replyState {
	if req == nil {
		return nil
	}
	if st, ok := req.Scope().(*replyState); ok {
		return st
	}
	st := &replyState{view: d.red.View(req.ID, []byte(req.Method), req.Params), kept: d.red.View()}
	req.SetScope(st)
	// Another goroutine of the same request may have set one first.
	if got, ok := req.Scope().(*replyState); ok {
		return got
	}
	return st
}

// answerView is the view for req's answer, narrowed to server when it is
// not "".
func (d *daemon) answerView(req *rpc.Request, server string) *vault.View {
	st := d.replyOf(req)
	if st == nil {
		return d.red.View()
	}
	if server != "" {
		st.view.Narrow(server)
	}
	return st.view
}

// keptView redacts, of every value, what req leaves behind.
func (d *daemon) keptView(req *rpc.Request) *vault.View {
	if st := d.replyOf(req); st != nil {
		return st.kept
	}
	return d.red.View()
}

// filterFrame is the rpc server's Filter.
func (d *daemon) filterFrame(data []byte, out rpc.Outgoing) []byte {
	if st := d.replyOf(out.Request); st != nil {
		data = st.view.JSON(data)
	} else {
		data = d.red.JSON(data)
	}
	if out.Conn != nil {
		if n := bytes.Count(data, redactedMark); n > 0 {
			method := ""
			if out.Request != nil {
				method = out.Request.Method
			}
			d.probes.add(out.Conn, method, int64(n))
		}
	}
	return data
}

var redactedMark = []byte(vault.Redacted)

// probes counts redaction marks per connection.
type probes struct {
	log zerolog.Logger
	now func() time.Time

	// mu guards conns.
	mu    sync.Mutex
	conns map[*rpc.Conn]*probeTally
}

type probeTally struct {
	start  time.Time
	n      int64
	warned bool
}

func (p *probes) add(c *rpc.Conn, method string, n int64) {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[*rpc.Conn]*probeTally{}
	}
	// Forget connections that are gone or quiet.
	for k, t := range p.conns {
		if now.Sub(t.start) > 2*probeWindow {
			delete(p.conns, k)
		}
	}
	t := p.conns[c]
	if t == nil || now.Sub(t.start) > probeWindow {
		t = &probeTally{start: now}
		p.conns[c] = t
	}
	t.n += n
	if t.n > probeWarn && !t.warned {
		t.warned = true
		// Never a value: only how many, and who asked.
		p.log.Warn().Int("peer_pid", c.Peer().PID).Str("peer_exe", c.Peer().Exe).Str("method", method).
			Int64("redactions", t.n).Dur("window", probeWindow).
			Msg("many secret values redacted from the answers to one connection: a caller may be probing for them")
	}
}
