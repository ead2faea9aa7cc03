package main

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// fakeTTY answers questions from a script and records what was asked.
type fakeTTY struct {
	mu      sync.Mutex
	answers []string
	asked   []string
	hidden  []bool
	closed  bool
}

func (f *fakeTTY) next(prompt string, hidden bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, prompt)
	f.hidden = append(f.hidden, hidden)
	if len(f.answers) == 0 {
		return "", errors.New("fake tty: no more answers")
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a, nil
}

func (f *fakeTTY) Ask(p string) (string, error)       { return f.next(p, false) }
func (f *fakeTTY) AskHidden(p string) (string, error) { return f.next(p, true) }
func (f *fakeTTY) Close() error                       { f.closed = true; return nil }

const testDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789fe0c1d"

func approveDaemon(t *testing.T, status string, approve func(json.RawMessage) (json.RawMessage, *contracts.Error)) *fakeDaemon {
	t.Helper()
	review := `{"id":"act_1","state":"prepared","server":"fx","tool":"count","toolName":"count","createdAt":"c","updatedAt":"u",` +
		`"arguments":{},"argumentsText":"{}","fingerprints":{"settings":"s","credentialGeneration":0,"connectionGeneration":1,"tool":"t"},"digest":"` + testDigest + `"}`
	return startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
		contracts.MethodMCPActionsReview:  canned(review),
		contracts.MethodMCPStatus:         canned(status),
		contracts.MethodMCPActionsApprove: approve,
	})
}

const (
	statusNoPass = `{"revision":1,"servers":[],"vault":{"backend":"file"},"approvals":{"passphraseSet":false,"failures":0}}`
	statusPass   = `{"revision":1,"servers":[],"vault":{"backend":"file"},"approvals":{"passphraseSet":true,"failures":2}}`
	completed    = `{"status":"completed","server":"fx","tool":"count","receiptId":"rcpt_1","receiptKind":"mcp_approved"}`
)

func approveRequests(d *fakeDaemon) []contracts.ApproveParams {
	var out []contracts.ApproveParams
	for _, r := range d.requests() {
		if r.Method == contracts.MethodMCPActionsApprove {
			var p contracts.ApproveParams
			json.Unmarshal(r.Params, &p)
			out = append(out, p)
		}
	}
	return out
}

func TestApproveAsksForTheDigestSuffix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  string
		answers []string
		code    int
		sent    []contracts.ApproveParams
	}{
		{"suffix approves", statusNoPass, []string{"fe0c1d"}, exitOK,
			[]contracts.ApproveParams{{ActionID: "act_1", Digest: testDigest, Decision: "approve"}}},
		{"suffix with spaces and capitals", statusNoPass, []string{"  FE0C1D "}, exitOK,
			[]contracts.ApproveParams{{ActionID: "act_1", Digest: testDigest, Decision: "approve"}}},
		{"y approves nothing", statusNoPass, []string{"y"}, exitFailure, nil},
		{"yes approves nothing", statusNoPass, []string{"yes"}, exitFailure, nil},
		{"empty approves nothing", statusNoPass, []string{""}, exitFailure, nil},
		{"the whole digest approves nothing", statusNoPass, []string{testDigest}, exitFailure, nil},
		{"another suffix approves nothing", statusNoPass, []string{"fe0c1e"}, exitFailure, nil},
		{"passphrase asked when set", statusPass, []string{"fe0c1d", "owner pass"}, exitOK,
			[]contracts.ApproveParams{{ActionID: "act_1", Digest: testDigest, Decision: "approve", Passphrase: "owner pass"}}},
		{"empty passphrase sends nothing", statusPass, []string{"fe0c1d", ""}, exitFailure, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := approveDaemon(t, tc.status, canned(completed))
			ta := newTestApp(t, "", true)
			tty := &fakeTTY{answers: tc.answers}
			ta.openTTY = func() (ttyIO, error) { return tty, nil }
			if code := ta.runArgs(t, "--socket", d.socket, "mcp", "approve", "act_1"); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			got := approveRequests(d)
			if len(got) != len(tc.sent) || (len(got) == 1 && got[0] != tc.sent[0]) {
				t.Errorf("approve requests %+v, want %+v", got, tc.sent)
			}
			if len(tty.asked) == 0 || !strings.Contains(tty.asked[0], "type fe0c1d") || tty.hidden[0] {
				t.Errorf("first question %q: want the digest suffix asked in the clear", tty.asked)
			}
			if len(tty.asked) > 1 && !tty.hidden[1] {
				t.Errorf("the passphrase was asked with echo on")
			}
			if !tty.closed {
				t.Error("the terminal was not closed")
			}
			if tc.code != exitOK && !strings.Contains(ta.errOut.String(), "nothing was sent") {
				t.Errorf("stderr %q does not say nothing was sent", ta.errOut.String())
			}
		})
	}
}

