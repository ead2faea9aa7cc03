package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// How a connection's protocol version was chosen (status "negotiated").
const (
	negotiatedDiscover   = "discover"
	negotiatedInitialize = "initialize"
	negotiatedPin        = "pin"
	negotiatedFallback   = "fallback after discover: "
)

// handshake is what negotiation settled.
type handshake struct {
	version string
	// how is one of the negotiated* values (the fallback one with its
	// reason appended).
	how  string
	info mcp.Implementation
	caps serverCaps
}

// fallback says auto gives up on 2026-07-28: the legacy handshake follows
// with version, for reason (shown in status, already cleaned).
type fallback struct {
	version string
	reason  string
}

// capsOf reads the capabilities pikod acts on.
func capsOf(sc mcp.ServerCapabilities) serverCaps {
	c := serverCaps{tools: sc.Tools != nil, resources: sc.Resources != nil, prompts: sc.Prompts != nil,
		completions: sc.Completions != nil, logging: sc.Logging != nil}
	if sc.Tools != nil {
		c.toolsListChanged = sc.Tools.ListChanged
	}
	if sc.Resources != nil {
		c.resourcesListChanged, c.subscribe = sc.Resources.ListChanged, sc.Resources.Subscribe
	}
	if sc.Prompts != nil {
		c.promptsListChanged = sc.Prompts.ListChanged
	}
	if ext, ok := sc.Extensions[contracts.SkillsExtension]; ok {
		// The extension's value is its settings object ({} for none).
		_, c.skills = ext.(map[string]any)
	}
	if t := sc.Tasks; t != nil {
		c.tasks, c.tasksList, c.tasksCancel = true, t.List != nil, t.Cancel != nil
		c.tasksToolCalls = t.Requests != nil && t.Requests.Tools != nil && t.Requests.Tools.Call != nil
	}
	return c
}

// negotiate settles the protocol era of a started connection:
//
//   - legacy: the initialize handshake with the newest legacy version;
//   - a legacy pin: initialize with exactly that version;
//   - a 2026-07-28 pin: server/discover, never initialize (see discover);
//   - auto: server/discover; the connection is 2026-07-28 only when the
//     answer is a valid DiscoverResult listing it. A valid answer listing
//     only legacy versions gets the legacy handshake with the newest of
//     them pikod speaks; any other answer (an error, an empty result, no
//     answer within the probe time) gets the legacy handshake with the
//     newest legacy version, on the same process (stdio) or endpoint.
//
// A 401 or 403 to the first request ends it with needs_auth instead.
func (c *conn) negotiate(ctx context.Context, mode string) (*handshake, error) {
	pin := pinOf(mode)
	switch {
	case mode == contracts.ProtocolLegacy:
		return c.initialize(ctx, mcp.LATEST_LEGACY_PROTOCOL_VERSION, negotiatedInitialize, "")
	case pin != "" && !mcp.IsModernProtocol(pin):
		return c.initialize(ctx, pin, negotiatedPin, pin)
	case pin != "":
		hs, _, err := c.discover(ctx, pin, true)
		return hs, err
	}
	hs, fb, err := c.discover(ctx, mcp.LATEST_PROTOCOL_VERSION, false)
	if err != nil || fb == nil {
		return hs, err
	}
	c.s.log.Info().Str("version", fb.version).Str("reason", saidOnce(fb.reason)).Msg("falling back to the legacy handshake")
	if c.s.cfg.Transport == contracts.TransportHTTP {
		// The legacy era carries notifications and server requests on a
		// GET stream, which the transport must be built with. Nothing of
		// the probe outlives it: 2026-07-28 has no sessions.
		if err := c.reopen(true); err != nil {
			return nil, err
		}
	}
	return c.initialize(ctx, fb.version, negotiatedFallback+fb.reason, "")
}

