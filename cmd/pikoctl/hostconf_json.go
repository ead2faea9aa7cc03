package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JSON and JSONC half of the host configuration editor (hostconf.go):
// a parser that keeps every value's byte span, and jsonEditor, which
// changes one entry of a servers object by editing only its bytes.

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
