package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pikod/pikod/contracts"
)

// CatalogLimits bound discovery for one server. An exceeded limit stops
// discovery and marks the catalog incomplete; it is never published as
// complete.
type CatalogLimits struct {
	// MaxPages bounds the pages of each list. Default 1,000.
	MaxPages int
	// MaxItems bounds the entries of each list. Default 20,000.
	MaxItems int
	// MaxBytes bounds the JSON bytes of the whole catalog. Default 64 MiB.
	MaxBytes int
}

func (l CatalogLimits) withDefaults() CatalogLimits {
	if l.MaxPages <= 0 {
		l.MaxPages = 1000
	}
	if l.MaxItems <= 0 {
		l.MaxItems = 20000
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 64 << 20
	}
	return l
}

// Catalog is one server's discovered offer.
type Catalog struct {
	Tools             []contracts.CatalogTool
	Resources         []json.RawMessage
	ResourceTemplates []json.RawMessage
	Prompts           []json.RawMessage
	// Skills are the entries of skills/list (a server that declares the
	// Skills extension), nil for a server that does not.
	Skills []json.RawMessage
	// Complete is false when a limit or an error cut discovery short.
	Complete bool
	// Problem says why the catalog is incomplete.
	Problem string
	// Excluded are tools the server listed that are left out of Tools
	// (see excludeInvalidHeaderTools).
	Excluded     []contracts.ExcludedTool
	DiscoveredAt time.Time

	// problems says, per list, why it is incomplete ("" when it is not),
	// and sizes how many JSON bytes it took: a refetch of some lists keeps
	// the others' (refetchLists). toolsStale says the last refetch of the
	// tools failed: Tools are the ones read before, and publish suspends
	// their grants. toolsRead says this catalog read the tools.
	problems   [numLists]string
	sizes      [numLists]int
	toolsStale bool
	toolsRead  bool

	// byOriginal and byModel index Tools by original and model-facing
	// name; built once before the catalog is published, read-only after.
	byOriginal, byModel map[string]int
	// offer indexes resources, templates and prompts (see offerIndex);
	// built with the name indexes, read-only after, shared by copies.
	offer *offerIndex
	// inputs holds each tool's compiled input schema (*compiledInput) by
	// definition digest, compiled at the first call that needs it: one
	// compilation and one lookup per definition, never a hash of the
	// schema per call. Made with the indexes; keyed by digest, so copies
	// may share it.
	inputs *sync.Map
}

// compiledInput is one tool definition's compiled input schema, or why it
// does not compile.
type compiledInput struct {
	sch *jsonschema.Schema
	err error
}

// validateInput checks a call's canonical arguments against tool's input
// schema, compiled once per definition (through cache, which also bounds
// and shares the compilations across servers).
func (c *Catalog) validateInput(cache *SchemaCache, tool contracts.CatalogTool, args []byte) error {
	if c.inputs == nil || tool.Digest == "" {
		return cache.Validate(tool.InputSchema, args)
	}
	v, ok := c.inputs.Load(tool.Digest)
	if !ok {
		sch, err := cache.compiled(tool.InputSchema)
		v, _ = c.inputs.LoadOrStore(tool.Digest, &compiledInput{sch: sch, err: err})
	}
	ci := v.(*compiledInput)
	if ci.err != nil {
		return ci.err
	}
	return cache.validateCompiled(ci.sch, args)
}

// buildIndex fills the name indexes; call it before publishing.
func (c *Catalog) buildIndex() {
	c.inputs = new(sync.Map)
	c.byOriginal = make(map[string]int, len(c.Tools))
	c.byModel = make(map[string]int, len(c.Tools))
	for i, t := range c.Tools {
		c.byOriginal[t.OriginalName] = i
		c.byModel[t.Name] = i
	}
	if c.offer == nil {
		c.offer = newOfferIndex(c)
	}
}

