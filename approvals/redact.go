package approvals

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Redacted replaces every redacted secret value.
const Redacted = "[REDACTED]"

// MinSecretChars is the shortest secret value Secrets redacts, in
// characters. Shorter values ("on", "1", "abc") would match all over
// ordinary text and make results unreadable without protecting anything a
// credential deserves.
const MinSecretChars = 4

// Redactor removes known secret values from bytes. Redact may return its
// argument unchanged when nothing matched; it never modifies it in place.
type Redactor interface {
	Redact([]byte) []byte
}

// Secrets is a Redactor over a fixed set of secret values. It is immutable
// and safe for concurrent use; a nil *Secrets redacts nothing.
//
// Each value is found in three spellings and every occurrence is replaced
// by Redacted:
//
//   - literally;
//   - JSON-escaped once, as any encoder may write it inside a JSON string:
//     quotes, backslashes and control characters in their short (\n, \")
//     or \u forms, and any other character either literal or \u-escaped
//     (upper- or lower-case hex, surrogate pairs for characters outside
//     the BMP), which covers Go's \u003c for <, >, & and Python's ASCII
//     output;
//   - JSON-escaped twice (a JSON document carried as a string inside
//     another, as MCP text content often is), based on the encodings of Go
//     and of JavaScript.
//
// Values shorter than MinSecretChars characters are ignored. Where
// occurrences of different values overlap, the whole overlapping stretch
// is replaced, so no part of either value survives.
type Secrets struct {
	// needles are the patterns searched for, longest first; fixed at
	// construction.
	needles []needle
}

// needle is one spelling to look for. With escaped set, each character of
// runes may appear in any JSON string escape form (see matchEscaped);
// otherwise lit must appear byte for byte.
type needle struct {
	lit     []byte
	runes   []rune
	escaped bool
}

// NewSecrets returns a Secrets redacting values. Empty, duplicate and
// too-short values are dropped.
func NewSecrets(values ...string) *Secrets {
	s := &Secrets{}
	seen := map[string]bool{}
	add := func(v string, escaped bool) {
		key := v
		if escaped {
			key = "\x00" + v
		}
		if seen[key] {
			return
		}
		seen[key] = true
		s.needles = append(s.needles, needle{lit: []byte(v), runes: []rune(v), escaped: escaped})
	}
	for _, v := range values {
		if utf8.RuneCountInString(v) < MinSecretChars {
			continue
		}
		add(v, false)
		add(v, true)
		// Twice escaped: the inner encoding is one of the common ones,
		// matched as escaped text of the outer one.
		add(jsonEscape(v, true), true)
		add(jsonEscape(v, false), true)
	}
	slices.SortStableFunc(s.needles, func(a, b needle) int { return cmp.Compare(len(b.lit), len(a.lit)) })
	return s
}

// jsonEscape returns v as encoding/json writes it inside a string, without
// the quotes; with html false, <, > and & stay literal, as JavaScript's
// JSON.stringify leaves them.
func jsonEscape(v string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // A string always encodes.
	out := bytes.TrimSpace(buf.Bytes())
	return string(out[1 : len(out)-1])
}

// Redact returns b with every occurrence of every secret value replaced.
func (s *Secrets) Redact(b []byte) []byte {
	if s == nil || len(s.needles) == 0 || len(b) == 0 {
		return b
	}
	var spans [][2]int
	for _, n := range s.needles {
		spans = n.find(b, spans)
	}
	if len(spans) == 0 {
		return b
	}
	slices.SortFunc(spans, func(x, y [2]int) int { return cmp.Compare(x[0], y[0]) })
	out := make([]byte, 0, len(b))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] < end; i++ {
			end = max(end, spans[i][1])
		}
		out = append(out, b[last:start]...)
		out = append(out, Redacted...)
		last = end
	}
	return append(out, b[last:]...)
}

// find appends the [start, end) byte spans of every occurrence of n in b,
// overlapping ones included.
func (n needle) find(b []byte, spans [][2]int) [][2]int {
	if !n.escaped {
		for off := 0; ; {
			i := bytes.Index(b[off:], n.lit)
			if i < 0 {
				return spans
			}
			spans = append(spans, [2]int{off + i, off + i + len(n.lit)})
			off += i + 1
		}
	}
	// Candidates start with the first byte of the first character or with
	// a backslash; two IndexByte scans find them fast.
	first := n.lit[0]
	nextFirst, nextEsc := indexFrom(b, first, 0), indexFrom(b, '\\', 0)
	for nextFirst >= 0 || nextEsc >= 0 {
		i := nextFirst
		if i < 0 || (nextEsc >= 0 && nextEsc < i) {
			i = nextEsc
		}
		if end := n.matchEscaped(b, i); end > 0 {
			spans = append(spans, [2]int{i, end})
		}
		if nextFirst == i {
			nextFirst = indexFrom(b, first, i+1)
		}
		if nextEsc == i {
			nextEsc = indexFrom(b, '\\', i+1)
		}
	}
	return spans
}

// indexFrom is bytes.IndexByte from offset i, or -1.
func indexFrom(b []byte, c byte, i int) int {
	j := bytes.IndexByte(b[i:], c)
	if j < 0 {
		return -1
	}
	return i + j
}

// matchEscaped reports the end of an escaped occurrence of n starting at
// b[i], or -1. Inside a JSON string a backslash always starts an escape, so
// each character has exactly one reading: no backtracking is needed.
func (n needle) matchEscaped(b []byte, i int) int {
	for _, want := range n.runes {
		if i >= len(b) {
			return -1
		}
		if b[i] == '\\' {
			r, size := decodeEscape(b[i:])
			if size == 0 || r != want {
				return -1
			}
			i += size
			continue
		}
		if want == '"' || want == '\\' || want < 0x20 {
			return -1 // These are always escaped inside a JSON string.
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != want || (r == utf8.RuneError && size == 1) {
			return -1
		}
		i += size
	}
	return i
}

// decodeEscape decodes one JSON string escape at the start of b, joining a
// surrogate pair into one character. It returns size 0 for anything else.
func decodeEscape(b []byte) (rune, int) {
	if len(b) < 2 || b[0] != '\\' {
		return 0, 0
	}
	switch b[1] {
	case '"', '\\', '/':
		return rune(b[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
	default:
		return 0, 0
	}
	r, ok := hex4(b[2:])
	if !ok {
		return 0, 0
	}
	if r >= 0xD800 && r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if lo, ok := hex4(b[8:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12
		}
	}
	return r, 6
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}
