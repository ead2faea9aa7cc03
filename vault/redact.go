package vault

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Redacted replaces every redacted secret value.
const Redacted = "[REDACTED]"

// MinRedactChars is the shortest secret value a Redactor protects, in
// characters. A shorter value ("1796", "false", "on") occurs all over
// ordinary output; replacing it would corrupt results and protect nothing
// a credential deserves. Such values are stored and used, but
// Unprotectable says why they cannot be kept out of output.
const MinRedactChars = 6

// maxLevels is how many nested encodings below a decoded string are
// searched (a JSON document in a tool's text, a URL inside that, ...).
const maxLevels = 3

// maxRounds bounds the re-checks of a string after a replacement; a string
// that still holds a secret after them is replaced whole.
const maxRounds = 4

// Unprotectable returns why a Redactor cannot protect v ("" when it can):
// shorter than MinRedactChars characters, or part of the mark itself.
func Unprotectable(v string) string {
	switch {
	case utf8.RuneCountInString(v) < MinRedactChars:
		return fmt.Sprintf("shorter than %d characters", MinRedactChars)
	case strings.Contains(Redacted, v):
		return "part of the mark " + Redacted
	}
	return ""
}

// Redactor removes known secret values from what pikod writes: socket
// frames, results before they are retained, error messages, stderr lines
// and log events. It is safe for concurrent use; a nil *Redactor redacts
// nothing.
//
// Redaction works on values, never on bytes: in JSON it looks only inside
// strings (object keys included) and re-encodes a string it changed, so
// its output is valid JSON whenever its input is, and numbers, booleans
// and null are never touched. A secret is found in a string in these
// forms, each replaced by Redacted:
//
//   - literally, in the decoded string and in the string's JSON text
//     (any mix of \uXXXX and short escapes is decoded first);
//   - escaped again or percent-encoded inside the string, up to maxLevels
//     levels deep (a JSON document in a tool's text, a URL query in it):
//     each level decodes JSON escapes and %XX (either hex case) at once;
//   - form-encoded: a space may be written as '+'.
//
// A value that holds an escape or %XX itself is also looked for as the
// levels decode it (spellings).
//
// Values for which Unprotectable gives a reason are ignored. A string that
// still holds a secret after maxRounds replacements is replaced whole.
type Redactor struct {
	m atomic.Pointer[matcher]

	// mu guards the fields that follow and serialises rebuilds.
	mu    sync.Mutex
	owned map[string][]string // server ("" for none in particular) -> values
	// added is when each value first entered the set (see View.Since).
	added map[string]time.Time
}

// NewRedactor returns a Redactor with no secrets.
func NewRedactor() *Redactor { return &Redactor{} }

// SetValues replaces the stored secret values with values that belong to
// no server in particular: they are removed from every output.
func (r *Redactor) SetValues(values []string) {
	r.SetOwned(map[string][]string{"": values})
}

// SetOwned replaces the stored secret values, each under the server whose
// credential it is (a value two servers hold is under both; "" is no
// server in particular). Who owns a value decides which replies it is
// removed from (see View); Redactor.JSON and Text remove every value.
func (r *Redactor) SetOwned(byServer map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owned = make(map[string][]string, len(byServer))
	now := time.Now()
	if r.added == nil {
		r.added = map[string]time.Time{}
	}
	keep := map[string]bool{}
	for srv, vs := range byServer {
		r.owned[srv] = slices.Clone(vs)
		for _, v := range vs {
			keep[v] = true
			if _, ok := r.added[v]; !ok {
				r.added[v] = now
			}
		}
	}
	for v := range r.added {
		if !keep[v] {
			delete(r.added, v)
		}
	}
	r.m.Store(newMatcher(r.owned, r.added))
}

// JSON returns b (one JSON text, or one JSON log line) with every secret
// removed from its strings. It returns b itself when nothing matched and
// never modifies b. Text that is not JSON is redacted as Text would,
// without any promise about its form.
func (r *Redactor) JSON(b []byte) []byte {
	if r == nil {
		return b
	}
	return r.m.Load().json(b, nil)
}

