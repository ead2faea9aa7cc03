package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
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

func TestFitWriter(t *testing.T) {
	var b bytes.Buffer
	f := &fitWriter{w: &b, width: 10}
	// Written in pieces, as tabwriter and fmt do.
	for _, s := range []string{"short\n", "exactly 10", "\n", "a much longer line than ten", "\nnext\n"} {
		if _, err := f.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	want := "short\nexactly 1…\na much lo…\nnext\n"
	if b.String() != want {
		t.Errorf("fitWriter wrote %q, want %q", b.String(), want)
	}
}

func TestRelativeAge(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Second, "5s ago"},
		{3*time.Minute + 59*time.Second, "3m ago"},
		{5 * time.Hour, "5h ago"},
		{47 * time.Hour, "47h ago"},
		{72 * time.Hour, "3d ago"},
		{-2 * time.Minute, "in 2m"},
	} {
		if got := relativeAge(tt.d); got != tt.want {
			t.Errorf("relativeAge(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	w := &errWriter{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if got := w.when("2026-01-02T03:00:05Z"); got != "4m ago" {
		t.Errorf("when = %q, want 4m ago", got)
	}
	w.wide = true
	if got := w.when("2026-01-02T03:00:05Z"); got != "2026-01-02T03:00:05Z (4m ago)" {
		t.Errorf("wide when = %q", got)
	}
	if got := w.clip(strings.Repeat("x", 100), 10); len(got) != 100 {
		t.Errorf("--wide clipped a cell to %d characters", len(got))
	}
}

// TestJSONSyntax: syntax errors are placed by line and column (at the
// offending character, or at the end for input cut short), and only the
// quoting form shows the text.
func TestJSONSyntax(t *testing.T) {
	for _, tt := range []struct {
		in, where, excerpt string
	}{
		{`{"a": x}`, "line 1, column 7", "  1 | {\"a\": x}\n    |       ^"},
		{"{\n  \"a\": 1,\n  \"b\" 2}", "line 3, column 7", "  3 |   \"b\" 2}\n    |       ^"},
		{`{"a": "é" x}`, "line 1, column 11", "    |           ^"},
		{"{\"a\": [1,\n", "line 2, column 1", "  2 | \n    | ^"},
		{`{"a":1}x`, "line 1, column 8", "    |        ^"},
	} {
		var v any
		err := json.Unmarshal([]byte(tt.in), &v)
		got := jsonSyntax([]byte(tt.in), err, true)
		if !strings.HasPrefix(got, tt.where+": ") || !strings.Contains(got, tt.excerpt) {
			t.Errorf("jsonSyntax(%q) = %q, want %s and %q", tt.in, got, tt.where, tt.excerpt)
		}
		private := jsonSyntax([]byte(tt.in), err, false)
		if !strings.HasPrefix(private, tt.where+": ") || strings.Contains(private, "|") || strings.Contains(private, "'") {
			t.Errorf("jsonSyntax(%q, private) = %q, want %s and nothing of the text", tt.in, private, tt.where)
		}
	}
}
