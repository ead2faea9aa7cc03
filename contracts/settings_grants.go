package contracts

import "slices"

// GrantChange is one change to how a tool of a server may run, as
// 'pikoctl mcp grant' and 'pikoctl mcp revoke' and the console make it.
type GrantChange string

const (
	// GrantChangeRead puts the tool in readOnlyTools: it runs without
	// approval, with an mcp_read receipt.
	GrantChangeRead GrantChange = "read"
	// GrantChangeAutonomous puts it in autonomousTools: it runs without
	// approval, with an mcp_autonomous receipt; it needs a tools list.
	GrantChangeAutonomous GrantChange = "autonomous"
	// GrantChangeSelect selects it with each call approved.
	GrantChangeSelect GrantChange = "select"
	// GrantChangeRevoke takes its read or autonomous grant back.
	GrantChangeRevoke GrantChange = "revoke"
	// GrantChangeDeselect takes it out of the tools list: it cannot be
	// called at all; it needs a tools list.
	GrantChangeDeselect GrantChange = "deselect"
)

// ChangeGrant applies c to tool in s. Every change first takes the tool
// out of readOnlyTools and autonomousTools; read, autonomous and select
// add it to an explicit tools list. Autonomous and deselect need one: on
// a server without a tools list (every tool selected) s is left as it was
// and the error (ErrInvalidArgument, tools_required) says why, for the
// caller to say where the list is written.
func (s *ServerSettings) ChangeGrant(tool string, c GrantChange) error {
	switch {
	case s.Tools == nil && c == GrantChangeAutonomous:
		return Errorf(ErrInvalidArgument, ReasonToolsRequired,
			"server %q selects every tool (no tools list), and autonomousTools needs an explicit one", s.ID)
	case s.Tools == nil && c == GrantChangeDeselect:
		return Errorf(ErrInvalidArgument, ReasonToolsRequired,
			"server %q selects every tool (no tools list): one cannot be deselected", s.ID)
	}
	switch c {
	case GrantChangeRead, GrantChangeAutonomous, GrantChangeSelect, GrantChangeRevoke, GrantChangeDeselect:
	default:
		return Errorf(ErrInvalidArgument, ReasonInvalidArgument, "unknown grant change %q", string(c))
	}
	s.ReadOnlyTools = without(s.ReadOnlyTools, tool)
	s.AutonomousTools = without(s.AutonomousTools, tool)
	switch c {
	case GrantChangeRead, GrantChangeAutonomous, GrantChangeSelect:
		if s.Tools != nil && !slices.Contains(*s.Tools, tool) {
			t := append(slices.Clone(*s.Tools), tool)
			s.Tools = &t
		}
		if c == GrantChangeRead {
			s.ReadOnlyTools = append(s.ReadOnlyTools, tool)
		}
		if c == GrantChangeAutonomous {
			s.AutonomousTools = append(s.AutonomousTools, tool)
		}
	case GrantChangeDeselect:
		t := without(*s.Tools, tool)
		if t == nil {
			t = []string{}
		}
		s.Tools = &t
	}
	return nil
}

// without returns list without name (nil when nothing is left).
func without(list []string, name string) []string {
	var out []string
	for _, v := range list {
		if v != name {
			out = append(out, v)
		}
	}
	return out
}
