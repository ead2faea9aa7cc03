package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// Resources, prompts and completion. Every request here is a read: it has
// no effect on the server, so it is sent at most once and never waits for
// an approval; it takes the server's slots like a call and is bounded by
// the server's timeoutMs (and, like every message, by its maxBytes). A
// resource URI, a prompt or a template is sent only to the server whose
// catalog lists it: pikod never fetches a URI itself.

// maxURIBytes bounds the resource URIs pikod passes on (resources/read,
// subscriptions).
const maxURIBytes = 16 << 10

// offerIndex is what a catalog offers besides tools, indexed for reads,
// prompt gets and completion. It is built once per catalog and read-only
// after.
type offerIndex struct {
	// resources holds the URIs resources/list gave.
	resources map[string]bool
	// templates holds the URI templates resources/templates/list gave, by
	// their exact text; nil for one that is not a valid RFC 6570 template
	// (it matches nothing, but completion may still name it).
	templates map[string]*uriTemplate
	ordered   []*uriTemplate
	// prompts holds the prompts prompts/list gave, by name.
	prompts map[string]promptDef
	// skills indexes the entries skills/list gave.
	skills skillIndex
}

// promptDef is the part of a prompt definition pikod checks arguments
// against.
type promptDef struct {
	Name      string      `json:"name"`
	Arguments []promptArg `json:"arguments"`
}

type promptArg struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
}

func newOfferIndex(c *Catalog) *offerIndex {
	o := &offerIndex{resources: map[string]bool{}, templates: map[string]*uriTemplate{}, prompts: map[string]promptDef{}}
	for _, raw := range c.Resources {
		var r struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(raw, &r) == nil && r.URI != "" {
			o.resources[r.URI] = true
		}
	}
	for _, raw := range c.ResourceTemplates {
		var r struct {
			URITemplate string `json:"uriTemplate"`
		}
		if json.Unmarshal(raw, &r) != nil || r.URITemplate == "" {
			continue
		}
		t, err := parseURITemplate(r.URITemplate)
		if err != nil {
			t = nil
		}
		o.templates[r.URITemplate] = t
		if t != nil {
			o.ordered = append(o.ordered, t)
		}
	}
	for _, raw := range c.Prompts {
		var p promptDef
		if json.Unmarshal(raw, &p) == nil && p.Name != "" {
			o.prompts[p.Name] = p
		}
	}
	o.skills = newSkillIndex(c.Skills)
	return o
}

// offers returns the catalog's offer index (built on the spot for a
// catalog that was never published, which has none).
func (c *Catalog) offers() *offerIndex {
	if c.offer == nil {
		return newOfferIndex(c)
	}
	return c.offer
}

// covers reports whether uri is a resource the catalog lists, or one of its
// templates can expand to.
func (o *offerIndex) covers(uri string) bool {
	if o.resources[uri] {
		return true
	}
	for _, t := range o.ordered {
		if t.matches(uri) {
			return true
		}
	}
	return false
}

// feature is a part of a server's offer that its settings can switch off.
type feature string

const (
	featureResources feature = "resources"
	featurePrompts   feature = "prompts"
)

// allows refuses a request for a feature the settings switched off.
func (s *session) allows(f feature) error {
	on, reason := true, ""
	switch f {
	case featureResources:
		on, reason = s.cfg.ResourcesEnabled(), contracts.ReasonResourcesDisabled
	case featurePrompts:
		on, reason = s.cfg.PromptsEnabled(), contracts.ReasonPromptsDisabled
	}
	if on {
		return nil
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, reason,
		"the %s of server %q are switched off by its settings (%q: false); nothing was sent", f, s.cfg.ID, string(f)),
		fmt.Sprintf(`set %q to true in the server's settings (or leave it out) and configure again`, string(f)))
}

// notOffered refuses a request for something the server's capabilities do
// not declare; reason is the capability's word (contracts.ReasonXNotOffered).
func (s *session) notOffered(what, capability, reason string) error {
	return contracts.Errorf(contracts.ErrFailedPrecondition, reason,
		"server %q does not offer %s (its capabilities have no %q); nothing was sent", s.cfg.ID, what, capability)
}