// json is JSON with the patterns sel allows.
func (m *matcher) json(b []byte, sel *selection) []byte {
	if m == nil || len(b) == 0 {
		return b
	}
	lit := m.any(b, sel)
	// No backslash and no '%': no escaped or encoded form can hide here,
	// so only a literal occurrence needs the slow path.
	if !lit && bytes.IndexByte(b, '\\') < 0 && bytes.IndexByte(b, '%') < 0 {
		return b
	}
	return m.redactJSON(b, lit, sel)
}

// Text returns s with every secret removed, for text that is not JSON
// (error messages, stderr lines) and before anything cuts it.
func (r *Redactor) Text(s string) string {
	if r == nil {
		return s
	}
	return r.m.Load().text(s, nil)
}

// text is Text with the patterns sel allows.
func (m *matcher) text(s string, sel *selection) string {
	if m == nil || s == "" {
		return s
	}
	b := []byte(s)
	if !m.any(b, sel) && !hasEscapes(b) {
		return s
	}
	if !m.detect(b, sel) {
		return s
	}
	out, changed := m.redactValue(b, nil, sel)
	if !changed {
		return s
	}
	return string(out)
}

// Writer returns w behind JSON redaction. Each Write must be one whole
// JSON log event (zerolog writes so), so a value is never split.
func (r *Redactor) Writer(w io.Writer) io.Writer { return redactingWriter{r: r, w: w} }

type redactingWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write(rw.r.JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// matcher finds every pattern (the literal forms of every secret) in
// bytes in one pass. Every pattern is at least minLen bytes long, so every
// occurrence holds a whole 4-byte window starting at a multiple of
// stride = minLen-3: only those windows are looked at. A 64K-bit filter on
// the hash of every 4-byte window of every pattern says where one may
// be, and grams confirms it.
type matcher struct {
	pats [][]byte
	// patVals gives, for each pattern, the values it is a spelling of
	// (indexes into vals).
	patVals [][]int
	vals    []value
	stride  int
	bits    [1 << 10]uint64
	grams   map[uint32][]gram
	// brackets is set when a pattern holds '[' or ']': only then can a
	// replacement by Redacted complete a new occurrence.
	brackets bool
}

// value is one secret value of the set.
type value struct {
	v      string
	owners []string // servers it belongs to; "" is none in particular
	added  time.Time
}

// gram is one 4-byte window of a pattern: which pattern, at which offset.
type gram struct{ pat, off int }

func newMatcher(owned map[string][]string, added map[string]time.Time) *matcher {
	m := &matcher{grams: map[uint32][]gram{}}
	byValue := map[string]int{}
	servers := slices.Sorted(maps.Keys(owned))
	for _, srv := range servers {
		for _, v := range owned[srv] {
			i, ok := byValue[v]
			if !ok {
				i = len(m.vals)
				byValue[v] = i
				m.vals = append(m.vals, value{v: v, added: added[v]})
			}
			if !slices.Contains(m.vals[i].owners, srv) {
				m.vals[i].owners = append(m.vals[i].owners, srv)
			}
		}
	}
	seen := map[string]int{}
	minLen := 0
	add := func(p string, val int) {
		if i, ok := seen[p]; ok {
			if !slices.Contains(m.patVals[i], val) {
				m.patVals[i] = append(m.patVals[i], val)
			}
			return
		}
		seen[p] = len(m.pats)
		if minLen == 0 || len(p) < minLen {
			minLen = len(p)
		}
		m.pats = append(m.pats, []byte(p))
		m.patVals = append(m.patVals, []int{val})
		if strings.ContainsAny(p, "[]") {
			m.brackets = true
		}
	}
	for i, v := range m.vals {
		for _, f := range spellings(v.v) {
			add(f, i)
			if strings.Contains(f, " ") {
				add(strings.ReplaceAll(f, " ", "+"), i) // form encoding
			}
		}
	}
	if len(m.pats) == 0 {
		return nil
	}
	m.stride = minLen - 3
	for i, p := range m.pats {
		for off := 0; off+4 <= len(p); off++ {
			k := binary.LittleEndian.Uint32(p[off:])
			h := hash4(k)
			m.bits[h>>6] |= 1 << (h & 63)
			m.grams[k] = append(m.grams[k], gram{pat: i, off: off})
		}
	}
	return m
}

func hash4(k uint32) uint32 { return (k * 2654435761) >> 16 }

// spellings returns v and what the levels make of it: a value that holds
// an escape or %XX itself ("a%41b", "x\\ny") is decoded along with the
// text around it once it sits a level deeper, so its decoded spellings
// are searched too (those Unprotectable accepts). Nil when v itself
// cannot be protected.
func spellings(v string) []string {
	if Unprotectable(v) != "" {
		return nil
	}
	out := []string{v}
	for lvl, cur := 0, v; lvl < maxLevels; lvl++ {
		b, _, _ := decodeLevel([]byte(cur), false)
		if string(b) == cur {
			break
		}
		cur = string(b)
		if Unprotectable(cur) == "" {
			out = append(out, cur)
		}
	}
	return out
}

// any reports whether b contains a pattern sel allows.
func (m *matcher) any(b []byte, sel *selection) bool {
	found := false
	m.find(b, sel, func(int, int) bool { found = true; return false })
	return found
}

// find calls fn with the [start, end) of every occurrence of every pattern
// in b, overlapping ones included (some more than once), until fn returns
// false. Patterns sel does not allow are skipped (a nil sel allows all).
func (m *matcher) find(b []byte, sel *selection, fn func(start, end int) bool) {
	m.findPat(b, func(pat, start, end int) bool {
		if sel != nil && !sel.allow[pat] {
			return true
		}
		return fn(start, end)
	})
}

// findPat is find with the pattern of each occurrence, and no selection.
func (m *matcher) findPat(b []byte, fn func(pat, start, end int) bool) {
	for i := 0; i+4 <= len(b); i += m.stride {
		k := binary.LittleEndian.Uint32(b[i:])
		h := hash4(k)
		if m.bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, g := range m.grams[k] {
			start := i - g.off
			pat := m.pats[g.pat]
			if start >= 0 && bytes.HasPrefix(b[start:], pat) && !fn(g.pat, start, start+len(pat)) {
				return
			}
		}
	}
}

// hasEscapes reports whether b holds a byte that starts an escape or an
// encoding a level decodes.
func hasEscapes(b []byte) bool {
	return bytes.IndexByte(b, '\\') >= 0 || bytes.IndexByte(b, '%') >= 0
}

// detect reports whether a secret occurs in text (a decoded string) or in
// one of its levels, without building any map.
func (m *matcher) detect(text []byte, sel *selection) bool {
	cur := text
	if m.any(cur, sel) {
		return true
	}
	for lvl := 0; lvl < maxLevels && hasEscapes(cur); lvl++ {
		cur, _, _ = decodeLevel(cur, false)
		if m.any(cur, sel) {
			return true
		}
	}
	return false
}

// redactJSON is JSON's slow path. lit says whether a pattern occurs
// anywhere in b.
func (m *matcher) redactJSON(b []byte, lit bool, sel *selection) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := stringEnd(b, start+1)
		if end < 0 {
			// Not JSON: an unterminated string. What follows is text.
			rest := b[start:]
			if red, changed := m.redactValue(rest, nil, sel); changed {
				out = append(out, b[last:start]...)
				out = append(out, red...)
				last = len(b)
			}
			break
		}
		raw := b[start+1 : end]
		if red, changed := m.redactString(raw, lit, sel); changed {
			out = append(out, b[last:start+1]...)
			out = append(out, red...)
			last = end
		}
		i = end + 1
	}
	res := b
	if out != nil {
		res = append(out, b[last:]...)
	}
	// A pattern left outside strings is in a number, or b is not JSON.
	if lit && m.any(res, sel) && !json.Valid(b) {
		if red, changed := m.redactValue(b, nil, sel); changed {
			return red
		}
	}
	return res
}

