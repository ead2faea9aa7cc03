package contracts

import (
	"reflect"
	"strings"
	"testing"
)

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
		MethodVaultMigrate,
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

// TestTerminalOnlyParamsCarryPassphrase: the owner gate reads the approval
// passphrase from the "passphrase" member of a terminal-only call, and
// handlers decode their params strictly, so every terminal-only method's
// params type must declare that member or, once a passphrase is set, the
// method could never be called. A method served later must be added here
// with its params type.
func TestTerminalOnlyParamsCarryPassphrase(t *testing.T) {
	params := map[string]any{
		MethodMCPActionsApprove:  ApproveParams{},
		MethodMCPTrust:           TrustParams{},
		MethodPassphrase:         PassphraseParams{},
		MethodMCPRequestsRespond: RespondParams{},
		MethodMCPResume:          ResumeParams{},
		MethodVaultMigrate:       VaultMigrateParams{},
	}
	// Reserved methods not served yet; each needs its params type here
	// when it is.
	notYet := map[string]bool{}
	for _, m := range MethodTable {
		if !m.TerminalOnly() || notYet[m.Name] {
			continue
		}
		p, ok := params[m.Name]
		if !ok {
			t.Errorf("%s is terminal-only: list its params type in this test", m.Name)
			continue
		}
		if !hasJSONField(reflect.TypeOf(p), ParamPassphrase) {
			t.Errorf("%s params %T have no %q member", m.Name, p, ParamPassphrase)
		}
	}
}

func hasJSONField(t reflect.Type, name string) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (f.Anonymous && hasJSONField(f.Type, name)) {
			return true
		}
	}
	return false
}
