package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

// VisibleText makes s safe to show on a terminal and honest to read:
// every character that could hide, reorder or restyle text is rendered as
// \u{XXXX}. That covers C0 and C1 controls (so ESC, and with it every ANSI
// CSI and OSC sequence, loses its effect), DEL, bidirectional controls,
// zero-width and other format characters, and line and paragraph
// separators; a backslash becomes \\ so a literal "\u{…}" in the input
// cannot pass for a rendered one. Newlines and tabs are kept when
// keepLines is true. Invalid UTF-8 bytes are rendered as \x{XX}.
func VisibleText(s string, keepLines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x{%02X}`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029',
			unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r), r == '\u115F', r == '\u1160',
			r == '\u3164', r == '\uFFA0':
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Review describes an action for the owner: exactly what approving sends,
// with every string made safe to show.
func Review(a Action) contracts.ActionReview {
	sum := a.Summary()
	sum.Server = VisibleText(sum.Server, false)
	sum.Tool = VisibleText(sum.Tool, false)
	sum.Reason = VisibleText(sum.Reason, false)
	var indented bytes.Buffer
	if err := json.Indent(&indented, a.Arguments, "", "  "); err != nil {
		indented.Reset()
		indented.Write(a.Arguments)
	}
	return contracts.ActionReview{
		ActionSummary:   sum,
		ToolName:        VisibleText(a.Tool, false),
		ToolDescription: VisibleText(a.ToolDescription, true),
		Arguments:       a.Arguments,
		ArgumentsText:   VisibleText(indented.String(), true),
		Fingerprints:    a.Fingerprints,
		Digest:          a.Digest,
	}
}
