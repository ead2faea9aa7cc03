package contracts

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const reasonsGolden = "testdata/reasons.golden"

// reasonConsts reads reasons.go: each constant's name and word, in order.
func reasonConsts(t *testing.T) (names, words []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s is not a string literal constant", n.Name)
					continue
				}
				w, _ := strconv.Unquote(lit.Value)
				if vs.Doc.Text() == "" {
					t.Errorf("%s has no doc comment", n.Name)
				}
				names, words = append(names, n.Name), append(words, w)
			}
		}
	}
	return names, words
}

// TestReasonsGolden freezes the data.reason words as the codes are frozen:
// a published word may never change or disappear, and a new one must be
// frozen with -update.
func TestReasonsGolden(t *testing.T) {
	names, words := reasonConsts(t)
	current := map[string]bool{}
	var rows []string
	for i := range names {
		r := fmt.Sprintf("%s\t%s", words[i], names[i])
		current[r] = true
		rows = append(rows, r)
	}
	data, err := os.ReadFile(reasonsGolden)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatalf("reading golden: %v (run go test -update ./contracts/ to create it)", err)
	}
	frozen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		frozen[line] = true
		if !current[line] {
			t.Errorf("reason row %q changed or was removed: reason words are frozen, restore it", line)
		}
	}
	if *update {
		if t.Failed() {
			t.Fatal("not rewriting the golden file: restore the rows above first")
		}
		sorted := slices.Clone(rows)
		slices.Sort(sorted)
		out := "# reason\tconstant (frozen: see reasons.go)\n" + strings.Join(sorted, "\n") + "\n"
		if err := os.WriteFile(reasonsGolden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, r := range rows {
		if !frozen[r] {
			t.Errorf("reason row %q is not frozen: run go test -update ./contracts/", r)
		}
	}
}

// TestReasonsTable: every word is snake_case (dots allowed where a word
// names an MCP capability path), appears once, and its constant is named
// after it.
func TestReasonsTable(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+([._][a-z]+)*$`)
	seen := map[string]string{}
	names, words := reasonConsts(t)
	for i, w := range words {
		if !word.MatchString(w) {
			t.Errorf("%s = %q is not snake_case", names[i], w)
		}
		if other, dup := seen[w]; dup {
			t.Errorf("%s and %s are both %q", names[i], other, w)
		}
		seen[w] = names[i]
		flat := strings.NewReplacer("_", "", ".", "").Replace(w)
		if !strings.EqualFold("Reason"+flat, names[i]) {
			t.Errorf("constant %s does not name its word %q", names[i], w)
		}
	}
}