// toolByOriginal returns the tool with that original name.
func (c *Catalog) toolByOriginal(name string) (contracts.CatalogTool, bool) {
	i, ok := c.byOriginal[name]
	if !ok {
		return contracts.CatalogTool{}, false
	}
	return c.Tools[i], true
}

// toolByModel returns the tool with that model-facing name.
func (c *Catalog) toolByModel(name string) (contracts.CatalogTool, bool) {
	i, ok := c.byModel[name]
	if !ok {
		return contracts.CatalogTool{}, false
	}
	return c.Tools[i], true
}

// toolDef is the part of a tool definition pikod reads; the rest passes
// through in the raw form.
type toolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
}

// taskSupportOf reads execution.taskSupport: forbidden, optional or
// required, "" when absent (which means forbidden). Any other value is a
// problem of the definition.
func taskSupportOf(execution json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(execution)) == 0 || string(bytes.TrimSpace(execution)) == "null" {
		return "", nil
	}
	var e struct {
		TaskSupport *string `json:"taskSupport"`
	}
	if err := json.Unmarshal(execution, &e); err != nil {
		return "", fmt.Errorf("its execution is not an object with a string taskSupport")
	}
	if e.TaskSupport == nil {
		return "", nil
	}
	switch *e.TaskSupport {
	case "forbidden", "optional", "required":
		return *e.TaskSupport, nil
	}
	return "", fmt.Errorf("its execution.taskSupport %s is not forbidden, optional or required", strconv.QuoteToASCII(clip(*e.TaskSupport, 40)))
}

// toolDigestOf is d's digest: contracts.ToolDigest with its execution
// object (contracts.ToolExecutionDigest).
func toolDigestOf(d toolDef) string {
	return contracts.ToolExecutionDigest(contracts.ToolDigest(d.Name, d.Title, d.Description, d.InputSchema, d.OutputSchema, d.Annotations), d.Execution)
}

// Model-facing names.
const (
	maxNameLen = 64
	hashLen    = 10 // hex characters of the suffix: 40 bits
)

// ModelNames returns the model-facing name of each tool of one server, in
// the order given: mcp_<server>_<tool> limited to [A-Za-z0-9_-] and 64
// characters. A name gets a short hash of the original suffix whenever
// sanitising or truncating changed it or two names would collide, so names
// are unique, stable across restarts and independent of discovery order.
func ModelNames(server string, tools []string) []string {
	plain := make([]string, len(tools))
	count := map[string]int{}
	for i, t := range tools {
		base := "mcp_" + server + "_" + t
		s := sanitizeName(base)
		if s != base || len(s) > maxNameLen {
			s = hashedName(s, server, t, hashLen)
		}
		plain[i] = s
		count[s]++
	}
	out := make([]string, len(tools))
	// A name two originals share: give every one of them a hashed name, so
	// the outcome does not depend on which came first.
	for i, t := range tools {
		if count[plain[i]] == 1 {
			out[i] = plain[i]
			continue
		}
		out[i] = hashedName(sanitizeName("mcp_"+server+"_"+t), server, t, hashLen)
	}
	// Hash prefixes can still meet; lengthen the hash for those alone.
	for n := hashLen + 6; n <= 64; n += 6 {
		seen := map[string]int{}
		for _, name := range out {
			seen[name]++
		}
		clash := false
		for i, t := range tools {
			if seen[out[i]] > 1 {
				out[i] = hashedName(sanitizeName("mcp_"+server+"_"+t), server, t, n)
				clash = true
			}
		}
		if !clash {
			break
		}
	}
	return out
}

func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func hashedName(sanitized, server, tool string, n int) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	h := hex.EncodeToString(sum[:])
	// The suffix and its '_' must fit: a repeated input name makes
	// ModelNames lengthen the hash to the end without ever separating them.
	n = min(n, len(h), maxNameLen-1)
	suffix := "_" + h[:n]
	keep := maxNameLen - len(suffix)
	if keep > len(sanitized) {
		keep = len(sanitized)
	}
	return sanitized[:keep] + suffix
}

