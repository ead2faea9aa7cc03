// Package reasonsrc reads the data.reason words from the source of
// contracts/reasons.go, for the two that need them without the compiled
// package's help: the golden test (which checks every constant has a doc
// comment) and refgen (which resolves the constants at call sites). It
// imports the standard library only.
package reasonsrc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// Word is one reason constant: its name, its word, and its doc comment.
type Word struct {
	Name, Word, Doc string
}

// Read parses the reasons file at path and returns its Reason constants in
// order. A Reason constant that is not a string literal is an error.
func Read(path string) ([]Word, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []Word
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Reason") {
					continue
				}
				var lit *ast.BasicLit
				if i < len(vs.Values) {
					lit, _ = vs.Values[i].(*ast.BasicLit)
				}
				if lit == nil || lit.Kind != token.STRING {
					return nil, fmt.Errorf("%s: %s is not a string literal constant", path, n.Name)
				}
				w, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, err
				}
				out = append(out, Word{Name: n.Name, Word: w, Doc: vs.Doc.Text()})
			}
		}
	}
	return out, nil
}
