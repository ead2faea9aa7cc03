package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// On a 2026-07-28 Streamable HTTP connection, a tools/call mirrors into
// Mcp-Param-{Name} headers the arguments whose property schema carries an
// "x-mcp-header": "Name" annotation. mcp-go encodes and validates them
// (mcp.GenerateParamHeaders, mcp.ValidateParamHeaderAnnotations), but it
// reads the schema through a struct: a schema it cannot decode that way
// (a boolean sub-schema, properties that is not an object) silently gets
// no headers and no validation, and it never looks at annotations outside
// the chain of properties from the root, which the revision makes the tool
// invalid. So pikod walks the raw schema itself: every annotation must be
// statically reachable (root → properties → … → property), and mcp-go
// gets a skeleton of that chain (type, x-mcp-header, properties), which it
// always decodes.

// schemaMaps, schemaLists and schemaSingles are the JSON Schema keywords
// (draft-07 to 2020-12) whose values are schemas: an annotation inside any
// of them is not statically reachable. Values of other keywords (enum,
// const, default, examples, ...) are data, never annotations.
var (
	schemaMaps    = []string{"$defs", "definitions", "patternProperties", "dependentSchemas", "dependencies"}
	schemaLists   = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaSingles = []string{"items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)

// headerWalk collects a schema's annotations and the skeleton of its
// properties chain.
type headerWalk struct {
	found    int
	problems []string
}

// walk visits node (a schema at path). onChain says the node is the root
// or a property reached from it through properties only; its annotation
// counts only when it is a property (not the root).
func (w *headerWalk) walk(node any, path string, onChain, isRoot bool) map[string]any {
	obj, ok := node.(map[string]any)
	if !ok {
		return nil // a boolean schema, or no schema at all
	}
	var sk map[string]any
	if onChain {
		sk = map[string]any{}
		if t, ok := obj["type"]; ok {
			sk["type"] = t
		}
	}
	if a, ok := obj["x-mcp-header"]; ok {
		w.found++
		switch {
		case isRoot:
			w.problems = append(w.problems, "x-mcp-header on the root schema: only a property may carry one")
		case !onChain:
			w.problems = append(w.problems, fmt.Sprintf("x-mcp-header at %s is not statically reachable: only properties reached from the root through \"properties\" alone may carry one", path))
		default:
			sk["x-mcp-header"] = a
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		skProps := map[string]any{}
		for _, n := range names {
			if child := w.walk(props[n], join(path, "properties", n), onChain, false); child != nil {
				skProps[n] = child
			}
		}
		if onChain && len(skProps) > 0 {
			sk["properties"] = skProps
		}
	}
	for _, k := range schemaSingles {
		if v, ok := obj[k]; ok {
			if list, isList := v.([]any); isList { // draft-07 items as an array
				for i, it := range list {
					w.walk(it, join(path, k, fmt.Sprint(i)), false, false)
				}
				continue
			}
			w.walk(v, join(path, k), false, false)
		}
	}
	for _, k := range schemaLists {
		if list, ok := obj[k].([]any); ok {
			for i, it := range list {
				w.walk(it, join(path, k, fmt.Sprint(i)), false, false)
			}
		}
	}
	for _, k := range schemaMaps {
		if m, ok := obj[k].(map[string]any); ok {
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				w.walk(m[n], join(path, k, n), false, false)
			}
		}
	}
	return sk
}

func join(path string, parts ...string) string {
	for _, p := range parts {
		if path == "" {
			path = p
		} else {
			path += "." + p
		}
	}
	return path
}

// headerAnnotations checks a tool's input schema's x-mcp-header
// annotations the way the 2026-07-28 revision does: each on a property
// statically reachable from the root, of type string, integer or boolean,
// a non-empty token, unique regardless of case. It returns the skeleton
// mcp-go generates headers from (nil when the schema has no annotation)
// or why the annotations are invalid.
func headerAnnotations(schema json.RawMessage) (skeleton json.RawMessage, problem string) {
	// Most schemas have no annotation: skip the walk for them. A key
	// spelled with escapes decodes to the same name, so those are walked.
	if !bytes.Contains(schema, []byte("x-mcp-header")) && !bytes.Contains(schema, []byte(`\u`)) {
		return nil, ""
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, ""
	}
	w := &headerWalk{}
	sk := w.walk(root, "", true, true)
	if w.found == 0 {
		return nil, ""
	}
	if len(w.problems) > 0 {
		return nil, w.problems[0]
	}
	b, err := json.Marshal(sk)
	if err != nil {
		return nil, "the schema cannot be read: " + err.Error()
	}
	if err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{RawInputSchema: b}); err != nil {
		return nil, err.Error()
	}
	return b, ""
}

// paramHeaders returns the Mcp-Param-* headers of one tools/call (params
// as sent) for a tool with this input schema. An argument an annotation
// binds that is present, not null, and cannot travel in a header (an
// integer beyond ±(2^53−1), a fraction, an object) is refused: the server
// would reject the call.
func paramHeaders(inputSchema, params json.RawMessage) (http.Header, error) {
	sk, problem := headerAnnotations(inputSchema)
	if problem != "" {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonInvalidHeaderAnnotations,
			"the tool's x-mcp-header annotations are invalid (%s), so it cannot be called on this connection", problem)
	}
	if sk == nil {
		return nil, nil
	}
	tool := &mcp.Tool{RawInputSchema: sk}
	generated := mcp.GenerateParamHeaders(tool, params)
	var call struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &call)
	for _, b := range mcp.ExtractParamHeaderBindings(tool) {
		raw, ok := argumentAt(call.Arguments, b.Path)
		if !ok || string(raw) == "null" {
			continue
		}
		if _, sent := generated[b.HeaderName()]; !sent {
			return nil, contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidHeaderArgument,
				"argument %q cannot travel in header %s: only strings, booleans and integers within ±(2^53−1) can",
				join("", b.Path...), b.HeaderName()), "pass a value of the type the tool's schema declares")
		}
	}
	if len(generated) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for k, v := range generated {
		h.Set(k, v)
	}
	return h, nil
}

// argumentAt follows path through nested argument objects.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := args[path[0]]
	for _, p := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[p]
	}
	return cur, ok
}

// excludeInvalidHeaderTools leaves out of a 2026-07-28 Streamable HTTP
// connection's catalog every tool whose x-mcp-header annotations are
// invalid, as the revision requires of such clients: pikod could not
// build a correct request for it. Each one is logged with the reason and
// listed in the catalog's Excluded. Other connections send no such
// headers and keep every tool.
func (c *conn) excludeInvalidHeaderTools(cat *Catalog) {
	if !mcp.IsModernProtocol(c.protocol) || c.s.cfg.Transport != contracts.TransportHTTP {
		return
	}
	kept := make([]contracts.CatalogTool, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		if _, problem := headerAnnotations(t.InputSchema); problem != "" {
			reason := c.s.sup.clean("invalid x-mcp-header annotations: "+problem, 500)
			cat.Excluded = append(cat.Excluded, contracts.ExcludedTool{Name: t.OriginalName, Reason: reason})
			c.s.log.Warn().Str("tool", c.s.sup.clip(t.OriginalName, 200)).Str("reason", reason).Msg("tool left out of the catalog")
			continue
		}
		kept = append(kept, t)
	}
	cat.Tools = kept
}
