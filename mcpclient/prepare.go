package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
)

// CallSpec names one tools/call to prepare.
type CallSpec struct {
	// Server and Tool (its original name) name the tool; or Name, its
	// model-facing name (mcp_<server>_<tool>), alone.
	Server, Tool, Name string
	// Arguments are the call's arguments; nil means {}. Prepare
	// canonicalises them (CanonicalArguments), unless Canonical says they
	// are canonical already: then any other form is refused, as the bytes
	// sent must be the bytes that were hashed (an approved action's).
	Arguments []byte
	Canonical bool
	// Task asks for a task-augmented call (the legacy tasks utility). A
	// tool whose taskSupport is required is always prepared as a task; one
	// whose taskSupport is not optional or required refuses Task.
	Task bool
	// Bound, when set, pins the call to the connection, settings and
	// definition an approval was checked against (see Binding): Prepare
	// never connects for it, and Send checks the definition once more
	// right before the request is written. Its arguments were validated
	// against that very definition when the action was prepared, so they
	// are not validated again.
	Bound *Binding
	// Check, when set, runs once the tool is found, before its arguments
	// are read: the daemon refuses there a server whose credentials
	// rotated since it connected.
	Check func(server string) error
}

// PreparedCall is a call looked up, checked and decided, ready for Send:
// the tool found once in the connection's catalog, the arguments
// canonical and validated once against the tool's input schema (compiled
// once per definition), the tool selected, its task mode checked, and
// the fingerprints an approval would bind to taken together under the
// session's lock. Nothing has been sent; every error Prepare returns says
// so (contracts.IsNotSent).
type PreparedCall struct {
	s    *Supervisor
	spec CallSpec
	sess *session
	c    *conn
	// cat is the catalog the tool was found in: Send goes on with this
	// preparation only while it is still the connection's.
	cat    *Catalog
	server string
	tool   contracts.CatalogTool
	args   []byte
	task   bool
	// settings and gen are what an approval binds to, read together under
	// the session's lock (Fingerprints).
	settings *contracts.ServerSettings
	gen      uint64
}

// Server is the id of the server the call goes to.
func (p *PreparedCall) Server() string { return p.server }

// Tool is the tool's catalog entry (its grant, digest, schemas).
func (p *PreparedCall) Tool() contracts.CatalogTool { return p.tool }

// Arguments are the canonical arguments Send sends.
func (p *PreparedCall) Arguments() []byte { return p.args }

// Task says the call creates a task (taskSupport required, or optional
// and asked for).
func (p *PreparedCall) Task() bool { return p.task }

// Fingerprints are what an approval of this call binds to, as they stood
// when it was prepared: the session's settings digest for the tool, the
// connection generation and the tool's definition digest, taken under the
// session's lock. The credential generation is the caller's to add.
// The settings digest is computed only when asked: a read call never
// needs it.
func (p *PreparedCall) Fingerprints() contracts.Fingerprints {
	return contracts.Fingerprints{Settings: p.settings.ApprovalDigest(p.tool.OriginalName), ConnectionGeneration: p.gen, Tool: p.tool.Digest}
}

// Prepare looks the tool up (connecting the server, except for a bound
// call), canonicalises and validates the arguments, checks that the tool
// is selected and that its task mode is possible, and returns the call to
// Send. It sends nothing and takes no slot: a call that becomes a
// prepared action never waits for the server.
func (s *Supervisor) Prepare(ctx context.Context, spec CallSpec) (*PreparedCall, error) {
	p, err := s.prepare(ctx, spec)
	if err != nil {
		tool := spec.Tool
		if tool == "" {
			tool = spec.Name
		}
		return nil, s.beforeSending(spec.Server, tool, err)
	}
	return p, nil
}

