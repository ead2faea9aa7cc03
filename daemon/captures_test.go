package daemon

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReportedPaths(t *testing.T) {
	dir := "/home/me/.local/state/pikod/default/browser/browser/artifacts"
	text := func(s string) []byte {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
		return b
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"- [Snapshot](" + dir + "/page-1.yml)", []string{dir + "/page-1.yml"}},
		{"- New console entries: " + dir + "/console-1.log#L1", []string{dir + "/console-1.log"}},
		{"saved as file://" + dir + "/shot.png.", []string{dir + "/shot.png"}},
		{"two: " + dir + "/a.yml and " + dir + "/a.yml again, " + dir + "/b.png", []string{dir + "/a.yml", dir + "/b.png"}},
		{"outside: /home/me/.ssh/id_ed25519 and " + dir + "-other/x", nil},
		{"escape: " + dir + "/../../../.ssh/id_ed25519", nil},
		{"the directory itself: " + dir + "/", nil},
	} {
		got := reportedPaths(text(tc.in), dir)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("reportedPaths(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var many strings.Builder
	for i := range 40 {
		many.WriteString(dir + "/f" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".yml ")
	}
	if got := reportedPaths(text(many.String()), dir); len(got) != 16 {
		t.Errorf("reportedPaths of 40 files = %d paths, want the first 16", len(got))
	}
}
