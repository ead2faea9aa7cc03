package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The YAML frontmatter a SKILL.md begins with, read by a small strict
// parser for the subset skills use: a mapping of fields whose values are
// plain, single- or double-quoted scalars (quoted ones on one line), block
// scalars (| and >, with - or + chomping), nested block mappings and
// sequences, and one-line flow sequences and mappings of scalars. Anything
// else (anchors, aliases, tags, directives, complex keys, explicit
// indentation indicators, multi-line quoted scalars, nested flow
// collections, tabs in indentation) is refused: pikod compares the
// frontmatter with the skill's entry, and text it does not understand is a
// mismatch, never a guess.

// Bounds of what the parser reads: a larger or deeper frontmatter is
// refused.
const (
	maxFrontmatterBytes = 256 << 10
	maxFrontmatterDepth = 32
)

// fmKind is the kind of a frontmatter node.
type fmKind int

const (
	// fmPlain is a plain (unquoted) scalar: its type comes from its text,
	// as the YAML 1.2 core schema resolves it (null, bool, int, float or
	// string).
	fmPlain fmKind = iota
	// fmString is a quoted or block scalar: always a string.
	fmString
	fmSeq
	fmMap
)

// fmNode is one node of a parsed frontmatter.
type fmNode struct {
	kind  fmKind
	text  string
	items []*fmNode
	// keys are a mapping's keys in order; vals holds their values.
	keys []string
	vals map[string]*fmNode
}

// fmError is a frontmatter the parser refuses, with the SKILL.md line it
// refused (1-based).
type fmError struct {
	line int
	msg  string
}

func (e *fmError) Error() string {
	if e.line <= 0 {
		return e.msg
	}
	return fmt.Sprintf("line %d: %s", e.line, e.msg)
}

// parseFrontmatter parses the frontmatter of a SKILL.md: the lines between
// a first line "---" and the next line "---". It must be a mapping.
func parseFrontmatter(doc []byte) (*fmNode, error) {
	if !utf8.Valid(doc) {
		return nil, &fmError{msg: "SKILL.md is not valid UTF-8"}
	}
	text := strings.ReplaceAll(string(doc), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		return nil, &fmError{line: 1, msg: `SKILL.md does not begin with a "---" line (its YAML frontmatter)`}
	}
	end := -1
	size := 0
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") == "---" {
			end = i
			break
		}
		if strings.TrimRight(lines[i], " \t") == "..." {
			return nil, &fmError{line: i + 1, msg: `a "..." document end marker (not supported: end the frontmatter with "---")`}
		}
		if strings.ContainsRune(lines[i], '\r') {
			return nil, &fmError{line: i + 1, msg: "a carriage return that is not part of a CR LF line break"}
		}
		if size += len(lines[i]) + 1; size > maxFrontmatterBytes {
			return nil, &fmError{line: i + 1, msg: fmt.Sprintf("the frontmatter is longer than %d bytes", maxFrontmatterBytes)}
		}
	}
	if end < 0 {
		return nil, &fmError{line: 1, msg: `the frontmatter has no closing "---" line`}
	}
	p := &fmParser{lines: lines[1:end], first: 2}
	i := p.skip(0)
	if i == len(p.lines) {
		return nil, &fmError{line: 2, msg: "the frontmatter is empty"}
	}
	ind, err := p.indent(i)
	if err != nil {
		return nil, err
	}
	if ind != 0 {
		return nil, p.errorf(i, "the frontmatter's fields must start at the beginning of the line")
	}
	first := p.lines[i]
	if !isMapEntry(first) {
		return nil, p.errorf(i, "the frontmatter is not a mapping of fields (want \"name: value\" lines)")
	}
	n, next, err := p.mapping(i, 0, first)
	if err != nil {
		return nil, err
	}
	if next = p.skip(next); next < len(p.lines) {
		return nil, p.errorf(next, "unexpected text after the frontmatter's fields")
	}
	return n, nil
}

