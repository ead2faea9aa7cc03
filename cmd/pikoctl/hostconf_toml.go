package main

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML half of the host configuration editor (hostconf.go), for
// Codex's config.toml: a line scanner for table headers, and tomlEditor,
// which changes one [mcp_servers.NAME] table by editing only its lines.

// tomlLine is one physical line of a TOML file.
type tomlLine struct {
	start, end int // the line's bytes, its line break included
	kind       byte
	path       []string // the key path of a [table] or [[array]] header
}

const (
	tomlBlank   = 'b'
	tomlComment = '#'
	tomlHeader  = '['
	tomlOther   = 'o'
)

// scanTOMLLines classifies the lines of a valid TOML file, following
// multi-line strings and arrays so that a line inside one is never taken
// for a header.
func scanTOMLLines(src []byte) []tomlLine {
	var lines []tomlLine
	const (
		none = iota
		mlBasic
		mlLiteral
	)
	state, depth := none, 0
	for ls := 0; ls < len(src); {
		le := bytes.IndexByte(src[ls:], '\n')
		if le < 0 {
			le = len(src)
		} else {
			le += ls + 1
		}
		line := src[ls:le]
		l := tomlLine{start: ls, end: le, kind: tomlOther}
		trimmed := bytes.TrimLeft(line, " \t")
		clean := state == none && depth == 0
		switch {
		case clean && len(bytes.TrimSpace(trimmed)) == 0:
			l.kind = tomlBlank
		case clean && trimmed[0] == '#':
			l.kind = tomlComment
		case clean && trimmed[0] == '[':
			l.kind = tomlHeader
			l.path = parseTOMLHeader(trimmed)
		}
		if l.kind == tomlOther {
			// Follow strings and brackets through the line.
			for i := 0; i < len(line); i++ {
				c := line[i]
				switch state {
				case mlBasic:
					if c == '\\' {
						i++
					} else if bytes.HasPrefix(line[i:], []byte(`"""`)) {
						i += 2
						for i+1 < len(line) && line[i+1] == '"' {
							i++
						}
						state = none
					}
					continue
				case mlLiteral:
					if bytes.HasPrefix(line[i:], []byte(`'''`)) {
						i += 2
						for i+1 < len(line) && line[i+1] == '\'' {
							i++
						}
						state = none
					}
					continue
				}
				switch {
				case c == '#':
					i = len(line)
				case bytes.HasPrefix(line[i:], []byte(`"""`)):
					state, i = mlBasic, i+2
				case bytes.HasPrefix(line[i:], []byte(`'''`)):
					state, i = mlLiteral, i+2
				case c == '"':
					for i++; i < len(line) && line[i] != '"'; i++ {
						if line[i] == '\\' {
							i++
						}
					}
				case c == '\'':
					for i++; i < len(line) && line[i] != '\''; i++ {
					}
				case c == '[' || c == '{':
					depth++
				case c == ']' || c == '}':
					depth--
				}
			}
		}
		lines = append(lines, l)
		ls = le
	}
	return lines
}

// parseTOMLHeader reads the key path of "[a.b]" or "[[a.b]]".
func parseTOMLHeader(line []byte) []string {
	s := string(line)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "["), "[")
	var path []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return path
		}
		var key string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return path
			}
			key = s[1:end]
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				key = u
			}
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return path
			}
			key, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && (s[end] == '_' || s[end] == '-' || s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z' || s[end] >= '0' && s[end] <= '9') {
				end++
			}
			if end == 0 {
				return path
			}
			key, s = s[:end], s[end:]
		}
		path = append(path, key)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path
		}
		s = s[1:]
	}
}

// tomlEditor edits the [mcp_servers.NAME] tables of a Codex config.toml.
type tomlEditor struct {
	src   []byte
	doc   map[string]any
	lines []tomlLine
}

func newTOMLEditor(src []byte) (*tomlEditor, error) {
	ed := &tomlEditor{src: src}
	if err := ed.parse(); err != nil {
		return nil, err
	}
	return ed, nil
}

