package daemon

import (
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestWidenedGrants(t *testing.T) {
	tools := []string{"a", "b"}
	base := contracts.ServerSettings{ID: "s", Transport: "stdio", Command: "/bin/srv", Tools: &tools, ReadOnlyTools: []string{"a"}}
	mut := func(f func(*contracts.ServerSettings)) *contracts.MCPSettings {
		s := base
		s.Args = append([]string(nil), base.Args...)
		f(&s)
		return &contracts.MCPSettings{Servers: []contracts.ServerSettings{s}}
	}
	prev := &contracts.MCPSettings{Servers: []contracts.ServerSettings{base}}
	tests := []struct {
		name string
		next *contracts.MCPSettings
		want string // substring of the only entry; "" for none
	}{
		{"unchanged", mut(func(*contracts.ServerSettings) {}), ""},
		{"narrowed", mut(func(s *contracts.ServerSettings) { s.ReadOnlyTools = nil }), ""},
		{"autonomous added", mut(func(s *contracts.ServerSettings) { s.AutonomousTools = []string{"b"} }), `"b" runs without approval (autonomousTools)`},
		{"read added", mut(func(s *contracts.ServerSettings) { s.ReadOnlyTools = []string{"a", "b"} }), `"b" runs without approval (readOnlyTools)`},
		{"sampling on", mut(func(s *contracts.ServerSettings) { s.Sampling = true }), "sampling enabled"},
		{"command changed", mut(func(s *contracts.ServerSettings) { s.Command = "/bin/other" }), "different program"},
		{"env changed", mut(func(s *contracts.ServerSettings) { s.Env = map[string]string{"PATH": "/x"} }), "different program"},
		{"artifact directory added", mut(func(s *contracts.ServerSettings) { s.ArtifactDirectory = "/home/me/art" }), "/home/me/art can be read through pikod (artifactDirectory)"},
		{"private network on", mut(func(s *contracts.ServerSettings) { s.AllowPrivateNetwork = true }), "(allowPrivateNetwork)"},
		{"every tool selected", mut(func(s *contracts.ServerSettings) { s.Tools = nil }), "every tool is selected"},
		{"a tool selected", mut(func(s *contracts.ServerSettings) { more := []string{"a", "b", "c"}; s.Tools = &more }), `"c" is selected`},
		{"fewer tools", mut(func(s *contracts.ServerSettings) { fewer := []string{"a"}; s.Tools = &fewer }), ""},
		{"resources on", mut(func(s *contracts.ServerSettings) { off := false; s.Resources = &off }), ""},
	}
	for _, tt := range tests {
		got := widenedGrants(prev, tt.next)
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s: widened = %q, want none", tt.name, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%s: widened = %q, want one entry with %q", tt.name, got, tt.want)
		}
	}
	// Switching resources back on widens.
	off := false
	noRes := base
	noRes.Resources = &off
	if got := widenedGrants(&contracts.MCPSettings{Servers: []contracts.ServerSettings{noRes}}, prev); len(got) != 1 || !strings.Contains(got[0], "resources can be listed") {
		t.Errorf("resources switched on: widened = %q", got)
	}
	// A new server with grants widens; one without does not.
	fresh := &contracts.MCPSettings{}
	if got := widenedGrants(fresh, prev); len(got) != 1 {
		t.Errorf("new server with readOnlyTools: widened = %q, want one entry", got)
	}
	plain := &contracts.MCPSettings{Servers: []contracts.ServerSettings{{ID: "p", Transport: "stdio", Command: "/bin/p"}}}
	if got := widenedGrants(fresh, plain); len(got) != 0 {
		t.Errorf("new server without grants: widened = %q, want none", got)
	}
}