// fmParser reads the lines of one frontmatter.
type fmParser struct {
	lines []string
	// first is the SKILL.md line number of lines[0].
	first int
	depth int
}

func (p *fmParser) errorf(i int, format string, args ...any) error {
	return &fmError{line: p.first + i, msg: fmt.Sprintf(format, args...)}
}

// blank reports whether s holds nothing but spaces, tabs and a comment.
func blank(s string) bool {
	t := strings.TrimLeft(s, " \t")
	return t == "" || t[0] == '#'
}

// skip returns the first line at or after i that is not blank.
func (p *fmParser) skip(i int) int {
	for i < len(p.lines) && blank(p.lines[i]) {
		i++
	}
	return i
}

// indent returns the spaces that begin line i; a tab among them is an
// error (YAML indents with spaces only).
func (p *fmParser) indent(i int) (int, error) {
	s := p.lines[i]
	n := 0
	for n < len(s) && s[n] == ' ' {
		n++
	}
	if n < len(s) && s[n] == '\t' {
		return 0, p.errorf(i, "a tab in the indentation (YAML indents with spaces)")
	}
	return n, nil
}

// isSeqItem reports whether s (text at a node's column) begins a block
// sequence item.
func isSeqItem(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "-\t")
}

// isMapEntry reports whether s (text at a node's column) is "key: ...".
func isMapEntry(s string) bool {
	_, _, err := splitKey(s)
	return err == nil
}

// splitKey splits "key: rest" (or "key:"), the key plain or quoted.
func splitKey(s string) (key, rest string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("empty")
	}
	if s[0] == '"' || s[0] == '\'' {
		k, after, err := quoted(s)
		if err != nil {
			return "", "", err
		}
		after = strings.TrimLeft(after, " \t")
		if !strings.HasPrefix(after, ":") || (len(after) > 1 && after[1] != ' ' && after[1] != '\t') {
			return "", "", fmt.Errorf("a quoted key must be followed by \": \"")
		}
		return k, after[1:], nil
	}
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) && !(s[0] == '-' && len(s) > 1 && s[1] != ' ' && s[1] != '\t') {
		return "", "", fmt.Errorf("a key cannot begin with %q", s[0])
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			k := strings.TrimRight(s[:i], " \t")
			if k == "" {
				return "", "", fmt.Errorf("empty key")
			}
			return k, s[i+1:], nil
		case s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return "", "", fmt.Errorf("a comment before the key's colon")
		}
	}
	return "", "", fmt.Errorf("no \": \" after the key")
}

// node parses the block node that begins on line i at column col, whose
// text from col on is first. parent is the column of the collection that
// holds the node (continuation lines of a scalar must go deeper).
func (p *fmParser) node(i, col, parent int, first string) (*fmNode, int, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxFrontmatterDepth {
		return nil, i, p.errorf(i, "the frontmatter is nested more than %d levels deep", maxFrontmatterDepth)
	}
	switch {
	case isSeqItem(first):
		return p.seq(i, col, first)
	case isMapEntry(first):
		return p.mapping(i, col, first)
	}
	return p.value(i, parent, first)
}

// mapping parses a block mapping whose first entry is first, on line i at
// column col.
func (p *fmParser) mapping(i, col int, first string) (*fmNode, int, error) {
	n := &fmNode{kind: fmMap, vals: map[string]*fmNode{}}
	for {
		key, rest, err := splitKey(first)
		if err != nil {
			return nil, i, p.errorf(i, "want a field \"name: value\" here (%v)", err)
		}
		if _, dup := n.vals[key]; dup {
			return nil, i, p.errorf(i, "the field %s is given twice", strconv.Quote(clip(key, 80)))
		}
		content := strings.TrimLeft(rest, " \t")
		var v *fmNode
		if content == "" || content[0] == '#' {
			v, i, err = p.nested(i, col, true)
		} else {
			v, i, err = p.value(i, col, content)
		}
		if err != nil {
			return nil, i, err
		}
		n.keys = append(n.keys, key)
		n.vals[key] = v
		var more bool
		if i, more, err = p.continues(i, col, "a field"); err != nil || !more {
			return orNil(n, err), i, err
		}
		if first = p.lines[i][col:]; isSeqItem(first) {
			return nil, i, p.errorf(i, "a list item where a field \"name: value\" belongs")
		}
	}
}

