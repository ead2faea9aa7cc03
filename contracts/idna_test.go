package contracts

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHostASCII(t *testing.T) {
	tests := []struct {
		in, want string
		changed  bool
	}{
		{"accounts.google.com", "accounts.google.com", false},
		{"аccounts.google.com", "xn--ccounts-1fg.google.com", true}, // Cyrillic а
		{"bücher.example", "xn--bcher-kva.example", true},
		{"MÜNCHEN.de", "xn--mnchen-3ya.de", true},
		{"пример.рф", "xn--e1afmkfd.xn--p1ai", true},
		{"аррӏе.com", "xn--80ak6aa92e.com", true},
		{"例え.jp", "xn--r8jz45g.jp", true},
		{"☃.net", "xn--n3h.net", true},
	}
	for _, tc := range tests {
		got, changed, err := HostASCII(tc.in)
		if err != nil || got != tc.want || changed != tc.changed {
			t.Errorf("HostASCII(%q) = %q, %v, %v; want %q, %v", tc.in, got, changed, err, tc.want, tc.changed)
		}
		if back, _ := HostUnicode(got); back != strings.ToLower(tc.in) {
			t.Errorf("HostUnicode(%q) = %q, want %q", got, back, strings.ToLower(tc.in))
		}
	}
	// RFC 3492 section 7.1 (A) Arabic (Egyptian), (L) 3年B組金八先生.
	for in, want := range map[string]string{
		"\u0644\u064A\u0647\u0645\u0627\u0628\u062A\u0643\u0644\u0645\u0648\u0634\u0639\u0631\u0628\u064A\u061F": "egbpdaj6bu4bxfgehfvwxn",
		"3年b組金八先生": "3b-ww4c5e180e575a65lsy2b",
	} {
		if got, err := punyEncode([]rune(in)); err != nil || got != want {
			t.Errorf("punyEncode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, changed := HostUnicode("xn--ccounts-1fg.google.com"); !changed || got != "аccounts.google.com" {
		t.Errorf("HostUnicode(xn--ccounts-1fg.google.com) = %q, %v", got, changed)
	}
	if got, changed := HostUnicode("xn--!!.com"); changed || got != "xn--!!.com" {
		t.Errorf("HostUnicode of a bad label = %q, %v; want it kept", got, changed)
	}
}

func TestMixedScripts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"accounts.google.com", nil},
		{"аccounts.google.com", []string{"Cyrillic", "Latin"}},
		{"аррӏе.com", []string{"Cyrillic", "Latin"}},
		{"пример.рф", nil},
		{"例え.jp", nil},
		{"bücher.example", nil},
		{"pαypal.com", []string{"Greek", "Latin"}},
		{"123-456.com", nil},
	}
	for _, tc := range tests {
		if got := MixedScripts(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("MixedScripts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzPunycode: any label of valid UTF-8 encodes to ASCII that decodes
// back to the label (lowercased); decoding any input never panics and
// never yields invalid code points.
func FuzzPunycode(f *testing.F) {
	f.Add("аccounts")
	f.Add("bücher")
	f.Add("3年b組金八先生")
	f.Add("ccounts-1fg")
	f.Add("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		if dec, err := punyDecode(s); err == nil {
			for _, r := range dec {
				if !utf8.ValidRune(r) {
					t.Fatalf("punyDecode(%q) yields %U", s, r)
				}
			}
		}
		if !utf8.ValidString(s) || strings.Contains(s, ".") || utf8.RuneCountInString(s) > maxLabelRunes {
			return
		}
		in := []rune(s)
		enc, err := punyEncode(in)
		if err != nil {
			t.Fatalf("punyEncode(%q): %v", s, err)
		}
		if !isASCII(enc) {
			t.Fatalf("punyEncode(%q) = %q is not ASCII", s, enc)
		}
		dec, err := punyDecode(enc)
		if err != nil || string(dec) != s {
			t.Fatalf("punyDecode(punyEncode(%q) = %q) = %q, %v", s, enc, string(dec), err)
		}
	})
}