func decodeTOML(src []byte) (map[string]any, error) {
	doc := map[string]any{}
	if _, err := toml.Decode(string(src), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if msg == "" {
				msg = pe.Error()
			}
			return nil, &posError{line: pe.Position.Line, col: max(pe.Position.Col, 1), msg: msg}
		}
		return nil, err
	}
	return doc, nil
}

func (ed *tomlEditor) parse() error {
	doc, err := decodeTOML(ed.src)
	if err != nil {
		return err
	}
	if v, ok := doc["mcp_servers"]; ok {
		if _, isTable := v.(map[string]any); !isTable {
			return errors.New("mcp_servers is not a table of named servers ([mcp_servers.NAME])")
		}
	}
	ed.doc = doc
	ed.lines = scanTOMLLines(ed.src)
	return nil
}

func (ed *tomlEditor) bytes() []byte { return ed.src }

func (ed *tomlEditor) servers() map[string]any {
	m, _ := ed.doc["mcp_servers"].(map[string]any)
	return m
}

// blocks returns the line ranges [from, to) of the tables that make up
// server name: [mcp_servers.NAME] and its sub-tables. Comment and blank
// lines that end a range belong to what follows (they usually describe
// the next table), so they are not part of it.
func (ed *tomlEditor) blocks(match func(path []string) bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(ed.lines); i++ {
		if ed.lines[i].kind != tomlHeader || !match(ed.lines[i].path) {
			continue
		}
		j := i + 1
		for j < len(ed.lines) && ed.lines[j].kind != tomlHeader {
			j++
		}
		k := j
		if j < len(ed.lines) {
			for k-1 > i && (ed.lines[k-1].kind == tomlBlank || ed.lines[k-1].kind == tomlComment) {
				k--
			}
		}
		out = append(out, [2]int{i, k})
		i = j - 1
	}
	return out
}

func serverPath(name string) func([]string) bool {
	return func(p []string) bool { return len(p) >= 2 && p[0] == "mcp_servers" && p[1] == name }
}

func (ed *tomlEditor) lineOff(i int) int {
	if i >= len(ed.lines) {
		return len(ed.src)
	}
	return ed.lines[i].start
}

func (ed *tomlEditor) blockText(b [2]int) string {
	return string(ed.src[ed.lineOff(b[0]):ed.lineOff(b[1])])
}

func (ed *tomlEditor) entries() ([]hostEntry, error) {
	servers := ed.servers()
	var out []hostEntry
	for _, name := range sortedKeys(servers) {
		e := hostEntry{Name: name, Value: servers[name]}
		if m, ok := servers[name].(map[string]any); ok {
			e.Command, _ = m["command"].(string)
			if list, ok := m["args"].([]any); ok {
				for _, a := range list {
					s, _ := a.(string)
					e.Args = append(e.Args, s)
				}
			}
		}
		var raw strings.Builder
		for _, b := range ed.blocks(serverPath(name)) {
			raw.WriteString(ed.blockText(b))
		}
		e.Raw, e.Editable = raw.String(), raw.Len() > 0
		out = append(out, e)
	}
	return out, nil
}

var tomlBareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if tomlBareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlBlock is a [mcp_servers.NAME] table running command with args.
func tomlBlock(name, command string, args []string, nl string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = tomlString(a)
	}
	return "[mcp_servers." + tomlKey(name) + "]" + nl +
		"command = " + tomlString(command) + nl +
		"args = [" + strings.Join(q, ", ") + "]" + nl
}

func (ed *tomlEditor) commit(next []byte, mutate func(servers map[string]any)) error {
	before, err := decodeTOML(ed.src)
	if err != nil {
		return err
	}
	servers, ok := before["mcp_servers"].(map[string]any)
	if !ok {
		servers = map[string]any{}
		before["mcp_servers"] = servers
	}
	mutate(servers)
	after, err := decodeTOML(next)
	if _, kept := after["mcp_servers"]; !kept && len(servers) == 0 {
		delete(before, "mcp_servers") // the last server's table went with it
	}
	if err != nil || !reflect.DeepEqual(before, after) {
		return errUnsafeEdit
	}
	return adopt(&ed.src, next, ed.parse)
}

