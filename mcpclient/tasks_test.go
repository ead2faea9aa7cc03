package mcpclient

import (
	"context"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestDiscoverTaskSupport: the catalog keeps each tool's execution object
// and reads its taskSupport; a tool without one keeps the digest it always
// had, and one with an unreadable taskSupport is left out as a problem.
func TestDiscoverTaskSupport(t *testing.T) {
	tools := `{"tools":[` +
		`{"name":"plain","description":"d"},` +
		`{"name":"opt","description":"d","execution":{"taskSupport":"optional"}},` +
		`{"name":"req","description":"d","execution":{"taskSupport":"required"}},` +
		`{"name":"none","description":"d","execution":{}},` +
		`{"name":"bad","description":"d","execution":{"taskSupport":"sometimes"}}]}`
	f := &fakeLister{pages: map[string]map[string]string{"tools/list": {"": tools}}}
	cat := discover(context.Background(), f.fetch, &contracts.ServerSettings{ID: "fs"}, serverCaps{tools: true}, CatalogLimits{})
	got := map[string]contracts.CatalogTool{}
	for _, tl := range cat.Tools {
		got[tl.OriginalName] = tl
	}
	want := map[string]string{"plain": "", "opt": "optional", "req": "required", "none": ""}
	for name, support := range want {
		tl, ok := got[name]
		if !ok {
			t.Errorf("tool %q missing from the catalog", name)
			continue
		}
		if tl.TaskSupport != support {
			t.Errorf("tool %q: taskSupport %q, want %q", name, tl.TaskSupport, support)
		}
	}
	if _, ok := got["bad"]; ok || cat.Complete || !strings.Contains(cat.Problem, "sometimes") {
		t.Errorf("a tool with taskSupport \"sometimes\": listed %v, complete %v, problem %q; want it left out as a problem", ok, cat.Complete, cat.Problem)
	}
	if string(got["req"].Execution) != `{"taskSupport":"required"}` {
		t.Errorf("execution passed through as %s", got["req"].Execution)
	}
	if got["plain"].Digest != contracts.ToolDigest("plain", "", "d", nil, nil, nil) {
		t.Errorf("a tool without execution changed its digest")
	}
	// The same definition with another taskSupport is another definition.
	if a, b := got["opt"].Digest, got["req"].Digest; a == b || a == contracts.ToolDigest("opt", "", "d", nil, nil, nil) {
		t.Errorf("execution is not part of the digest: opt %s req %s", a, b)
	}
	opt2 := toolDigestOf(toolDef{Name: "opt", Description: "d", Execution: []byte(`{ "taskSupport" : "optional" }`)})
	if opt2 != got["opt"].Digest {
		t.Errorf("formatting the execution object changed the digest")
	}
}

func TestTaskSupportOf(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		bad      bool
	}{
		{``, "", false},
		{`null`, "", false},
		{`{}`, "", false},
		{`{"taskSupport":"forbidden"}`, "forbidden", false},
		{`{"taskSupport":"optional"}`, "optional", false},
		{`{"taskSupport":"required"}`, "required", false},
		{`{"taskSupport":"Required"}`, "", true},
		{`{"taskSupport":1}`, "", true},
		{`[]`, "", true},
	} {
		got, err := taskSupportOf([]byte(tt.in))
		if got != tt.want || (err != nil) != tt.bad {
			t.Errorf("taskSupportOf(%s) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestTaskToolCallParams(t *testing.T) {
	got := string(toolCallParams("slow", []byte(`{"a":1}`), "tok", true))
	want := `{"name":"slow","arguments":{"a":1},"task":{},"_meta":{"progressToken":"tok"}}`
	if got != want {
		t.Errorf("task params %s, want %s", got, want)
	}
}
