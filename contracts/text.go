package contracts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextMode says what SafeText does with line breaks and tabs.
type TextMode int

const (
	// OneLine turns each newline, tab and carriage return (a CR LF pair
	// counts as one) into a space: messages and table cells.
	OneLine TextMode = iota
	// Lines keeps newlines and tabs; a CR LF pair becomes a newline and a
	// lone CR is rendered: stderr tails, descriptions, argument text.
	Lines
	// Exact renders newlines, tabs and carriage returns too: names that
	// must read as exactly one token (servers, tools).
	Exact
)

// SafeText makes untrusted text (from MCP servers, their processes, or
// anything that repeated them) safe and honest to show on a terminal. It
// is the one sanitiser for every side: the daemon (stderr tails, errors,
// approval reviews) and pikoctl use it alike.
//
//   - Every character that could act on a terminal or hide, reorder or
//     restyle text, or that does not show as itself, is rendered visibly as
//     \u{XXXX} (hex): C0 and C1 control characters and DEL (ESC with them,
//     so every ANSI CSI, OSC and DCS sequence loses its effect and shows as
//     text); Unicode format characters (bidirectional controls, zero-width
//     characters, soft hyphen, tag characters); every other default-ignorable
//     code point (variation selectors U+FE00–FE0F and U+E0100–E01EF, the
//     Mongolian ones, U+034F, U+17B4/17B5, the Hangul fillers, the reserved
//     ranges Unicode keeps ignorable); the line and paragraph separators and
//     every space but U+0020 (no-break, en, em, thin, ideographic...), which
//     look like a space and are not one; U+2800 (a blank braille pattern);
//     private-use and unassigned code points (noncharacters among them),
//     which a font may draw as nothing.
//   - Newlines, tabs and carriage returns follow mode.
//   - Invalid UTF-8 bytes become U+FFFD.
//   - With maxChars > 0 the result is at most maxChars characters,
//     counted after rendering: a longer one is cut (never inside a
//     rendered character) and ends with "…".
//
// SafeText is idempotent: its output passes through it unchanged. A
// literal "\u{1B}" in the input therefore looks like a rendered ESC; where
// exact bytes matter, the JSON form is the reference.
func SafeText(s string, mode TextMode, maxChars int) string {
	var b strings.Builder
	b.Grow(len(s))
	chars := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		unit, n := s[i:i+size], 1
		switch {
		case r == utf8.RuneError && size == 1:
			unit = "\uFFFD"
		case r == '\r' && mode != Exact:
			crlf := i+1 < len(s) && s[i+1] == '\n'
			switch {
			case mode == OneLine:
				unit = " "
			case crlf:
				unit = "\n"
			default:
				unit = visible(r)
				n = len(unit)
			}
			if crlf {
				size++
			}
		case (r == '\n' || r == '\t') && mode == OneLine:
			unit = " "
		case (r == '\n' || r == '\t') && mode == Lines:
		case r == '\n' || r == '\t' || hidden(r):
			unit = visible(r)
			n = len(unit)
		}
		i += size
		// One character stays free for "…" unless this unit ends s.
		if maxChars > 0 && chars+n > maxChars-1 && (i < len(s) || chars+n > maxChars) {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(unit)
		chars += n
	}
	return b.String()
}

// visible renders r as \u{XXXX}.
func visible(r rune) string { return fmt.Sprintf(`\u{%04X}`, r) }

// hidden reports whether r acts on a terminal or does not show as itself.
func hidden(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		return true
	case r < 0x7f:
		return false
	case r == '\u2800':
		return true
	}
	// Default_Ignorable_Code_Point is Other_Default_Ignorable_Code_Point,
	// the format characters (Cf) and the variation selectors (Unicode
	// DerivedCoreProperties.txt); it ignores a few format characters that
	// do show (U+0600..0605 and the like), which are rendered all the same.
	// Z holds every space but U+0020 (ASCII, above) and the separators.
	return unicode.In(r, unicode.Cf, unicode.Co, unicode.Z,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) // unassigned (Cn)
}