func (s *Supervisor) prepare(ctx context.Context, spec CallSpec) (*PreparedCall, error) {
	server := spec.Server
	if spec.Name != "" {
		if spec.Server != "" || spec.Tool != "" {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAmbiguousTool,
				`name a tool either by "name" (model-facing) or by "server" and "tool", not both`)
		}
		id, ok := modelServer(spec.Name)
		if !ok {
			return nil, contracts.WithHint(
				contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool, "%q is not a model-facing tool name (mcp_<server>_<tool>)", clip(spec.Name, 200)),
				"list tools and their names with 'pikoctl mcp catalog SERVER'")
		}
		server = id
	} else if spec.Server == "" || spec.Tool == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingTool,
			`missing "server" and "tool" (or "name"): say which tool to call`)
	}
	sess, err := s.session(server)
	if err != nil {
		return nil, err
	}
	var c *conn
	if spec.Bound != nil {
		c, err = sess.boundConn(*spec.Bound, spec.Tool)
	} else {
		c, err = sess.connect(ctx)
	}
	if err != nil {
		return nil, err
	}
	cat, err := c.freshCatalog(ctx)
	if err != nil {
		return nil, err
	}
	tool, err := s.findTool(server, spec, cat)
	if err != nil {
		return nil, err
	}
	if spec.Check != nil {
		if err := spec.Check(server); err != nil {
			return nil, err
		}
	}
	args, err := s.callArguments(server, spec, tool, cat)
	if err != nil {
		return nil, err
	}
	if !tool.Selected {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonToolNotSelected,
			"tool %q of server %q is not selected for execution", s.clip(tool.OriginalName, 200), server),
			`add it to the server's "tools" in the settings to allow calls`)
	}
	task := spec.Task || tool.TaskSupport == string(mcp.TaskSupportRequired)
	if err := s.checkTaskCall(sess, c, tool, task); err != nil {
		return nil, err
	}
	p := &PreparedCall{s: s, spec: spec, sess: sess, c: c, cat: cat, server: server, tool: tool, args: args, task: task}
	// What an approval binds to, read at one moment under the session's
	// lock: these settings, this connection, this definition. (A
	// connection lost since the lookup leaves a generation no approval
	// can match: the action turns stale, and Send prepares again.)
	sess.mu.Lock()
	p.settings, p.gen = sess.settings(), c.gen
	sess.mu.Unlock()
	return p, nil
}

// modelServer is the server id of a model-facing name: server ids never
// contain '_', and ModelNames always keeps the whole "mcp_<server>_"
// prefix, so the id is the text up to the next '_'.
func modelServer(name string) (string, bool) {
	rest, ok := bytes.CutPrefix([]byte(name), []byte("mcp_"))
	id, _, found := bytes.Cut(rest, []byte("_"))
	if !ok || !found || len(id) == 0 {
		return "", false
	}
	return string(id), true
}

// findTool finds the tool spec names in cat.
func (s *Supervisor) findTool(server string, spec CallSpec, cat *Catalog) (contracts.CatalogTool, error) {
	if spec.Name != "" {
		if t, ok := cat.toolByModel(spec.Name); ok {
			return t, nil
		}
		names := make([]string, len(cat.Tools))
		for i, t := range cat.Tools {
			names[i] = t.Name
		}
		return contracts.CatalogTool{}, s.unknownTool(server, spec.Name, names, cat)
	}
	t, ok := cat.toolByOriginal(spec.Tool)
	switch {
	case ok && spec.Bound != nil && spec.Bound.ToolDigest != "" && t.Digest != spec.Bound.ToolDigest:
		return contracts.CatalogTool{}, s.definitionChanged(server, spec.Tool)
	case ok:
		return t, nil
	case spec.Bound != nil:
		return contracts.CatalogTool{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonConnectionChanged,
			"server %q no longer offers tool %q; nothing was sent", server, s.clip(spec.Tool, 200))
	}
	names := make([]string, len(cat.Tools))
	for i, t := range cat.Tools {
		names[i] = t.OriginalName
	}
	return contracts.CatalogTool{}, s.unknownTool(server, spec.Tool, names, cat)
}

// callArguments returns the canonical arguments of a call, validated
// against the tool's input schema.
func (s *Supervisor) callArguments(server string, spec CallSpec, tool contracts.CatalogTool, cat *Catalog) ([]byte, error) {
	args := spec.Arguments
	if spec.Bound != nil && spec.Bound.ToolDigest != "" {
		// Canonicalised and validated against this very definition when
		// the action was prepared; the approval covered these bytes.
		if len(args) == 0 {
			args = []byte("{}")
		}
		return args, nil
	}
	if spec.Canonical {
		if len(args) == 0 {
			args = []byte("{}")
		}
		canon, err := s.CanonicalArguments(args)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(canon, args) {
			// The bytes sent must be the bytes that were hashed: a caller that
			// skipped CanonicalArguments is a bug, not something to repair here.
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsNotCanonical,
				"the arguments of tool %q are not in canonical form", s.clip(tool.OriginalName, 200))
		}
	} else {
		// The caller's own arguments: its keys are quoted back as it sent
		// them (redacting them would tell it when one equals a secret).
		canon, err := CanonicalArguments(args)
		if err != nil {
			return nil, err
		}
		args = canon
	}
	if err := cat.validateInput(s.schemas, tool, args); err != nil {
		return nil, fmt.Errorf("arguments for %s on %q: %w", tool.OriginalName, server, err)
	}
	return args, nil
}

// boundConn is the live connection of a call pinned by an approval: only
// if it is the one the approval names, with the settings it named. It
// never connects.
func (s *session) boundConn(b Binding, tool string) (*conn, error) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil || c.gen != b.ConnectionGeneration || s.settings().ApprovalDigest(tool) != b.SettingsDigest {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonConnectionChanged,
				"server %q is no longer connected with the connection and settings the approval was given for; nothing was sent", s.cfg.ID),
			"make the call again and approve the new action")
	}
	return c, nil
}

