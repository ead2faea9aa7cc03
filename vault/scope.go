package vault

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// CrossServerChars is the shortest value of one server that is removed
// from another server's replies. A shorter value (a PIN, a short
// password) is removed only from replies of the servers that hold it:
// were it removed from every server's results, any tool that hands back
// text the caller arranged (a file it wrote, a decoded argument) would
// tell the caller whether its guess is that value. A longer one cannot be
// guessed that way, so it is removed everywhere, as pikod's own text is.
const CrossServerChars = 20

// View is the redaction of one answer to one request: the reply frame
// and what it was built from (a call's result before it is retained, the
// notifications sent while it runs). It differs from the Redactor's own
// JSON and Text in three ways, so that no answer tells a caller whether a
// string it chose is a secret:
//
//   - a value the caller sent in the request's params (in any spelling
//     redaction finds) is not removed from the answer: it knows it;
//   - narrowed to a server (Narrow), the answer carries that server's
//     output and is redacted of that server's values, values of no
//     server in particular, and other servers' values of at least
//     CrossServerChars characters;
//   - with Since, only values that entered the set after a time are
//     removed (a retained result read back was redacted when stored).
//
// It counts what it replaced (Redactions). A nil *View redacts nothing.
// It is safe for concurrent use.
type View struct {
	r      *Redactor
	except map[string]bool
	n      atomic.Int64

	// mu guards the fields that follow.
	mu     sync.Mutex
	narrow bool
	server string
	since  time.Time
	m      *matcher   // the matcher sel was made for
	sel    *selection // nil until made
}

// selection is which patterns of one matcher a View removes, and where it
// counts its replacements.
type selection struct {
	allow []bool // by pattern
	n     *atomic.Int64
}

func (s *selection) count(n int) {
	if s != nil && n > 0 {
		s.n.Add(int64(n))
	}
}

// View returns the view for a request made of sent: what the caller sent
// (its id, method and params, raw JSON or text); with nothing, a view
// that removes every value (and counts).
func (r *Redactor) View(sent ...[]byte) *View {
	if r == nil {
		return nil
	}
	v := &View{r: r}
	m := r.m.Load()
	for _, b := range sent {
		if m == nil || len(b) == 0 {
			continue
		}
		for _, i := range m.occurring(b) {
			if v.except == nil {
				v.except = map[string]bool{}
			}
			v.except[m.vals[i].v] = true
		}
	}
	return v
}

// Narrow says the answer carries server's output (see View).
func (v *View) Narrow(server string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.narrow, v.server, v.sel = true, server, nil
}

// Since limits the view to values that entered the set after t.
func (v *View) Since(t time.Time) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.since, v.sel = t, nil
}

// Exempt reports how many values the caller's params held (never which).
func (v *View) Exempt() int {
	if v == nil {
		return 0
	}
	return len(v.except)
}

// Redactions is how many occurrences the view has replaced so far.
func (v *View) Redactions() int64 {
	if v == nil {
		return 0
	}
	return v.n.Load()
}

// JSON is Redactor.JSON within the view.
func (v *View) JSON(b []byte) []byte {
	if v == nil {
		return b
	}
	m, sel := v.current()
	return m.json(b, sel)
}

// Text is Redactor.Text within the view.
func (v *View) Text(s string) string {
	if v == nil {
		return s
	}
	m, sel := v.current()
	return m.text(s, sel)
}

// current returns the Redactor's matcher and this view's selection of it.
func (v *View) current() (*matcher, *selection) {
	m := v.r.m.Load()
	if m == nil {
		return nil, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sel != nil && v.m == m {
		return m, v.sel
	}
	allowVal := make([]bool, len(m.vals))
	for i, val := range m.vals {
		allowVal[i] = v.allows(val)
	}
	sel := &selection{allow: make([]bool, len(m.pats)), n: &v.n}
	for p, vals := range m.patVals {
		for _, i := range vals {
			if allowVal[i] {
				sel.allow[p] = true
				break
			}
		}
		// A pattern the caller sent is known to it, whatever value it
		// spells.
		for _, i := range vals {
			if v.except[m.vals[i].v] {
				sel.allow[p] = false
			}
		}
	}
	v.m, v.sel = m, sel
	return m, sel
}

func (v *View) allows(val value) bool {
	if v.except[val.v] {
		return false
	}
	if !v.since.IsZero() && !val.added.After(v.since) {
		return false
	}
	if !v.narrow {
		return true
	}
	for _, o := range val.owners {
		if o == "" || o == v.server {
			return true
		}
	}
	return utf8.RuneCountInString(val.v) >= CrossServerChars
}

// occurring returns the values a pattern of which occurs in b (a JSON
// text, or any text): in its bytes, in each of its strings decoded, and in
// the levels below them, as redaction would find them.
func (m *matcher) occurring(b []byte) []int {
	found := map[int]bool{}
	scan := func(t []byte) {
		m.findPat(t, func(pat, _, _ int) bool {
			for _, i := range m.patVals[pat] {
				found[i] = true
			}
			return true
		})
		for lvl := 0; lvl < maxLevels && hasEscapes(t); lvl++ {
			t, _, _ = decodeLevel(t, false)
			m.findPat(t, func(pat, _, _ int) bool {
				for _, i := range m.patVals[pat] {
					found[i] = true
				}
				return true
			})
		}
	}
	scan(b)
	for i := 0; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := stringEnd(b, start+1)
		if end < 0 {
			break
		}
		if raw := b[start+1 : end]; bytes.IndexByte(raw, '\\') >= 0 {
			val, _, _ := unquote(raw, false)
			scan(val)
		}
		i = end + 1
	}
	out := make([]int, 0, len(found))
	for i := range found {
		out = append(out, i)
	}
	return out
}
