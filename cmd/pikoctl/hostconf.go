package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// This file edits MCP hosts' configuration files in place, as text: a
// value is replaced, a member inserted or removed by changing only its
// bytes, so every other entry, key, comment and the file's layout stay as
// they were. Re-serializing the whole file would lose comments and order.
// After each change the old and new files are decoded and compared: a
// change that would alter anything but the entry it meant to is refused.

// errUnsafeEdit is returned when the semantic check after an edit fails.
var errUnsafeEdit = errors.New("the edit would change more than the entry (this file's layout is not one pikoctl can edit safely): nothing was written; edit the file by hand")

// textEdit replaces src[start:end] with text.
type textEdit struct {
	start, end int
	text       string
}

// applyEdits applies disjoint edits to src.
func applyEdits(src []byte, edits []textEdit) []byte {
	slices.SortFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	var out []byte
	at := 0
	for _, e := range edits {
		out = append(out, src[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, src[at:]...)
}

// posError is a syntax error at a line and column (both from 1; the
// column counts characters).
type posError struct {
	line, col int
	msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg) }

func lineCol(src []byte, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + bytes.Count(src[:off], []byte("\n"))
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	return line, utf8.RuneCount(src[ls:off]) + 1
}

// newline is the file's line break: CRLF if its first line ends so.
func newline(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// lineIndent is the run of spaces and tabs that starts the line holding off.
func lineIndent(src []byte, off int) string {
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	i := ls
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[ls:i])
}

// startsLine reports whether only spaces and tabs precede off on its line,
// and returns where the line starts.
func startsLine(src []byte, off int) (int, bool) {
	i := off
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
		i--
	}
	return i, i == 0 || src[i-1] == '\n'
}

// ---- JSON and JSONC ----

// jsonNode is a parsed JSON value and its byte span in the source.
type jsonNode struct {
	kind       byte // '{', '[', '"', '0' (number), 'l' (true, false, null)
	start, end int
	members    []jsonMember // objects
}

// jsonMember is one member of an object.
type jsonMember struct {
	key      string
	keyStart int
	value    *jsonNode
}

func (n *jsonNode) member(key string) (*jsonMember, int) {
	for i := range n.members {
		if n.members[i].key == key {
			return &n.members[i], i
		}
	}
	return nil, -1
}

// jsonParser is a validating JSON parser that keeps positions. With jsonc
// it also accepts // and /* */ comments and trailing commas (VS Code).
type jsonParser struct {
	src   []byte
	pos   int
	jsonc bool
	depth int
}

// parseJSONText parses a whole document. A document of only whitespace
// (and comments) gives a nil node.
func parseJSONText(src []byte, jsonc bool) (*jsonNode, error) {
	p := &jsonParser{src: src, jsonc: jsonc}
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos == len(src) {
		return nil, nil
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos != len(src) {
		return nil, p.errf("unexpected %s after the end of the document", p.what())
	}
	return n, nil
}

func (p *jsonParser) errf(format string, args ...any) error {
	l, c := lineCol(p.src, p.pos)
	return &posError{line: l, col: c, msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) what() string {
	if p.pos >= len(p.src) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

// space skips whitespace and, in JSONC, comments.
func (p *jsonParser) space() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '/' || p.src[p.pos+1] == '*'):
			if !p.jsonc {
				return p.errf("a comment: this file is plain JSON, which has none")
			}
			if p.src[p.pos+1] == '/' {
				for p.pos < len(p.src) && p.src[p.pos] != '\n' {
					p.pos++
				}
				continue
			}
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.errf("a /* comment that is never closed")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) value() (*jsonNode, error) {
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end of file: a value is missing")
	}
	switch c := p.src[p.pos]; {
	case c == '{' || c == '[':
		p.depth++
		if p.depth > 500 {
			return nil, p.errf("nested too deeply")
		}
		defer func() { p.depth-- }()
		if c == '{' {
			return p.object()
		}
		return p.array()
	case c == '"':
		start := p.pos
		if err := p.str(); err != nil {
			return nil, err
		}
		return &jsonNode{kind: '"', start: start, end: p.pos}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.src[p.pos:], []byte(lit)) {
				n := &jsonNode{kind: 'l', start: p.pos, end: p.pos + len(lit)}
				p.pos += len(lit)
				return n, nil
			}
		}
		return nil, p.errf("unexpected %s: a value (object, array, string, number, true, false or null) was expected", p.what())
	}
}

