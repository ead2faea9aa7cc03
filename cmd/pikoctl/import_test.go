package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestStripJSONC(t *testing.T) {
	in := `// head
{
  "a": "x // not a comment", /* block
  comment */ "b": [1, 2, ],
  "c": "quote \" // still string",
}`
	out, err := stripJSONC([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("stripJSONC output is not JSON: %v\n%s", err, out)
	}
	if v["a"] != "x // not a comment" || v["c"] != `quote " // still string` || len(v["b"].([]any)) != 2 {
		t.Errorf("stripJSONC changed values: %v", v)
	}
	if _, err := stripJSONC([]byte(`{"a": "open`)); err == nil {
		t.Error("an unclosed string was accepted")
	}
}

func TestIDFromName(t *testing.T) {
	for in, want := range map[string]string{
		"GitHub Server":           "github-server",
		"filesystem":              "filesystem",
		"@scope/pkg.name":         "scope-pkg-name",
		"123":                     "mcp-123",
		"___":                     "mcp",
		strings.Repeat("abc", 20): strings.Repeat("abc", 10) + "ab",
	} {
		if got := idFromName(in); got != want {
			t.Errorf("idFromName(%q) = %q, want %q", in, got, want)
		}
	}
	plan := &importPlan{Servers: []importedServer{{Name: "fs"}, {Name: "FS"}, {Name: "f s"}}}
	assignIDs(plan, &contracts.MCPSettings{Servers: []contracts.ServerSettings{{ID: "fs"}}})
	var ids []string
	for _, s := range plan.Servers {
		ids = append(ids, s.Settings.ID)
	}
	if !slices.Equal(ids, []string{"fs-2", "fs-3", "f-s"}) {
		t.Errorf("assignIDs gave %v", ids)
	}
}

// TestParseImport maps one file of each format; credential values never
// reach the settings.
func TestParseImport(t *testing.T) {
	const secret = "ghp_0123456789abcdefABCDEF0123456789abcd"
	files := map[string]string{
		"claude.json": `{"mcpServers":{"gh":{"command":"docker","args":["run","ghcr.io/github/github-mcp-server"],
			"env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"` + secret + `","MODE":"x"}}}}`,
		"cursor.json": `{"mcpServers":{"docs":{"url":"https://docs.example.com/mcp","headers":{"Authorization":"Bearer ` + secret + `"}}}}`,
		"mcp.json": `{"inputs":[{"id":"k","type":"promptString","password":true}],
			"servers":{"s":{"type":"stdio","command":"uvx","args":["srv"],"env":{"KEY":"${input:k}"},},},}`,
		"config.toml": "[mcp_servers.ctx]\ncommand = \"npx\"\nenv = { \"API_KEY\" = \"" + secret + "\" }\n",
	}
	for name, body := range files {
		plan, _, err := parseImport(name, []byte(body))
		if err != nil {
			t.Errorf("parseImport(%s): %v", name, err)
			continue
		}
		if len(plan.Servers) != 1 || plan.Servers[0].Skipped != "" {
			t.Errorf("parseImport(%s) = %+v, want one server", name, plan.Servers)
			continue
		}
		s := plan.Servers[0]
		settings := contracts.MCPSettings{Servers: []contracts.ServerSettings{s.Settings}}
		if strings.Contains(string(settings.Canonical()), secret) {
			t.Errorf("parseImport(%s) put the credential in the settings", name)
		}
		if len(s.Secrets) != 1 {
			t.Errorf("parseImport(%s) found secrets %+v, want one", name, s.Secrets)
		}
	}
	if _, _, err := parseImport("x.json", []byte(`{"other":{}}`)); err == nil {
		t.Error("a file with no servers was accepted")
	}
}

func TestTypedValue(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"},
		"s":{"type":"string"},"a":{"type":"array"},"o":{"type":"object"},"ns":{"type":["number","null"]}}}`)
	got, err := typedArgs([]string{"n=3", "f=2.5", "b=true", "s=42", "a=[1,2]", "o={\"k\":1}", "ns=null", "x=free"}, schema)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"a":[1,2],"b":true,"f":2.5,"n":3,"ns":null,"o":{"k":1},"s":"42","x":"free"}`
	if string(b) != want {
		t.Errorf("typedArgs = %s, want %s", b, want)
	}
	for _, bad := range []string{"n=3.5", "b=yes!", "a={}", "o=[1]", "novalue"} {
		if _, err := typedArgs([]string{bad}, schema); err == nil {
			t.Errorf("typedArgs(%q) was accepted", bad)
		}
	}
}

func TestUnwrapSettingsResult(t *testing.T) {
	inner, rev, ok := unwrapSettingsResult(json.RawMessage(`{"extension":"mcp","revision":4,"settings":{"servers":[]},"updatedAt":"x"}`))
	if !ok || rev != 4 || string(inner) != `{"servers":[]}` {
		t.Errorf("unwrap = %s, %d, %v", inner, rev, ok)
	}
	for _, s := range []string{`{"servers":[]}`, `{"extension":"mcp","revision":1,"settings":{},"servers":[]}`} {
		if _, _, ok := unwrapSettingsResult(json.RawMessage(s)); ok {
			t.Errorf("unwrap accepted %s", s)
		}
	}
}