// initialize runs the legacy handshake asking for version. With pin set,
// the server must answer with exactly that version.
func (c *conn) initialize(ctx context.Context, version, how, pin string) (*handshake, error) {
	s := c.s
	timeout := time.Duration(s.settings().Timeout()) * time.Millisecond
	// Legacy requests carry no protocol metadata, and nothing of a probe
	// may leak into the handshake's headers.
	c.raw.setVersion("")
	initCtx, cancel := context.WithTimeout(ctx, timeout)
	res, err := c.client.Initialize(initCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version, ClientInfo: c.raw.clientInfo, Capabilities: c.raw.capabilities}})
	// Read before cancel, which sets Err on every path.
	timedOut := errors.Is(initCtx.Err(), context.DeadlineExceeded)
	cancel()
	if ch := c.auth.refusal(); ch != nil {
		return nil, s.needsAuth(ch)
	}
	if err != nil {
		if timedOut && ctx.Err() == nil {
			return nil, fmt.Errorf("the server did not complete the handshake within timeoutMs (%s): %w", timeout, c.explain(err))
		}
		return nil, fmt.Errorf("handshake: %w", c.explain(err))
	}
	got := c.client.ProtocolVersion()
	if got == "" {
		got = res.ProtocolVersion
	}
	if mcp.IsModernProtocol(got) {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonProtocolMismatch,
				"server %q answered initialize with protocol %s, which has no initialize handshake", s.cfg.ID, s.sup.clean(got, 40)),
			`pin {"pin":"`+mcp.LATEST_PROTOCOL_VERSION+`"} or set "protocol" to "auto"`)
	}
	if pin != "" && got != pin {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonProtocolMismatch,
				"server %q speaks protocol %s, but its settings pin %s", s.cfg.ID, s.sup.clean(got, 40), pin),
			`set "protocol" to "auto" or "legacy", or pin a version the server supports`)
	}
	c.raw.setVersion(got)
	return &handshake{version: got, how: how, info: res.ServerInfo, caps: capsOf(res.Capabilities)}, nil
}

// discover asks server/discover for version. Pinned, anything but a valid
// DiscoverResult listing version fails the connection, with the versions
// the server offered when it named them; initialize is never sent. Under
// auto, a result that cannot make the connection 2026-07-28 returns the
// fallback to take instead. Either way an "Unsupported protocol version"
// error (-32022) listing a version pikod speaks is answered by asking
// once more with it.
func (c *conn) discover(ctx context.Context, version string, pinned bool) (*handshake, *fallback, error) {
	s := c.s
	limit := s.sup.opts.DiscoverProbe
	if pinned {
		// A pinned server must answer: it gets the whole timeoutMs.
		limit = time.Duration(s.settings().Timeout()) * time.Millisecond
	}
	fail := func(format string, args ...any) (*handshake, *fallback, error) {
		return nil, nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonProtocolMismatch, "server %q: %s", s.cfg.ID, fmt.Sprintf(format, args...)),
			`set "protocol" to "auto" or "legacy", or pin a version the server supports`)
	}
	fallBack := func(v, reason string) (*handshake, *fallback, error) {
		return nil, &fallback{version: v, reason: s.sup.clean(reason, 300)}, nil
	}

	res, err := c.probe(ctx, version, limit)
	if ch := c.auth.refusal(); ch != nil {
		return nil, nil, s.needsAuth(ch)
	}
	if u, ok := isUpstream(err); ok && u.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION {
		offered := supportedOf(u.Data)
		retry := newestSpoken(offered, func(v string) bool { return mcp.IsModernProtocol(v) && (!pinned || v == version) })
		if retry != "" {
			s.log.Info().Str("refused", version).Str("retry", retry).Strs("offered", clipAll(s, offered)).Msg("the server refused the protocol version; asking once more")
			version = retry
			res, err = c.probe(ctx, version, limit)
			if ch := c.auth.refusal(); ch != nil {
				return nil, nil, s.needsAuth(ch)
			}
			if u2, ok := isUpstream(err); ok && u2.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION {
				offered = supportedOf(u2.Data)
			}
		}
		if u, ok := isUpstream(err); ok && u.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION {
			list := offeredText(s, offered)
			if pinned {
				return fail("the server does not support the pinned protocol %s; it offers %s", version, list)
			}
			if legacy := newestSpoken(offered, func(v string) bool { return !mcp.IsModernProtocol(v) }); legacy != "" {
				return fallBack(legacy, "the server refused "+version+" and offers "+list)
			}
			return fail("the server refused %s and offers %s, none of which pikod speaks", version, list)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		why := c.probeFailure(err, limit)
		if pinned {
			if u, ok := isUpstream(err); ok && u.Code == mcp.METHOD_NOT_FOUND {
				return fail("server/discover is not implemented (%s), so the server does not speak the pinned protocol %s", why, version)
			}
			return fail("server/discover for the pinned protocol %s failed: %s", version, why)
		}
		return fallBack(mcp.LATEST_LEGACY_PROTOCOL_VERSION, why)
	}

	dr, problem := parseDiscoverResult(res)
	if problem != "" {
		if pinned {
			return fail("server/discover answered with an invalid result (%s), so the pinned protocol %s cannot be used", problem, version)
		}
		return fallBack(mcp.LATEST_LEGACY_PROTOCOL_VERSION, "server/discover answered with an invalid result ("+problem+")")
	}
	list := offeredText(s, dr.SupportedVersions)
	chosen := version
	if !slices.Contains(dr.SupportedVersions, version) {
		chosen = ""
		if !pinned {
			chosen = newestSpoken(dr.SupportedVersions, mcp.IsModernProtocol)
		}
	}
	if chosen == "" {
		legacy := newestSpoken(dr.SupportedVersions, func(v string) bool { return !mcp.IsModernProtocol(v) })
		switch {
		case pinned:
			return fail("the server does not support the pinned protocol %s; it offers %s", version, list)
		case legacy != "":
			return fallBack(legacy, "server/discover lists only legacy versions ("+list+")")
		default:
			return fail("the server offers %s, none of which pikod speaks", list)
		}
	}
	how := negotiatedDiscover
	if pinned {
		how = negotiatedPin
	}
	c.raw.setVersion(chosen)
	var info mcp.Implementation
	if si := dr.Meta.ServerInfo(); si != nil {
		info = *si
	}
	return &handshake{version: chosen, how: how, info: info, caps: capsOf(dr.Capabilities)}, nil, nil
}

