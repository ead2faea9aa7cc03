package contracts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestChangeGrant: each grant change leaves the entry as 'pikoctl mcp
// grant' (--read, --autonomous, --select), 'revoke' (--deselect) and the
// console leave it; a change that needs a tools list changes nothing.
func TestChangeGrant(t *testing.T) {
	list := func(s ...string) *[]string {
		if s == nil {
			s = []string{}
		}
		return &s
	}
	for _, tc := range []struct {
		name     string
		op       GrantChange
		in, want ServerSettings
		err      string
	}{
		{name: "read, every tool selected", op: GrantChangeRead,
			in:   ServerSettings{ID: "fx", AutonomousTools: []string{"echo"}},
			want: ServerSettings{ID: "fx", ReadOnlyTools: []string{"echo"}}},
		{name: "read adds to a tools list", op: GrantChangeRead,
			in:   ServerSettings{ID: "fx", Tools: list("count")},
			want: ServerSettings{ID: "fx", Tools: list("count", "echo"), ReadOnlyTools: []string{"echo"}}},
		{name: "autonomous", op: GrantChangeAutonomous,
			in:   ServerSettings{ID: "fx", Tools: list("echo"), ReadOnlyTools: []string{"echo", "count"}},
			want: ServerSettings{ID: "fx", Tools: list("echo"), ReadOnlyTools: []string{"count"}, AutonomousTools: []string{"echo"}}},
		{name: "autonomous needs a list", op: GrantChangeAutonomous,
			in: ServerSettings{ID: "fx"}, err: "autonomousTools needs an explicit one"},
		{name: "select", op: GrantChangeSelect,
			in:   ServerSettings{ID: "fx", Tools: list(), ReadOnlyTools: nil},
			want: ServerSettings{ID: "fx", Tools: list("echo")}},
		{name: "revoke keeps the tools list", op: GrantChangeRevoke,
			in:   ServerSettings{ID: "fx", Tools: list("echo"), AutonomousTools: []string{"echo"}},
			want: ServerSettings{ID: "fx", Tools: list("echo")}},
		{name: "deselect the last", op: GrantChangeDeselect,
			in:   ServerSettings{ID: "fx", Tools: list("echo"), ReadOnlyTools: []string{"echo"}},
			want: ServerSettings{ID: "fx", Tools: list()}},
		{name: "deselect needs a list", op: GrantChangeDeselect,
			in: ServerSettings{ID: "fx"}, err: "one cannot be deselected"},
	} {
		s := tc.in
		err := s.ChangeGrant("echo", tc.op)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || ToError(err).Reason() != ReasonToolsRequired {
				t.Errorf("%s: error %v, want %q (tools_required)", tc.name, err, tc.err)
			}
			if g, w := fmt.Sprint(s), fmt.Sprint(tc.in); g != w {
				t.Errorf("%s: refused, yet the settings changed to %s", tc.name, g)
			}
			continue
		}
		g, _ := json.Marshal(s)
		w, _ := json.Marshal(tc.want)
		if err != nil || string(g) != string(w) {
			t.Errorf("%s: %s (%v), want %s", tc.name, g, err, w)
		}
	}
	s := ServerSettings{ID: "fx"}
	if err := s.ChangeGrant("echo", "everything"); err == nil || !strings.Contains(err.Error(), `unknown grant change "everything"`) {
		t.Errorf("an unknown change: %v", err)
	}
}
