package contracts

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
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
		// Default-ignorable and invisible code points (issue 18, item 8).
		{"sent\ufe0f exactly\U000E0100 as\u034f shown\u17b4\u17b5", OneLine, 0,
			`sent\u{FE0F} exactly\u{E0100} as\u{034F} shown\u{17B4}\u{17B5}`},
		{"mongol\u180b\u180f hangul\u115f\u1160\uffa0", OneLine, 0, `mongol\u{180B}\u{180F} hangul\u{115F}\u{1160}\u{FFA0}`},
		{"nbsp\u00a0thin\u2009ideo\u3000braille\u2800", OneLine, 0, `nbsp\u{00A0}thin\u{2009}ideo\u{3000}braille\u{2800}`},
		{"pua\ue000 nonchar\ufdd0\uffff unassigned\U000E0080\U0003FFFD", OneLine, 0,
			`pua\u{E000} nonchar\u{FDD0}\u{FFFF} unassigned\u{E0080}\u{3FFFD}`},
		{"emoji ❤️ keeps its heart", OneLine, 0, `emoji ❤\u{FE0F} keeps its heart`},
		{"décomposé e\u0301 and 日本語 and العربية stay", OneLine, 0, "décomposé e\u0301 and 日本語 and العربية stay"},
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
	f.Add("a\ufe0fb\U000E0100c\u034fd\u17b4e\u00a0f\ue000", byte(1), 0)
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
			case hidden(r), defaultIgnorable(r):
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

// defaultIgnorable is Unicode 15's Default_Ignorable_Code_Point, written
// out from DerivedCoreProperties.txt: an oracle independent of hidden's
// use of the unicode package's tables.
func defaultIgnorable(r rune) bool {
	for _, rg := range [][2]rune{
		{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160},
		{0x17B4, 0x17B5}, {0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E},
		{0x2060, 0x206F}, {0x3164, 0x3164}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF},
		{0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
		{0xE0000, 0xE0FFF},
	} {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// TestSafeTextDefaultIgnorable: every default-ignorable code point, alone
// and between letters, comes out rendered as \u{XXXX}, never as itself.
func TestSafeTextDefaultIgnorable(t *testing.T) {
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !defaultIgnorable(r) {
			continue
		}
		n++
		want := fmt.Sprintf(`a\u{%04X}b`, r)
		if got := SafeText("a"+string(r)+"b", OneLine, 0); got != want {
			t.Errorf("SafeText(a %U b) = %q, want %q", r, got, want)
		}
	}
	if n < 4000 {
		t.Fatalf("only %d default-ignorable code points checked", n)
	}
}
