package contracts

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts/internal/reasonsrc"
)

const reasonsGolden = "testdata/reasons.golden"

// reasonWords reads the constants of reasons.go from its source, where
// their doc comments are.
func reasonWords(t *testing.T) []reasonsrc.Word {
	t.Helper()
	ws, err := reasonsrc.Read("reasons.go")
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestReasonsGolden freezes the data.reason words as the codes are frozen:
// a published word may never change or disappear, and a new one must be
// frozen with -update.
func TestReasonsGolden(t *testing.T) {
	var rows []string
	for _, w := range reasonWords(t) {
		rows = append(rows, fmt.Sprintf("%s\t%s", w.Word, w.Name))
	}
	slices.Sort(rows)
	checkFrozen(t, reasonsGolden, "# reason\tconstant (frozen: see reasons.go)", "reason row", "reason words are frozen", rows)
}

// TestReasonsTable: every word is snake_case (dots allowed where a word
// names an MCP capability path), appears once, has a doc comment, and its
// constant is named after it.
func TestReasonsTable(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+([._][a-z]+)*$`)
	seen := map[string]string{}
	for _, w := range reasonWords(t) {
		if !word.MatchString(w.Word) {
			t.Errorf("%s = %q is not snake_case", w.Name, w.Word)
		}
		if other, dup := seen[w.Word]; dup {
			t.Errorf("%s and %s are both %q", w.Name, other, w.Word)
		}
		seen[w.Word] = w.Name
		if w.Doc == "" {
			t.Errorf("%s has no doc comment", w.Name)
		}
		flat := strings.NewReplacer("_", "", ".", "").Replace(w.Word)
		if !strings.EqualFold("Reason"+flat, w.Name) {
			t.Errorf("constant %s does not name its word %q", w.Name, w.Word)
		}
	}
}
