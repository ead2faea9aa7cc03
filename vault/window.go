package vault

import "bytes"

// Longest is the length in bytes of the longest form of any secret the
// Redactor looks for (0 with none): a window of a larger text must be
// read with this much context on each side for a secret across its edge
// to be seen (RedactWindow).
func (r *Redactor) Longest() int {
	if r == nil {
		return 0
	}
	m := r.m.Load()
	if m == nil {
		return 0
	}
	n := 0
	for _, p := range m.pats {
		n = max(n, len(p))
	}
	return n
}

// RedactWindow redacts the window ext[from:to] of a larger text, given
// the bytes around it in ext (at least Longest bytes each side where the
// text has them). Any form of a secret that overlaps the window, even one
// that starts before it or ends after it, is replaced by Redacted; then
// the window is redacted as Text would. It works on bytes: text that is
// not UTF-8 is redacted before anything encodes it. changed says whether
// anything was removed.
func (r *Redactor) RedactWindow(ext []byte, from, to int) (out []byte, changed bool) {
	win := ext[from:to]
	if r == nil {
		return win, false
	}
	m := r.m.Load()
	if m == nil || len(win) == 0 {
		return win, false
	}
	// Mark every window byte inside an occurrence of a pattern anywhere
	// in ext that reaches into the window.
	covered := make([]bool, len(win))
	any := false
	for _, p := range m.pats {
		for i := 0; ; {
			j := bytes.Index(ext[i:], p)
			if j < 0 {
				break
			}
			s, e := i+j, i+j+len(p)
			if e > from && s < to {
				for k := max(s, from); k < min(e, to); k++ {
					covered[k-from] = true
				}
				any = true
			}
			i = s + 1
		}
	}
	if any {
		var b bytes.Buffer
		for i := 0; i < len(win); {
			if !covered[i] {
				b.WriteByte(win[i])
				i++
				continue
			}
			b.WriteString(Redacted)
			for i < len(win) && covered[i] {
				i++
			}
		}
		win = b.Bytes()
	}
	// Escaped and encoded forms wholly inside the window.
	s := r.Text(string(win))
	return []byte(s), any || s != string(win)
}