// stringEnd returns the index of the quote that ends the JSON string whose
// content starts at i, or -1.
func stringEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// redactString redacts the content of one JSON string (raw, without its
// quotes) and returns its new raw content when it changed.
func (m *matcher) redactString(raw []byte, lit bool, sel *selection) ([]byte, bool) {
	esc := bytes.IndexByte(raw, '\\') >= 0
	if !lit && !esc && bytes.IndexByte(raw, '%') < 0 {
		return nil, false
	}
	hit := lit && m.any(raw, sel)
	if !hit {
		val := raw
		if esc {
			val, _, _ = unquote(raw, false)
		}
		hit = m.detect(val, sel)
	}
	if !hit {
		return nil, false
	}
	val, lo, hi := unquote(raw, true)
	return m.redactValue(val, &view{b: raw, lo: lo, hi: hi}, sel)
}

// redactValue replaces every occurrence in val, found in val itself, in
// its levels and in enc (its JSON text, when it has one), and re-checks
// the result. With enc set it returns the new JSON text of the string;
// without, the new text.
func (m *matcher) redactValue(val []byte, enc *view, sel *selection) ([]byte, bool) {
	changed := false
	for round := 0; ; round++ {
		spans := m.spans(val, enc, sel)
		if len(spans) == 0 {
			break
		}
		changed = true
		if round == maxRounds {
			val = []byte(Redacted)
			sel.count(1)
			break
		}
		var n int
		val, n = replaceSpans(val, spans)
		sel.count(n)
		if enc != nil {
			b, lo, hi := encodeString(val, true)
			enc = &view{b: b, lo: lo, hi: hi}
		}
		if !m.brackets && enc == nil {
			// Without '[' or ']' in any pattern, Redacted next to the rest
			// cannot make a new occurrence: no second round needed.
			break
		}
	}
	switch {
	case !changed:
		return nil, false
	case enc == nil:
		return val, true
	case string(val) == Redacted:
		return val, true
	}
	return enc.b, true
}

// view is text derived from a base (a decoded string): for each byte of b,
// lo and hi give the range of the base it came from; nil means b is the
// base.
type view struct {
	b      []byte
	lo, hi []int32
}

func (v *view) base(i, j int) (int, int) {
	if v.lo == nil {
		return i, j
	}
	return int(v.lo[i]), int(v.hi[j-1])
}

// spans returns the base ranges of every occurrence in val, its levels
// and enc.
func (m *matcher) spans(val []byte, enc *view, sel *selection) [][2]int {
	var spans [][2]int
	collect := func(v *view) {
		m.find(v.b, sel, func(i, j int) bool {
			s, e := v.base(i, j)
			spans = append(spans, [2]int{s, e})
			return true
		})
	}
	if enc != nil {
		collect(enc)
	}
	cur := &view{b: val}
	collect(cur)
	for lvl := 0; lvl < maxLevels && hasEscapes(cur.b); lvl++ {
		b, lo, hi := decodeLevel(cur.b, true)
		next := &view{b: b, lo: lo, hi: hi}
		if cur.lo != nil {
			for k := range lo {
				s, e := cur.base(int(lo[k]), int(hi[k]))
				next.lo[k], next.hi[k] = int32(s), int32(e)
			}
		}
		cur = next
		collect(cur)
	}
	return spans
}

// replaceSpans replaces each merged span of b with Redacted and says how
// many it replaced.
func replaceSpans(b []byte, spans [][2]int) ([]byte, int) {
	slices.SortFunc(spans, func(x, y [2]int) int { return x[0] - y[0] })
	out := make([]byte, 0, len(b))
	last, n := 0, 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] < end; i++ {
			end = max(end, spans[i][1])
		}
		if start < last { // inside the previous span's reach
			start = last
		}
		out = append(out, b[last:start]...)
		out = append(out, Redacted...)
		last = end
		n++
	}
	return append(out, b[last:]...), n
}