func (p *jsonParser) object() (*jsonNode, error) {
	n := &jsonNode{kind: '{', start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if len(n.members) > 0 {
			// After a member: a comma, then another member (or, in JSONC, the end).
			if ended, err := p.separator('}'); err != nil {
				return nil, err
			} else if ended {
				n.end = p.pos
				return n, nil
			}
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errf("unexpected %s: a member name in double quotes was expected", p.what())
		}
		ks := p.pos
		if err := p.str(); err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(p.src[ks:p.pos], &key); err != nil {
			return nil, p.errf("a member name that is not a valid string")
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errf("unexpected %s: a colon after the member name was expected", p.what())
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, jsonMember{key: key, keyStart: ks, value: v})
	}
}

func (p *jsonParser) array() (*jsonNode, error) {
	n := &jsonNode{kind: '[', start: p.pos}
	p.pos++
	count := 0
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if count > 0 {
			if ended, err := p.separator(']'); err != nil {
				return nil, err
			} else if ended {
				n.end = p.pos
				return n, nil
			}
		}
		if _, err := p.value(); err != nil {
			return nil, err
		}
		count++
	}
}

func (p *jsonParser) str() error {
	p.pos++ // the opening quote
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return p.errf("a string that is never closed")
			}
			switch e := p.src[p.pos+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > len(p.src) || !isHex4(p.src[p.pos+2:p.pos+6]) {
					return p.errf("a \\u escape without four hex digits")
				}
				p.pos += 6
			default:
				return p.errf("an invalid escape \\%c in a string", e)
			}
		case c < 0x20:
			if c == '\n' {
				return p.errf("a string that is never closed on its line")
			}
			return p.errf("a control character in a string (write it as an escape)")
		default:
			p.pos++
		}
	}
	return p.errf("a string that is never closed")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

func (p *jsonParser) number() (*jsonNode, error) {
	m := jsonNumberRE.Find(p.src[p.pos:])
	if m == nil {
		return nil, p.errf("an invalid number")
	}
	n := &jsonNode{kind: '0', start: p.pos, end: p.pos + len(m)}
	p.pos += len(m)
	if p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.') {
		return nil, p.errf("an invalid number")
	}
	return n, nil
}

// decodeJSONValue decodes JSON or JSONC text into a generic value; numbers
// stay json.Number so nothing is rounded.
func decodeJSONValue(text []byte) (any, error) {
	clean, err := stripJSONC(text)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(clean)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(clean, []byte("\xef\xbb\xbf"))))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonEditor edits the servers object (key container at the top level) of
// a JSON or JSONC host file.
type jsonEditor struct {
	src       []byte
	jsonc     bool
	container string
	root      *jsonNode
}

func newJSONEditor(src []byte, jsonc bool, container string) (*jsonEditor, error) {
	ed := &jsonEditor{src: src, jsonc: jsonc, container: container}
	if err := ed.parse(); err != nil {
		return nil, err
	}
	return ed, nil
}

func (ed *jsonEditor) parse() error {
	root, err := parseJSONText(ed.src, ed.jsonc)
	if err != nil {
		return err
	}
	if root != nil && root.kind != '{' {
		l, c := lineCol(ed.src, root.start)
		return &posError{line: l, col: c, msg: "the file's top level is not an object ({...})"}
	}
	if root != nil {
		seen := map[string]int{}
		for _, m := range root.members {
			seen[m.key]++
		}
		if seen[ed.container] > 1 {
			return fmt.Errorf("%q appears more than once at the top level: keep one", ed.container)
		}
		if m, _ := root.member(ed.container); m != nil {
			if m.value.kind != '{' {
				l, c := lineCol(ed.src, m.value.start)
				return &posError{line: l, col: c, msg: fmt.Sprintf("%q is not an object of named servers", ed.container)}
			}
			names := map[string]bool{}
			for _, s := range m.value.members {
				if names[s.key] {
					l, _ := lineCol(ed.src, s.keyStart)
					return fmt.Errorf("line %d: a second server named %q: keep one", l, s.key)
				}
				names[s.key] = true
			}
		}
	}
	ed.root = root
	return nil
}

func (ed *jsonEditor) bytes() []byte { return ed.src }

// servers returns the servers object node, nil when there is none.
func (ed *jsonEditor) servers() *jsonNode {
	if ed.root == nil {
		return nil
	}
	if m, _ := ed.root.member(ed.container); m != nil {
		return m.value
	}
	return nil
}

