package mcpclient

import (
	"strings"
	"unicode/utf8"
)

// SanitizeTerminal makes untrusted output safe to print on a terminal:
// it drops ANSI/ECMA-48 escape sequences (CSI, OSC, DCS and the others, 7-
// and 8-bit), C0 and C1 control characters except newline and tab, bidi
// overrides, and invalid UTF-8.
func SanitizeTerminal(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i = skipEscape(b, i+1)
		case c == '\n' || c == '\t':
			out.WriteByte(c)
			i++
		case c < 0x20 || c == 0x7f:
			i++
		case c < 0x80:
			out.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			i += size
			switch {
			case r == utf8.RuneError && size <= 1:
			case r == 0x9b: // 8-bit CSI
				i = skipCSI(b, i)
			case r == 0x90 || r == 0x9d || r == 0x98 || r == 0x9e || r == 0x9f: // DCS OSC SOS PM APC
				i = skipString(b, i)
			case r >= 0x80 && r <= 0x9f:
			case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			default:
				out.WriteRune(r)
			}
		}
	}
	return out.String()
}

// skipEscape skips the rest of an escape sequence whose ESC is just before i.
func skipEscape(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch c := b[i]; {
	case c == '[':
		return skipCSI(b, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(b, i+1)
	case c >= 0x20 && c <= 0x2f: // intermediates, then one final byte
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
			i++
		}
		if i < len(b) && b[i] >= 0x30 && b[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		return i + 1
	default:
		return i
	}
}

// skipCSI skips parameter and intermediate bytes and the final byte.
func skipCSI(b []byte, i int) int {
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
		i++
	}
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips a control string up to BEL, ST (ESC \) or 8-bit ST.
func skipString(b []byte, i int) int {
	for i < len(b) {
		switch {
		case b[i] == 0x07:
			return i + 1
		case b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\':
			return i + 2
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] == 0x9c:
			return i + 2
		}
		i++
	}
	return i
}
