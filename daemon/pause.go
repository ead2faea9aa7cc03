package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// metaPaused is the meta/ key holding the paused servers, JSON
// {"<server>": {"since","reason"}}: a pause survives a restart, so a
// hand-off is never ended by a crash.
const metaPaused = "paused"

// pauses keeps the paused servers; it is written through to pikod.db
// before a pause or resume answers.
type pauses struct {
	// mu guards the field that follows and serialises writes.
	mu sync.Mutex
	m  map[string]contracts.PauseInfo
}

func (d *daemon) loadPauses() error {
	d.paused.m = map[string]contracts.PauseInfo{}
	raw, err := d.db.Meta(metaPaused)
	if err != nil || raw == "" {
		return err
	}
	if err := json.Unmarshal([]byte(raw), &d.paused.m); err != nil {
		return fmt.Errorf("reading the paused servers (meta/%s): %w", metaPaused, err)
	}
	return nil
}

// pauseOf reports whether server is paused, and how.
func (d *daemon) pauseOf(server string) (contracts.PauseInfo, bool) {
	d.paused.mu.Lock()
	defer d.paused.mu.Unlock()
	p, ok := d.paused.m[server]
	return p, ok
}

// setPause pauses (info != nil) or resumes server, durably; it reports
// whether anything changed.
func (d *daemon) setPause(server string, info *contracts.PauseInfo) (contracts.PauseInfo, bool, error) {
	d.paused.mu.Lock()
	defer d.paused.mu.Unlock()
	old, was := d.paused.m[server]
	next := make(map[string]contracts.PauseInfo, len(d.paused.m)+1)
	for k, v := range d.paused.m {
		next[k] = v
	}
	cur := contracts.PauseInfo{}
	if info != nil {
		cur = *info
		if was {
			cur.Since = old.Since
		}
		next[server] = cur
	} else {
		delete(next, server)
	}
	b, err := json.Marshal(next)
	if err != nil {
		return old, false, err
	}
	if err := d.db.SetMeta(metaPaused, string(b)); err != nil {
		return old, false, fmt.Errorf("saving the pause of %q: %w", server, err)
	}
	d.paused.m = next
	return cur, was != (info != nil) || (info != nil && old.Reason != cur.Reason), nil
}

// heldReason is what a call held by a pause answers.
func heldReason(server string, p contracts.PauseInfo) string {
	s := fmt.Sprintf("server %q is paused since %s", server, p.Since)
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return s + "; the owner approves this call or resumes the server ('pikoctl mcp resume " + server + "')"
}

// pause serves extensions.mcp.pause: any client may hand a server over to
// the owner; nothing it does runs a call.
func (d *daemon) pause(_ context.Context, req *rpc.Request, p *contracts.PauseParams) (any, error) {
	if _, ok := d.serverSettings(p.Server); !ok {
		return nil, unknownServer(p.Server)
	}
	if len(p.Reason) > contracts.MaxPauseReason || !utf8.ValidString(p.Reason) || strings.ContainsFunc(p.Reason, isControl) {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReason,
			"the pause reason must be at most %d bytes of UTF-8 text on one line, without control characters", contracts.MaxPauseReason)
	}
	info := contracts.PauseInfo{Since: time.Now().UTC().Format(time.RFC3339), Reason: d.red.Text(p.Reason)}
	cur, changed, err := d.setPause(p.Server, &info)
	if err != nil {
		return nil, err
	}
	d.log.Info().Str("server", p.Server).Int("peer_pid", req.Peer.PID).Bool("changed", changed).Msg("server paused")
	d.publishPause(p.Server, contracts.StatePaused)
	return contracts.PauseResult{Server: p.Server, Paused: true, Changed: changed, Pause: &cur}, nil
}

// resume serves extensions.mcp.resume (terminal-only: the socket server
// ran the owner checks before this handler).
func (d *daemon) resume(_ context.Context, req *rpc.Request, p *contracts.ResumeParams) (any, error) {
	if _, ok := d.pauseOf(p.Server); !ok {
		if _, known := d.serverSettings(p.Server); !known {
			return nil, unknownServer(p.Server)
		}
		return contracts.PauseResult{Server: p.Server}, nil
	}
	if _, _, err := d.setPause(p.Server, nil); err != nil {
		return nil, err
	}
	d.log.Info().Str("server", p.Server).Int("peer_pid", req.Peer.PID).Msg("server resumed")
	state := ""
	if st, err := d.sup.Status(p.Server); err == nil && len(st) == 1 {
		state = st[0].State
	}
	d.publishPause(p.Server, state)
	return contracts.PauseResult{Server: p.Server, Changed: true}, nil
}

// publishPause tells watchers the server's state after a pause or resume.
func (d *daemon) publishPause(server, state string) {
	data, _ := json.Marshal(contracts.StateEventData{State: state})
	d.events.publish(contracts.EventParams{Kind: contracts.EventState, Server: server, Data: data})
}

// markPaused shows paused servers as such in status answers.
func (d *daemon) markPaused(servers []contracts.ServerStatus) {
	for i := range servers {
		if p, ok := d.pauseOf(servers[i].ID); ok {
			servers[i].ConnectionState = servers[i].State
			servers[i].State = contracts.StatePaused
			servers[i].Pause = &p
		}
	}
}

func unknownServer(id string) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", id),
		"'pikoctl mcp status' lists the configured servers")
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