// continues skips from line i to the next line with content and says
// whether it goes on the collection at column col: not when the input
// ends or the line is less indented, an error (naming what, "a field" or
// "a list item") when it is more.
func (p *fmParser) continues(i, col int, what string) (int, bool, error) {
	if i = p.skip(i); i >= len(p.lines) {
		return i, false, nil
	}
	ind, err := p.indent(i)
	switch {
	case err != nil:
		return i, false, err
	case ind > col:
		return i, false, p.errorf(i, "unexpected indentation: %s here must begin in column %d", what, col+1)
	}
	return i, ind == col, nil
}

// orNil is n, or nil when err is set: a collection cut short by an error
// is not returned.
func orNil(n *fmNode, err error) *fmNode {
	if err != nil {
		return nil
	}
	return n
}

// nested parses the value of a key (or list item) on line i at column col
// that has nothing after its colon (or dash): a node on the lines that
// follow, deeper than col (a list may sit at col itself under a key:
// sameCol), or null.
func (p *fmParser) nested(i, col int, sameCol bool) (*fmNode, int, error) {
	j := p.skip(i + 1)
	if j < len(p.lines) {
		ind, err := p.indent(j)
		if err != nil {
			return nil, j, err
		}
		text := p.lines[j][ind:]
		switch {
		case ind > col:
			return p.node(j, ind, col, text)
		case ind == col && sameCol && isSeqItem(text):
			return p.seq(j, col, text)
		}
	}
	return &fmNode{kind: fmPlain}, i + 1, nil
}

// seq parses a block sequence whose first item is first, on line i at
// column col.
func (p *fmParser) seq(i, col int, first string) (*fmNode, int, error) {
	n := &fmNode{kind: fmSeq}
	for {
		rest := first[1:]
		content := strings.TrimLeft(rest, " \t")
		ccol := col + 1 + len(rest) - len(content)
		var item *fmNode
		var err error
		switch {
		case content == "" || content[0] == '#':
			item, i, err = p.nested(i, col, false)
		case isSeqItem(content) || isMapEntry(content):
			if strings.Contains(rest[:len(rest)-len(content)], "\t") {
				return nil, i, p.errorf(i, "a tab in the indentation of a list item")
			}
			item, i, err = p.node(i, ccol, col, content)
		default:
			item, i, err = p.value(i, col, content)
		}
		if err != nil {
			return nil, i, err
		}
		n.items = append(n.items, item)
		var more bool
		if i, more, err = p.continues(i, col, "a list item"); err != nil || !more {
			return orNil(n, err), i, err
		}
		if first = p.lines[i][col:]; !isSeqItem(first) {
			// A list at a key's own column ends where the next key begins.
			return n, i, nil
		}
	}
}

// value parses a scalar or a one-line flow collection that begins with
// content on line i; parent is the column of the collection that holds it.
func (p *fmParser) value(i, parent int, content string) (*fmNode, int, error) {
	switch c := content[0]; {
	case c == '|' || c == '>':
		return p.blockScalar(i, parent, content)
	case c == '"' || c == '\'':
		s, after, err := quoted(content)
		if err != nil {
			return nil, i, p.errorf(i, "%v", err)
		}
		if err := onlyComment(after); err != nil {
			return nil, i, p.errorf(i, "after a quoted value: %v", err)
		}
		return &fmNode{kind: fmString, text: s}, i + 1, nil
	case c == '[' || c == '{':
		n, err := flow(content)
		if err != nil {
			return nil, i, p.errorf(i, "%v", err)
		}
		return n, i + 1, nil
	case strings.ContainsRune("&*!%@`?,]}", rune(c)):
		return nil, i, p.errorf(i, "a value beginning with %q (anchors, aliases, tags and other YAML indicators are not supported)", c)
	case isSeqItem(content):
		return nil, i, p.errorf(i, "a list item cannot follow a field's colon on the same line")
	}
	return p.plain(i, parent, content)
}