func (ed *jsonEditor) entries() ([]hostEntry, error) {
	obj := ed.servers()
	if obj == nil {
		return nil, nil
	}
	var out []hostEntry
	for _, m := range obj.members {
		raw := ed.src[m.value.start:m.value.end]
		v, err := decodeJSONValue(raw)
		if err != nil {
			return nil, fmt.Errorf("reading server %q: %w", m.key, err)
		}
		e := hostEntry{Name: m.key, Raw: string(raw), Value: v, Editable: true}
		if obj, ok := v.(map[string]any); ok {
			e.Command, _ = obj["command"].(string)
			if list, ok := obj["args"].([]any); ok {
				for _, a := range list {
					s, _ := a.(string)
					e.Args = append(e.Args, s)
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// indentUnit guesses one level of indentation from the first member of
// the top-level object; two spaces by default.
func (ed *jsonEditor) indentUnit() string {
	if ed.root != nil && len(ed.root.members) > 0 {
		if _, ok := startsLine(ed.src, ed.root.members[0].keyStart); ok {
			if ind := lineIndent(ed.src, ed.root.members[0].keyStart); ind != "" {
				return ind
			}
		}
	}
	return "  "
}

// render formats v as JSON, continuing at a line indented by indent. The
// bridge entry is written as people write them: a member a line, its
// arguments on one.
func (ed *jsonEditor) render(v any, indent string) string {
	if br, ok := v.(jsonBridge); ok {
		unit, nl := ed.indentUnit(), newline(ed.src)
		var lines []string
		if br.Type != "" {
			lines = append(lines, `"type": `+jsonQuote(br.Type))
		}
		lines = append(lines, `"command": `+jsonQuote(br.Command), `"args": `+compactJSONList(br.Args))
		return "{" + nl + indent + unit + strings.Join(lines, ","+nl+indent+unit) + nl + indent + "}"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, ed.indentUnit())
	_ = enc.Encode(v) // values built here always encode
	s := strings.TrimSuffix(b.String(), "\n")
	if nl := newline(ed.src); nl != "\n" {
		s = strings.ReplaceAll(s, "\n", nl)
	}
	return s
}

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func jsonQuote(s string) string { return compactJSON(s) }

// compactJSONList is ["a", "b"], spaced like hand-written JSON.
func compactJSONList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = jsonQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// adopt makes next an editor's source when parse accepts it; otherwise the
// source and what parse made of it stay as they were, and the edit is
// unsafe.
func adopt(src *[]byte, next []byte, parse func() error) error {
	old := *src
	*src = next
	if err := parse(); err != nil {
		*src = old
		_ = parse()
		return errUnsafeEdit
	}
	return nil
}

// commit replaces the text with next after checking that its decoded form
// is the old one changed by mutate (applied to the servers map).
func (ed *jsonEditor) commit(next []byte, mutate func(servers map[string]any)) error {
	before, err := decodeJSONValue(ed.src)
	if err != nil {
		return err
	}
	doc, _ := before.(map[string]any)
	servers, ok := doc[ed.container].(map[string]any)
	if !ok {
		servers = map[string]any{}
		doc[ed.container] = servers
	}
	mutate(servers)
	after, err := decodeJSONValue(next)
	if err != nil || !reflect.DeepEqual(doc, after) {
		return errUnsafeEdit
	}
	return adopt(&ed.src, next, ed.parse)
}

// set inserts or replaces the server name with v.
func (ed *jsonEditor) set(name string, v any) error {
	want, err := decodeJSONValue([]byte(compactJSON(v)))
	if err != nil {
		return err
	}
	return ed.setText(name, func(indent string, oneLine bool) string {
		if oneLine {
			return compactJSON(v)
		}
		return ed.render(v, indent)
	}, want)
}

// restore inserts the server name with its original value text.
func (ed *jsonEditor) restore(name, raw string) error {
	want, err := decodeJSONValue([]byte(raw))
	if err != nil {
		return fmt.Errorf("the recorded entry %q is not valid JSON: %w", name, err)
	}
	return ed.setText(name, func(string, bool) string { return raw }, want)
}

func (ed *jsonEditor) setText(name string, text func(indent string, oneLine bool) string, want any) error {
	nl := newline(ed.src)
	mutate := func(servers map[string]any) { servers[name] = want }
	if ed.root == nil {
		// An empty (or absent) file: a new document.
		doc := "{" + nl + "  " + jsonQuote(ed.container) + ": {" + nl + "    " + jsonQuote(name) + ": " + text("    ", false) + nl + "  }" + nl + "}" + nl
		if len(ed.src) > 0 && len(bytes.TrimSpace(ed.src)) > 0 {
			// Only comments: keep them above the new document.
			doc = strings.TrimRight(string(ed.src), " \t\r\n") + nl + doc
		}
		return ed.commit([]byte(doc), mutate)
	}
	obj := ed.servers()
	if obj == nil {
		// No servers object yet: add one to the top level holding the entry.
		unit := ed.indentUnit()
		value := "{" + nl + unit + unit + jsonQuote(name) + ": " + text(unit+unit, false) + nl + unit + "}"
		if m := ed.root.members; len(m) > 0 {
			if _, ok := startsLine(ed.src, m[0].keyStart); !ok {
				value = "{" + jsonQuote(name) + ": " + text("", true) + "}"
			}
		}
		edits := ed.insertMember(ed.root, ed.container, func(string, bool) string { return value })
		return ed.commit(applyEdits(ed.src, edits), mutate)
	}
	if m, _ := obj.member(name); m != nil {
		_, own := startsLine(ed.src, m.keyStart)
		v := text(lineIndent(ed.src, m.keyStart), !own)
		return ed.commit(applyEdits(ed.src, []textEdit{{m.value.start, m.value.end, v}}), mutate)
	}
	return ed.commit(applyEdits(ed.src, ed.insertMember(obj, name, text)), mutate)
}

// insertMember adds "key": value as the last member of o, in the layout
// of its other members.
func (ed *jsonEditor) insertMember(o *jsonNode, key string, text func(indent string, oneLine bool) string) []textEdit {
	src, nl := ed.src, newline(ed.src)
	if len(o.members) == 0 {
		inner := src[o.start+1 : o.end-1]
		indent := lineIndent(src, o.start) + ed.indentUnit()
		member := jsonQuote(key) + ": " + text(indent, false)
		if len(bytes.TrimSpace(inner)) == 0 {
			return []textEdit{{o.start + 1, o.end - 1, nl + indent + member + nl + lineIndent(src, o.start)}}
		}
		// Only comments inside: the member goes first, the comments stay.
		return []textEdit{{o.start + 1, o.start + 1, nl + indent + member}}
	}
	last := o.members[len(o.members)-1]
	_, ownLine := startsLine(src, last.keyStart)
	e := last.value.end
	// Look past the last value on its line: a trailing comma, comments.
	p, comma := e, -1
	for p < len(src) {
		switch {
		case src[p] == ' ' || src[p] == '\t' || src[p] == '\r':
			p++
			continue
		case src[p] == ',' && comma < 0:
			comma = p
			p++
			continue
		case src[p] == '/' && p+1 < len(src) && src[p+1] == '*':
			if end := bytes.Index(src[p+2:], []byte("*/")); end >= 0 && !bytes.Contains(src[p:p+2+end], []byte("\n")) {
				p += 2 + end + 2
				continue
			}
		case src[p] == '/' && p+1 < len(src) && src[p+1] == '/':
			for p < len(src) && src[p] != '\n' {
				p++
			}
		}
		break
	}
	if !ownLine {
		// A one-line object: {"a": 1, "b": 2}.
		member := jsonQuote(key) + ": " + text("", true)
		if comma >= 0 {
			return []textEdit{{comma + 1, comma + 1, " " + member + ","}}
		}
		return []textEdit{{e, e, ", " + member}}
	}
	indent := lineIndent(src, last.keyStart)
	member := jsonQuote(key) + ": " + text(indent, false)
	if p < len(src) && src[p] == '\n' {
		at := p
		if at > 0 && src[at-1] == '\r' {
			at--
		}
		if comma >= 0 {
			// Trailing commas in this file (JSONC): keep the style.
			return []textEdit{{at, at, nl + indent + member + ","}}
		}
		return []textEdit{{e, e, ","}, {at, at, nl + indent + member}}
	}
	if comma >= 0 {
		return []textEdit{{comma + 1, comma + 1, nl + indent + member + ","}}
	}
	return []textEdit{{e, e, "," + nl + indent + member}}
}

// remove deletes the server name, keeping the comments around it.
func (ed *jsonEditor) remove(name string) error {
	obj := ed.servers()
	if obj == nil {
		return nil
	}
	m, i := obj.member(name)
	if m == nil {
		return nil
	}
	src := ed.src
	ks, ve := m.keyStart, m.value.end
	start, ownLine := startsLine(src, ks)
	if !ownLine {
		start = ks
	}
	// The next significant byte after the value.
	p := &jsonParser{src: src, pos: ve, jsonc: true}
	_ = p.space()
	q := p.pos
	commentBetween := bytes.Contains(src[ve:q], []byte("/"))
	// lineTail extends end past spaces and one line break when the
	// member had the line to itself.
	lineTail := func(end int) int {
		j := end
		for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r') {
			j++
		}
		if ownLine && j < len(src) && src[j] == '\n' {
			return j + 1
		}
		if !ownLine {
			return j
		}
		return end
	}
	var edits []textEdit
	switch {
	case q < len(src) && src[q] == ',' && !commentBetween:
		edits = []textEdit{{start, lineTail(q + 1), ""}}
	case q < len(src) && src[q] == ',':
		edits = []textEdit{{start, ve, ""}, {q, q + 1, ""}}
	case i == 0:
		edits = []textEdit{{start, lineTail(ve), ""}}
	default:
		prev := obj.members[i-1]
		pp := &jsonParser{src: src, pos: prev.value.end, jsonc: true}
		_ = pp.space()
		pc := pp.pos // the comma between the previous member and this one
		if !bytes.Contains(src[prev.value.end:ks], []byte("/")) {
			edits = []textEdit{{pc, ve, ""}}
		} else {
			edits = []textEdit{{pc, pc + 1, ""}, {start, lineTail(ve), ""}}
		}
	}
	next := applyEdits(src, edits)
	if len(obj.members) == 1 {
		// The object is left empty: write it {}.
		if inner := next[obj.start+1 : obj.end-1-(len(src)-len(next))]; len(bytes.TrimSpace(inner)) == 0 {
			next = applyEdits(next, []textEdit{{obj.start + 1, obj.start + 1 + len(inner), ""}})
		}
	}
	return ed.commit(next, func(servers map[string]any) { delete(servers, name) })
}

// ---- TOML (Codex) ----

// tomlLine is one physical line of a TOML file.
type tomlLine struct {
	start, end int // the line's bytes, its line break included
	kind       byte
	path       []string // the key path of a [table] or [[array]] header
}

const (
	tomlBlank   = 'b'
	tomlComment = '#'
	tomlHeader  = '['
	tomlOther   = 'o'
)

// scanTOMLLines classifies the lines of a valid TOML file, following
// multi-line strings and arrays so that a line inside one is never taken
// for a header.
func scanTOMLLines(src []byte) []tomlLine {
	var lines []tomlLine
	const (
		none = iota
		mlBasic
		mlLiteral
	)
	state, depth := none, 0
	for ls := 0; ls < len(src); {
		le := bytes.IndexByte(src[ls:], '\n')
		if le < 0 {
			le = len(src)
		} else {
			le += ls + 1
		}
		line := src[ls:le]
		l := tomlLine{start: ls, end: le, kind: tomlOther}
		trimmed := bytes.TrimLeft(line, " \t")
		clean := state == none && depth == 0
		switch {
		case clean && len(bytes.TrimSpace(trimmed)) == 0:
			l.kind = tomlBlank
		case clean && trimmed[0] == '#':
			l.kind = tomlComment
		case clean && trimmed[0] == '[':
			l.kind = tomlHeader
			l.path = parseTOMLHeader(trimmed)
		}
		if l.kind == tomlOther {
			// Follow strings and brackets through the line.
			for i := 0; i < len(line); i++ {
				c := line[i]
				switch state {
				case mlBasic:
					if c == '\\' {
						i++
					} else if bytes.HasPrefix(line[i:], []byte(`"""`)) {
						i += 2
						for i+1 < len(line) && line[i+1] == '"' {
							i++
						}
						state = none
					}
					continue
				case mlLiteral:
					if bytes.HasPrefix(line[i:], []byte(`'''`)) {
						i += 2
						for i+1 < len(line) && line[i+1] == '\'' {
							i++
						}
						state = none
					}
					continue
				}
				switch {
				case c == '#':
					i = len(line)
				case bytes.HasPrefix(line[i:], []byte(`"""`)):
					state, i = mlBasic, i+2
				case bytes.HasPrefix(line[i:], []byte(`'''`)):
					state, i = mlLiteral, i+2
				case c == '"':
					for i++; i < len(line) && line[i] != '"'; i++ {
						if line[i] == '\\' {
							i++
						}
					}
				case c == '\'':
					for i++; i < len(line) && line[i] != '\''; i++ {
					}
				case c == '[' || c == '{':
					depth++
				case c == ']' || c == '}':
					depth--
				}
			}
		}
		lines = append(lines, l)
		ls = le
	}
	return lines
}

// parseTOMLHeader reads the key path of "[a.b]" or "[[a.b]]".
func parseTOMLHeader(line []byte) []string {
	s := string(line)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "["), "[")
	var path []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return path
		}
		var key string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return path
			}
			key = s[1:end]
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				key = u
			}
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return path
			}
			key, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && (s[end] == '_' || s[end] == '-' || s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z' || s[end] >= '0' && s[end] <= '9') {
				end++
			}
			if end == 0 {
				return path
			}
			key, s = s[:end], s[end:]
		}
		path = append(path, key)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path
		}
		s = s[1:]
	}
}

