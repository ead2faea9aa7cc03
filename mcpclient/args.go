package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

// maxArgumentsDepth bounds the nesting of arrays and objects in arguments,
// so that neither this parser nor the schema validator recurses without
// limit on hostile input.
const maxArgumentsDepth = 512

// CanonicalArguments checks a tool call's arguments and returns their
// canonical form: the exact bytes pikod hashes for an approval, stores and
// sends.
//
// Absent, empty or null arguments are {}. Anything else must be a JSON
// object of at most contracts.MaxArgumentsChars characters (Unicode code
// points of the JSON text, before and after canonicalisation), nested at
// most 512 deep, in valid UTF-8 without escaped lone surrogates. Keys a
// server could read as one key are refused with reason "ambiguous_keys":
// exact duplicates, keys equal under Unicode simple case folding, and keys
// that differ only by trailing NUL characters, in any object at any depth.
//
// The canonical form is compact JSON with the keys of every object sorted
// by the bytes of their UTF-8 encoding, numbers exactly as written (never
// through float64, so 1e400 and 12345678901234567890 survive), and strings
// as Go's encoding/json writes them, HTML-safe escapes included ("<" is
// \u003c). The escaping is deliberate: mcp-go's transports marshal request
// params with encoding/json, which re-escapes <, >, &, U+2028 and U+2029 in
// embedded raw JSON; this form is a fixed point of that re-encoding, so the
// bytes on the wire are the bytes that were hashed. The same input always
// gives the same bytes.
func CanonicalArguments(raw json.RawMessage) ([]byte, error) { return canonicalArguments(raw, nil) }

// CanonicalArguments is the package's CanonicalArguments with the
// supervisor's redaction applied to the keys and paths its errors quote.
func (s *Supervisor) CanonicalArguments(raw json.RawMessage) ([]byte, error) {
	return canonicalArguments(raw, s.opts.Redact)
}

func canonicalArguments(raw json.RawMessage, redact func(string) string) ([]byte, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}"), nil
	}
	if n := utf8.RuneCount(raw); n > contracts.MaxArgumentsChars {
		return nil, tooLarge(n)
	}
	p := &argParser{src: raw, out: &bytes.Buffer{}, redact: redact}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] != '{' {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsNotObject,
			"arguments must be a JSON object, not %s", kindOf(p.src[p.pos]))
	}
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, p.syntax("unexpected data after the arguments object")
	}
	out := p.out.Bytes()
	if n := utf8.RuneCount(out); n > contracts.MaxArgumentsChars {
		return nil, tooLarge(n)
	}
	return out, nil
}

func tooLarge(n int) error {
	return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsTooLarge,
		"arguments are %d characters of JSON; the limit is %d", n, contracts.MaxArgumentsChars),
		"pass large content by reference (a file path or a resource URI) instead of inline")
}

func kindOf(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "valid JSON"
}

// argParser is a strict JSON parser that writes the canonical form as it
// goes. It exists because encoding/json accepts what pikod must refuse:
// it keeps the last of duplicate keys and turns lone surrogates and invalid
// UTF-8 into U+FFFD silently.
type argParser struct {
	src []byte
	pos int
	// out receives the canonical form of the value being parsed.
	out *bytes.Buffer
	// lenient skips the key checks (for schemas, which are hashed, not
	// approved).
	lenient bool
	// path is where the value being parsed is: object keys and array
	// indexes from the top. Errors render it (redacted, then cut).
	path []pathStep
	// redact removes secret values from the keys errors quote; nil
	// removes nothing.
	redact func(string) string
}

// pathStep is one step of a location: an object key or an array index.
type pathStep struct {
	key   string
	index int // -1 for a key
}

func (p *argParser) syntax(what string) error {
	return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsInvalidJSON,
		"arguments are not valid JSON: %s at byte %d", what, p.pos)
}

func (p *argParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses one JSON value at p.path and writes its canonical form.
func (p *argParser) value(depth int) error {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return p.syntax("unexpected end of input")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		writeString(p.out, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.syntax("unexpected character")
}

func (p *argParser) literal(word string) error {
	if !bytes.HasPrefix(p.src[p.pos:], []byte(word)) {
		return p.syntax("invalid literal")
	}
	p.pos += len(word)
	p.out.WriteString(word)
	return nil
}

func (p *argParser) tooDeep(depth int) error {
	if depth > maxArgumentsDepth {
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsTooDeep,
			"arguments nest arrays and objects more than %d deep", maxArgumentsDepth)
	}
	return nil
}

type member struct {
	key   string
	value []byte
}

func (p *argParser) object(depth int) error {
	if err := p.tooDeep(depth); err != nil {
		return err
	}
	p.pos++ // {
	var members []member
	// seen maps each key's folded form to the first key that had it.
	seen := map[string]string{}
	parent := p.out
	defer func() { p.out = parent }()
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		parent.WriteString("{}")
		return nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return p.syntax("expected a string key")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if !p.lenient {
			fk := foldKey(key)
			if first, dup := seen[fk]; dup {
				return p.ambiguous(first, key)
			}
			seen[fk] = key
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return p.syntax("expected ':' after an object key")
		}
		p.pos++
		p.out = &bytes.Buffer{}
		p.path = append(p.path, pathStep{key: key, index: -1})
		if err := p.value(depth); err != nil {
			return err
		}
		p.path = p.path[:len(p.path)-1]
		members = append(members, member{key: key, value: p.out.Bytes()})
		p.skipSpace()
		if p.pos >= len(p.src) {
			return p.syntax("unexpected end of input in an object")
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == '}' {
			p.pos++
			break
		}
		return p.syntax("expected ',' or '}' in an object")
	}
	// Byte order of UTF-8 is code point order; it differs from RFC 8785's
	// UTF-16 order only for keys mixing characters above U+FFFF with
	// U+E000..U+FFFF, and pikod's digests only need to be deterministic.
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	parent.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			parent.WriteByte(',')
		}
		writeString(parent, m.key)
		parent.WriteByte(':')
		parent.Write(m.value)
	}
	parent.WriteByte('}')
	return nil
}