// plain parses a plain scalar: content, and the lines after it deeper than
// parent, folded (a single line break is a space, each blank line a line
// break). A comment ends it.
func (p *fmParser) plain(i, parent int, content string) (*fmNode, int, error) {
	text, commented, err := plainLine(content)
	if err != nil {
		return nil, i, p.errorf(i, "%v", err)
	}
	i++
	for !commented && i < len(p.lines) {
		breaks := 0
		j := i
		for j < len(p.lines) && strings.TrimLeft(p.lines[j], " \t") == "" {
			breaks++
			j++
		}
		if j == len(p.lines) || blank(p.lines[j]) {
			break
		}
		ind, err := p.indent(j)
		if err != nil {
			return nil, j, err
		}
		if ind <= parent {
			break
		}
		next, c, err := plainLine(p.lines[j][ind:])
		if err != nil {
			return nil, j, p.errorf(j, "%v", err)
		}
		if isSeqItem(p.lines[j][ind:]) {
			return nil, j, p.errorf(j, "a line beginning with \"- \" inside a value (quote the value)")
		}
		if breaks == 0 {
			text += " " + next
		} else {
			text += strings.Repeat("\n", breaks) + next
		}
		commented = c
		i = j + 1
	}
	return &fmNode{kind: fmPlain, text: text}, i, nil
}

// plainLine reads one line of a plain scalar: the text before a comment,
// trimmed. A ": " or a final ":" in it is an error in YAML.
func plainLine(s string) (text string, commented bool, err error) {
	for k := 0; k < len(s); k++ {
		if s[k] == '#' && k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
			s, commented = s[:k], true
			break
		}
	}
	s = strings.TrimRight(s, " \t")
	if strings.Contains(s, ": ") || strings.Contains(s, ":\t") || strings.HasSuffix(s, ":") {
		return "", false, fmt.Errorf("a \": \" inside an unquoted value (quote the value)")
	}
	return s, commented, nil
}

// onlyComment accepts what may follow a value on its line: spaces and a
// comment.
func onlyComment(s string) error {
	t := strings.TrimLeft(s, " \t")
	if t == "" || (t[0] == '#' && len(t) < len(s)) {
		return nil
	}
	return fmt.Errorf("unexpected text %s", strconv.Quote(clip(t, 40)))
}

// blockScalar parses a literal (|) or folded (>) block scalar whose header
// is content on line i; its lines are those after it deeper than parent.
func (p *fmParser) blockScalar(i, parent int, content string) (*fmNode, int, error) {
	folded := content[0] == '>'
	chomp := byte(0)
	h := 1
	for ; h < len(content) && h < 3; h++ {
		switch c := content[h]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9':
			return nil, i, p.errorf(i, "explicit indentation indicators of block scalars are not supported")
		default:
			goto header
		}
	}
