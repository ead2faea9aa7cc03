package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

var modelNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// hashOf is the full hex hash a hashed model name's suffix is a prefix of:
// it depends on the server and the original name only, which is what makes
// names stable across restarts.
func hashOf(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])
}

// isClean reports whether tool's base name needs neither sanitising nor
// truncating.
func isClean(server, tool string) bool {
	base := "mcp_" + server + "_" + tool
	return len(base) <= 64 && strings.IndexFunc(base, func(r rune) bool {
		return !(r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0
}

// randServer returns a valid server id: a lowercase letter then up to 31 of
// a-z, 0-9, '-'.
func randServer(r *rand.Rand) string {
	const rest = "abcdefghijklmnopqrstuvwxyz0123456789-"
	n := r.IntN(32)
	if r.IntN(4) == 0 {
		n = 31 // the longest ids leave the least room
	}
	b := []byte{byte('a' + r.IntN(26))}
	for range n {
		b = append(b, rest[r.IntN(len(rest))])
	}
	return string(b)
}

// randToolNames returns distinct awkward tool names, including
// near-duplicates and names equal to another's hashed model name.
func randToolNames(r *rand.Rand, server string) []string {
	pieces := []string{"a", "b", "Z", "0", "9", "_", "-", ".", " ", "/", "é", "日本", "\u202e", "\x00", "\t", "🙂",
		"read", "write", "file", "tool", "x"}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for range 1 + r.IntN(30) {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		name := b.String()
		add(name)
		switch r.IntN(6) {
		case 0: // near-duplicates: a.b, a_b, a-b, a b
			for _, sep := range []string{".", "_", "-", " "} {
				add(strings.ReplaceAll(name, ".", sep))
				add(name + sep + "b")
			}
		case 1: // very long, and long names sharing a long prefix
			long := strings.Repeat(name, 1+r.IntN(40)) + strings.Repeat("y", 70)
			add(long)
			add(long + "1")
			add(long[:len(long)-1] + "2")
		case 2: // a clean name equal to another tool's hashed model name
			if hashed := ModelNames(server, []string{name})[0]; strings.HasPrefix(hashed, "mcp_"+server+"_") {
				add(strings.TrimPrefix(hashed, "mcp_"+server+"_"))
			}
		}
	}
	return out
}

func TestModelNamesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		server := randServer(r)
		tools := randToolNames(r, server)
		names := ModelNames(server, tools)
		if len(names) != len(tools) {
			t.Fatalf("ModelNames(%q, %d tools) returned %d names", server, len(tools), len(names))
		}
		byTool := map[string]string{}
		owner := map[string]string{}
		for i, tool := range tools {
			name := names[i]
			byTool[tool] = name
			if !modelNameRE.MatchString(name) {
				t.Errorf("iter %d: ModelNames(%q)[%q] = %q, not [A-Za-z0-9_-]{1,64}", iter, server, tool, name)
			}
			if prev, dup := owner[name]; dup {
				t.Errorf("iter %d: tools %q and %q of %q both got the model name %q", iter, prev, tool, server, name)
			}
			owner[name] = tool
			base := "mcp_" + server + "_" + tool
			if name != base {
				// Anything but the plain name carries the hash of the
				// original: at least 10 hex characters after the last '_'.
				i := strings.LastIndexByte(name, '_')
				suffix := name[i+1:]
				if len(suffix) < 10 || !strings.HasPrefix(hashOf(server, tool), suffix) {
					t.Errorf("iter %d: ModelNames(%q)[%q] = %q: changed name without the hash of the original", iter, server, tool, name)
				}
			}
			if !isClean(server, tool) && name == base {
				t.Errorf("iter %d: ModelNames(%q)[%q] = %q kept a name that needed sanitising or truncating", iter, server, tool, name)
			}
		}
		// A clean short name is kept as is, unless another tool's hashed
		// name is exactly that string (then both must change to stay unique).
		hashedForm := map[string]bool{}
		for _, tool := range tools {
			if !isClean(server, tool) {
				hashedForm[ModelNames(server, []string{tool})[0]] = true
			}
		}
		for _, tool := range tools {
			base := "mcp_" + server + "_" + tool
			if isClean(server, tool) && !hashedForm[base] && byTool[tool] != base {
				t.Errorf("iter %d: clean tool %q of %q got %q, want %q", iter, tool, server, byTool[tool], base)
			}
		}
		// Deterministic, and independent of input order.
		if again := ModelNames(server, tools); !slices.Equal(again, names) {
			t.Errorf("iter %d: ModelNames is not deterministic: %q then %q", iter, names, again)
		}
		shuffled := slices.Clone(tools)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i, name := range ModelNames(server, shuffled) {
			if byTool[shuffled[i]] != name {
				t.Errorf("iter %d: tool %q of %q is %q in one order and %q in another", iter, shuffled[i], server, byTool[shuffled[i]], name)
			}
		}
	}
}

func TestModelNamesCases(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name  string
		tools []string
		check func(t *testing.T, got []string)
	}{
		{"clean names are kept", []string{"echo", "read_file", "Get-Item"}, func(t *testing.T, got []string) {
			want := []string{"mcp_fs_echo", "mcp_fs_read_file", "mcp_fs_Get-Item"}
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		}},
		{"a.b next to a_b and a-b", []string{"a.b", "a_b", "a-b"}, func(t *testing.T, got []string) {
			if got[1] != "mcp_fs_a_b" || got[2] != "mcp_fs_a-b" {
				t.Errorf("clean names changed: %q", got)
			}
			if want := "mcp_fs_a_b_" + hashOf("fs", "a.b")[:10]; got[0] != want {
				t.Errorf("a.b got %q, want %q", got[0], want)
			}
		}},
		{"two names sanitising alike", []string{"a b", "a.b"}, func(t *testing.T, got []string) {
			if got[0] == got[1] || !strings.HasPrefix(got[0], "mcp_fs_a_b_") || !strings.HasPrefix(got[1], "mcp_fs_a_b_") {
				t.Errorf("got %q, want two distinct hashed mcp_fs_a_b_ names", got)
			}
		}},
		{"too long", []string{long, long + "y"}, func(t *testing.T, got []string) {
			for _, g := range got {
				if len(g) != 64 || !strings.HasPrefix(g, "mcp_fs_xxx") {
					t.Errorf("got %q (len %d), want 64 characters starting mcp_fs_xxx", g, len(g))
				}
			}
			if got[0] == got[1] {
				t.Errorf("long names collide: %q", got)
			}
		}},
		{"exactly 64 characters is clean", []string{strings.Repeat("t", 64-len("mcp_fs_"))}, func(t *testing.T, got []string) {
			if want := "mcp_fs_" + strings.Repeat("t", 57); got[0] != want {
				t.Errorf("got %q, want %q", got[0], want)
			}
		}},
		{"a clean name equal to another's hashed name", []string{"a.b", strings.TrimPrefix(ModelNames("fs", []string{"a.b"})[0], "mcp_fs_")},
			func(t *testing.T, got []string) {
				if got[0] == got[1] {
					t.Errorf("collision: %q", got)
				}
			}},
		{"unicode only", []string{"日本", "日本語"}, func(t *testing.T, got []string) {
			if got[0] == got[1] {
				t.Errorf("collision: %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ModelNames("fs", tt.tools)
			for _, g := range got {
				if !modelNameRE.MatchString(g) {
					t.Errorf("%q is not a valid model name", g)
				}
			}
			tt.check(t, got)
		})
	}
}

// TestModelNamesDuplicateInput: one server never lists a name twice
// (toolsFrom drops repeats), but the exported function must not panic when
// handed one.
func TestModelNamesDuplicateInput(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("ModelNames panicked on a repeated name: %v", p)
		}
	}()
	for _, g := range ModelNames("fs", []string{"x", "x", "y"}) {
		if !modelNameRE.MatchString(g) {
			t.Errorf("%q is not a valid model name", g)
		}
	}
}