// open prepares a request that uses feature f of server id: the settings
// must allow it; then it takes the server's slots (released by the
// returned function), connects the server and waits for a current catalog.
func (s *Supervisor) open(ctx context.Context, id string, f feature) (*session, *conn, *Catalog, func(), error) {
	sess, err := s.session(id)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := sess.allows(f); err != nil {
		return nil, nil, nil, nil, err
	}
	release, err := s.admit(ctx, sess)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c, err := sess.connect(ctx)
	if err != nil {
		release()
		return nil, nil, nil, nil, err
	}
	cat, err := c.freshCatalog(ctx)
	if err != nil {
		release()
		return nil, nil, nil, nil, err
	}
	return sess, c, cat, release, nil
}

// ask sends one request on c, bounded by the server's timeoutMs, and
// returns its raw result, which must be complete (resultType). what names
// the request in errors; it must be redacted and safe to quote.
func (s *Supervisor) ask(ctx context.Context, sess *session, c *conn, method string, params json.RawMessage, what string) (json.RawMessage, error) {
	rctx, cancel := context.WithTimeout(ctx, time.Duration(sess.settings().Timeout())*time.Millisecond)
	defer cancel()
	start := time.Now()
	raw, err := c.raw.request(rctx, method, params)
	if err != nil {
		err = s.requestError(rctx, sess, c, what, err)
		sess.log.Info().Err(err).Str("method", method).Msg("request ended without a result")
		return nil, err
	}
	if err := checkComplete(raw); err != nil {
		return nil, fmt.Errorf("%s on %q: %w", what, sess.cfg.ID, err)
	}
	sess.log.Debug().Str("method", method).Dur("elapsed", time.Since(start)).Int("result_bytes", len(raw)).Msg("answered")
	return raw, nil
}

// checkComplete accepts a result that is a JSON object whose resultType is
// absent (the legacy protocol) or "complete". 2026-07-28 servers may ask
// for input instead, which pikod cannot give yet; any other resultType is
// one pikod does not know, and such a result is invalid.
func checkComplete(raw json.RawMessage) error {
	var f struct {
		ResultType *string `json:"resultType"`
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &f) != nil {
		return contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server answered with a result that is not a JSON object")
	}
	switch {
	case f.ResultType == nil || *f.ResultType == "complete":
		return nil
	case *f.ResultType == "input_required":
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonInputRequired,
			"the server asked for input pikod cannot give yet (resultType input_required)")
	}
	return contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult,
		"the server answered with resultType %s, which pikod does not know", strconv.QuoteToASCII(clip(*f.ResultType, 40)))
}

// ResourceList is what a server's catalog lists of resources and
// resource templates, exactly as the server sent them. Complete and
// Problem are the catalog's.
type ResourceList struct {
	Resources, Templates []json.RawMessage
	Complete             bool
	Problem              string
}

// Resources returns the resources and templates of a server's catalog
// (connecting it first). A server that offers none lists none.
func (s *Supervisor) Resources(ctx context.Context, id string) (ResourceList, error) {
	_, _, cat, release, err := s.open(ctx, id, featureResources)
	if err != nil {
		return ResourceList{}, err
	}
	release()
	return ResourceList{Resources: orEmpty(cat.Resources), Templates: orEmpty(cat.ResourceTemplates),
		Complete: cat.Complete, Problem: cat.Problem}, nil
}