header:
	if rest := content[h:]; rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return nil, i, p.errorf(i, "unexpected text after the block scalar indicator")
	} else if err := onlyComment(rest); err != nil {
		return nil, i, p.errorf(i, "after the block scalar indicator: %v", err)
	}
	// The block's indentation is that of its first line that is not empty.
	var lines []string
	j := i + 1
	blockInd := -1
	for ; j < len(p.lines); j++ {
		s := p.lines[j]
		if strings.Trim(s, " ") == "" {
			// Spaces past the block's indentation are content.
			if blockInd >= 0 && len(s) > blockInd {
				lines = append(lines, s[blockInd:])
			} else {
				lines = append(lines, "")
			}
			continue
		}
		n := 0
		for n < len(s) && s[n] == ' ' {
			n++
		}
		if blockInd < 0 {
			if n <= parent {
				break
			}
			if s[n] == '\t' {
				return nil, j, p.errorf(j, "a tab in the indentation of a block scalar")
			}
			blockInd = n
		}
		if n < blockInd {
			break
		}
		lines = append(lines, s[blockInd:])
	}
	// Empty lines at the end are the block's too: chomping decides what
	// becomes of them.
	last := -1
	for k, l := range lines {
		if l != "" {
			last = k
		}
	}
	var b strings.Builder
	if last >= 0 {
		k := 0
		for k <= last && lines[k] == "" {
			b.WriteByte('\n')
			k++
		}
		b.WriteString(lines[k])
		prevMore := moreIndented(lines[k])
		for k++; k <= last; k++ {
			empties := 0
			for lines[k] == "" {
				empties++
				k++
			}
			curMore := moreIndented(lines[k])
			switch {
			case !folded:
				b.WriteString(strings.Repeat("\n", empties+1))
			case empties == 0 && !prevMore && !curMore:
				b.WriteByte(' ')
			case prevMore || curMore:
				b.WriteString(strings.Repeat("\n", empties+1))
			default:
				b.WriteString(strings.Repeat("\n", empties))
			}
			b.WriteString(lines[k])
			prevMore = curMore
		}
	}
	trailing := len(lines) - 1 - last
	switch chomp {
	case '-':
	case '+':
		if last >= 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("\n", trailing))
	default:
		if last >= 0 {
			b.WriteByte('\n')
		}
	}
	return &fmNode{kind: fmString, text: b.String()}, j, nil
}

// moreIndented reports whether a folded block's line (its indentation
// removed) is more indented than the block, which keeps its line breaks.
func moreIndented(s string) bool { return s != "" && (s[0] == ' ' || s[0] == '\t') }

