package tests

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestInteropSearch ranks the tools of the three npm reference servers
// (server-everything, server-filesystem, server-memory, pinned in
// tests/interop) and checks that a person's query finds the tool meant,
// first, through extensions.mcp.search.
func TestInteropSearch(t *testing.T) {
	dir := interopDir(t)
	bin := func(name string) string { return filepath.Join(dir, "node_modules", ".bin", name) }
	settings, err := json.Marshal(map[string]any{"servers": []map[string]any{
		{"id": "everything", "transport": "stdio", "command": bin("mcp-server-everything"), "args": []string{"stdio"}},
		{"id": "filesystem", "transport": "stdio", "command": bin("mcp-server-filesystem"), "args": []string{t.TempDir()}},
		{"id": "memory", "transport": "stdio", "command": bin("mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	configureMCP(t, d, string(settings))
	for _, id := range []string{"everything", "filesystem", "memory"} {
		d.call(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: id})
	}

	for _, c := range []struct{ query, server, tool string }{
		{"add two numbers", "everything", "get-sum"},
		{"environment variables", "everything", "get-env"},
		{"compress a file with gzip", "everything", "gzip-file-as-resource"},
		{"long running operation progress", "everything", "trigger-long-running-operation"},
		{"echo message back", "everything", "echo"},
		{"rename or move a file", "filesystem", "move_file"},
		{"write text to a file", "filesystem", "write_file"},
		{"recursive directory tree", "filesystem", "directory_tree"},
		{"file metadata size permissions", "filesystem", "get_file_info"},
		{"list allowed directories", "filesystem", "list_allowed_directories"},
		{"search knowledge graph nodes", "memory", "search_nodes"},
		{"add observations to entities", "memory", "add_observations"},
		{"create relations between entities", "memory", "create_relations"},
		{"read the entire graph", "memory", "read_graph"},
	} {
		var res contracts.SearchResult
		d.callInto(t, contracts.MethodMCPSearch, contracts.SearchParams{Query: c.query, Limit: 3}, &res)
		if len(res.Searched) != 3 {
			t.Fatalf("search %q searched %v (not: %v), want all three servers", c.query, res.Searched, res.NotSearched)
		}
		if len(res.Results) == 0 || res.Results[0].Server != c.server || res.Results[0].Tool != c.tool {
			t.Errorf("search %q ranked %+v first, want %s %s", c.query, res.Results, c.server, c.tool)
			continue
		}
		if res.Results[0].Grant != contracts.GrantApproval {
			t.Errorf("search %q: grant %q, want approval (nothing is granted)", c.query, res.Results[0].Grant)
		}
	}
}
