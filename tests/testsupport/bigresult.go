package testsupport

import (
	"encoding/json"
	"strings"
	"testing"
)

// BigTextResult returns a ~20 MB MCP result whose one text block is mostly
// ASCII with two- and four-byte characters spread through it.
func BigTextResult(t testing.TB) (result []byte, text string) {
	t.Helper()
	var b strings.Builder
	line := 0
	for b.Len() < 20<<20 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", line%97))
		switch line % 5 {
		case 1:
			b.WriteString(" café ")
		case 3:
			b.WriteString(" 😀 <&> \"q\" \\ ")
		}
		b.WriteByte('\n')
		line++
	}
	text = "HEAD-MARK " + b.String() + " TAIL-MARK"
	result, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		t.Fatal(err)
	}
	return result, text
}