// grantOf applies the settings to one tool. Annotations and descriptions
// never grant anything.
func grantOf(s *contracts.ServerSettings, tool string) (selected bool, grant string) {
	if s.Tools != nil && !slices.Contains(*s.Tools, tool) {
		return false, contracts.GrantNotSelected
	}
	switch {
	case slices.Contains(s.ReadOnlyTools, tool):
		return true, contracts.GrantRead
	case slices.Contains(s.AutonomousTools, tool):
		return true, contracts.GrantAutonomous
	}
	return true, contracts.GrantApproval
}

// pageLister fetches one page of a list method.
type pageLister func(ctx context.Context, method string, cursor string) (json.RawMessage, error)

// errLimit marks a discovery cut short by a limit.
type errLimit struct{ msg string }

func (e *errLimit) Error() string { return e.msg }

// listAll collects every entry of a paginated list (field is "tools",
// "resources", "resourceTemplates", "prompts" or "skills"), within the limits. budget
// is the catalog's remaining byte budget, shared by all lists.
func listAll(ctx context.Context, fetch pageLister, method, field string, lim CatalogLimits, budget *int) ([]json.RawMessage, error) {
	var items []json.RawMessage
	cursor := ""
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > lim.MaxPages {
			return items, &errLimit{fmt.Sprintf("%s: more than %d pages", method, lim.MaxPages)}
		}
		raw, err := fetch(ctx, method, cursor)
		if err != nil {
			return items, fmt.Errorf("%s page %d: %w", method, page, err)
		}
		*budget -= len(raw)
		if *budget < 0 {
			return items, &errLimit{fmt.Sprintf("%s: catalog larger than %d bytes", method, lim.withDefaults().MaxBytes)}
		}
		var res struct {
			NextCursor *string                    `json:"nextCursor"`
			Items      map[string]json.RawMessage `json:"-"`
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return items, fmt.Errorf("%s page %d: result is not a JSON object: %w", method, page, err)
		}
		if c, ok := fields["nextCursor"]; ok && string(c) != "null" {
			if err := json.Unmarshal(c, &res.NextCursor); err != nil {
				return items, fmt.Errorf("%s page %d: nextCursor is not a string", method, page)
			}
		}
		var pageItems []json.RawMessage
		if v, ok := fields[field]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &pageItems); err != nil {
				return items, fmt.Errorf("%s page %d: %q is not an array", method, page, field)
			}
		}
		if len(items)+len(pageItems) > lim.MaxItems {
			return append(items, pageItems[:lim.MaxItems-len(items)]...),
				&errLimit{fmt.Sprintf("%s: more than %d entries", method, lim.MaxItems)}
		}
		items = append(items, pageItems...)
		if res.NextCursor == nil || *res.NextCursor == "" {
			return items, nil
		}
		if seen[*res.NextCursor] {
			// Quoted whole: the catalog's problem is redacted, then cut.
			return items, fmt.Errorf("%s page %d: the server repeated cursor %q", method, page, *res.NextCursor)
		}
		seen[*res.NextCursor] = true
		cursor = *res.NextCursor
	}
}

// discover builds the catalog of one server. Lists the server does not
// offer (no capability) are empty, not errors. A limit or a failing list
// leaves the catalog incomplete with the reason.
func discover(ctx context.Context, fetch pageLister, s *contracts.ServerSettings, caps serverCaps, lim CatalogLimits) *Catalog {
	cat, _ := refetchLists(ctx, fetch, s, caps, lim, nil, allLists)
	return cat
}

