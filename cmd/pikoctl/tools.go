package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// findTool fetches SERVER's catalog and returns TOOL (by original name).
func (a *app) findTool(ctx context.Context, server, tool string) (contracts.CatalogTool, *contracts.CatalogResult, error) {
	var cat contracts.CatalogResult
	if err := a.call(ctx, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: server}, &cat); err != nil {
		return contracts.CatalogTool{}, nil, err
	}
	for _, t := range cat.Tools {
		if t.OriginalName == tool || t.Name == tool {
			return t, &cat, nil
		}
	}
	err := contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownTool, "server %q has no tool %q", server, tool)
	if !cat.Complete {
		return contracts.CatalogTool{}, &cat, contracts.WithHint(err, "its catalog is incomplete ("+clean(cat.Problem)+"): the tool may exist but was not listed")
	}
	return contracts.CatalogTool{}, &cat, contracts.WithHint(err, "'pikoctl mcp catalog "+server+"' lists its tools; 'pikoctl mcp search WORDS' searches every connected server")
}

func (a *app) newToolCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tool SERVER TOOL",
		Short: "Show one tool: description, annotations, grant, pin and schemas",
		Long: `tool shows everything pikod knows of one tool (connecting the server if
needed): its title and full description, the annotations the server claims
(hints only: they never grant anything), its grant and pin state, and its
input and output schemas rendered as one line per parameter. The text is
the server's, shown as evidence. --json prints the catalog entry.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, _, err := a.findTool(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return printJSON(a.stdout, t)
			}
			w := &errWriter{w: a.stdout}
			writeTool(w, &t)
			return w.err
		},
	}
}

// writeTool prints one catalog tool for a person.
func writeTool(w *errWriter, t *contracts.CatalogTool) {
	fmt.Fprintf(w, "tool:        %s\n", clean(t.OriginalName))
	fmt.Fprintf(w, "server:      %s\n", clean(t.Server))
	fmt.Fprintf(w, "name:        %s (model-facing)\n", clean(t.Name))
	if t.Title != "" {
		fmt.Fprintf(w, "title:       %s\n", clean(t.Title))
	}
	fmt.Fprintf(w, "grant:       %s\n", clean(grantCell(*t)))
	pin := t.Pin
	switch {
	case pin == "" && (t.Grant == contracts.GrantApproval || t.Grant == contracts.GrantNotSelected):
		pin = "none (not granted)"
	case pin == "":
		pin = "-"
	}
	fmt.Fprintf(w, "pin:         %s\n", clean(pin))
	fmt.Fprintf(w, "digest:      %s\n", clean(t.Digest))
	if t.PinnedDigest != "" {
		fmt.Fprintf(w, "pinned:      %s (the definition the grant covers)\n", clean(t.PinnedDigest))
	}
	if ann := annotationLines(t.Annotations); len(ann) > 0 {
		fmt.Fprintln(w, "annotations: (claimed by the server; they grant nothing)")
		for _, l := range ann {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w, "\ndescription:")
	if strings.TrimSpace(t.Description) == "" {
		fmt.Fprintln(w, "  (none)")
	} else {
		for _, l := range strings.Split(strings.TrimRight(cleanLines(t.Description), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w, "\ninput:")
	writeSchema(w, t.InputSchema)
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		fmt.Fprintln(w, "\noutput:")
		writeSchema(w, t.OutputSchema)
	}
}

// annotationLines renders annotations as "key: value" lines, sorted.
func annotationLines(raw json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		b, _ := json.Marshal(m[k])
		out = append(out, clip(k, 60)+": "+clip(string(b), 200))
	}
	return out
}

// jsonSchema is the part of a JSON Schema writeSchema renders.
type jsonSchema struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Required             []string               `json:"required"`
	Items                *jsonSchema            `json:"items"`
	Enum                 []any                  `json:"enum"`
	Default              any                    `json:"default"`
	Format               string                 `json:"format"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	AnyOf                []*jsonSchema          `json:"anyOf"`
	OneOf                []*jsonSchema          `json:"oneOf"`
	AdditionalProperties any                    `json:"additionalProperties"`
}

// typeName is the schema's type for a person: "string", "array of
// integer", "string|null", "object".
func (s *jsonSchema) typeName() string {
	if s == nil {
		return "any"
	}
	var t string
	switch v := s.Type.(type) {
	case string:
		t = v
	case []any:
		var parts []string
		for _, p := range v {
			if ps, ok := p.(string); ok {
				parts = append(parts, ps)
			}
		}
		t = strings.Join(parts, "|")
	}
	alts := s.AnyOf
	if len(alts) == 0 {
		alts = s.OneOf
	}
	if t == "" && len(alts) > 0 {
		var parts []string
		for _, a := range alts {
			parts = append(parts, a.typeName())
		}
		t = strings.Join(parts, "|")
	}
	if t == "" {
		switch {
		case s.Properties != nil:
			t = "object"
		case s.Items != nil:
			t = "array"
		default:
			t = "any"
		}
	}
	if t == "array" && s.Items != nil {
		t = "array of " + s.Items.typeName()
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	return t
}

// writeSchema renders an object schema as one line per property, nested
// objects indented; anything else as its type.
func writeSchema(w *errWriter, raw json.RawMessage) {
	var s jsonSchema
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		fmt.Fprintln(w, "  (no schema)")
		return
	}
	if len(s.Properties) == 0 {
		fmt.Fprintf(w, "  %s (no parameters)\n", clean(s.typeName()))
		return
	}
	writeProps(w, &s, "  ", 0)
}

