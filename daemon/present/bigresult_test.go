package present

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikod/pikod/tests/testsupport"
)

// TestPreviewTwentyMegabytes: a 20 MB text result previews as its head, a
// notice of what was left out, and its tail, in a bounded size.
func TestPreviewTwentyMegabytes(t *testing.T) {
	result, _ := testsupport.BigTextResult(t)
	content, _, _, truncated, err := Preview(result, PreviewLimits{})
	if err != nil {
		t.Fatalf("Preview: %v", err)
	}
	if !truncated {
		t.Error("Preview of 20 MB: truncated = false")
	}
	if len(content) > 200<<10 {
		t.Errorf("Preview of 20 MB: content is %d bytes, want a bounded preview", len(content))
	}
	var blocks []struct{ Text string }
	if err := json.Unmarshal(content, &blocks); err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || !strings.HasPrefix(blocks[0].Text, "HEAD-MARK") ||
		!strings.HasSuffix(blocks[2].Text, "TAIL-MARK") || !strings.Contains(blocks[1].Text, "characters omitted") {
		t.Errorf("Preview blocks: %d, want head, notice, tail", len(blocks))
	}
}
