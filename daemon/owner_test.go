package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

func TestGateStateLocks(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var st gateState
	wantLock := []time.Duration{60 * time.Second, 120 * time.Second, 240 * time.Second, 480 * time.Second}
	for lock, d := range wantLock {
		for i := 1; i < contracts.PassphraseMaxFailures; i++ {
			st = st.fail(now)
			if st.locked(now) || st.Failures != i {
				t.Fatalf("lock %d, failure %d: %+v, want %d failures and no lock", lock, i, st, i)
			}
		}
		st = st.fail(now)
		if !st.LockedUntil.Equal(now.Add(d)) || st.Failures != 0 || st.Locks != lock+1 {
			t.Fatalf("failure %d after %d locks: %+v, want locked for %v", contracts.PassphraseMaxFailures, lock, st, d)
		}
		if !st.locked(now.Add(d-time.Second)) || st.locked(now.Add(d)) {
			t.Errorf("lock %d: locked() wrong around its end %v", lock, st.LockedUntil)
		}
		now = now.Add(d)
	}
	// The doubling stops at maxLock.
	for range 30 * contracts.PassphraseMaxFailures {
		st = st.fail(now)
	}
	if got := st.LockedUntil.Sub(now); got != maxLock {
		t.Errorf("after many locks the lock lasts %v, want %v", got, maxLock)
	}
	if s := st.succeed(); s.Failures != 0 || s.Locks != 0 || s.locked(now) {
		t.Errorf("succeed() = %+v, want everything forgotten", s)
	}
}