func writeProps(w *errWriter, s *jsonSchema, indent string, depth int) {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			p = &jsonSchema{}
		}
		line := indent + clip(n, 60) + "  " + clean(p.typeName())
		if slices.Contains(s.Required, n) {
			line += "  required"
		}
		var extra []string
		if len(p.Enum) > 0 {
			b, _ := json.Marshal(p.Enum)
			extra = append(extra, "one of "+clip(string(b), 120))
		}
		if p.Default != nil {
			b, _ := json.Marshal(p.Default)
			extra = append(extra, "default "+clip(string(b), 60))
		}
		if p.Minimum != nil {
			extra = append(extra, "min "+strconv.FormatFloat(*p.Minimum, 'g', -1, 64))
		}
		if p.Maximum != nil {
			extra = append(extra, "max "+strconv.FormatFloat(*p.Maximum, 'g', -1, 64))
		}
		if len(extra) > 0 {
			line += "  (" + strings.Join(extra, ", ") + ")"
		}
		fmt.Fprintln(w, line)
		if p.Description != "" {
			fmt.Fprintf(w, "%s    %s\n", indent, clip(strings.Join(strings.Fields(p.Description), " "), 200))
		}
		child := p
		if p.Items != nil && len(p.Items.Properties) > 0 {
			child = p.Items
		}
		if len(child.Properties) > 0 && depth < 4 {
			writeProps(w, child, indent+"    ", depth+1)
		}
	}
}

func (a *app) newSearchCmd() *cobra.Command {
	var (
		limit  int
		server string
	)
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the tools of every connected server (BM25)",
		Long: `search ranks the tools of every connected server by how well their names,
titles, descriptions and parameter names match the words of QUERY (BM25),
and prints the best ones with their server, grant and score. It connects
nothing: servers that are not connected are named at the end.`,
		Example: `  pikoctl mcp search read file
  pikoctl mcp search --server memory "find entities"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := contracts.SearchParams{Query: strings.Join(args, " "), Limit: limit, Server: server}
			var res contracts.SearchResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPSearch, params, &res); printed || err != nil {
				return err
			}
			w := &errWriter{w: a.stdout}
			if len(res.Results) == 0 {
				fmt.Fprintf(w, "no tool matches %q\n", clean(res.Query))
			} else {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SERVER\tTOOL\tGRANT\tSCORE\tDESCRIPTION")
				for _, h := range res.Results {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\n", cell(h.Server), cell(clip(h.Tool, 40)), cell(h.Grant), h.Score,
						cell(clip(firstLine(h.Description), 60)))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if len(res.Searched) == 0 {
				fmt.Fprintln(w, "no server is connected: connect one with 'pikoctl mcp connect SERVER'")
			} else if len(res.NotSearched) > 0 {
				fmt.Fprintf(w, "not searched (not connected): %s\n", clean(strings.Join(res.NotSearched, ", ")))
			}
			return w.err
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many results, 1..%d (default %d)", contracts.MaxSearchLimit, contracts.DefaultSearchLimit))
	cmd.Flags().StringVar(&server, "server", "", "search this server only")
	return cmd
}

// typedArgs turns --arg NAME=VALUE pairs into a JSON object, each value
// typed by the property's schema: integer and number parse as numbers,
// boolean as true/false, array and object (and anything given as JSON for
// them) as JSON, null as null, everything else stays a string. A property
// the schema does not list, or a tool without a schema, keeps a string.
func typedArgs(kvs []string, schema json.RawMessage) (map[string]any, error) {
	var s jsonSchema
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	err := eachArg(kvs, func(k, v string) error {
		val, err := typedValue(v, s.Properties[k])
		if err != nil {
			return usageErrorf("--arg %s: %v", k, err)
		}
		out[k] = val
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// typedValue converts one --arg value by its property schema.
func typedValue(v string, p *jsonSchema) (any, error) {
	if p == nil {
		return v, nil
	}
	var types []string
	switch t := p.Type.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	for _, alt := range append(p.AnyOf, p.OneOf...) {
		if ts, ok := alt.Type.(string); ok {
			types = append(types, ts)
		}
	}
	if len(types) == 0 || slices.Contains(types, "string") {
		return v, nil
	}
	for _, t := range types {
		switch t {
		case "integer":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n, nil
			}
		case "number":
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
			}
		case "boolean":
			if b, err := strconv.ParseBool(v); err == nil {
				return b, nil
			}
		case "null":
			if v == "null" {
				return nil, nil
			}
		case "array", "object":
			var x any
			if err := json.Unmarshal([]byte(v), &x); err == nil {
				switch x.(type) {
				case []any:
					if t == "array" {
						return json.RawMessage(v), nil
					}
				case map[string]any:
					if t == "object" {
						return json.RawMessage(v), nil
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("%q is not %s, as the tool's schema wants (give arrays and objects as JSON)", v, strings.Join(types, " or "))
}

// mergeArgs combines --args-json and --arg: the JSON object first, each
// --arg setting one member (an --arg may not repeat a JSON member).
func mergeArgs(argsJSON string, kv map[string]any) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if argsJSON != "" {
		raw, err := jsonObject([]byte(argsJSON), "--args-json")
		if err != nil {
			return nil, &usageError{err: err}
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, usageErrorf("--args-json: %v", err)
		}
	}
	for k, v := range kv {
		if _, dup := obj[k]; dup {
			return nil, usageErrorf("--arg %s: already set by --args-json", k)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[k] = b
	}
	return json.Marshal(obj)
}
