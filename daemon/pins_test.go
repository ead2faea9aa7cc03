package daemon

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
)

// editString renders an edit for comparison: "s/t=digest", "s/t=digest?"
// (only if absent), "s/t-" (delete), "s-" (delete the server's pins).
func editString(e approvals.PinEdit) string {
	switch {
	case e.Pin == nil && e.Tool == "":
		return e.Server + "-"
	case e.Pin == nil:
		return e.Server + "/" + e.Tool + "-"
	case e.IfAbsent:
		return fmt.Sprintf("%s/%s=%s?", e.Server, e.Tool, e.Pin.Digest)
	}
	return fmt.Sprintf("%s/%s=%s", e.Server, e.Tool, e.Pin.Digest)
}

func TestPinEdits(t *testing.T) {
	tools := []string{"a", "b", "c"}
	srv := func(id string, read, auto []string) contracts.ServerSettings {
		return contracts.ServerSettings{ID: id, Transport: "stdio", Command: "/bin/srv", Tools: &tools, ReadOnlyTools: read, AutonomousTools: auto}
	}
	settings := func(s ...contracts.ServerSettings) *contracts.MCPSettings { return &contracts.MCPSettings{Servers: s} }
	live := map[string][]contracts.CatalogTool{
		"s": {{OriginalName: "a", Digest: "da"}, {OriginalName: "b", Digest: "db"}},
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		prev, next *contracts.MCPSettings
		live       map[string][]contracts.CatalogTool
		pinned     []string
		want       []string
	}{
		{"unchanged grants keep their pins (pinned if absent)", settings(srv("s", []string{"a"}, nil)), settings(srv("s", []string{"a"}, nil)), live, nil,
			[]string{"s/a=da?"}},
		{"a new grant pins the definition shown when saved", settings(srv("s", []string{"a"}, nil)), settings(srv("s", []string{"a"}, []string{"b"})), live, nil,
			[]string{"s/a=da?", "s/b=db"}},
		{"a new grant on a tool not seen pins at first discovery", settings(srv("s", nil, nil)), settings(srv("s", []string{"c"}, nil)), live, nil,
			[]string{"s/c-"}},
		{"a new grant of a disconnected server pins at first discovery", settings(srv("s", nil, nil)), settings(srv("s", []string{"a"}, nil)), nil, nil,
			[]string{"s/a-"}},
		{"a grant moved from read to autonomous keeps its pin", settings(srv("s", []string{"a"}, nil)), settings(srv("s", nil, []string{"a"})), nil, nil,
			nil},
		{"a removed grant drops its pin", settings(srv("s", []string{"a", "b"}, nil)), settings(srv("s", []string{"a"}, nil)), nil, nil,
			[]string{"s/b-"}},
		{"a removed server drops all its pins", settings(srv("s", []string{"a"}, nil), srv("t", []string{"a"}, nil)), settings(srv("s", []string{"a"}, nil)), nil, nil,
			[]string{"t-"}},
		{"pins of servers the settings never had are dropped", settings(), settings(srv("s", nil, nil)), nil, []string{"old"},
			[]string{"old-"}},
		{"a new server's grants pin at first discovery", settings(), settings(srv("s", []string{"a"}, []string{"b"})), nil, []string{"s"},
			[]string{"s/a-", "s/b-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range pinEdits(tt.prev, tt.next, tt.live, tt.pinned, now) {
				got = append(got, editString(e))
				if e.Pin != nil && (e.Pin.By != approvals.PinnedBySettings || !e.Pin.PinnedAt.Equal(now) || len(e.Pin.Definition) == 0) {
					t.Errorf("edit %s: pin %+v, want by settings at %v with the definition", editString(e), e.Pin, now)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pinEdits = %q, want %q", got, tt.want)
			}
		})
	}
}
