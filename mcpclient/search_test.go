package mcpclient

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestSearchTerms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"read_text_file", []string{"read", "text", "file"}},
		{"readTextFile", []string{"read", "text", "file"}},
		{"Reading the Files", []string{"read", "file"}},
		{"get-sum of a b", []string{"get", "sum"}},
		{"directories entities", []string{"directory", "entity"}},
		{"access class", []string{"access", "class"}},
	} {
		if got := searchTerms(c.in); !slices.Equal(got, c.want) {
			t.Errorf("searchTerms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRankTools(t *testing.T) {
	tool := func(server, name, desc string, params ...string) contracts.CatalogTool {
		props := map[string]any{}
		for _, p := range params {
			props[p] = map[string]any{"type": "string"}
		}
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
		return contracts.CatalogTool{Server: server, OriginalName: name, Name: "mcp_" + server + "_" + name,
			Description: desc, InputSchema: schema, Grant: contracts.GrantApproval}
	}
	tools := []contracts.CatalogTool{
		tool("fs", "read_file", "Read a file from disk.", "path"),
		tool("fs", "write_file", "Write content to a file.", "path", "content"),
		tool("mem", "search_nodes", "Search the graph.", "query"),
		tool("web", "fetch", "Fetch a URL and return its body.", "url"),
	}
	for _, c := range []struct{ query, want string }{
		{"read a file", "read_file"},
		{"write content", "write_file"},
		{"graph query", "search_nodes"},
		{"url", "fetch"},
	} {
		hits := RankTools(c.query, tools, 10)
		if len(hits) == 0 || hits[0].Tool != c.want {
			t.Errorf("RankTools(%q) = %+v, want %s first", c.query, hits, c.want)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("RankTools(%q) is not sorted by score: %+v", c.query, hits)
			}
		}
	}
	if hits := RankTools("file", tools, 1); len(hits) != 1 {
		t.Errorf("limit 1 gave %d hits", len(hits))
	}
	if hits := RankTools("the of and", tools, 10); len(hits) != 0 {
		t.Errorf("a query of stop words matched %+v", hits)
	}
	if hits := RankTools("nothingmatches", tools, 10); hits == nil || len(hits) != 0 {
		t.Errorf("no match gave %#v, want an empty list", hits)
	}
}
