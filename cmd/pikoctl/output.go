package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

// maxInput bounds what pikoctl reads from a file or stdin: the daemon's
// frame limit, so anything larger could never be sent anyway.
const maxInput = 8 << 20

// readInput reads all of r, refusing more than maxInput bytes. what names
// the input in errors.
func readInput(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(b) > maxInput {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInputTooLarge,
			"reading %s: larger than %d MiB, the daemon's message limit", what, maxInput>>20)
	}
	return b, nil
}

// jsonObject checks that b holds exactly one JSON object and returns it
// trimmed, byte for byte otherwise, so the daemon sees what the user wrote.
// Empty input means {}. A syntax error names its line and column and
// shows the text around it: only for input that holds no secret (a
// settings file, a command-line argument); jsonObjectPrivate is the one
// for the rest.
func jsonObject(b []byte, what string) (json.RawMessage, error) {
	return parseObject(b, what, true)
}

// jsonObjectPrivate is jsonObject for input that may hold secrets
// (arguments and params on stdin): a syntax error says where, never what.
func jsonObjectPrivate(b []byte, what string) (json.RawMessage, error) {
	return parseObject(b, what, false)
}

func parseObject(b []byte, what string, quote bool) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		msg := jsonSyntax(b, err, quote)
		if !quote {
			msg += " (the text is not shown: it may hold secrets)"
		}
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidJSON, "parsing %s: %s", what, msg)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidJSON, "parsing %s: want a JSON object {...}, got %s", what, jsonKind(v))
	}
	return json.RawMessage(b), nil
}

// jsonSyntax describes err, json.Unmarshal's error for b, by line and
// column. With quote it keeps the decoder's words (which quote the
// offending character) and adds the line around the error with a caret
// under it; without, it quotes nothing of b.
func jsonSyntax(b []byte, err error, quote bool) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if quote {
			return err.Error()
		}
		return "not valid JSON"
	}
	// Offset counts the bytes read, the offending one included; input
	// that ends too early is reported at its end.
	eof := se.Error() == "unexpected end of JSON input"
	pos := min(int(se.Offset), len(b))
	if !eof && pos > 0 {
		pos--
	}
	line := 1 + bytes.Count(b[:pos], []byte("\n"))
	start := bytes.LastIndexByte(b[:pos], '\n') + 1
	col := 1 + utf8.RuneCount(b[start:pos])
	where := fmt.Sprintf("line %d, column %d", line, col)
	if !quote {
		if eof {
			return where + ": the input ends too early (close every object, list and string)"
		}
		return where + ": syntax error"
	}
	msg := where + ": " + se.Error()
	end := len(b)
	if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
		end = pos + i
	}
	before, after := []rune(string(b[start:pos])), []rune(string(b[pos:end]))
	const context = 40
	lead, tail := "", ""
	if len(before) > context {
		before, lead = before[len(before)-context:], "…"
	}
	if len(after) > context {
		after, tail = after[:context], "…"
	}
	shown := func(r []rune) string { return clean(strings.ReplaceAll(string(r), "\t", " ")) }
	prefix := fmt.Sprintf("  %d | ", line)
	head := lead + shown(before)
	msg += "\n" + prefix + head + shown(after) + tail
	msg += "\n" + strings.Repeat(" ", utf8.RuneCountInString(prefix)-2) + "| " + strings.Repeat(" ", utf8.RuneCountInString(head)) + "^"
	return msg
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// printRaw prints a JSON value exactly as the daemon sent it.
func printRaw(w io.Writer, raw json.RawMessage) error {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	_, err := fmt.Fprintf(w, "%s\n", raw)
	return err
}

// printJSON prints v encoded as JSON on one line.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return printRaw(w, b)
}

// printIndentedJSON prints v encoded as JSON indented by two spaces, for
// a report a person reads as well as a program.
func printIndentedJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// clean makes text that came from the daemon (and possibly from an MCP
// server behind it) safe for a terminal on one line, with the one
// sanitiser every side uses (contracts.SafeText): a hostile server cannot
// move the cursor, restyle or reorder what the owner reads.
func clean(s string) string { return contracts.SafeText(s, contracts.OneLine, 0) }

// cleanLines is clean keeping line breaks and tabs.
func cleanLines(s string) string { return contracts.SafeText(s, contracts.Lines, 0) }

// clip is clean bounded to n characters (counted after rendering).
func clip(s string, n int) string { return contracts.SafeText(s, contracts.OneLine, n) }

// tableOut returns the writer for a command whose output is mostly a
// table: with --wide nothing is clipped; on a terminal each line is cut
// to the terminal's width (marked with "…"); into a pipe the columns keep
// their fixed clip widths.
func (a *app) tableOut() *errWriter {
	w := &errWriter{w: a.stdout, wide: a.wide, now: time.Now()}
	if !a.wide && a.termWidth != nil {
		if n := a.termWidth(); n > 0 {
			w.w = &fitWriter{w: a.stdout, width: n}
		}
	}
	return w
}

// clip clips s to n characters, unless the table is --wide.
func (b *errWriter) clip(s string, n int) string {
	if b.wide {
		return clean(s)
	}
	return clip(s, n)
}

// caller renders who asked for a table cell: the kernel's executable
// name and pid and the declared name; --wide shows all of it.
func (b *errWriter) caller(c contracts.Caller) string {
	if b.wide {
		return c.Describe()
	}
	return clip(c.Short(), 44)
}

// when renders an RFC 3339 time as an age ("3m ago"); --wide adds the
// time itself.
func (b *errWriter) when(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return clean(ts)
	}
	now := b.now
	if now.IsZero() {
		now = time.Now()
	}
	age := relativeAge(now.Sub(t))
	if b.wide {
		return t.UTC().Format(time.RFC3339) + " (" + age + ")"
	}
	return age
}

// relativeAge says how long ago d was, in the largest whole unit.
func relativeAge(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// fitWriter cuts every line written through it to width characters,
// marking a cut line with "…". Text reaching it is already made safe
// (no escape sequences), so one rune is one column except for wide ones.
type fitWriter struct {
	w     io.Writer
	width int
	col   int
}

func (f *fitWriter) Write(p []byte) (int, error) {
	var out []byte
	for _, r := range string(p) {
		switch {
		case r == '\n':
			out = append(out, '\n')
			f.col = 0
		case f.col < f.width-1:
			out = utf8.AppendRune(out, r)
			f.col++
		case f.col == f.width-1:
			out = append(out, "…"...)
			f.col++
		}
	}
	if _, err := f.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// short is a digest or fingerprint cut to its first 12 characters.
func short(s string) string { return clip(s, 12) }