// quoted reads a single- or double-quoted scalar at the start of s, which
// must end on the same line, and returns it and what follows it.
func quoted(s string) (string, string, error) {
	q := s[0]
	var b strings.Builder
	for k := 1; k < len(s); k++ {
		c := s[k]
		switch {
		case c == q && q == '\'' && k+1 < len(s) && s[k+1] == '\'':
			b.WriteByte('\'')
			k++
		case c == q:
			return b.String(), s[k+1:], nil
		case c == '\\' && q == '"':
			if k+1 == len(s) {
				return "", "", fmt.Errorf("a double-quoted value continues on the next line (not supported: keep it on one line)")
			}
			n, r, err := unescape(s[k+1:])
			if err != nil {
				return "", "", err
			}
			b.WriteString(r)
			k += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("a quoted value that does not end on its line (multi-line quoted values are not supported)")
}

// unescape reads one YAML double-quoted escape (after the backslash) and
// returns how many bytes it took and what it stands for.
func unescape(s string) (int, string, error) {
	simple := map[byte]string{'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v",
		'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': `"`, '/': "/", '\\': `\`,
		'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}
	if r, ok := simple[s[0]]; ok {
		return 1, r, nil
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if digits == 0 || len(s) < 1+digits {
		return 0, "", fmt.Errorf("an unknown escape \\%s in a double-quoted value", clip(s[:1], 1))
	}
	v, err := strconv.ParseUint(s[1:1+digits], 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, "", fmt.Errorf("an invalid escape \\%s in a double-quoted value", clip(s[:1+min(digits, len(s)-1)], 10))
	}
	return 1 + digits, string(rune(v)), nil
}

// flow parses a one-line flow sequence or mapping of scalars.
func flow(s string) (*fmNode, error) {
	open, closing := s[0], byte(']')
	n := &fmNode{kind: fmSeq}
	if open == '{' {
		closing = '}'
		n = &fmNode{kind: fmMap, vals: map[string]*fmNode{}}
	}
	rest := s[1:]
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return nil, fmt.Errorf("a %c list that does not end on its line (multi-line flow collections are not supported)", open)
		}
		if rest[0] == closing {
			if err := onlyComment(rest[1:]); err != nil {
				return nil, fmt.Errorf("after %c...%c: %v", open, closing, err)
			}
			return n, nil
		}
		var key string
		if open == '{' {
			k, after, err := flowScalar(rest, true)
			if err != nil {
				return nil, err
			}
			after = strings.TrimLeft(after, " \t")
			if !strings.HasPrefix(after, ":") {
				return nil, fmt.Errorf("want \"key: value\" in {...}")
			}
			if _, dup := n.vals[k.text]; dup {
				return nil, fmt.Errorf("the key %s is given twice", strconv.Quote(clip(k.text, 80)))
			}
			key, rest = k.text, strings.TrimLeft(after[1:], " \t")
		}
		v, after, err := flowScalar(rest, false)
		if err != nil {
			return nil, err
		}
		if open == '{' {
			n.keys = append(n.keys, key)
			n.vals[key] = v
		} else {
			n.items = append(n.items, v)
		}
		rest = strings.TrimLeft(after, " \t")
		switch {
		case strings.HasPrefix(rest, ","):
			rest = rest[1:]
		case rest != "" && rest[0] == closing:
		default:
			return nil, fmt.Errorf("want \",\" or %q between the items of %c...%c", closing, open, closing)
		}
	}
}

// flowScalar reads one scalar inside a flow collection. A plain one ends
// at a comma, a closing bracket or (for a key) a colon.
func flowScalar(s string, key bool) (*fmNode, string, error) {
	if s == "" {
		return nil, "", fmt.Errorf("a flow collection that does not end on its line (multi-line flow collections are not supported)")
	}
	switch s[0] {
	case '"', '\'':
		v, after, err := quoted(s)
		if err != nil {
			return nil, "", err
		}
		return &fmNode{kind: fmString, text: v}, after, nil
	case '[', '{':
		return nil, "", fmt.Errorf("nested flow collections are not supported")
	}
	if strings.ContainsRune("&*!%@`?|>#", rune(s[0])) || isSeqItem(s) {
		return nil, "", fmt.Errorf("a value beginning with %q inside [...] or {...} is not supported", s[0])
	}
	end := len(s)
	for k := 0; k < len(s); k++ {
		if c := s[k]; c == ',' || c == ']' || c == '}' || c == '[' || c == '{' ||
			(c == ':' && (key || k+1 == len(s) || s[k+1] == ' ')) || (c == '#' && k > 0 && s[k-1] == ' ') {
			if c == '[' || c == '{' {
				return nil, "", fmt.Errorf("a bracket inside an unquoted value in a flow collection (quote it)")
			}
			end = k
			break
		}
	}
	text := strings.TrimRight(s[:end], " \t")
	if text == "" {
		return nil, "", fmt.Errorf("an empty item in a flow collection")
	}
	return &fmNode{kind: fmPlain, text: text}, s[end:], nil
}

// Frontmatter comparison.

// frontmatterDiff compares a parsed frontmatter with an entry's frontmatter
// (a JSON object) field by field, and describes up to max differences (none:
// they are identical in content). A plain scalar matches a JSON string of
// the same text, or the null, boolean or number the YAML 1.2 core schema
// reads it as; a quoted or block scalar matches only a string.
func frontmatterDiff(n *fmNode, entry json.RawMessage, max int) []string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(entry))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []string{"the entry's frontmatter is not JSON"}
	}
	var out []string
	fmCompare("", n, v, &out, max)
	return out
}

