package approvals

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisibleText(t *testing.T) {
	tests := []struct {
		in, want string
		lines    bool
	}{
		{"plain text", "plain text", false},
		{"\x1b[31mred\x1b[0m", `\u{001B}[31mred\u{001B}[0m`, false},
		{"\x1b]0;title\x07x", `\u{001B}]0;title\u{0007}x`, false},
		{"\u009b31m", `\u{009B}31m`, false},             // C1 CSI
		{"abc\u202Edcba", `abc\u{202E}dcba`, false},     // right-to-left override
		{"a\u2066b\u2069", `a\u{2066}b\u{2069}`, false}, // isolates
		{"zero\u200Bwidth\u200D\uFEFF", `zero\u{200B}width\u{200D}\u{FEFF}`, false},
		{"line\nnext\ttab", `line\u{000A}next\u{0009}tab`, false},
		{"line\nnext\ttab", "line\nnext\ttab", true},
		{"para\u2029sep", `para\u{2029}sep`, true},
		{`a\u{202E}b`, `a\\u{202E}b`, false}, // a literal lookalike stays distinguishable
		{"bad\xffbyte", `bad\x{FF}byte`, false},
		{"日本語 é 🙂", "日本語 é 🙂", false},
		{"hangul\u3164filler", `hangul\u{3164}filler`, false},
	}
	for _, tt := range tests {
		if got := VisibleText(tt.in, tt.lines); got != tt.want {
			t.Errorf("VisibleText(%q, %v) = %q, want %q", tt.in, tt.lines, got, tt.want)
		}
	}
}

func FuzzVisibleText(f *testing.F) {
	for _, s := range []string{"", "\x1b[2J", "a\u202Eb", "\xff\xfe", "\u200B", "x\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := VisibleText(s, false)
		if !utf8.ValidString(out) {
			t.Fatalf("VisibleText(%q) is not valid UTF-8", s)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202E' || r == '\u200B' {
				t.Fatalf("VisibleText(%q) = %q still holds %U", s, out, r)
			}
		}
		if strings.ContainsRune(s, '\\') && !strings.Contains(out, `\\`) {
			t.Fatalf("VisibleText(%q) = %q: backslash not escaped", s, out)
		}
	})
}