// ReadResource sends resources/read for uri to the server and returns the
// raw ReadResourceResult exactly as received. The uri must be one the
// server's catalog lists, or that one of its URI templates matches;
// otherwise nothing is sent. Errors are classified as for calls.
func (s *Supervisor) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	if err := checkURI(uri); err != nil {
		return nil, err
	}
	sess, c, cat, release, err := s.open(ctx, server, featureResources)
	if err != nil {
		return nil, err
	}
	defer release()
	if !c.caps.resources {
		return nil, sess.notOffered("resources", "resources", contracts.ReasonResourcesNotOffered)
	}
	if !cat.offers().covers(uri) {
		msg := fmt.Sprintf("server %q lists no resource %s and none of its URI templates matches it", server, strconv.Quote(s.clip(uri, 300)))
		if !cat.Complete {
			msg += "; its catalog is incomplete (" + s.clean(cat.Problem, 300) + ")"
		}
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownResource, "%s; nothing was sent", msg),
			"list what it offers with 'pikoctl mcp resources "+server+"': pikod reads only URIs the server listed or templated")
	}
	params, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return nil, err
	}
	return s.ask(ctx, sess, c, string(mcp.MethodResourcesRead), params, "resources/read "+strconv.Quote(s.clip(uri, 200)))
}

// PromptList is what a server's catalog lists of prompts, exactly as the
// server sent them. Complete and Problem are the catalog's.
type PromptList struct {
	Prompts  []json.RawMessage
	Complete bool
	Problem  string
}

// Prompts returns the prompts of a server's catalog (connecting it first).
func (s *Supervisor) Prompts(ctx context.Context, id string) (PromptList, error) {
	_, _, cat, release, err := s.open(ctx, id, featurePrompts)
	if err != nil {
		return PromptList{}, err
	}
	release()
	return PromptList{Prompts: orEmpty(cat.Prompts), Complete: cat.Complete, Problem: cat.Problem}, nil
}

// PromptRequest is one prompts/get.
type PromptRequest struct {
	Server, Name string
	// Arguments is a JSON object of strings (absent: {}).
	Arguments json.RawMessage
}

// PromptOutcome is what the server answered to prompts/get.
type PromptOutcome struct {
	// Result is the raw GetPromptResult exactly as received.
	Result json.RawMessage
	// Arguments are the canonical arguments sent (CanonicalArguments).
	Arguments []byte
}

// GetPrompt checks the arguments against the prompt's declared arguments
// (strings only; every required one present; none it does not declare),
// then sends prompts/get. Nothing is sent unless all of that holds.
func (s *Supervisor) GetPrompt(ctx context.Context, req PromptRequest) (*PromptOutcome, error) {
	if req.Name == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingPrompt, `missing "name": name one of the server's prompts`)
	}
	args, err := s.CanonicalArguments(req.Arguments)
	if err != nil {
		return nil, err
	}
	sess, c, cat, release, err := s.open(ctx, req.Server, featurePrompts)
	if err != nil {
		return nil, err
	}
	defer release()
	if !c.caps.prompts {
		return nil, sess.notOffered("prompts", "prompts", contracts.ReasonPromptsNotOffered)
	}
	def, ok := cat.offers().prompts[req.Name]
	if !ok {
		return nil, s.unknownPrompt(req.Server, req.Name, cat)
	}
	if err := checkPromptArguments(req.Server, def, args, s.quote); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	writeString(&b, req.Name)
	b.WriteString(`,"arguments":`)
	b.Write(args)
	b.WriteByte('}')
	raw, err := s.ask(ctx, sess, c, string(mcp.MethodPromptsGet), b.Bytes(), "prompts/get "+s.quote(req.Name))
	if err != nil {
		return nil, err
	}
	return &PromptOutcome{Result: raw, Arguments: args}, nil
}

// quote is text for an error message: redacted, cut and quoted (which
// escapes whatever a terminal must not see).
func (s *Supervisor) quote(text string) string { return strconv.Quote(s.clip(text, 200)) }