// tomlEditor edits the [mcp_servers.NAME] tables of a Codex config.toml.
type tomlEditor struct {
	src   []byte
	doc   map[string]any
	lines []tomlLine
}

func newTOMLEditor(src []byte) (*tomlEditor, error) {
	ed := &tomlEditor{src: src}
	if err := ed.parse(); err != nil {
		return nil, err
	}
	return ed, nil
}

func decodeTOML(src []byte) (map[string]any, error) {
	doc := map[string]any{}
	if _, err := toml.Decode(string(src), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if msg == "" {
				msg = pe.Error()
			}
			return nil, &posError{line: pe.Position.Line, col: max(pe.Position.Col, 1), msg: msg}
		}
		return nil, err
	}
	return doc, nil
}

func (ed *tomlEditor) parse() error {
	doc, err := decodeTOML(ed.src)
	if err != nil {
		return err
	}
	if v, ok := doc["mcp_servers"]; ok {
		if _, isTable := v.(map[string]any); !isTable {
			return errors.New("mcp_servers is not a table of named servers ([mcp_servers.NAME])")
		}
	}
	ed.doc = doc
	ed.lines = scanTOMLLines(ed.src)
	return nil
}

func (ed *tomlEditor) bytes() []byte { return ed.src }

func (ed *tomlEditor) servers() map[string]any {
	m, _ := ed.doc["mcp_servers"].(map[string]any)
	return m
}