func fmCompare(path string, n *fmNode, v any, out *[]string, max int) {
	if len(*out) >= max {
		return
	}
	name := func(p string) string {
		if p == "" {
			return "the frontmatter"
		}
		return "field " + strconv.Quote(clip(p, 120))
	}
	switch n.kind {
	case fmMap:
		obj, ok := v.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s is a mapping in SKILL.md and %s in the entry", name(path), jsonKindName(v)))
			return
		}
		keys := slices.Clone(n.keys)
		for k := range obj {
			if _, ok := n.vals[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			nv, inFile := n.vals[k]
			ev, inEntry := obj[k]
			switch {
			case !inEntry:
				if len(*out) < max {
					*out = append(*out, name(p)+" is in SKILL.md but not in the entry")
				}
			case !inFile:
				if len(*out) < max {
					*out = append(*out, name(p)+" is in the entry but not in SKILL.md")
				}
			default:
				fmCompare(p, nv, ev, out, max)
			}
		}
	case fmSeq:
		arr, ok := v.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s is a list in SKILL.md and %s in the entry", name(path), jsonKindName(v)))
			return
		}
		if len(arr) != len(n.items) {
			*out = append(*out, fmt.Sprintf("%s has %d items in SKILL.md and %d in the entry", name(path), len(n.items), len(arr)))
			return
		}
		for k, it := range n.items {
			fmCompare(fmt.Sprintf("%s[%d]", path, k), it, arr[k], out, max)
		}
	default:
		if !scalarMatches(n, v) {
			*out = append(*out, fmt.Sprintf("%s differs: SKILL.md has %s, the entry has %s", name(path), scalarText(n), jsonText(v)))
		}
	}
}

// scalarMatches reports whether a scalar node is the JSON value v.
func scalarMatches(n *fmNode, v any) bool {
	if s, ok := v.(string); ok {
		return n.text == s
	}
	if n.kind != fmPlain {
		return false
	}
	switch v := v.(type) {
	case nil:
		return slices.Contains([]string{"", "~", "null", "Null", "NULL"}, n.text)
	case bool:
		switch n.text {
		case "true", "True", "TRUE":
			return v
		case "false", "False", "FALSE":
			return !v
		}
	case json.Number:
		a, ok := yamlNumber(n.text)
		b, ok2 := new(big.Float).SetPrec(256).SetString(string(v))
		return ok && ok2 && a.Cmp(b) == 0
	}
	return false
}

// yamlNumber reads a plain scalar as the YAML 1.2 core schema's int or
// float (infinities and NaN excepted: JSON has none).
func yamlNumber(s string) (*big.Float, bool) {
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" {
		return nil, false
	}
	for _, base := range []struct {
		prefix string
		base   int
	}{{"0x", 16}, {"0o", 8}} {
		if digits, ok := strings.CutPrefix(body, base.prefix); ok && body == s {
			i, ok := new(big.Int).SetString(digits, base.base)
			if !ok {
				return nil, false
			}
			return new(big.Float).SetPrec(256).SetInt(i), true
		}
	}
	// [0-9]+, or [0-9]*(.[0-9]*)?([eE][-+]?[0-9]+)? with a digit somewhere.
	mant, exp, hasExp := strings.Cut(strings.ToLower(body), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart+frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return nil, false
	}
	if hasExp {
		if !allDigits(strings.TrimLeft(exp, "+-")) || strings.TrimLeft(exp, "+-") == "" || len(exp)-len(strings.TrimLeft(exp, "+-")) > 1 {
			return nil, false
		}
	}
	if intPart == "" {
		body = "0" + body
	}
	f, ok := new(big.Float).SetPrec(256).SetString(body)
	if !ok {
		return nil, false
	}
	if neg {
		f.Neg(f)
	}
	return f, true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// scalarText and jsonText render the two sides of a difference, cut.
func scalarText(n *fmNode) string { return strconv.Quote(clip(n.text, 80)) }

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(clip(s, 80))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return jsonKindName(v)
	}
	return clip(string(b), 80)
}

func jsonKindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}