// unquote decodes the content of a JSON string. With withMap, lo and hi
// give, for each byte of raw, the range of the result it decoded to.
// Invalid escapes are kept as they are; lone surrogates become U+FFFD.
func unquote(raw []byte, withMap bool) (out []byte, lo, hi []int32) {
	out = make([]byte, 0, len(raw))
	if !withMap {
		start := 0
		for i := 0; i < len(raw); {
			if raw[i] != '\\' {
				i++
				continue
			}
			out = append(out, raw[start:i]...)
			if r, n := jsonEscape(raw[i:]); n > 0 {
				out = appendRune(out, r)
				i += n
			} else {
				out = append(out, '\\')
				i++
			}
			start = i
		}
		return append(out, raw[start:]...), nil, nil
	}
	{
		lo, hi = make([]int32, len(raw)), make([]int32, len(raw))
	}
	for i := 0; i < len(raw); {
		start := len(out)
		n := 1
		if raw[i] == '\\' {
			var r rune
			if r, n = jsonEscape(raw[i:]); n > 0 {
				out = utf8.AppendRune(out, r)
			} else {
				n = 1
				out = append(out, '\\')
			}
		} else {
			out = append(out, raw[i])
		}
		if withMap {
			for k := i; k < i+n; k++ {
				lo[k], hi[k] = int32(start), int32(len(out))
			}
		}
		i += n
	}
	return out, lo, hi
}

// decodeLevel decodes one level below b: JSON escapes and %XX. With
// withMap, lo and hi give, for each byte of the result, the range of b it
// came from.
func decodeLevel(b []byte, withMap bool) (out []byte, lo, hi []int32) {
	out = make([]byte, 0, len(b))
	if !withMap {
		start := 0
		for i := 0; i < len(b); {
			c := b[i]
			switch {
			case c == '\\':
				out = append(out, b[start:i]...)
				if r, n := jsonEscape(b[i:]); n > 0 {
					out = appendRune(out, r)
					i += n
				} else {
					out = append(out, c)
					i++
				}
				start = i
			case c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]):
				out = append(out, b[start:i]...)
				out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
				i += 3
				start = i
			default:
				i++
			}
		}
		return append(out, b[start:]...), nil, nil
	}
	if withMap {
		lo, hi = make([]int32, 0, len(b)), make([]int32, 0, len(b))
	}
	for i := 0; i < len(b); {
		start := len(out)
		n := 1
		switch c := b[i]; {
		case c == '\\':
			var r rune
			if r, n = jsonEscape(b[i:]); n > 0 {
				out = utf8.AppendRune(out, r)
			} else {
				n = 1
				out = append(out, c)
			}
		case c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]):
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			n = 3
		default:
			out = append(out, c)
		}
		if withMap {
			for k := start; k < len(out); k++ {
				lo, hi = append(lo, int32(i)), append(hi, int32(i+n))
			}
		}
		i += n
	}
	return out, lo, hi
}

// jsonEscape decodes the JSON escape at the start of b, joining a
// surrogate pair; n is 0 when b does not start with a valid escape.
func jsonEscape(b []byte) (r rune, n int) {
	if len(b) < 2 {
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
	if r >= 0xD800 && r < 0xDC00 {
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hex4(b[8:]); ok && lo >= 0xDC00 && lo < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		return utf8.RuneError, 6
	}
	if r >= 0xDC00 && r < 0xE000 {
		return utf8.RuneError, 6
	}
	return r, 6
}

// appendRune is utf8.AppendRune with a fast path for ASCII.
func appendRune(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		return append(b, byte(r))
	}
	return utf8.AppendRune(b, r)
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

const hexDigits = "0123456789abcdef"

// encodeString returns val as the content of a JSON string, escaped as
// encoding/json escapes (HTML characters and U+2028/U+2029 included;
// invalid UTF-8 becomes \ufffd). With withMap, lo and hi give, for each
// byte of the result, the range of val it encodes.
func encodeString(val []byte, withMap bool) (out []byte, lo, hi []int32) {
	out = make([]byte, 0, len(val)+len(val)/8+8)
	if withMap {
		lo, hi = make([]int32, 0, cap(out)), make([]int32, 0, cap(out))
	}
	for i := 0; i < len(val); {
		start := len(out)
		c := val[i]
		n := 1
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		case c < utf8.RuneSelf:
			out = append(out, c)
		default:
			r, size := utf8.DecodeRune(val[i:])
			n = size
			switch {
			case r == utf8.RuneError && size == 1:
				out = append(out, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			default:
				out = append(out, val[i:i+size]...)
			}
		}
		if withMap {
			for k := start; k < len(out); k++ {
				lo, hi = append(lo, int32(i)), append(hi, int32(i+n))
			}
		}
		i += n
	}
	return out, lo, hi
}