// blocks returns the line ranges [from, to) of the tables that make up
// server name: [mcp_servers.NAME] and its sub-tables. Comment and blank
// lines that end a range belong to what follows (they usually describe
// the next table), so they are not part of it.
func (ed *tomlEditor) blocks(match func(path []string) bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(ed.lines); i++ {
		if ed.lines[i].kind != tomlHeader || !match(ed.lines[i].path) {
			continue
		}
		j := i + 1
		for j < len(ed.lines) && ed.lines[j].kind != tomlHeader {
			j++
		}
		k := j
		if j < len(ed.lines) {
			for k-1 > i && (ed.lines[k-1].kind == tomlBlank || ed.lines[k-1].kind == tomlComment) {
				k--
			}
		}
		out = append(out, [2]int{i, k})
		i = j - 1
	}
	return out
}

func serverPath(name string) func([]string) bool {
	return func(p []string) bool { return len(p) >= 2 && p[0] == "mcp_servers" && p[1] == name }
}

func (ed *tomlEditor) lineOff(i int) int {
	if i >= len(ed.lines) {
		return len(ed.src)
	}
	return ed.lines[i].start
}

func (ed *tomlEditor) blockText(b [2]int) string {
	return string(ed.src[ed.lineOff(b[0]):ed.lineOff(b[1])])
}