func TestApproveRetriesOnPassphraseRequired(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	d := approveDaemon(t, statusNoPass, func(raw json.RawMessage) (json.RawMessage, *contracts.Error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		var p contracts.ApproveParams
		json.Unmarshal(raw, &p)
		if p.Passphrase == "" {
			return nil, &contracts.Error{Code: 1005, Message: "needs the passphrase", Data: &contracts.ErrorData{Reason: "passphrase_required"}}
		}
		return json.RawMessage(completed), nil
	})
	ta := newTestApp(t, "", true)
	tty := &fakeTTY{answers: []string{"fe0c1d", "late pass"}}
	ta.openTTY = func() (ttyIO, error) { return tty, nil }
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "approve", "act_1"); code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	got := approveRequests(d)
	if len(got) != 2 || got[1].Passphrase != "late pass" {
		t.Errorf("approve requests %+v, want a retry with the passphrase", got)
	}
}

func TestApproveRefusesWithoutTerminal(t *testing.T) {
	d := approveDaemon(t, statusNoPass, canned(completed))
	ta := newTestApp(t, "fe0c1d\n", false)
	opened := false
	ta.openTTY = func() (ttyIO, error) { opened = true; return &fakeTTY{answers: []string{"fe0c1d"}}, nil }
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "approve", "act_1"); code != exitFailure {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(ta.errOut.String(), "stdin is not the terminal") || opened || len(d.requests()) != 0 {
		t.Errorf("stderr %q, terminal opened %v, requests %+v: want a refusal before anything", ta.errOut.String(), opened, d.requests())
	}
}

func TestApproveRefusesWhileLocked(t *testing.T) {
	locked := `{"revision":1,"servers":[],"vault":{"backend":"file"},"approvals":{"passphraseSet":true,"failures":0,"locks":1,"lockedUntil":"2030-01-01T00:00:00Z"}}`
	d := approveDaemon(t, locked, canned(completed))
	ta := newTestApp(t, "", true)
	tty := &fakeTTY{answers: []string{"fe0c1d", "pass"}}
	ta.openTTY = func() (ttyIO, error) { return tty, nil }
	if code := ta.runArgs(t, "--socket", d.socket, "mcp", "approve", "act_1"); code != exitFailure {
		t.Errorf("exit %d, want 1", code)
	}
	if len(tty.asked) != 0 || len(approveRequests(d)) != 0 || !strings.Contains(ta.errOut.String(), "locked until 2030-01-01T00:00:00Z") {
		t.Errorf("asked %q, stderr %q: want a refusal naming the lock before asking", tty.asked, ta.errOut.String())
	}
}

func TestApprovalsPassphrase(t *testing.T) {
	result := `{"op":"x","approvals":{"passphraseSet":true,"failures":0}}`
	for _, tc := range []struct {
		op      string
		answers []string
		code    int
		want    *contracts.PassphraseParams
	}{
		{"set", []string{"new one here", "new one here"}, exitOK, &contracts.PassphraseParams{Op: "set", NewPassphrase: "new one here"}},
		{"set", []string{"new one here", "other one"}, exitFailure, nil},
		{"set", []string{""}, exitFailure, nil},
		{"change", []string{"old one", "new one here", "new one here"}, exitOK,
			&contracts.PassphraseParams{Op: "change", Passphrase: "old one", NewPassphrase: "new one here"}},
		{"clear", []string{"old one"}, exitOK, &contracts.PassphraseParams{Op: "clear", Passphrase: "old one"}},
	} {
		t.Run(tc.op, func(t *testing.T) {
			d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
				contracts.MethodPassphrase: canned(result),
			})
			ta := newTestApp(t, "", true)
			tty := &fakeTTY{answers: tc.answers}
			ta.openTTY = func() (ttyIO, error) { return tty, nil }
			if code := ta.runArgs(t, "--socket", d.socket, "approvals", "passphrase", tc.op); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for i, h := range tty.hidden {
				if !h {
					t.Errorf("question %q was asked with echo on", tty.asked[i])
				}
			}
			reqs := d.requests()
			switch {
			case tc.want == nil && len(reqs) != 0:
				t.Errorf("requests %+v, want none", reqs)
			case tc.want != nil:
				var got contracts.PassphraseParams
				if len(reqs) != 1 || json.Unmarshal(reqs[0].Params, &got) != nil || got != *tc.want {
					t.Errorf("requests %+v, want %+v", reqs, *tc.want)
				}
			}
			for _, a := range tc.answers {
				if a != "" && strings.Contains(ta.out.String()+ta.errOut.String(), a) {
					t.Errorf("pikoctl printed a passphrase: %q %q", ta.out.String(), ta.errOut.String())
				}
			}
		})
	}
	ta := newTestApp(t, "", true)
	if code := ta.runArgs(t, "approvals", "passphrase", "show"); code != exitUsage {
		t.Errorf("an unknown op: exit %d, want 2", code)
	}
	ta = newTestApp(t, "secret\n", false)
	if code := ta.runArgs(t, "--socket", missingSocket(t), "approvals", "passphrase", "set"); code != exitFailure || !strings.Contains(ta.errOut.String(), "stdin is not the terminal") {
		t.Errorf("without a terminal: exit %d, stderr %q", code, ta.errOut.String())
	}
}
