package mcpclient

import (
	"fmt"
	"regexp"
	"strings"
)

// uriTemplate is an RFC 6570 URI template a server listed, compiled to
// decide which URIs it covers. Matching is deliberately no stricter than
// the servers' own: a variable of simple or form-style expansion covers
// any run of characters that cannot end its part of the URI, reserved
// expansion ({+var}, {#var}) covers anything.
type uriTemplate struct {
	raw  string
	vars []string
	re   *regexp.Regexp
}

// maxTemplateLen bounds the templates pikod compiles; longer ones match
// nothing.
const maxTemplateLen = 4096

// parseURITemplate compiles a URI template.
func parseURITemplate(s string) (*uriTemplate, error) {
	if len(s) > maxTemplateLen {
		return nil, fmt.Errorf("longer than %d bytes", maxTemplateLen)
	}
	t := &uriTemplate{raw: s}
	var re strings.Builder
	re.WriteString(`^`)
	seen := map[string]bool{}
	for rest := s; rest != ""; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, fmt.Errorf("unmatched }")
			}
			re.WriteString(regexp.QuoteMeta(rest))
			break
		}
		lit := rest[:open]
		if strings.IndexByte(lit, '}') >= 0 {
			return nil, fmt.Errorf("unmatched }")
		}
		re.WriteString(regexp.QuoteMeta(lit))
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unterminated expression %q", rest[open:])
		}
		expr := rest[open+1 : open+end]
		rest = rest[open+end+1:]
		if expr == "" {
			return nil, fmt.Errorf("empty expression {}")
		}
		op := byte(0)
		if strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			op, expr = expr[0], expr[1:]
		}
		for _, spec := range strings.Split(expr, ",") {
			name := spec
			if i := strings.IndexByte(name, ':'); i >= 0 {
				name = name[:i]
			}
			name = strings.TrimSuffix(name, "*")
			if !templateVarRE.MatchString(name) {
				return nil, fmt.Errorf("invalid variable %q", spec)
			}
			if !seen[name] {
				seen[name] = true
				t.vars = append(t.vars, name)
			}
		}
		re.WriteString(expressionPattern(op))
	}
	re.WriteString(`$`)
	var err error
	if t.re, err = regexp.Compile(re.String()); err != nil {
		return nil, err
	}
	return t, nil
}

var templateVarRE = regexp.MustCompile(`^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$`)

// expressionPattern is what an expression with operator op (0 for simple
// string expansion) may expand to, empty included (an undefined variable
// expands to nothing).
func expressionPattern(op byte) string {
	switch op {
	case '+', '#':
		return `.*`
	case '.':
		return `(?:\.[^/?#]*)*`
	case '/':
		return `(?:/[^?#]*)*`
	case ';':
		return `(?:;[^/?#]*)*`
	case '?', '&':
		return `(?:[?&][^#]*)?`
	}
	return `[^/?#]*`
}

// matches reports whether uri is one of the URIs t can expand to.
func (t *uriTemplate) matches(uri string) bool { return t.re.MatchString(uri) }

// hasVar reports whether t declares the variable name.
func (t *uriTemplate) hasVar(name string) bool {
	for _, v := range t.vars {
		if v == name {
			return true
		}
	}
	return false
}