// refetchLists builds a new catalog from prev with the lists of which read
// again (every list when prev is nil: a discovery). The other lists, their
// problems and sizes come from prev, and the byte limit counts them. A list
// whose refetch fails on an error keeps prev's entries, with the problem
// (failed names those lists: worth another try); a refetch cut by a limit,
// or a discovery, keeps what it read, as the list. Tools not read again
// get the settings' grants back, unpinned: publish applies the pins to every
// catalog alike.
func refetchLists(ctx context.Context, fetch pageLister, s *contracts.ServerSettings, caps serverCaps, lim CatalogLimits,
	prev *Catalog, which listSet) (cat *Catalog, failed listSet) {
	lim = lim.withDefaults()
	cat = &Catalog{Complete: true, DiscoveredAt: time.Now().UTC(),
		Tools: []contracts.CatalogTool{}, Resources: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}, Prompts: []json.RawMessage{}}
	if prev != nil {
		cat.Tools = regranted(s, prev.Tools)
		cat.Resources, cat.ResourceTemplates, cat.Prompts, cat.Skills = prev.Resources, prev.ResourceTemplates, prev.Prompts, prev.Skills
		cat.problems, cat.sizes, cat.toolsStale = prev.problems, prev.sizes, prev.toolsStale
		if !which.has(listTools) {
			// The tools kept were left out (or not) when they were read.
			cat.Excluded = prev.Excluded
		}
	}
	budget := lim.MaxBytes
	for k := range numLists {
		if !which.has(k) {
			budget -= cat.sizes[k]
		}
	}
	for k := range numLists {
		if !which.has(k) {
			continue
		}
		if k == listTools {
			cat.toolsRead = true
		}
		if !offered(k, caps, s) {
			cat.setList(k, nil)
			cat.sizes[k], cat.problems[k] = 0, ""
			if k == listTools {
				cat.toolsStale = false
			}
			continue
		}
		before := budget
		raw, err := listAll(ctx, fetch, listMethods[k], listFields[k], lim, &budget)
		var limit *errLimit
		if err != nil && prev != nil && !errors.As(err, &limit) {
			// Keep what was read before; budget gets back what this
			// attempt took.
			budget = before
			failed = failed.with(k)
			cat.problems[k] = fmt.Sprintf("%s (read again after the server announced a change; the entries shown are from the last complete read)", err)
			if k == listTools {
				cat.toolsStale = true
			}
			continue
		}
		cat.sizes[k] = before - budget
		cat.problems[k] = ""
		if err != nil {
			cat.problems[k] = err.Error()
		}
		if k == listTools {
			cat.toolsStale = false
			tools, terr := toolsFrom(s, raw)
			if terr != nil && err == nil {
				cat.problems[k] = terr.Error()
			}
			cat.Tools = tools
			continue
		}
		cat.setList(k, raw)
	}
	for _, p := range cat.problems {
		if p != "" {
			cat.Complete, cat.Problem = false, p
			break
		}
	}
	return cat, failed
}

// regranted copies tools with the settings' grants and no pin state, as
// toolsFrom gives them.
func regranted(s *contracts.ServerSettings, tools []contracts.CatalogTool) []contracts.CatalogTool {
	out := slices.Clone(tools)
	for i := range out {
		t := &out[i]
		t.Selected, t.Grant = grantOf(s, t.OriginalName)
		t.Pin, t.SuspendedGrant, t.PinnedDigest = "", "", ""
	}
	return out
}

// setList replaces one of the raw lists (not tools).
func (c *Catalog) setList(k listKind, raw []json.RawMessage) {
	switch k {
	case listTools:
		c.Tools = []contracts.CatalogTool{}
	case listResources:
		c.Resources = orEmpty(raw)
	case listTemplates:
		c.ResourceTemplates = orEmpty(raw)
	case listPrompts:
		c.Prompts = orEmpty(raw)
	case listSkills:
		c.Skills = raw
	}
}

// offered reports whether pikod reads list k of a server: the server
// declares it, and the settings do not turn it off.
func offered(k listKind, caps serverCaps, s *contracts.ServerSettings) bool {
	switch k {
	case listTools:
		return caps.tools
	case listResources, listTemplates:
		return caps.resources && s.ResourcesEnabled()
	case listPrompts:
		return caps.prompts && s.PromptsEnabled()
	case listSkills:
		// Skills are resources: the resources setting switches them off.
		return caps.skills && s.ResourcesEnabled()
	}
	return false
}

