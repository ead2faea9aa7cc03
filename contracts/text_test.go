package contracts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSafeText(t *testing.T) {
	tests := []struct {
		in   string
		mode TextMode
		max  int
		want string
	}{
		{"plain text", OneLine, 0, "plain text"},
		{"a\nb\tc\r\nd\re", OneLine, 0, "a b c d e"},
		{"a\nb\tc\r\nd\re", Lines, 0, "a\nb\tc\nd\\u{000D}e"},
		{"a\nb\tc", Exact, 0, `a\u{000A}b\u{0009}c`},
		{"\x1b[31mred\x1b[0m", Lines, 0, `\u{001B}[31mred\u{001B}[0m`},
		{"\x1b]0;title\x07", OneLine, 0, `\u{001B}]0;title\u{0007}`},
		{"\u009b2J c1", OneLine, 0, `\u{009B}2J c1`},
		{"bidi \u202egnp.exe\u202c", OneLine, 0, `bidi \u{202E}gnp.exe\u{202C}`},
		{"zero\u200bwidth\ufeff", OneLine, 0, `zero\u{200B}width\u{FEFF}`},
		{"tag\U000E0041", OneLine, 0, `tag\u{E0041}`},
		{"sep\u2028x\u3164", Lines, 0, `sep\u{2028}x\u{3164}`},
		{"bad \xff\xfe utf8", OneLine, 0, "bad \uFFFD\uFFFD utf8"},
		{"é😀 stays", OneLine, 0, "é😀 stays"},
		{"C:\\path\\to", OneLine, 0, `C:\path\to`},
		{"0123456789", OneLine, 10, "0123456789"},
		{"0123456789x", OneLine, 10, "012345678…"},
		{"ab\x1b", OneLine, 5, "ab…"},
		{"ab\x1b", OneLine, 10, `ab\u{001B}`},
		{"ééééé", OneLine, 3, "éé…"},
		{"x", OneLine, 1, "x"},
		{"xy", OneLine, 1, "…"},
	}
	for _, tc := range tests {
		if got := SafeText(tc.in, tc.mode, tc.max); got != tc.want {
			t.Errorf("SafeText(%q, %d, %d) = %q, want %q", tc.in, tc.mode, tc.max, got, tc.want)
		}
	}
}

// FuzzSafeText: whatever the input, the output is valid UTF-8, holds no
// character that acts on a terminal or hides itself (and no line break
// the mode forbids), fits the bound, passes through SafeText unchanged,
// and equals the input when the input was already safe and fits.
func FuzzSafeText(f *testing.F) {
	f.Add("plain", byte(0), 0)
	f.Add("\x1b[2J\x1b]8;;http://x\x07link\x1b]8;;\x07", byte(1), 20)
	f.Add("\u202e\u2066\u200d\xff\r\n\t", byte(2), 7)
	f.Add("ééé\\u{1B}…", byte(0), 4)
	f.Fuzz(func(t *testing.T, s string, m byte, max int) {
		mode := TextMode(m % 3)
		max %= 1 << 12
		out := SafeText(s, mode, max)
		if !utf8.ValidString(out) {
			t.Fatalf("SafeText(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			switch {
			case r == '\n' || r == '\t':
				if mode != Lines {
					t.Fatalf("SafeText(%q, %d) = %q holds %U", s, mode, out, r)
				}
			case hidden(r):
				t.Fatalf("SafeText(%q, %d) = %q holds %U", s, mode, out, r)
			}
		}
		if n := utf8.RuneCountInString(out); max > 0 && n > max {
			t.Fatalf("SafeText(%q, %d, %d) = %q: %d characters", s, mode, max, out, n)
		}
		if again := SafeText(out, mode, max); again != out {
			t.Fatalf("SafeText is not idempotent: %q -> %q -> %q", s, out, again)
		}
		safe := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return hidden(r) || ((r == '\n' || r == '\t') && mode != Lines)
		})
		if safe && (max <= 0 || utf8.RuneCountInString(s) <= max) && out != s {
			t.Fatalf("SafeText(%q, %d, %d) = %q changed safe text", s, mode, max, out)
		}
	})
}