// SendOptions are how one prepared call is sent.
type SendOptions struct {
	// Progress receives the server's progress notifications while the call
	// runs. It may be nil. It is called from a goroutine of the call (never
	// the transport's reader), one notification at a time; when it is
	// slower than the server, intermediate notifications are coalesced into
	// the latest. It is never called after Send returns.
	Progress func(p contracts.ProgressParams)
	// HardMax bounds the whole call however much progress the server
	// reports. Default 10 × the server's timeoutMs; at most 1 h.
	HardMax time.Duration
	// Redact, when set, redacts the server's error message for the answer
	// to this call instead of Options.Redact: the daemon's view of the
	// request, which leaves what the caller itself sent as sent, so that
	// an error echoing the caller's arguments is no test of a guess
	// against a stored secret.
	Redact func(string) string
}

// Send sends the prepared call and waits for its result.
//
// It first waits for a slot of the server and one of the supervisor
// (Options.MaxPerServer, MaxInFlight); a disconnect of the server ends the
// wait with nothing sent, and so it does a call made before the last
// disconnect (WithRequestTime). If the connection or its catalog changed
// while the call waited, it is prepared again against the current one
// (a bound call is refused instead, with nothing sent).
//
// On a 2026-07-28 Streamable HTTP connection the request also carries the
// Mcp-Param-* headers the tool's x-mcp-header annotations declare; an
// argument no such header can carry is refused with nothing sent. A result
// whose resultType is input_required is answered: its input requests wait
// for the owner (Options.ServerRequest; the call's timeout is paused
// meanwhile), then the same call goes again with inputResponses and the
// requestState, as often as the server asks (at most 10 rounds); an input
// refused or left unanswered until it expired ends the call with
// ErrFailedPrecondition, reason input_not_given. Any resultType pikod does
// not know is an invalid result (ErrOutcomeUnknown, reason invalid_result).
//
// The call may take timeoutMs; every progress notification extends that to
// timeoutMs from its arrival, never past HardMax from the start. A call
// that times out, whose ctx ends, or whose connection fails after it was
// sent returns an error wrapping contracts.ErrOutcomeUnknown (the server is
// told with notifications/cancelled where the transport carries it). The
// server's own error answer wraps contracts.ErrUpstream. A failure that
// provably happened before any byte of the request left pikod (every
// failure before the request reaches the transport; a refused or failed
// connection, a closed stdin pipe, a cancellation before the write) is
// marked with contracts.MarkNotSent instead; if the transport could not
// take the request, the server is failed with the reason. Nothing is ever
// retried. Send logs nothing: the caller writes the call's one line, from
// the outcome (Elapsed, InputRounds) or the error.
func (p *PreparedCall) Send(ctx context.Context, opts SendOptions) (*CallOutcome, error) {
	s := p.s
	// A slot of the server first: a busy or hung server makes its own
	// calls wait, nobody else's.
	release, err := s.admit(ctx, p.sess)
	if err != nil {
		return nil, s.beforeSending(p.server, p.tool.OriginalName, err)
	}
	defer release()
	if err := p.stillCurrent(ctx); err != nil {
		return nil, s.beforeSending(p.server, p.tool.OriginalName, err)
	}
	sess, c, tool := p.sess, p.c, p.tool

	timeout := time.Duration(sess.settings().Timeout()) * time.Millisecond
	hardMax := opts.HardMax
	if hardMax <= 0 {
		hardMax = 10 * timeout
	}
	hardMax = min(hardMax, maxHardTimeout)

	token := "pikod-progress-" + strconv.FormatUint(progressTokens.Add(1), 10)
	params := toolCallParams(tool.OriginalName, p.args, token, p.task)
	var ro reqOpts
	if mcp.IsModernProtocol(c.protocol) && sess.cfg.Transport == contracts.TransportHTTP {
		// Mcp-Param-* headers, as the tool's x-mcp-header annotations say.
		if ro.header, err = paramHeaders(tool.InputSchema, params); err != nil {
			return nil, s.beforeSending(p.server, tool.OriginalName, fmt.Errorf("tools/call %s on %q: %w", s.clip(tool.OriginalName, 200), p.server, err))
		}
	}
	updates := c.progress.add(token)
	defer c.progress.remove(token)
	fwd := startForwarder(opts.Progress, p.server, tool.OriginalName)
	defer fwd.stop()

	if b := p.spec.Bound; b != nil && b.ToolDigest != "" {
		// The last look before the request is written: a catalog swapped
		// since the lookup (list_changed) is seen here.
		if testHookBeforeDefinitionCheck != nil {
			testHookBeforeDefinitionCheck()
		}
		if err := c.checkDefinition(ctx, tool.OriginalName, b.ToolDigest); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, s.beforeSending(p.server, tool.OriginalName, err)
	}
	track := newCallTrack(tool.OriginalName)
	c.calls.add(track)
	defer c.calls.remove(track)
	start := time.Now()
	what := "tools/call " + s.clip(tool.OriginalName, 200)
	var (
		ans    wireAnswer
		out    *CallOutcome
		rounds int
	)
	for {
		var expired string
		ans, expired = s.sendAndWait(ctx, sess, c, track, params, ro, updates, fwd, timeout, hardMax)
		if ans.err != nil {
			switch {
			case expired != "" && notSentRequest(ans.err) && rounds == 0:
				// The transport could not take the request in time (a
				// connection that would not open): nothing left, and the
				// connection is no good.
				why := fmt.Sprintf("%s could not be sent within timeoutMs (%d ms)", what, sess.settings().Timeout())
				sess.lostConn(c, why+"; the connection was closed", contracts.StateFailed)
				return nil, contracts.MarkNotSent(contracts.WithHint(contracts.Errorf(contracts.ErrDeadlineExceeded, contracts.ReasonNotSent,
					"%s on %q: %s; nothing was sent", what, sess.cfg.ID, why),
					"'pikoctl mcp status "+sess.cfg.ID+"' shows why; the call had no effect and can be made again once the server is back"))
			case expired != "":
				return nil, contracts.WithHint(contracts.WithReason(fmt.Errorf("%s on %q %s; the outcome is unknown and pikod will not retry it: %w",
					what, sess.cfg.ID, expired, contracts.ErrOutcomeUnknown), contracts.ReasonTimeoutOutcomeUnknown),
					"check the server for the effect before asking again; raise timeoutMs if the tool is slow")
			default:
				return nil, s.requestErrorRedacted(ctx, sess, c, what, ans.err, opts.Redact)
			}
		}
		var err error
		if p.task {
			out, err = s.taskOutcome(ans.raw)
		} else {
			out, err = s.outcome(tool, ans.raw)
		}
		if err != nil {
			return nil, fmt.Errorf("%s on %q: %w", what, sess.cfg.ID, err)
		}
		if !out.inputRequired {
			break
		}
		// A 2026-07-28 server needs input before it finishes: its input
		// requests are asked (the owner answers elicitations and
		// samplings), then the same call goes again with the answers and
		// the server's requestState, as the revision says. This is the
		// protocol's continuation of the one call, not a retry.
		rounds++
		if rounds > maxInputRounds {
			return nil, contracts.WithReason(fmt.Errorf("%s on %q: the server still asked for input after %d rounds; pikod gave up: %w",
				what, sess.cfg.ID, maxInputRounds, contracts.ErrUpstream), contracts.ReasonInputRoundsExceeded)
		}
		next, err := s.continueWithInput(ctx, c, track, fwd, params, ans.raw)
		if err != nil {
			return nil, fmt.Errorf("%s on %q: %w", what, sess.cfg.ID, err)
		}
		params = next
	}
	if sess.cfg.Transport != contracts.TransportStdio {
		s.auth(sess.cfg.ID).callWentThrough()
	}
	out.Elapsed, out.InputRounds = time.Since(start), rounds
	return out, nil
}