// fakeLister serves pages from a table: pages[method][cursor] is the raw
// result for that cursor.
type fakeLister struct {
	pages map[string]map[string]string
	calls []string
}

func (f *fakeLister) fetch(_ context.Context, method, cursor string) (json.RawMessage, error) {
	f.calls = append(f.calls, method+"@"+cursor)
	p, ok := f.pages[method][cursor]
	if !ok {
		return nil, fmt.Errorf("fake: no page %q of %s", cursor, method)
	}
	return json.RawMessage(p), nil
}

// toolPages returns n pages of per tools each, tool names t0000.., chained
// by cursors c1, c2, ...
func toolPages(n, per int) map[string]string {
	out := map[string]string{}
	k := 0
	for p := range n {
		var items []string
		for range per {
			items = append(items, fmt.Sprintf(`{"name":"t%04d"}`, k))
			k++
		}
		cursor := ""
		if p > 0 {
			cursor = fmt.Sprintf("c%d", p)
		}
		next := ""
		if p < n-1 {
			next = fmt.Sprintf(`,"nextCursor":"c%d"`, p+1)
		}
		out[cursor] = `{"tools":[` + strings.Join(items, ",") + `]` + next + `}`
	}
	return out
}

func pageBytes(pages map[string]string) int {
	n := 0
	for _, p := range pages {
		n += len(p)
	}
	return n
}