func (ed *tomlEditor) entries() ([]hostEntry, error) {
	servers := ed.servers()
	var out []hostEntry
	for _, name := range sortedKeys(servers) {
		e := hostEntry{Name: name, Value: servers[name]}
		if m, ok := servers[name].(map[string]any); ok {
			e.Command, _ = m["command"].(string)
			if list, ok := m["args"].([]any); ok {
				for _, a := range list {
					s, _ := a.(string)
					e.Args = append(e.Args, s)
				}
			}
		}
		var raw strings.Builder
		for _, b := range ed.blocks(serverPath(name)) {
			raw.WriteString(ed.blockText(b))
		}
		e.Raw, e.Editable = raw.String(), raw.Len() > 0
		out = append(out, e)
	}
	return out, nil
}

var tomlBareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if tomlBareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlBlock is a [mcp_servers.NAME] table running command with args.
func tomlBlock(name, command string, args []string, nl string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = tomlString(a)
	}
	return "[mcp_servers." + tomlKey(name) + "]" + nl +
		"command = " + tomlString(command) + nl +
		"args = [" + strings.Join(q, ", ") + "]" + nl
}

func (ed *tomlEditor) commit(next []byte, mutate func(servers map[string]any)) error {
	before, err := decodeTOML(ed.src)
	if err != nil {
		return err
	}
	servers, ok := before["mcp_servers"].(map[string]any)
	if !ok {
		servers = map[string]any{}
		before["mcp_servers"] = servers
	}
	mutate(servers)
	after, err := decodeTOML(next)
	if _, kept := after["mcp_servers"]; !kept && len(servers) == 0 {
		delete(before, "mcp_servers") // the last server's table went with it
	}
	if err != nil || !reflect.DeepEqual(before, after) {
		return errUnsafeEdit
	}
	return adopt(&ed.src, next, ed.parse)
}