// listKind is one list of a catalog.
type listKind int

const (
	listTools listKind = iota
	listResources
	listTemplates
	listPrompts
	listSkills
	numLists
)

var (
	listNames   = [numLists]string{contracts.ListTools, contracts.ListResources, contracts.ListResourceTemplates, contracts.ListPrompts, contracts.ListSkills}
	listMethods = [numLists]string{"tools/list", "resources/list", "resources/templates/list", "prompts/list", methodSkillsList}
	listFields  = [numLists]string{"tools", "resources", "resourceTemplates", "prompts", "skills"}
)

// listSet is a set of lists.
type listSet uint8

const allLists = listSet(1<<numLists - 1)

func (l listSet) has(k listKind) bool     { return l&(1<<k) != 0 }
func (l listSet) with(k listKind) listSet { return l | 1<<k }
func (l listSet) names() []string {
	var out []string
	for k := range numLists {
		if l.has(k) {
			out = append(out, listNames[k])
		}
	}
	return out
}

// orEmpty keeps a list that failed before its first page a JSON [] rather
// than null.
func orEmpty(raw []json.RawMessage) []json.RawMessage {
	if raw == nil {
		return []json.RawMessage{}
	}
	return raw
}

// serverCaps are the server capabilities pikod acts on: which lists it
// offers, which of them it announces changes of, and whether it takes
// resource subscriptions.
type serverCaps struct {
	tools, resources, prompts                                  bool
	toolsListChanged, resourcesListChanged, promptsListChanged bool
	subscribe                                                  bool
	completions                                                bool
	logging                                                    bool
	// skills says the server declares the Skills extension
	// (contracts.SkillsExtension) with a settings object.
	skills bool
	// tasksList, tasksCancel and tasksToolCalls are the legacy tasks
	// capability's list, cancel and requests.tools.call.
	tasks, tasksList, tasksCancel, tasksToolCalls bool
}

// toolsFrom decodes raw tool definitions, names them and applies grants.
// Tools are sorted by original name so the catalog does not depend on the
// server's order.
func toolsFrom(s *contracts.ServerSettings, raw []json.RawMessage) ([]contracts.CatalogTool, error) {
	defs := make([]toolDef, 0, len(raw))
	seen := map[string]bool{}
	var problem error
	for i, r := range raw {
		var d toolDef
		if err := json.Unmarshal(r, &d); err != nil || d.Name == "" {
			if problem == nil {
				problem = fmt.Errorf("tools/list: entry %d is not a tool definition with a name", i)
			}
			continue
		}
		if _, err := taskSupportOf(d.Execution); err != nil {
			if problem == nil {
				problem = fmt.Errorf("tools/list: tool %q: %v", d.Name, err)
			}
			continue
		}
		if seen[d.Name] {
			if problem == nil {
				problem = fmt.Errorf("tools/list: tool %q is listed twice", d.Name)
			}
			continue
		}
		seen[d.Name] = true
		defs = append(defs, d)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	names := make([]string, len(defs))
	for i := range defs {
		names[i] = defs[i].Name
	}
	model := ModelNames(s.ID, names)
	out := make([]contracts.CatalogTool, len(defs))
	for i, d := range defs {
		selected, grant := grantOf(s, d.Name)
		support, _ := taskSupportOf(d.Execution)
		out[i] = contracts.CatalogTool{
			Name: model[i], Server: s.ID, OriginalName: d.Name, Title: d.Title, Description: d.Description,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Annotations: d.Annotations,
			Execution: d.Execution, TaskSupport: support,
			Selected: selected, Grant: grant,
			Digest: toolDigestOf(d),
		}
	}
	return out, problem
}