func (p *argParser) array(depth int) error {
	if err := p.tooDeep(depth); err != nil {
		return err
	}
	p.pos++ // [
	p.out.WriteByte('[')
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.out.WriteByte(']')
		return nil
	}
	for i := 0; ; i++ {
		if i > 0 {
			p.out.WriteByte(',')
		}
		p.path = append(p.path, pathStep{index: i})
		if err := p.value(depth); err != nil {
			return err
		}
		p.path = p.path[:len(p.path)-1]
		p.skipSpace()
		if p.pos >= len(p.src) {
			return p.syntax("unexpected end of input in an array")
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == ']' {
			p.pos++
			p.out.WriteByte(']')
			return nil
		}
		return p.syntax("expected ',' or ']' in an array")
	}
}

// number copies a number token exactly as written after checking RFC 8259's
// grammar.
func (p *argParser) number() error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.syntax("invalid number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.syntax("invalid number")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.syntax("invalid number")
		}
	}
	p.out.Write(p.src[start:p.pos])
	return nil
}

// str parses a string token and returns its decoded value.
func (p *argParser) str() (string, error) {
	p.pos++ // "
	// Most strings hold no escape: taken as they are, in one copy.
	for i := p.pos; i < len(p.src); i++ {
		c := p.src[i]
		if c == '"' {
			if raw := p.src[p.pos:i]; utf8.Valid(raw) {
				p.pos = i + 1
				return string(raw), nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	// Escapes, control characters or invalid UTF-8: character by
	// character, so an error names its place.
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.syntax("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.syntax("control character in a string")
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsInvalidJSON,
					"arguments are not valid UTF-8 at byte %d", p.pos)
			}
			b.WriteRune(r)
			p.pos += size
		}
	}
}

func (p *argParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.src) {
		return p.syntax("unterminated escape")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return p.syntax("invalid \\u escape")
		}
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || !bytes.HasPrefix(p.src[p.pos:], []byte(`\u`)) {
				return p.loneSurrogate()
			}
			p.pos += 2
			r2, ok := p.hex4()
			if !ok {
				return p.syntax("invalid \\u escape")
			}
			if r2 < 0xDC00 || r2 > 0xDFFF {
				return p.loneSurrogate()
			}
			r = utf16.DecodeRune(r, r2)
		}
		b.WriteRune(r)
	default:
		return p.syntax("invalid escape")
	}
	return nil
}

func (p *argParser) loneSurrogate() error {
	return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsInvalidJSON,
		"arguments contain an escaped lone UTF-16 surrogate before byte %d; it is not a character", p.pos)
}

func (p *argParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// writeString writes s as encoding/json does (HTML-safe); see
// CanonicalArguments for why.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a valid UTF-8 string always marshals
	buf.Write(b)
}

// foldKey maps keys a server could confuse to one value: trailing NULs
// dropped, every rune replaced by the smallest rune of its simple case
// folding orbit (so foldKey(a) == foldKey(b) exactly when
// strings.EqualFold agrees on the NUL-trimmed keys).
func foldKey(k string) string {
	k = strings.TrimRight(k, "\x00")
	var b strings.Builder
	for _, r := range k {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

func (p *argParser) ambiguous(first, second string) error {
	var how string
	switch {
	case first == second:
		how = fmt.Sprintf("key %s appears twice", p.quoteKey(first))
	case strings.TrimRight(first, "\x00") == strings.TrimRight(second, "\x00"):
		how = fmt.Sprintf("keys %s and %s differ only by trailing NUL characters", p.quoteKey(first), p.quoteKey(second))
	case strings.EqualFold(first, second):
		how = fmt.Sprintf("keys %s and %s differ only by case", p.quoteKey(first), p.quoteKey(second))
	default:
		how = fmt.Sprintf("keys %s and %s differ only by case and trailing NUL characters", p.quoteKey(first), p.quoteKey(second))
	}
	return contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonAmbiguousKeys,
		"arguments: in the object at %s, %s; a server could read them as one key", p.clip(p.location(), 300), how),
		"keep exactly one of the keys")
}

// clip is text for an error: redacted, then cut to n characters.
func (p *argParser) clip(text string, n int) string {
	if p.redact != nil {
		text = p.redact(text)
	}
	return clip(text, n)
}

// quoteKey is a key for an error: redacted, cut, then quoted.
func (p *argParser) quoteKey(k string) string { return strconv.QuoteToASCII(p.clip(k, 64)) }

// location renders p.path JSONPath-style: $.key, $["odd key"], $[0].
func (p *argParser) location() string {
	var b strings.Builder
	b.WriteString("$")
	for _, st := range p.path {
		switch {
		case st.index >= 0:
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
		case isIdent(st.key) && len(st.key) <= 64:
			b.WriteString("." + st.key)
		default:
			b.WriteString("[" + p.quoteKey(st.key) + "]")
		}
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// canonicalSchemaBytes returns the canonical form of a schema for its cache
// key, without the argument rules; unparsable schemas hash as given.
func canonicalSchemaBytes(schema []byte) []byte {
	p := &argParser{src: schema, out: &bytes.Buffer{}, lenient: true}
	if err := p.value(0); err != nil {
		return schema
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return schema
	}
	return p.out.Bytes()
}