func (s *Supervisor) unknownPrompt(server, name string, cat *Catalog) error {
	msg := fmt.Sprintf("server %q has no prompt %s", server, s.quote(name))
	if !cat.Complete {
		msg += " in its catalog, which is incomplete (" + s.clean(cat.Problem, 300) + ")"
	}
	hint := "list its prompts with 'pikoctl mcp prompts " + server + "'"
	names := make([]string, 0, len(cat.offers().prompts))
	for n := range cat.offers().prompts {
		names = append(names, n)
	}
	slices.Sort(names)
	if close := closeNames(name, names, 5); len(close) > 0 {
		quoted := make([]string, len(close))
		for i, n := range close {
			quoted[i] = s.quote(n)
		}
		hint = "did you mean " + strings.Join(quoted, ", ") + "? " + hint
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownPrompt, "%s; nothing was sent", msg), hint)
}

// checkPromptArguments checks canonical arguments (a JSON object) against
// a prompt's declared arguments: every member must be a declared argument
// and a string, and every required argument must be there. Every problem
// is reported at once, reason invalid_prompt_arguments. quote renders
// names for the messages.
func checkPromptArguments(server string, def promptDef, args []byte, quote func(string) string) error {
	var got map[string]json.RawMessage
	if err := json.Unmarshal(args, &got); err != nil {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArguments, "the arguments are not a JSON object")
	}
	declared := map[string]bool{}
	names := make([]string, 0, len(def.Arguments))
	for _, a := range def.Arguments {
		declared[a.Name] = true
		names = append(names, quote(a.Name))
	}
	has := "it declares none"
	if len(names) > 0 {
		has = "it declares " + strings.Join(names, ", ")
	}
	var probs contracts.Problems
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(got[k])
		switch {
		case !declared[k]:
			probs = append(probs, contracts.Problem{Server: server, Field: "arguments." + quote(k),
				Message: "the prompt has no such argument (" + has + ")"})
		case len(v) == 0 || v[0] != '"':
			probs = append(probs, contracts.Problem{Server: server, Field: "arguments." + quote(k),
				Message: "must be a string, not " + jsonKindOf(v) + " (prompt arguments are strings)"})
		}
	}
	for _, a := range def.Arguments {
		if _, ok := got[a.Name]; a.Required && !ok {
			probs = append(probs, contracts.Problem{Server: server, Field: "arguments." + quote(a.Name),
				Message: "required by the prompt, and missing"})
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return contracts.WithHint(contracts.WithReason(
		fmt.Errorf("arguments of prompt %s: nothing was sent: %w", quote(def.Name), probs), contracts.ReasonInvalidPromptArguments),
		"see the prompt's arguments with 'pikoctl mcp prompts "+server+"'")
}

// jsonKindOf names the JSON type of a value.
func jsonKindOf(v []byte) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '{':
		return "an object"
	}
	return kindOf(v[0])
}

// CompleteRequest is one completion/complete: an argument of a prompt
// (Prompt) or of a resource template (Template, exactly as listed),
// exactly one of the two.
type CompleteRequest struct {
	Server           string
	Prompt, Template string
	// Argument is the argument to complete, Value what was typed so far.
	Argument, Value string
	// Context holds arguments already entered (context.arguments).
	Context map[string]string
}

// CompleteOutcome is the server's completion, bounded and made safe.
type CompleteOutcome struct {
	// Values are at most contracts.MaxCompletionValues, each redacted and
	// made safe to show (SafeText, exact).
	Values []string
	// Total and HasMore are the server's; HasMore is also true when values
	// were left out.
	Total   int
	HasMore bool
	// Omitted counts the values left out: past the cap, or longer than
	// contracts.MaxCompletionValueChars.
	Omitted int
}

