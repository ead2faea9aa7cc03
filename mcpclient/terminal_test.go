package mcpclient

import (
	"testing"
	"unicode/utf8"
)

func TestSanitizeTerminal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\n", "plain text\n"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPdcs\x1b\\ok", "ok"},
		{"a\x1b(Bb", "ab"},
		{"a\x1b7b\x1b8", "ab"},
		{"bell\x07 bs\x08 cr\r del\x7f", "bell bs cr del"},
		{"\xc2\x9b2Jx\xc2\x85y", "xy"},
		{"ok\xff\xfe", "ok"},
		{"h\u202eidden\u2066", "hidden"},
		{"héllo 世界 🙂", "héllo 世界 🙂"},
		{"tail\x1b[", "tail"},
		{"\x1b]unterminated", ""},
	}
	for _, tt := range tests {
		if got := SanitizeTerminal([]byte(tt.in)); got != tt.want {
			t.Errorf("SanitizeTerminal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSanitizeTerminal(f *testing.F) {
	f.Add([]byte("\x1b[31mred\x1b]0;t\x07\xc2\x9b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := SanitizeTerminal(b)
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 from %q", b)
		}
		for _, r := range s {
			if r == 0x1b || r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
				t.Fatalf("control %U left in %q", r, s)
			}
		}
	})
}