// stillCurrent checks, once the call has its slot, that the connection and
// the catalog it was prepared against are still the session's (waiting
// for a re-discovery in progress, as the lookup did). When they are not,
// an unbound call is prepared again, once, against the current ones; a
// bound call is refused (the approval named that connection).
func (p *PreparedCall) stillCurrent(ctx context.Context) error {
	p.sess.mu.Lock()
	live := p.sess.conn
	p.sess.mu.Unlock()
	if live == p.c {
		cat, err := p.c.freshCatalog(ctx)
		if err != nil {
			return err
		}
		if cat == p.cat {
			return nil
		}
	}
	if b := p.spec.Bound; b != nil {
		if _, err := p.sess.boundConn(*b, p.spec.Tool); err != nil {
			return err
		}
		// Same connection, new catalog: the tool must still be there (with
		// the approved definition; Send checks it once more).
		cat, err := p.c.freshCatalog(ctx)
		if err != nil {
			return err
		}
		t, err := p.s.findTool(p.server, p.spec, cat)
		if err != nil {
			return err
		}
		p.cat, p.tool = cat, t
		return nil
	}
	next, err := p.s.prepare(ctx, p.spec)
	if err != nil {
		return err
	}
	if next.task != p.task {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonDefinitionChanged,
			"the definition of tool %q on server %q changed while the call waited; nothing was sent", p.s.clip(p.tool.OriginalName, 200), p.server)
	}
	*p = *next
	return nil
}