// insertAt is where a new server table goes: after the last mcp_servers
// table, else at the end of the file.
func (ed *tomlEditor) insertAt() int {
	all := ed.blocks(func(p []string) bool { return len(p) >= 1 && p[0] == "mcp_servers" })
	if len(all) == 0 {
		return len(ed.lines)
	}
	return all[len(all)-1][1]
}

// insertBlock returns the edit that puts block at line index at, with a
// blank line on each side.
func (ed *tomlEditor) insertBlock(at int, block string) textEdit {
	nl := newline(ed.src)
	off := ed.lineOff(at)
	text := block
	if !strings.HasSuffix(text, "\n") {
		text += nl
	}
	if off > 0 {
		if ed.src[off-1] != '\n' {
			text = nl + nl + text
		} else if at > 0 && ed.lines[at-1].kind != tomlBlank {
			text = nl + text
		}
	}
	if at < len(ed.lines) && ed.lines[at].kind != tomlBlank {
		text += nl
	}
	return textEdit{off, off, text}
}

// removeEdits removes the line ranges bs, and a blank line left doubled.
func (ed *tomlEditor) removeEdits(bs [][2]int) []textEdit {
	var edits []textEdit
	for _, b := range bs {
		from, to := b[0], b[1]
		blankBefore := from > 0 && ed.lines[from-1].kind == tomlBlank
		switch {
		case to < len(ed.lines) && ed.lines[to].kind == tomlBlank && (from == 0 || blankBefore):
			to++
		case to >= len(ed.lines) && blankBefore:
			from--
		}
		edits = append(edits, textEdit{ed.lineOff(from), ed.lineOff(to), ""})
	}
	return edits
}

func (ed *tomlEditor) set(name, command string, args []string) error {
	block := tomlBlock(name, command, args, newline(ed.src))
	want, err := decodeTOML([]byte(block))
	if err != nil {
		return err
	}
	return ed.setText(name, block, want["mcp_servers"].(map[string]any)[name])
}

func (ed *tomlEditor) restore(name, raw string) error {
	doc, err := decodeTOML([]byte(raw))
	if err != nil {
		return fmt.Errorf("the recorded entry %q is not valid TOML: %w", name, err)
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	want, ok := servers[name]
	if !ok {
		return fmt.Errorf("the recorded entry %q does not define [mcp_servers.%s]", name, tomlKey(name))
	}
	return ed.setText(name, raw, want)
}

func (ed *tomlEditor) setText(name, block string, want any) error {
	mutate := func(servers map[string]any) { servers[name] = want }
	bs := ed.blocks(serverPath(name))
	if _, exists := ed.servers()[name]; exists && len(bs) == 0 {
		return fmt.Errorf("server %q is written as an inline table or dotted keys, which pikoctl does not edit: rewrite it as a [mcp_servers.%s] table or remove it by hand", name, tomlKey(name))
	}
	if len(bs) == 0 {
		return ed.commit(applyEdits(ed.src, []textEdit{ed.insertBlock(ed.insertAt(), block)}), mutate)
	}
	// Replace the first table in place; drop the sub-tables elsewhere.
	edits := []textEdit{{ed.lineOff(bs[0][0]), ed.lineOff(bs[0][1]), block}}
	edits = append(edits, ed.removeEdits(bs[1:])...)
	return ed.commit(applyEdits(ed.src, edits), mutate)
}

func (ed *tomlEditor) remove(name string) error {
	bs := ed.blocks(serverPath(name))
	if _, exists := ed.servers()[name]; exists && len(bs) == 0 {
		return fmt.Errorf("server %q is written as an inline table or dotted keys, which pikoctl does not edit: remove it by hand", name)
	}
	if len(bs) == 0 {
		return nil
	}
	return ed.commit(applyEdits(ed.src, ed.removeEdits(bs)), func(servers map[string]any) { delete(servers, name) })
}