// probe sends one server/discover declaring version, bounded by limit.
// It is never followed by notifications/cancelled.
func (c *conn) probe(ctx context.Context, version string, limit time.Duration) (json.RawMessage, error) {
	c.raw.setVersion(version)
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return c.raw.requestWith(pctx, string(mcp.MethodServerDiscover), nil, reqOpts{noCancel: true})
}

// probeFailure says in a few words why a probe got no DiscoverResult.
func (c *conn) probeFailure(err error, limit time.Duration) string {
	if u, ok := isUpstream(err); ok {
		return c.s.sup.clean(fmt.Sprintf("error %d: %s", u.Code, u.Message), 300)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer to server/discover within %s", limit)
	}
	return c.s.sup.clean(c.explain(err).Error(), 300)
}

// supportedOf reads data.supported of an "Unsupported protocol version"
// error; nil when it is not a list of strings.
func supportedOf(data json.RawMessage) []string {
	var d struct {
		Supported []string `json:"supported"`
	}
	if len(data) == 0 || json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d.Supported
}

// newestSpoken returns the newest version of offered that pikod speaks and
// ok accepts, or "".
func newestSpoken(offered []string, ok func(string) bool) string {
	for _, v := range contracts.ProtocolVersions {
		if slices.Contains(offered, v) && ok(v) {
			return v
		}
	}
	return ""
}

// offeredText lists the versions a server offered, safe to show.
func offeredText(s *session, offered []string) string {
	if len(offered) == 0 {
		return "no version (it listed none)"
	}
	return strings.Join(clipAll(s, offered), ", ")
}

// clipAll cleans up to 20 versions a server named.
func clipAll(s *session, vs []string) []string {
	out := make([]string, 0, min(len(vs), 20))
	for i, v := range vs {
		if i == 20 {
			out = append(out, "…")
			break
		}
		out = append(out, s.sup.clean(v, 40))
	}
	return out
}

// parseDiscoverResult decodes a server/discover result and says what makes
// it invalid: it must be an object whose resultType, when present, is
// "complete", whose supportedVersions is a non-empty list of strings and
// whose capabilities is an object. An empty object is not a
// DiscoverResult.
func parseDiscoverResult(raw json.RawMessage) (*mcp.DiscoverResult, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, "not a JSON object"
	}
	if rt, ok := fields["resultType"]; ok {
		var t string
		if json.Unmarshal(rt, &t) != nil || t != string(mcp.ResultTypeComplete) {
			return nil, "resultType is not \"complete\""
		}
	}
	sv, ok := fields["supportedVersions"]
	if !ok {
		return nil, "no supportedVersions"
	}
	var versions []string
	if json.Unmarshal(sv, &versions) != nil || len(versions) == 0 {
		return nil, "supportedVersions is not a non-empty list of strings"
	}
	caps, ok := fields["capabilities"]
	if !ok {
		return nil, "no capabilities"
	}
	var capsObj map[string]json.RawMessage
	if json.Unmarshal(caps, &capsObj) != nil || capsObj == nil {
		return nil, "capabilities is not an object"
	}
	var dr mcp.DiscoverResult
	if err := json.Unmarshal(raw, &dr); err != nil {
		return nil, "it does not decode: " + err.Error()
	}
	return &dr, ""
}