// gateFixture is a gate over a real bbolt file and a real file vault.
type gateFixture struct {
	t      *testing.T
	dbPath string
	db     *approvals.DB
	v      *vault.Vault
	red    *vault.Redactor
	log    *bytes.Buffer
	g      *ownerGate
	clock  time.Time
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	dir := t.TempDir()
	f := &gateFixture{t: t, dbPath: filepath.Join(dir, "pikod.db"), red: vault.NewRedactor(), log: new(bytes.Buffer),
		clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	v, err := vault.Open(vault.Config{Backend: vault.BackendFile, Dir: filepath.Join(dir, "vault"), Service: "pikod-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	f.v = v
	f.reopen()
	return f
}

// reopen opens the database and a new gate on it, as a restart does.
func (f *gateFixture) reopen() {
	f.t.Helper()
	if f.db != nil {
		f.db.Close()
	}
	db, err := approvals.Open(f.dbPath, time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { db.Close() })
	f.db = db
	g, err := newOwnerGate(f.v, db, f.red, zerolog.New(f.log))
	if err != nil {
		f.t.Fatal(err)
	}
	g.now = func() time.Time { return f.clock }
	f.g = g
}

// call runs the gate and, if it admits the call, the handler (for the
// passphrase method) as rpc.Server would.
func (f *gateFixture) call(method string, params any) (any, error) {
	f.t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := &rpc.Request{Method: method, Params: b, Peer: rpc.Peer{PID: 4242}}
	row := rpc.Handle(func(context.Context, *rpc.Request, *gateTestParams) (any, error) { return "admitted", nil })
	if method == contracts.MethodPassphrase {
		row = rpc.Handle(f.g.passphrase)
	}
	if err := row.Decode(req); err != nil {
		f.t.Fatal(err)
	}
	if err := f.g.Check(ctx, req); err != nil {
		return nil, err
	}
	return row.Serve(ctx, req)
}

// gateTestParams are the members of a terminal-only call the gate reads,
// whatever the method.
type gateTestParams struct {
	ActionID   string `json:"actionId"`
	Digest     string `json:"digest"`
	Decision   string `json:"decision"`
	Op         string `json:"op"`
	Passphrase string `json:"passphrase"`
}

func (p gateTestParams) OwnerPassphrase() string { return p.Passphrase }

func reasonOf(err error) string { return contracts.ToError(err).Reason() }

func approveWith(pass string) map[string]string {
	return map[string]string{"actionId": "act_1", "digest": "d", "decision": "approve", "passphrase": pass}
}

func TestOwnerGate(t *testing.T) {
	f := newGateFixture(t)
	const right, wrong = "the right passphrase", "a wrong passphrase"

	if res, err := f.call(contracts.MethodMCPActionsApprove, approveWith("")); err != nil || res != "admitted" {
		t.Fatalf("without a passphrase set: %v, %v; want admitted", res, err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "change", Passphrase: right, NewPassphrase: right}); reasonOf(err) != "passphrase_not_set" {
		t.Errorf("change before set: %v, want passphrase_not_set", err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "set", NewPassphrase: "short"}); reasonOf(err) != "passphrase_too_short" {
		t.Errorf("set a short one: %v", err)
	}
	res, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "set", NewPassphrase: right})
	if err != nil || !res.(contracts.PassphraseResult).Approvals.PassphraseSet {
		t.Fatalf("set: %+v, %v", res, err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "set", Passphrase: right, NewPassphrase: right}); reasonOf(err) != "passphrase_already_set" {
		t.Errorf("set twice: %v, want passphrase_already_set", err)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith("")); reasonOf(err) != "passphrase_required" {
		t.Errorf("no passphrase given: %v, want passphrase_required", err)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith(right)); err != nil {
		t.Errorf("right passphrase: %v", err)
	}

	// Four wrong ones, a restart, a fifth: locked, and the lock survives
	// another restart.
	for i := 1; i < contracts.PassphraseMaxFailures; i++ {
		_, err := f.call(contracts.MethodMCPActionsApprove, approveWith(wrong))
		if reasonOf(err) != "passphrase_wrong" || !errors.Is(err, contracts.ErrPermissionDenied) {
			t.Fatalf("wrong passphrase %d: %v", i, err)
		}
		if strings.Contains(err.Error(), wrong) {
			t.Fatalf("the error repeats the passphrase: %v", err)
		}
	}
	if st := f.g.Status(); st.Failures != contracts.PassphraseMaxFailures-1 || st.LockedUntil != "" {
		t.Errorf("status after %d failures: %+v", contracts.PassphraseMaxFailures-1, st)
	}
	f.reopen()
	if st := f.g.Status(); st.Failures != contracts.PassphraseMaxFailures-1 || !st.PassphraseSet {
		t.Errorf("after a restart the failures are %+v, want them kept", st)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith(wrong)); reasonOf(err) != "passphrase_wrong" || !strings.Contains(err.Error(), "locked until") {
		t.Fatalf("the fifth wrong passphrase: %v, want passphrase_wrong saying it locked", err)
	}
	want := f.clock.Add(60 * time.Second).Format(time.RFC3339)
	f.reopen()
	if st := f.g.Status(); st.LockedUntil != want || st.Failures != 0 || st.Locks != 1 {
		t.Errorf("status after the lock and a restart: %+v, want locked until %s", st, want)
	}
	for _, m := range []string{contracts.MethodMCPActionsApprove, contracts.MethodPassphrase, contracts.MethodMCPTrust} {
		if _, err := f.call(m, map[string]string{"passphrase": right, "op": "clear"}); reasonOf(err) != "approvals_locked" {
			t.Errorf("%s with the right passphrase while locked: %v, want approvals_locked", m, err)
		}
	}
	// After the lock, the right passphrase works and forgets the locks.
	f.clock = f.clock.Add(61 * time.Second)
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith(right)); err != nil {
		t.Fatalf("right passphrase after the lock: %v", err)
	}
	if st := f.g.Status(); st.Failures != 0 || st.Locks != 0 || st.LockedUntil != "" {
		t.Errorf("status after the right passphrase: %+v", st)
	}

	// change needs the current one; then only the new one works.
	const next = "the next passphrase"
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "change", Passphrase: wrong, NewPassphrase: next}); reasonOf(err) != "passphrase_wrong" {
		t.Errorf("change with a wrong current passphrase: %v", err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "change", Passphrase: right, NewPassphrase: next}); err != nil {
		t.Fatalf("change: %v", err)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith(right)); reasonOf(err) != "passphrase_wrong" {
		t.Errorf("the old passphrase after change: %v", err)
	}

	// A lost hash keeps the gate closed; set recovers.
	if err := f.v.ClearApprovalPassphrase(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith(next)); reasonOf(err) != "passphrase_missing" {
		t.Errorf("approve with the hash gone: %v, want passphrase_missing", err)
	}
	if _, err := f.call(contracts.MethodMCPActionsApprove, approveWith("")); reasonOf(err) != "passphrase_required" {
		t.Errorf("approve without a passphrase, hash gone: %v, want passphrase_required", err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "set", NewPassphrase: right}); err != nil {
		t.Fatalf("set after the hash was lost: %v", err)
	}
	if _, err := f.call(contracts.MethodPassphrase, contracts.PassphraseParams{Op: "clear", Passphrase: right}); err != nil {
		t.Fatalf("clear: %v", err)
	}
	if res, err := f.call(contracts.MethodMCPActionsApprove, approveWith("")); err != nil || res != "admitted" || f.g.Status().PassphraseSet {
		t.Errorf("after clear: %v, %v, %+v", res, err, f.g.Status())
	}

	for _, p := range []string{right, wrong, next} {
		if strings.Contains(f.log.String(), p) {
			t.Errorf("the log holds a passphrase:\n%s", f.log.String())
		}
		if b, _ := os.ReadFile(f.dbPath); bytes.Contains(b, []byte(p)) {
			t.Errorf("the database holds a passphrase")
		}
	}
	if n := strings.Count(f.log.String(), "wrong approval passphrase"); n != contracts.PassphraseMaxFailures+2 {
		t.Errorf("%d wrong passphrases logged, want %d", n, contracts.PassphraseMaxFailures+2)
	}
}

// TestOwnerGateNeverRedactsThePassphrase: the passphrase of a request in
// flight is not a redaction value (it never goes to a server, and a
// caller that saw it redacted from an echo would know its guess was
// right).
func TestOwnerGateNeverRedactsThePassphrase(t *testing.T) {
	f := newGateFixture(t)
	const pass = "in-flight-passphrase"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := &rpc.Request{Method: contracts.MethodMCPActionsApprove, Params: json.RawMessage(`{"passphrase":"` + pass + `"}`)}
	row := rpc.Handle(func(context.Context, *rpc.Request, *contracts.ApproveParams) (any, error) { return nil, nil })
	if err := row.Decode(req); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Check(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := f.red.Text("x " + pass + " y"); got != "x "+pass+" y" {
		t.Errorf("while the request runs, Redact changes the passphrase: %q", got)
	}
}
