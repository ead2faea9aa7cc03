package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestSecretMergeRecord checks the merge of a credential record: given
// fields replace or add, the rest stay, the stored record is not touched
// (its values are retired for redaction), an empty value is refused with
// the way to remove a field, and nothing names a value.
func TestSecretMergeRecord(t *testing.T) {
	const a, b, a2 = "canary-a-0123456789", "canary-b-0123456789", "canary-a2-0123456789"
	old := &credRecord{Identity: "id", Generation: 3, Env: map[string]string{"A": a, "B": b}}
	cfg := &contracts.ServerSettings{ID: "fx", Transport: contracts.TransportStdio}
	add, err := parseCredentials(cfg, map[string]any{"env": map[string]any{"A": a2, "C": a}}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := old.merge(add)
	if got.Env["A"] != a2 || got.Env["B"] != b || got.Env["C"] != a || len(got.Env) != 3 || got.Identity != "id" || got.Generation != 3 {
		t.Errorf("merged env has %d fields (A replaced %t, B kept %t, C added %t)", len(got.Env), got.Env["A"] == a2, got.Env["B"] == b, got.Env["C"] == a)
	}
	if old.Env["A"] != a || len(old.Env) != 2 {
		t.Errorf("the merge changed the stored record: %d fields, A kept %t", len(old.Env), old.Env["A"] == a)
	}
	if got.sameValues(old) || !old.merge(&credRecord{Env: map[string]string{"B": b}}).sameValues(old) || !old.merge(&credRecord{}).sameValues(old) {
		t.Error("sameValues: a change should differ, the same value or nothing should not")
	}
	if f := got.fields(); !slices.Equal(f, []string{"env.A", "env.B", "env.C"}) {
		t.Errorf("fields = %q", f)
	}

	_, err = parseCredentials(cfg, map[string]any{"env": map[string]any{"A": ""}}, true)
	if err == nil || !strings.Contains(err.Error(), `without "merge"`) {
		t.Errorf("an empty value in a merge: %v, want a refusal saying to replace without merge", err)
	}
	_, err = parseCredentials(cfg, map[string]any{"env": map[string]any{"A": ""}}, false)
	if err == nil || strings.Contains(err.Error(), "merge") {
		t.Errorf("an empty value in a replace: %v, want the replace message", err)
	}
	for _, v := range []string{a, b, a2} {
		if err != nil && strings.Contains(err.Error(), v) {
			t.Error("an error holds a value")
		}
	}
}