// Complete sends completion/complete for an argument of a prompt or of a
// resource template the server's catalog lists, when the server declares
// the completions capability. The argument, and every argument of the
// context, must be one the prompt or the template declares.
func (s *Supervisor) Complete(ctx context.Context, req CompleteRequest) (*CompleteOutcome, error) {
	f := featurePrompts
	switch {
	case (req.Prompt == "") == (req.Template == ""):
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReference,
			`name exactly one of "prompt" (a prompt's name) or "template" (a resource template's URI template)`)
	case req.Argument == "":
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingArgument, `missing "argument": name the argument to complete`)
	case req.Template != "":
		f = featureResources
	}
	ref := map[string]string{"type": "ref/prompt", "name": req.Prompt}
	if req.Template != "" {
		ref = map[string]string{"type": "ref/resource", "uri": req.Template}
	}
	p := map[string]any{"ref": ref, "argument": map[string]string{"name": req.Argument, "value": req.Value}}
	if len(req.Context) > 0 {
		p["context"] = map[string]any{"arguments": req.Context}
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCount(params); n > contracts.MaxArgumentsChars {
		return nil, tooLarge(n)
	}
	sess, c, cat, release, err := s.open(ctx, req.Server, f)
	if err != nil {
		return nil, err
	}
	defer release()
	if !c.caps.completions {
		return nil, contracts.WithHint(sess.notOffered("completion", "completions", contracts.ReasonCompletionsNotOffered),
			"type the value yourself: the server offers no suggestions")
	}
	var what string
	var declared func(string) bool
	if req.Prompt != "" {
		def, ok := cat.offers().prompts[req.Prompt]
		if !ok {
			return nil, s.unknownPrompt(req.Server, req.Prompt, cat)
		}
		declared = func(n string) bool {
			return slices.ContainsFunc(def.Arguments, func(a promptArg) bool { return a.Name == n })
		}
		what = "prompt " + s.quote(req.Prompt)
	} else {
		t, ok := cat.offers().templates[req.Template]
		if !ok {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTemplate,
				"server %q lists no resource template %s; nothing was sent", req.Server, s.quote(req.Template)),
				"list its templates with 'pikoctl mcp resources "+req.Server+"' and give one exactly as listed")
		}
		declared = func(n string) bool { return t == nil || t.hasVar(n) }
		what = "resource template " + s.quote(req.Template)
	}
	var probs contracts.Problems
	if !declared(req.Argument) {
		probs = append(probs, contracts.Problem{Server: req.Server, Field: "argument",
			Message: s.quote(req.Argument) + " is not an argument of " + what})
	}
	keys := make([]string, 0, len(req.Context))
	for k := range req.Context {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !declared(k) {
			probs = append(probs, contracts.Problem{Server: req.Server, Field: "arguments." + s.quote(k),
				Message: "not an argument of " + what})
		}
	}
	if len(probs) > 0 {
		return nil, contracts.WithReason(fmt.Errorf("completion for %s: nothing was sent: %w", what, probs), contracts.ReasonInvalidCompletionArguments)
	}
	raw, err := s.ask(ctx, sess, c, string(mcp.MethodCompletionComplete), params, "completion/complete for "+what)
	if err != nil {
		return nil, err
	}
	return s.completion(raw)
}

// completion reads a CompleteResult and bounds it.
func (s *Supervisor) completion(raw json.RawMessage) (*CompleteOutcome, error) {
	var res struct {
		Completion *struct {
			Values  []json.RawMessage `json:"values"`
			Total   *json.Number      `json:"total"`
			HasMore *bool             `json:"hasMore"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Completion == nil || res.Completion.Values == nil {
		return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult,
			`the server's completion is not {"completion": {"values": [...]}}`)
	}
	out := &CompleteOutcome{Values: []string{}}
	if t := res.Completion.Total; t != nil {
		if n, err := t.Int64(); err == nil && n >= 0 && n <= 1<<31 {
			out.Total = int(n)
		}
	}
	if res.Completion.HasMore != nil {
		out.HasMore = *res.Completion.HasMore
	}
	for _, v := range res.Completion.Values {
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return nil, contracts.Errorf(contracts.ErrUpstream, contracts.ReasonInvalidResult, "the server's completion holds a value that is not a string")
		}
		str = s.redact(str)
		if len(out.Values) >= contracts.MaxCompletionValues || utf8.RuneCountInString(str) > contracts.MaxCompletionValueChars {
			out.Omitted++
			continue
		}
		out.Values = append(out.Values, contracts.SafeText(str, contracts.Exact, 0))
	}
	if out.Omitted > 0 {
		out.HasMore = true
	}
	return out, nil
}
