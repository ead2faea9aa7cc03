package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// parseExpected reads the suite's expected-failures YAML as far as 0.1.16
// understands it: a `client:` list of scenario names (and a `server:`
// list, which must be empty here).
func parseExpected(text string) ([]string, error) {
	var names []string
	section := ""
	for i, raw := range strings.Split(text, "\n") {
		line := raw
		if j := strings.Index(line, "#"); j >= 0 {
			line = line[:j]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "-") {
			key, rest, ok := strings.Cut(trimmed, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want `client:` or `server:`, got %q", i+1, raw)
			}
			section = key
			switch rest = strings.TrimSpace(rest); {
			case rest == "" || rest == "[]":
			default:
				return nil, fmt.Errorf("line %d: write the list one `- name` per line", i+1)
			}
			if section != "client" && section != "server" {
				return nil, fmt.Errorf("line %d: unknown key %q", i+1, section)
			}
			continue
		}
		item, ok := strings.CutPrefix(trimmed, "- ")
		if !ok {
			return nil, fmt.Errorf("line %d: want `- scenario-name`, got %q", i+1, raw)
		}
		item = strings.Trim(strings.TrimSpace(item), `"'`)
		switch section {
		case "client":
			if slices.Contains(names, item) {
				return nil, fmt.Errorf("line %d: %s is listed twice", i+1, item)
			}
			names = append(names, item)
		case "server":
			return nil, fmt.Errorf("line %d: pikod is only tested as a client; the server list must be empty", i+1)
		default:
			return nil, fmt.Errorf("line %d: a list item outside `client:`", i+1)
		}
	}
	return names, nil
}

// readmeHeading starts the README's list of expected failures; each entry
// is a line "- `scenario`: why".
const readmeHeading = "#### Expected failures"

var readmeItem = regexp.MustCompile("^- `([^`]+)`: \\S")

// readmeReasons returns the scenarios the README explains under
// readmeHeading (up to the next heading).
func readmeReasons(readme string) ([]string, error) {
	_, after, ok := strings.Cut(readme, "\n"+readmeHeading+"\n")
	if !ok {
		return nil, fmt.Errorf("docs/development.md has no %q section", readmeHeading)
	}
	var names []string
	for line := range strings.SplitSeq(after, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if m := readmeItem.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names, nil
}

// checkBaseline checks the expected failures against the suite's
// scenarios and the README: every entry is a scenario, and the README
// says why for exactly the listed ones.
func checkBaseline(expected, scenarios, explained []string) []string {
	var problems []string
	for _, e := range expected {
		if !slices.Contains(scenarios, e) {
			problems = append(problems, fmt.Sprintf("expected-failures.yaml lists %q, which the suite does not have", e))
		}
		if !slices.Contains(explained, e) {
			problems = append(problems, fmt.Sprintf("docs/development.md (%s) does not say why %s is expected to fail", readmeHeading, e))
		}
	}
	for _, e := range explained {
		if !slices.Contains(expected, e) {
			problems = append(problems, fmt.Sprintf("docs/development.md (%s) explains %s, which expected-failures.yaml does not list", readmeHeading, e))
		}
	}
	return problems
}
