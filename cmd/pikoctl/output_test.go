package main

import (
	"strings"
	"testing"
)

func TestJSONObject(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "{}", ""},
		{" \n\t", "{}", ""},
		{` {"a": [1, 2]} ` + "\n", `{"a": [1, 2]}`, ""},
		{"[]", "", "got an array"},
		{`"x"`, "", "got a string"},
		{"null", "", "got null"},
		{"42", "", "got a number"},
		{"{", "", "parsing params"},
		{`{"a":1} {"b":2}`, "", "parsing params"},
	}
	for _, tt := range tests {
		got, err := jsonObject([]byte(tt.in), "params")
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("jsonObject(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || string(got) != tt.want):
			t.Errorf("jsonObject(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestReadInputLimit(t *testing.T) {
	if _, err := readInput(strings.NewReader(strings.Repeat(" ", maxInput)), "stdin"); err != nil {
		t.Errorf("readInput at the limit: %v", err)
	}
	if _, err := readInput(strings.NewReader(strings.Repeat(" ", maxInput+1)), "stdin"); err == nil || !strings.Contains(err.Error(), "larger than 8 MiB") {
		t.Errorf("readInput over the limit: %v, want a size error", err)
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"two\nlines\r\tand tab", "two lines  and tab"},
		{"\x1b[31mred\x1b[0m", `\u{001B}[31mred\u{001B}[0m`},
		{"bidi \u202eevil\u202c", `bidi \u{202E}evil\u{202C}`},
		{"bad utf8 \xff!", "bad utf8 \uFFFD!"},
		{"ünïcödé ok", "ünïcödé ok"},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := cleanLines("a\x1b\nb"); got != "a\\u{001B}\nb" {
		t.Errorf("cleanLines(%q) = %q", "a\x1b\nb", got)
	}
	if got := clip("eleven char", 10); got != "eleven ch…" {
		t.Errorf("clip = %q", got)
	}
}