// insertAt is where a new server table goes: after the last mcp_servers
// table, else at the end of the file.
func (ed *tomlEditor) insertAt() int {
	all := ed.blocks(func(p []string) bool { return len(p) >= 1 && p[0] == "mcp_servers" })
	if len(all) == 0 {
		return len(ed.lines)
	}
	return all[len(all)-1][1]
}

// insertBlock returns the edit that puts block at line index at, with a
// blank line on each side.
func (ed *tomlEditor) insertBlock(at int, block string) textEdit {
	nl := newline(ed.src)
	off := ed.lineOff(at)
	text := block
	if !strings.HasSuffix(text, "\n") {
		text += nl
	}
	if off > 0 {
		if ed.src[off-1] != '\n' {
			text = nl + nl + text
		} else if at > 0 && ed.lines[at-1].kind != tomlBlank {
			text = nl + text
		}
	}
	if at < len(ed.lines) && ed.lines[at].kind != tomlBlank {
		text += nl
	}
	return textEdit{off, off, text}
}

// removeEdits removes the line ranges bs, and a blank line left doubled.
func (ed *tomlEditor) removeEdits(bs [][2]int) []textEdit {
	var edits []textEdit
	for _, b := range bs {
		from, to := b[0], b[1]
		blankBefore := from > 0 && ed.lines[from-1].kind == tomlBlank
		switch {
		case to < len(ed.lines) && ed.lines[to].kind == tomlBlank && (from == 0 || blankBefore):
			to++
		case to >= len(ed.lines) && blankBefore:
			from--
		}
		edits = append(edits, textEdit{ed.lineOff(from), ed.lineOff(to), ""})
	}
	return edits
}

func (ed *tomlEditor) set(name, command string, args []string) error {
	block := tomlBlock(name, command, args, newline(ed.src))
	want, err := decodeTOML([]byte(block))
	if err != nil {
		return err
	}
	return ed.setText(name, block, want["mcp_servers"].(map[string]any)[name])
}

