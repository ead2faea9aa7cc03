package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// Bounds of extensions.mcp.logging's read.
const (
	defaultLogLimit = 100
	maxLogLimit     = 1000
)

// watch serves extensions.mcp.watch: it subscribes the connection and
// returns at once (a control-lane handler must not hold its slot); the
// events follow as notifications until {"stop": true} or the connection
// ends.
func (d *daemon) watch(_ context.Context, req *rpc.Request, p *contracts.WatchParams) (any, error) {
	conn := req.Conn()
	if p.Stop {
		if len(p.Kinds)+len(p.Servers) > 0 || p.Queue != 0 {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidWatch,
				`"stop" takes no other member: send {"stop": true} alone`)
		}
		d.events.unwatch(conn)
		return contracts.WatchResult{Watching: false, Kinds: []string{}, Servers: []string{}}, nil
	}
	var problems []contracts.Problem
	for _, k := range p.Kinds {
		if !slices.Contains(contracts.EventKinds, k) {
			problems = append(problems, contracts.Problem{Field: "kinds",
				Message: fmt.Sprintf("unknown event kind %q: use %s", clipText(k, 40), strings.Join(contracts.EventKinds, ", "))})
		}
	}
	for _, s := range p.Servers {
		if _, ok := d.serverSettings(s); !ok {
			problems = append(problems, contracts.Problem{Field: "servers",
				Message: fmt.Sprintf("no server %q is configured", clipText(s, 80))})
		}
	}
	queue := p.Queue
	switch {
	case queue == 0:
		queue = contracts.DefaultWatchQueue
	case queue < contracts.MinWatchQueue || queue > contracts.DefaultWatchQueue:
		problems = append(problems, contracts.Problem{Field: "queue",
			Message: fmt.Sprintf("%d is out of range: use %d to %d (default %d)", queue,
				contracts.MinWatchQueue, contracts.DefaultWatchQueue, contracts.DefaultWatchQueue)})
	}
	if len(problems) > 0 {
		return nil, invalid(contracts.ReasonInvalidWatch, problems)
	}
	res, err := d.events.watch(conn, p.Kinds, p.Servers, queue)
	if err != nil {
		return nil, err
	}
	d.log.Debug().Int("peer_pid", req.Peer.PID).Strs("kinds", p.Kinds).Strs("servers", p.Servers).Msg("watching events")
	return res, nil
}

// logging serves extensions.mcp.logging.
func (d *daemon) logging(ctx context.Context, req *rpc.Request, p *contracts.LoggingParams) (any, error) {
	switch p.Op {
	case contracts.LoggingSetLevel:
		if p.Level == "" {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingLevel,
				`missing "level": use one of %s`, strings.Join(contracts.LogLevels, ", "))
		}
		if p.Since != "" || p.After != 0 || p.Limit != 0 || p.Follow {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidParams,
				`setLevel takes "server" and "level" only; read the entries with "op": "read"`)
		}
		return d.sup.SetLogLevel(ctx, p.Server, p.Level)
	case "", contracts.LoggingRead:
	default:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp, `unknown op %q: use "read" or "setLevel"`, clipText(p.Op, 40))
	}
	q := mcpclient.LogQuery{MinLevel: p.Level, After: p.After, Limit: p.Limit}
	if p.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, p.Since)
		if err != nil {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidSince,
				"since %q is not an RFC 3339 time (like 2026-01-02T15:04:05Z)", clipText(p.Since, 60))
		}
		q.Since = t
	}
	switch {
	case q.Limit == 0:
		q.Limit = defaultLogLimit
	case q.Limit < 0 || q.Limit > maxLogLimit:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidLimit, "limit %d is out of range: use 1 to %d", q.Limit, maxLogLimit)
	}
	if p.Follow {
		// Subscribed before reading: an entry added in between shows in
		// both, never in neither (entries carry their id).
		if err := d.events.follow(req.Conn(), p.Server); err != nil {
			return nil, err
		}
	}
	res, err := d.sup.Logs(p.Server, q)
	if err != nil {
		if p.Follow {
			d.events.unfollow(req.Conn(), p.Server)
		}
		return nil, err
	}
	res.Following = p.Follow
	return res, nil
}

// invalid is an invalid_argument error listing problems.
func invalid(reason string, problems []contracts.Problem) error {
	return contracts.WithReason(contracts.Problems(problems), reason)
}
