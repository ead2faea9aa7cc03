package main

import (
	"slices"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	ok := `[{"id":"tool-add-numbers","status":"SUCCESS"}]`
	init := `[{"id":"incoming-request","status":"INFO"},{"id":"mcp-client-initialization","status":"SUCCESS"},{"id":"server-info","status":"INFO"}]`
	warn := `[{"id":"cimd-client-id-used","status":"WARNING","errorMessage":"used DCR"}]`
	fail := `[{"id":"tool-add-numbers","status":"FAILURE","details":{"message":"Tool was not called by client"}}]`
	rejected := `[{"id":"resource-mismatch-rejected","status":"SUCCESS"}]`
	const done = "  12ms RESULT: ok\n"
	for _, tc := range []struct {
		name     string
		scenario string
		checks   string
		exit     int
		expected bool
		log      string
		race     bool
		passed   bool
		vacuous  string // substring of a vacuous reason; "" for none
		problem  string // substring of a problem; "" for none
	}{
		{name: "a real pass", scenario: "tools_call", checks: ok, log: done, passed: true},
		{name: "initialize with no checks is vacuous", scenario: "initialize", checks: `[]`, log: done,
			vacuous: "mcp-client-initialization", problem: "unexpected failure"},
		{name: "initialize with its check", scenario: "initialize", checks: init, log: done, passed: true},
		{name: "resource-mismatch without pikod's refusal", scenario: "auth/resource-mismatch", checks: rejected,
			log:     "  5ms pikod refused: pikoctl mcp auth (exit 1): connect_failed: handshake failed\n  6ms RESULT: ok\n",
			vacuous: "no refusal", problem: "unexpected failure"},
		{name: "resource-mismatch refused for the resource", scenario: "auth/resource-mismatch", checks: rejected,
			log:    "  5ms pikod refused: pikoctl mcp auth (exit 1): resource_mismatch: the protected resource https://evil.example.com/mcp is not http://localhost:4000/mcp\n  6ms RESULT: failed: x\n",
			passed: true},
		{name: "a warning fails", scenario: "auth/basic-cimd", checks: warn, exit: 1, log: done, problem: "unexpected failure"},
		{name: "an expected failure", scenario: "tools_call", checks: fail, expected: true, log: done},
		{name: "a stale expected failure", scenario: "tools_call", checks: ok, exit: 1, expected: true, log: done,
			passed: true, problem: "remove the entry"},
		{name: "a listed vacuous pass is an expected failure", scenario: "initialize", checks: `[]`, exit: 1, expected: true,
			log: done, vacuous: "not one check"},
		{name: "checks passed, adapter failed", scenario: "tools_call", checks: ok, log: "  9ms RESULT: failed: timeout\n",
			vacuous: "did not finish", problem: "unexpected failure"},
		{name: "retry-limit may end in an error", scenario: "auth/scope-retry-limit", checks: `[{"id":"scope-retry-limit","status":"SUCCESS"}]`,
			log: "  9ms RESULT: failed: pikod refused\n", passed: true},
		{name: "suite exit disagrees", scenario: "tools_call", checks: ok, exit: 1, log: done, passed: true, problem: "exited 1, want 0"},
		{name: "a race in pikod", scenario: "tools_call", checks: ok, log: done, race: true, passed: true, problem: "data race"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := parseChecks([]byte(tc.checks))
			if err != nil {
				t.Fatal(err)
			}
			o := outcome{scenario: tc.scenario, checks: cs, suiteExit: tc.exit, expected: tc.expected, adapterLog: tc.log}
			if tc.race {
				o.pikodStderr = "==================\nWARNING: DATA RACE\n"
			}
			v := judge(o)
			if v.passed != tc.passed {
				t.Errorf("passed = %v, want %v (%+v)", v.passed, tc.passed, v)
			}
			if got := strings.Join(v.vacuous, "; "); (tc.vacuous == "") != (got == "") || !strings.Contains(got, tc.vacuous) {
				t.Errorf("vacuous = %q, want one containing %q", got, tc.vacuous)
			}
			if got := strings.Join(v.problems, "; "); (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
				t.Errorf("problems = %q, want one containing %q", got, tc.problem)
			}
		})
	}
}

func TestParseExpected(t *testing.T) {
	got, err := parseExpected("# why\nclient:\n  - a # note\n  - \"auth/b\"\nserver: []\n")
	if err != nil || !slices.Equal(got, []string{"a", "auth/b"}) {
		t.Fatalf("parseExpected = %q, %v", got, err)
	}
	for _, bad := range []string{
		"client: [a, b]\n",
		"client:\n  - a\n  - a\n",
		"server:\n  - x\n",
		"  - a\n",
		"other:\n",
	} {
		if _, err := parseExpected(bad); err == nil {
			t.Errorf("parseExpected(%q) accepted it", bad)
		}
	}
}

func TestBaselineAgainstReadme(t *testing.T) {
	readme := "## Testing\n\n" + readmeHeading + "\n\n- `a`: not built yet.\n- `c`: stale line.\n\n## Next\n- `d`: elsewhere.\n"
	explained, err := readmeReasons(readme)
	if err != nil || !slices.Equal(explained, []string{"a", "c"}) {
		t.Fatalf("readmeReasons = %q, %v", explained, err)
	}
	problems := strings.Join(checkBaseline([]string{"a", "b", "zz"}, []string{"a", "b", "c"}, explained), "\n")
	for _, want := range []string{"does not say why b", "lists \"zz\", which the suite does not have", "explains c, which"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
	if _, err := readmeReasons("no section"); err == nil {
		t.Error("a README without the section was accepted")
	}
}
