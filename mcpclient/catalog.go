package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

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
	// Complete is false when a limit or an error cut discovery short.
	Complete bool
	// Problem says why the catalog is incomplete.
	Problem string
	// Excluded are tools the server listed that are left out of Tools
	// (see excludeInvalidHeaderTools).
	Excluded     []contracts.ExcludedTool
	DiscoveredAt time.Time

	// byOriginal and byModel index Tools by original and model-facing
	// name; built once before the catalog is published, read-only after.
	byOriginal, byModel map[string]int
}

// buildIndex fills the name indexes; call it before publishing.
func (c *Catalog) buildIndex() {
	c.byOriginal = make(map[string]int, len(c.Tools))
	c.byModel = make(map[string]int, len(c.Tools))
	for i, t := range c.Tools {
		c.byOriginal[t.OriginalName] = i
		c.byModel[t.Name] = i
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
}

// ToolDigest is the hex SHA-256 of a tool definition: name, title,
// description, input and output schema and annotations, each schema and
// annotation object re-encoded canonically (sorted keys) so that
// formatting alone never changes it.
func ToolDigest(name, title, description string, input, output, annotations json.RawMessage) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(name), []byte(title), []byte(description),
		canonicalJSON(input), canonicalJSON(output), canonicalJSON(annotations)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes v with sorted object keys; invalid or empty
// input is returned as is.
func canonicalJSON(v json.RawMessage) []byte {
	if len(bytes.TrimSpace(v)) == 0 {
		return nil
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return v
	}
	out, err := json.Marshal(x) // maps marshal with sorted keys
	if err != nil {
		return v
	}
	return out
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
// "resources", "resourceTemplates" or "prompts"), within the limits. budget
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
	lim = lim.withDefaults()
	cat := &Catalog{Complete: true, DiscoveredAt: time.Now().UTC(),
		Tools: []contracts.CatalogTool{}, Resources: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}, Prompts: []json.RawMessage{}}
	budget := lim.MaxBytes
	fail := func(err error) {
		if cat.Complete {
			cat.Complete = false
			cat.Problem = err.Error()
		}
	}
	if caps.tools {
		raw, err := listAll(ctx, fetch, "tools/list", "tools", lim, &budget)
		if err != nil {
			fail(err)
		}
		tools, err := toolsFrom(s, raw)
		if err != nil {
			fail(err)
		}
		cat.Tools = tools
	}
	if caps.resources && s.ResourcesEnabled() {
		raw, err := listAll(ctx, fetch, "resources/list", "resources", lim, &budget)
		if err != nil {
			fail(err)
		}
		cat.Resources = orEmpty(raw)
		raw, err = listAll(ctx, fetch, "resources/templates/list", "resourceTemplates", lim, &budget)
		if err != nil {
			fail(err)
		}
		cat.ResourceTemplates = orEmpty(raw)
	}
	if caps.prompts && s.PromptsEnabled() {
		raw, err := listAll(ctx, fetch, "prompts/list", "prompts", lim, &budget)
		if err != nil {
			fail(err)
		}
		cat.Prompts = orEmpty(raw)
	}
	return cat
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
		out[i] = contracts.CatalogTool{
			Name: model[i], Server: s.ID, OriginalName: d.Name, Title: d.Title, Description: d.Description,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Annotations: d.Annotations,
			Selected: selected, Grant: grant,
			Digest: ToolDigest(d.Name, d.Title, d.Description, d.InputSchema, d.OutputSchema, d.Annotations),
		}
	}
	return out, problem
}
