package contracts

import "testing"

// TestTerminalOnlyMethods pins the methods that decide for the owner: each
// must stay terminal-only, so a later edit of the table (or a method
// added under another row) cannot quietly let a local tool decide.
func TestTerminalOnlyMethods(t *testing.T) {
	want := []string{
		MethodMCPActionsApprove,
		MethodMCPRequestsRespond,
		MethodMCPResume,
		MethodMCPTrust,
		MethodPassphrase,
	}
	for _, name := range want {
		m, ok := LookupMethod(name)
		if !ok {
			t.Errorf("%s is not in MethodTable", name)
			continue
		}
		if !m.TerminalOnly() {
			t.Errorf("%s is not TerminalOnly: a local tool could call it without the owner at a terminal", name)
		}
	}
	// Only a rejection and a diff decide nothing; no other exemption.
	exempt := map[string]Exemption{
		MethodMCPActionsApprove: {Field: "decision", Value: DecisionReject},
		MethodMCPTrust:          {Field: "op", Value: "diff"},
	}
	for _, m := range MethodTable {
		if m.Exempt == nil {
			continue
		}
		if !m.TerminalOnly() {
			t.Errorf("%s has an exemption but is not TerminalOnly", m.Name)
		}
		if w, ok := exempt[m.Name]; !ok || *m.Exempt != w {
			t.Errorf("%s exemption = %+v, want %+v", m.Name, *m.Exempt, exempt[m.Name])
		}
	}
}

func TestMethodTableUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range MethodTable {
		if m.Name == "" || seen[m.Name] {
			t.Errorf("method %q is empty or listed twice", m.Name)
		}
		seen[m.Name] = true
	}
}
