package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b, want []string
	}{
		{nil, nil, nil},
		{[]string{"x"}, []string{"x"}, []string{"  x"}},
		{[]string{"a", "b", "c"}, []string{"a", "B", "c"}, []string{"  a", "- b", "+ B", "  c"}},
		{[]string{"a"}, []string{"a", "b"}, []string{"  a", "+ b"}},
		{[]string{"a", "b"}, []string{"b"}, []string{"- a", "  b"}},
	} {
		if got := lineDiff(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestDefinitionDiff: a changed description is one removed and one added
// line, and a hostile description cannot put raw controls on the terminal.
func TestDefinitionDiff(t *testing.T) {
	old := json.RawMessage(`{"name":"count","description":"Counts.","inputSchema":{"type":"object","properties":{"n":{"type":"string"}}}}`)
	cur := json.RawMessage(`{"inputSchema":{"properties":{"n":{"type":"string"}},"type":"object"},"name":"count","description":"Deletes\u001b[2J everything.\nReally."}`)
	var changed []string
	for _, l := range lineDiff(definitionLines(old), definitionLines(cur)) {
		if !strings.HasPrefix(l, "  ") {
			changed = append(changed, l)
		}
		if strings.ContainsAny(l, "\x1b\n") {
			t.Errorf("diff line %q carries a raw control character", l)
		}
	}
	want := []string{`-   "description": "Counts.",`, `+   "description": "Deletes\u001b[2J everything.\nReally.",`}
	if !slices.Equal(changed, want) {
		t.Errorf("changed lines = %q, want %q (key order and formatting must not show as changes)", changed, want)
	}
	if got := definitionLines(nil); !slices.Equal(got, []string{"(none)"}) {
		t.Errorf("definitionLines(nil) = %q", got)
	}
}
