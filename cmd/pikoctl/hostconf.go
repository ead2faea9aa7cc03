package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file edits MCP hosts' configuration files in place, as text: a
// value is replaced, a member inserted or removed by changing only its
// bytes, so every other entry, key, comment and the file's layout stay as
// they were. Re-serializing the whole file would lose comments and order.
// After each change the old and new files are decoded and compared: a
// change that would alter anything but the entry it meant to is refused.

// errUnsafeEdit is returned when the semantic check after an edit fails.
var errUnsafeEdit = errors.New("the edit would change more than the entry (this file's layout is not one pikoctl can edit safely): nothing was written; edit the file by hand")

// textEdit replaces src[start:end] with text.
type textEdit struct {
	start, end int
	text       string
}

// applyEdits applies disjoint edits to src.
func applyEdits(src []byte, edits []textEdit) []byte {
	slices.SortFunc(edits, func(a, b textEdit) int { return a.start - b.start })
	var out []byte
	at := 0
	for _, e := range edits {
		out = append(out, src[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, src[at:]...)
}

// posError is a syntax error at a line and column (both from 1; the
// column counts characters).
type posError struct {
	line, col int
	msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg) }

func lineCol(src []byte, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + bytes.Count(src[:off], []byte("\n"))
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	return line, utf8.RuneCount(src[ls:off]) + 1
}

// newline is the file's line break: CRLF if its first line ends so.
func newline(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// lineIndent is the run of spaces and tabs that starts the line holding off.
func lineIndent(src []byte, off int) string {
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	i := ls
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[ls:i])
}

// startsLine reports whether only spaces and tabs precede off on its line,
// and returns where the line starts.
func startsLine(src []byte, off int) (int, bool) {
	i := off
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
		i--
	}
	return i, i == 0 || src[i-1] == '\n'
}

// ---- the bridge entry ----

// isBridgeEntry reports whether an entry runs pikod's bridge: its command
// is a pikoctl binary and its arguments hold "mcp serve".
func isBridgeEntry(command string, args []string) bool {
	if !strings.HasPrefix(filepath.Base(command), "pikoctl") {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "mcp" && args[i+1] == "serve" {
			return true
		}
	}
	return false
}

// bridgeSkipReason is why 'mcp import' skips a bridge entry.
const bridgeSkipReason = "this is pikod's own bridge ('pikoctl mcp serve', written by 'pikoctl mcp install'): importing it would make pikod run itself"

// ---- showing a change ----

// fileDiff renders the change from old to new as unified-diff hunks with
// two lines of context, each line cleaned for the terminal and every
// string in hide replaced by a placeholder.
func fileDiff(oldText, newText []byte, hide []string) string {
	split := func(b []byte) []string {
		s := strings.Split(string(b), "\n")
		if len(s) > 0 && s[len(s)-1] == "" {
			s = s[:len(s)-1]
		}
		return s
	}
	a, b := split(oldText), split(newText)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	// ops over the middle: ' ' kept, '-' old only, '+' new only.
	type op struct {
		kind byte
		text string
	}
	// trust.go's lineDiff marks each line "  ", "- " or "+ ".
	var ops []op
	for _, l := range lineDiff(ma, mb) {
		ops = append(ops, op{l[0], l[2:]})
	}
	if len(ops) == 0 {
		return ""
	}
	// The whole file as ops, then hunks around the changes.
	var all []op
	for _, l := range a[:pre] {
		all = append(all, op{' ', l})
	}
	all = append(all, ops...)
	for _, l := range a[len(a)-suf:] {
		all = append(all, op{' ', l})
	}
	const ctx = 2
	var out strings.Builder
	oldLine, newLine := make([]int, len(all)+1), make([]int, len(all)+1)
	oldLine[0], newLine[0] = 1, 1
	for k, o := range all {
		oldLine[k+1], newLine[k+1] = oldLine[k], newLine[k]
		if o.kind != '+' {
			oldLine[k+1]++
		}
		if o.kind != '-' {
			newLine[k+1]++
		}
	}
	for k := 0; k < len(all); {
		if all[k].kind == ' ' {
			k++
			continue
		}
		from := max(0, k-ctx)
		to := k
		for to < len(all) {
			if all[to].kind != ' ' {
				to++
				continue
			}
			run := to
			for run < len(all) && all[run].kind == ' ' {
				run++
			}
			if run == len(all) || run-to > 2*ctx {
				to = min(to+ctx, len(all))
				break
			}
			to = run
		}
		oldN, newN := 0, 0
		for _, o := range all[from:to] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
		}
		// An empty side starts at the line before it, as in diff -u.
		oldAt, newAt := oldLine[from], newLine[from]
		if oldN == 0 {
			oldAt--
		}
		if newN == 0 {
			newAt--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", oldAt, oldN, newAt, newN)
		for _, o := range all[from:to] {
			text := o.text
			for _, h := range hide {
				text = strings.ReplaceAll(text, h, "<credential, not shown>")
			}
			out.WriteByte(o.kind)
			out.WriteString(cleanLines(strings.TrimSuffix(text, "\r")))
			out.WriteByte('\n')
		}
		k = to
	}
	return out.String()
}

// adopt makes next an editor's source when parse accepts it; otherwise the
// source and what parse made of it stay as they were, and the edit is
// unsafe.
func adopt(src *[]byte, next []byte, parse func() error) error {
	old := *src
	*src = next
	if err := parse(); err != nil {
		*src = old
		_ = parse()
		return errUnsafeEdit
	}
	return nil
}
