package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// check is one entry of the suite's checks.json.
type check struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Status       string         `json:"status"`
	ErrorMessage string         `json:"errorMessage"`
	Details      map[string]any `json:"details"`
}

// failing reports whether the suite counts the check against the client:
// a FAILURE, or a WARNING (the suite's baseline mode fails on both).
func (c check) failing() bool { return c.Status == "FAILURE" || c.Status == "WARNING" }

// why is the check's own explanation.
func (c check) why() string {
	if c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	if m, ok := c.Details["message"].(string); ok && m != "" {
		return m
	}
	return c.Description
}

func parseChecks(b []byte) ([]check, error) {
	var cs []check
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("decoding checks.json: %w", err)
	}
	return cs, nil
}

// outcome is what one scenario run left behind.
type outcome struct {
	scenario string
	checks   []check
	// suiteExit is the suite's exit status with the expected-failures
	// baseline (0: as expected).
	suiteExit int
	// adapterLog is the adapter's log; its last line says RESULT.
	adapterLog string
	// pikodStderr is what pikod wrote to stderr (race reports land here).
	pikodStderr string
	expected    bool
}

// verdict is the runner's judgement of one outcome.
type verdict struct {
	// passed: no failing check, and the pass rests on what the client
	// did (no vacuous reasons).
	passed   bool
	failures []string // "check-id (STATUS): why" of each failing check
	vacuous  []string // why checks that all passed prove nothing
	problems []string // why the run is not acceptable; empty when it is
}

// mustSucceed names, per scenario, checks that must be present with
// SUCCESS before a pass counts: without them the suite passes a client
// that did nothing.
var mustSucceed = map[string][]string{
	"initialize":             {"mcp-client-initialization"},
	"auth/resource-mismatch": {"resource-mismatch-rejected"},
}

// refusalReason is what the adapter's log must show for
// auth/resource-mismatch: pikod refused, naming the protected resource
// that does not match (the scenario's document names
// https://evil.example.com/mcp).
var refusalReason = regexp.MustCompile(`(?i)pikod refused: .*(evil\.example\.com|resource[ _-]?mismatch|resource .*(does not|doesn't) match|protected resource .*(not|mismatch))`)

// allowClientError lists the scenarios whose client may end with an error
// (the suite's own allowClientError): the adapter's RESULT is not judged.
var allowClientError = map[string]bool{
	"auth/resource-mismatch": true,
	"auth/scope-retry-limit": true,
}

// judge decides one scenario. A scenario passes when no check failed and
// the pass is not vacuous; it must pass unless expected-failures.yaml
// lists it, and must fail if it does. The suite's own exit status is
// checked against what the suite (which knows nothing of vacuous passes)
// should have said.
func judge(o outcome) verdict {
	var v verdict
	succeeded := map[string]bool{}
	for _, c := range o.checks {
		if c.failing() {
			v.failures = append(v.failures, fmt.Sprintf("%s (%s): %s", c.ID, c.Status, oneLine(c.why())))
		}
		if c.Status == "SUCCESS" {
			succeeded[c.ID] = true
		}
	}
	suitePassed := len(v.failures) == 0
	if suitePassed {
		if len(succeeded) == 0 {
			v.vacuous = append(v.vacuous, "not one check succeeded")
		}
		for _, id := range mustSucceed[o.scenario] {
			if !succeeded[id] {
				v.vacuous = append(v.vacuous, "check "+id+" did not succeed")
			}
		}
		if o.scenario == "auth/resource-mismatch" && !refusalReason.MatchString(o.adapterLog) {
			v.vacuous = append(v.vacuous, "the adapter's log shows no refusal by pikod naming the mismatched resource")
		}
		if !allowClientError[o.scenario] {
			if res := adapterResult(o.adapterLog); res != "RESULT: ok" {
				v.vacuous = append(v.vacuous, "the adapter did not finish: "+orNone(res))
			}
		}
	}
	v.passed = suitePassed && len(v.vacuous) == 0
	problem := func(format string, args ...any) { v.problems = append(v.problems, fmt.Sprintf(format, args...)) }

	switch {
	case v.passed && o.expected:
		problem("passes but is listed in expected-failures.yaml: remove the entry and its line in docs/development.md")
	case !v.passed && !o.expected:
		problem("unexpected failure")
	}
	// The suite exits 1 for a listed scenario it passes (stale) and for an
	// unlisted one it fails.
	wantExit := 0
	if suitePassed == o.expected {
		wantExit = 1
	}
	if o.suiteExit != wantExit {
		problem("the conformance suite exited %d, want %d", o.suiteExit, wantExit)
	}
	if strings.Contains(o.pikodStderr, "WARNING: DATA RACE") {
		problem("pikod reported a data race (see its stderr log)")
	}
	return v
}

// adapterResult is the adapter's final RESULT line, or "".
func adapterResult(log string) string {
	res := ""
	for line := range strings.SplitSeq(log, "\n") {
		if i := strings.Index(line, "RESULT: "); i >= 0 {
			res = strings.TrimSpace(line[i:])
		}
	}
	return res
}

func orNone(s string) string {
	if s == "" {
		return "no RESULT line in its log"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