func TestListAll(t *testing.T) {
	fivePages := toolPages(5, 3)
	tests := []struct {
		name      string
		pages     map[string]string
		lim       CatalogLimits
		budget    int
		wantItems int
		wantLimit bool   // the error is an *errLimit
		wantErr   string // substring of the error; "" for none
	}{
		{name: "pages concatenated", pages: fivePages, wantItems: 15},
		{name: "single page, no cursor", pages: map[string]string{"": `{"tools":[{"name":"a"},{"name":"b"}]}`}, wantItems: 2},
		{name: "empty nextCursor ends", pages: map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":""}`}, wantItems: 1},
		{name: "null nextCursor ends", pages: map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":null}`}, wantItems: 1},
		{name: "missing list is empty", pages: map[string]string{"": `{}`}, wantItems: 0},
		{name: "exactly MaxPages", pages: fivePages, lim: CatalogLimits{MaxPages: 5}, wantItems: 15},
		{name: "MaxPages", pages: fivePages, lim: CatalogLimits{MaxPages: 4}, wantItems: 12, wantLimit: true,
			wantErr: "tools/list: more than 4 pages"},
		{name: "exactly MaxItems", pages: fivePages, lim: CatalogLimits{MaxItems: 15}, wantItems: 15},
		{name: "MaxItems", pages: fivePages, lim: CatalogLimits{MaxItems: 7}, wantItems: 7, wantLimit: true,
			wantErr: "tools/list: more than 7 entries"},
		{name: "byte budget", pages: fivePages, lim: CatalogLimits{MaxBytes: 100}, budget: 100, wantItems: 3, wantLimit: true,
			wantErr: "tools/list: catalog larger than 100 bytes"},
		{name: "byte budget exactly enough", pages: fivePages, lim: CatalogLimits{MaxBytes: pageBytes(fivePages)},
			budget: pageBytes(fivePages), wantItems: 15},
		{name: "repeated cursor", pages: map[string]string{
			"":   `{"tools":[{"name":"a"}],"nextCursor":"x"}`,
			"x":  `{"tools":[{"name":"b"}],"nextCursor":"y"}`,
			"y":  `{"tools":[{"name":"c"}],"nextCursor":"x"}`,
			"zz": `{}`,
		}, wantItems: 3, wantErr: `repeated cursor "x"`},
		{name: "cursor pointing back at the first page", pages: map[string]string{
			"":  `{"tools":[{"name":"a"}],"nextCursor":"x"}`,
			"x": `{"tools":[{"name":"b"}],"nextCursor":"x"}`,
		}, wantItems: 2, wantErr: `repeated cursor "x"`},
		{name: "page is an array", pages: map[string]string{"": `[{"name":"a"}]`}, wantErr: "not a JSON object"},
		{name: "page is a string", pages: map[string]string{"": `"tools"`}, wantErr: "not a JSON object"},
		{name: "page is not JSON", pages: map[string]string{"": `{"tools":`}, wantErr: "not a JSON object"},
		{name: "list is not an array", pages: map[string]string{"": `{"tools":{"name":"a"}}`}, wantErr: `"tools" is not an array`},
		{name: "cursor is not a string", pages: map[string]string{"": `{"tools":[],"nextCursor":7}`}, wantErr: "nextCursor is not a string"},
		{name: "fetch fails on page 2", pages: map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"gone"}`},
			wantItems: 1, wantErr: "tools/list page 2: fake: no page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLister{pages: map[string]map[string]string{"tools/list": tt.pages}}
			lim := tt.lim.withDefaults()
			budget := tt.budget
			if budget == 0 {
				budget = lim.MaxBytes
			}
			items, err := listAll(context.Background(), f.fetch, "tools/list", "tools", lim, &budget)
			if len(items) != tt.wantItems {
				t.Errorf("got %d items, want %d", len(items), tt.wantItems)
			}
			var el *errLimit
			if isLimit := errors.As(err, &el); isLimit != tt.wantLimit {
				t.Errorf("error %v: is *errLimit = %v, want %v", err, isLimit, tt.wantLimit)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			// Items come back in page order.
			for i, it := range items {
				var d toolDef
				_ = json.Unmarshal(it, &d)
				if tt.name == "pages concatenated" && d.Name != fmt.Sprintf("t%04d", i) {
					t.Errorf("item %d is %q, want t%04d", i, d.Name, i)
				}
			}
		})
	}
}

// TestListAllBudgetShared: the byte budget is the whole catalog's, so a
// later list sees what earlier lists used.
func TestListAllBudgetShared(t *testing.T) {
	pages := toolPages(1, 2)
	f := &fakeLister{pages: map[string]map[string]string{"tools/list": pages, "prompts/list": {"": `{"prompts":[{"name":"p"}]}`}}}
	lim := CatalogLimits{MaxBytes: pageBytes(pages) + 5}.withDefaults()
	budget := lim.MaxBytes
	if _, err := listAll(context.Background(), f.fetch, "tools/list", "tools", lim, &budget); err != nil {
		t.Fatalf("tools: %v", err)
	}
	if budget != 5 {
		t.Errorf("budget left %d, want 5", budget)
	}
	_, err := listAll(context.Background(), f.fetch, "prompts/list", "prompts", lim, &budget)
	var el *errLimit
	if !errors.As(err, &el) || !strings.Contains(err.Error(), fmt.Sprintf("catalog larger than %d bytes", lim.MaxBytes)) {
		t.Errorf("prompts: error %v, want a catalog byte limit", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDiscover(t *testing.T) {
	allCaps := serverCaps{tools: true, resources: true, prompts: true}
	tools := `{"tools":[
		{"name":"write","annotations":{"readOnlyHint":true,"destructiveHint":false}},
		{"name":"b.c","description":"dotted"},
		{"name":"a","title":"A","inputSchema":{"type":"object"}},
		{"name":"read","annotations":{"readOnlyHint":true}},
		{"name":"auto"}
	]}`
	lists := func(toolsPage string) map[string]map[string]string {
		return map[string]map[string]string{
			"tools/list":               {"": toolsPage},
			"resources/list":           {"": `{"resources":[{"uri":"file:///r1","name":"r1"}]}`},
			"resources/templates/list": {"": `{"resourceTemplates":[{"uriTemplate":"file:///{x}","name":"t"}]}`},
			"prompts/list":             {"": `{"prompts":[{"name":"p1"},{"name":"p2"}]}`},
		}
	}
	type grant struct {
		selected bool
		grant    string
	}
	tests := []struct {
		name         string
		settings     contracts.ServerSettings
		caps         serverCaps
		lists        map[string]map[string]string
		lim          CatalogLimits
		wantComplete bool
		wantProblem  string
		wantTools    []string // original names, in order
		wantGrants   map[string]grant
		wantCounts   [3]int // resources, templates, prompts
		wantCalls    []string
	}{
		{
			name: "tools omitted: everything needs approval", settings: contracts.ServerSettings{ID: "fs"},
			caps: allCaps, lists: lists(tools), wantComplete: true,
			wantTools: []string{"a", "auto", "b.c", "read", "write"},
			wantGrants: map[string]grant{"a": {true, "approval"}, "auto": {true, "approval"}, "b.c": {true, "approval"},
				"read": {true, "approval"}, "write": {true, "approval"}},
			wantCounts: [3]int{1, 1, 2},
		},
		{
			name: "tools [] selects nothing", settings: contracts.ServerSettings{ID: "fs", Tools: &[]string{}},
			caps: allCaps, lists: lists(tools), wantComplete: true,
			wantTools: []string{"a", "auto", "b.c", "read", "write"},
			wantGrants: map[string]grant{"a": {false, "not_selected"}, "auto": {false, "not_selected"},
				"b.c": {false, "not_selected"}, "read": {false, "not_selected"}, "write": {false, "not_selected"}},
			wantCounts: [3]int{1, 1, 2},
		},
		{
			name: "readOnly, autonomous and unselected",
			settings: contracts.ServerSettings{ID: "fs", Tools: &[]string{"read", "auto", "a"},
				ReadOnlyTools: []string{"read"}, AutonomousTools: []string{"auto"}},
			caps: allCaps, lists: lists(tools), wantComplete: true,
			wantTools: []string{"a", "auto", "b.c", "read", "write"},
			wantGrants: map[string]grant{"a": {true, "approval"}, "auto": {true, "autonomous"}, "b.c": {false, "not_selected"},
				"read": {true, "read"}, "write": {false, "not_selected"}},
			wantCounts: [3]int{1, 1, 2},
		},
		{
			name:     "readOnlyTools without tools",
			settings: contracts.ServerSettings{ID: "fs", ReadOnlyTools: []string{"write"}},
			caps:     allCaps, lists: lists(tools), wantComplete: true,
			wantTools:  []string{"a", "auto", "b.c", "read", "write"},
			wantGrants: map[string]grant{"write": {true, "read"}, "read": {true, "approval"}},
			wantCounts: [3]int{1, 1, 2},
		},
		{
			name:     "resources and prompts disabled by settings",
			settings: contracts.ServerSettings{ID: "fs", Resources: ptr(false), Prompts: ptr(false)},
			caps:     allCaps, lists: lists(tools), wantComplete: true,
			wantTools:  []string{"a", "auto", "b.c", "read", "write"},
			wantCounts: [3]int{0, 0, 0},
			wantCalls:  []string{"tools/list@"},
		},
		{
			name: "capabilities absent: no lists, complete", settings: contracts.ServerSettings{ID: "fs"},
			caps: serverCaps{}, lists: lists(tools), wantComplete: true, wantCounts: [3]int{0, 0, 0},
			wantCalls: []string{},
		},
		{
			name: "duplicate tool reported", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps,
			lists:        lists(`{"tools":[{"name":"b"},{"name":"a","description":"first"},{"name":"a","description":"second"}]}`),
			wantComplete: false, wantProblem: `tool "a" is listed twice`,
			wantTools: []string{"a", "b"}, wantCounts: [3]int{1, 1, 2},
		},
		{
			name: "nameless tool reported", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps,
			lists:        lists(`{"tools":[{"name":"b"},{"description":"no name"},7]}`),
			wantComplete: false, wantProblem: "entry 1 is not a tool definition with a name",
			wantTools: []string{"b"}, wantCounts: [3]int{1, 1, 2},
		},
		{
			name: "MaxItems cuts discovery: never complete", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps,
			lists: func() map[string]map[string]string {
				l := lists("")
				l["tools/list"] = toolPages(4, 5)
				return l
			}(),
			lim: CatalogLimits{MaxItems: 10}, wantComplete: false, wantProblem: "tools/list: more than 10 entries",
			wantCounts: [3]int{1, 1, 2},
		},
		{
			name: "MaxPages on prompts keeps the first problem", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps,
			lists: func() map[string]map[string]string {
				l := lists(tools)
				l["prompts/list"] = map[string]string{"": `{"prompts":[{"name":"p"}],"nextCursor":"n"}`, "n": `{"prompts":[{"name":"q"}]}`}
				return l
			}(),
			lim: CatalogLimits{MaxPages: 1}, wantComplete: false, wantProblem: "prompts/list: more than 1 pages",
			wantTools: []string{"a", "auto", "b.c", "read", "write"}, wantCounts: [3]int{1, 1, 1},
		},
		{
			name: "byte limit", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps, lists: lists(tools),
			lim: CatalogLimits{MaxBytes: len(tools) + 10}, wantComplete: false, wantProblem: "catalog larger than",
			wantTools: []string{"a", "auto", "b.c", "read", "write"},
		},
		{
			name: "a failing list", settings: contracts.ServerSettings{ID: "fs"}, caps: allCaps,
			lists: func() map[string]map[string]string {
				l := lists(tools)
				delete(l, "resources/templates/list")
				return l
			}(),
			wantComplete: false, wantProblem: "resources/templates/list page 1",
			wantTools: []string{"a", "auto", "b.c", "read", "write"}, wantCounts: [3]int{1, 0, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLister{pages: tt.lists}
			cat := discover(context.Background(), f.fetch, &tt.settings, tt.caps, tt.lim)
			if cat.Complete != tt.wantComplete {
				t.Errorf("Complete = %v, want %v (problem %q)", cat.Complete, tt.wantComplete, cat.Problem)
			}
			if tt.wantComplete && cat.Problem != "" {
				t.Errorf("complete catalog with a problem: %q", cat.Problem)
			}
			if !tt.wantComplete && !strings.Contains(cat.Problem, tt.wantProblem) {
				t.Errorf("Problem = %q, want it to contain %q", cat.Problem, tt.wantProblem)
			}
			if cat.Tools == nil || cat.Resources == nil || cat.ResourceTemplates == nil || cat.Prompts == nil {
				t.Errorf("a list is nil (it must encode as []): %+v", cat)
			}
			if tt.wantTools != nil {
				var got []string
				for _, tool := range cat.Tools {
					got = append(got, tool.OriginalName)
				}
				if !slices.Equal(got, tt.wantTools) {
					t.Errorf("tools %q, want %q (sorted by original name)", got, tt.wantTools)
				}
			}
			if !slices.IsSortedFunc(cat.Tools, func(a, b contracts.CatalogTool) int { return strings.Compare(a.OriginalName, b.OriginalName) }) {
				t.Errorf("tools not sorted by original name")
			}
			for _, tool := range cat.Tools {
				if tool.Server != "fs" || !modelNameRE.MatchString(tool.Name) || len(tool.Digest) != 64 {
					t.Errorf("tool %+v: bad server, model name or digest", tool)
				}
				want := contracts.ToolDigest(tool.OriginalName, tool.Title, tool.Description, tool.InputSchema, tool.OutputSchema, tool.Annotations)
				if tool.Digest != want {
					t.Errorf("tool %q digest %s, want %s", tool.OriginalName, tool.Digest, want)
				}
				if g, ok := tt.wantGrants[tool.OriginalName]; ok && (tool.Selected != g.selected || tool.Grant != g.grant) {
					t.Errorf("tool %q: selected %v grant %q, want %v %q", tool.OriginalName, tool.Selected, tool.Grant, g.selected, g.grant)
				}
			}
			if got := [3]int{len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts)}; got != tt.wantCounts {
				t.Errorf("resources, templates, prompts = %v, want %v", got, tt.wantCounts)
			}
			if tt.wantCalls != nil && !slices.Equal(f.calls, tt.wantCalls) && !(len(tt.wantCalls) == 0 && len(f.calls) == 0) {
				t.Errorf("fetched %q, want %q", f.calls, tt.wantCalls)
			}
		})
	}
}

// TestDiscoverKeepsFirstDefinition: a tool listed twice keeps its first
// definition, not whichever came last.
func TestDiscoverKeepsFirstDefinition(t *testing.T) {
	f := &fakeLister{pages: map[string]map[string]string{"tools/list": {"": `{"tools":[{"name":"a","description":"first"},{"name":"a","description":"second"}]}`}}}
	cat := discover(context.Background(), f.fetch, &contracts.ServerSettings{ID: "fs"}, serverCaps{tools: true}, CatalogLimits{})
	if len(cat.Tools) != 1 || cat.Tools[0].Description != "first" {
		t.Errorf("tools %+v, want the first definition of a", cat.Tools)
	}
}

// TestDiscoverSchemaPassesThrough: schemas and annotations are the server's
// bytes, not a re-encoding that could drop keywords.
func TestDiscoverSchemaPassesThrough(t *testing.T) {
	schema := `{"type":"object","$defs":{"x":{"const":1}},"unevaluatedProperties":false, "x-vendor":[1,2]}`
	f := &fakeLister{pages: map[string]map[string]string{"tools/list": {"": `{"tools":[{"name":"a","inputSchema":` + schema + `}]}`}}}
	cat := discover(context.Background(), f.fetch, &contracts.ServerSettings{ID: "fs"}, serverCaps{tools: true}, CatalogLimits{})
	if len(cat.Tools) != 1 || string(cat.Tools[0].InputSchema) != schema {
		t.Errorf("input schema %s, want %s", cat.Tools[0].InputSchema, schema)
	}
}