func (ed *tomlEditor) restore(name, raw string) error {
	doc, err := decodeTOML([]byte(raw))
	if err != nil {
		return fmt.Errorf("the recorded entry %q is not valid TOML: %w", name, err)
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	want, ok := servers[name]
	if !ok {
		return fmt.Errorf("the recorded entry %q does not define [mcp_servers.%s]", name, tomlKey(name))
	}
	return ed.setText(name, raw, want)
}

func (ed *tomlEditor) setText(name, block string, want any) error {
	mutate := func(servers map[string]any) { servers[name] = want }
	bs := ed.blocks(serverPath(name))
	if _, exists := ed.servers()[name]; exists && len(bs) == 0 {
		return fmt.Errorf("server %q is written as an inline table or dotted keys, which pikoctl does not edit: rewrite it as a [mcp_servers.%s] table or remove it by hand", name, tomlKey(name))
	}
	if len(bs) == 0 {
		return ed.commit(applyEdits(ed.src, []textEdit{ed.insertBlock(ed.insertAt(), block)}), mutate)
	}
	// Replace the first table in place; drop the sub-tables elsewhere.
	edits := []textEdit{{ed.lineOff(bs[0][0]), ed.lineOff(bs[0][1]), block}}
	edits = append(edits, ed.removeEdits(bs[1:])...)
	return ed.commit(applyEdits(ed.src, edits), mutate)
}

func (ed *tomlEditor) remove(name string) error {
	bs := ed.blocks(serverPath(name))
	if _, exists := ed.servers()[name]; exists && len(bs) == 0 {
		return fmt.Errorf("server %q is written as an inline table or dotted keys, which pikoctl does not edit: remove it by hand", name)
	}
	if len(bs) == 0 {
		return nil
	}
	return ed.commit(applyEdits(ed.src, ed.removeEdits(bs)), func(servers map[string]any) { delete(servers, name) })
}

// ---- the bridge entry ----

// isBridgeEntry reports whether an entry runs pikod's bridge: its command
// is a pikoctl binary and its arguments hold "mcp serve".
func isBridgeEntry(command string, args []string) bool {
	if !strings.HasPrefix(filepath.Base(command), "pikoctl") {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "mcp" && args[i+1] == "serve" {
			return true
		}
	}
	return false
}

// bridgeSkipReason is why 'mcp import' skips a bridge entry.
const bridgeSkipReason = "this is pikod's own bridge ('pikoctl mcp serve', written by 'pikoctl mcp install'): importing it would make pikod run itself"

// ---- showing a change ----

// fileDiff renders the change from old to new as unified-diff hunks with
// two lines of context, each line cleaned for the terminal and every
// string in hide replaced by a placeholder.
func fileDiff(oldText, newText []byte, hide []string) string {
	split := func(b []byte) []string {
		s := strings.Split(string(b), "\n")
		if len(s) > 0 && s[len(s)-1] == "" {
			s = s[:len(s)-1]
		}
		return s
	}
	a, b := split(oldText), split(newText)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	// ops over the middle: ' ' kept, '-' old only, '+' new only.
	type op struct {
		kind byte
		text string
	}
	// trust.go's lineDiff marks each line "  ", "- " or "+ ".
	var ops []op
	for _, l := range lineDiff(ma, mb) {
		ops = append(ops, op{l[0], l[2:]})
	}
	if len(ops) == 0 {
		return ""
	}
	// The whole file as ops, then hunks around the changes.
	var all []op
	for _, l := range a[:pre] {
		all = append(all, op{' ', l})
	}
	all = append(all, ops...)
	for _, l := range a[len(a)-suf:] {
		all = append(all, op{' ', l})
	}
	const ctx = 2
	var out strings.Builder
	oldLine, newLine := make([]int, len(all)+1), make([]int, len(all)+1)
	oldLine[0], newLine[0] = 1, 1
	for k, o := range all {
		oldLine[k+1], newLine[k+1] = oldLine[k], newLine[k]
		if o.kind != '+' {
			oldLine[k+1]++
		}
		if o.kind != '-' {
			newLine[k+1]++
		}
	}
	for k := 0; k < len(all); {
		if all[k].kind == ' ' {
			k++
			continue
		}
		from := max(0, k-ctx)
		to := k
		for to < len(all) {
			if all[to].kind != ' ' {
				to++
				continue
			}
			run := to
			for run < len(all) && all[run].kind == ' ' {
				run++
			}
			if run == len(all) || run-to > 2*ctx {
				to = min(to+ctx, len(all))
				break
			}
			to = run
		}
		oldN, newN := 0, 0
		for _, o := range all[from:to] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
		}
		// An empty side starts at the line before it, as in diff -u.
		oldAt, newAt := oldLine[from], newLine[from]
		if oldN == 0 {
			oldAt--
		}
		if newN == 0 {
			newAt--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", oldAt, oldN, newAt, newN)
		for _, o := range all[from:to] {
			text := o.text
			for _, h := range hide {
				text = strings.ReplaceAll(text, h, "<credential, not shown>")
			}
			out.WriteByte(o.kind)
			out.WriteString(cleanLines(strings.TrimSuffix(text, "\r")))
			out.WriteByte('\n')
		}
		k = to
	}
	return out.String()
}

// separator reads the comma after a member or element of a container
// closed by close, and the space after it; ended reports a trailing comma
// followed by close (JSONC only), which it consumes.
func (p *jsonParser) separator(close byte) (ended bool, err error) {
	if p.pos >= len(p.src) || p.src[p.pos] != ',' {
		return false, p.errf("unexpected %s: a comma or %c was expected", p.what(), close)
	}
	p.pos++
	if err := p.space(); err != nil {
		return false, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == close {
		if !p.jsonc {
			return false, p.errf("a trailing comma before %c: this file is plain JSON, which allows none", close)
		}
		p.pos++
		return true, nil
	}
	return false, nil
}
