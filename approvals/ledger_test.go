package approvals

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// clock is an injectable, movable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// instance is one state directory with its database and ledger.
type instance struct {
	t   *testing.T
	dir string
	clk *clock
	db  *DB
	l   *Ledger
	// opts are given to every OpenLedger.
	opts []LedgerOption
}

func newInstance(t *testing.T) *instance {
	t.Helper()
	in := &instance{t: t, dir: t.TempDir(), clk: newClock()}
	in.open()
	t.Cleanup(in.close)
	return in
}

func (in *instance) dbPath() string   { return filepath.Join(in.dir, "pikod.db") }
func (in *instance) tombPath() string { return filepath.Join(in.dir, "tombstones") }

func (in *instance) open() {
	in.t.Helper()
	db, err := Open(in.dbPath(), time.Second)
	if err != nil {
		in.t.Fatalf("Open: %v", err)
	}
	l, err := OpenLedger(db, in.tombPath(), in.clk.now, in.opts...)
	if err != nil {
		db.Close()
		in.t.Fatalf("OpenLedger: %v", err)
	}
	in.db, in.l = db, l
}

func (in *instance) close() {
	in.t.Helper()
	if in.l != nil {
		if err := in.l.Close(); err != nil {
			in.t.Errorf("Ledger.Close: %v", err)
		}
		in.l = nil
	}
	if in.db != nil {
		if err := in.db.Close(); err != nil {
			in.t.Errorf("DB.Close: %v", err)
		}
		in.db = nil
	}
}

func (in *instance) restart() {
	in.t.Helper()
	in.close()
	in.open()
}

var fp0 = contracts.Fingerprints{Settings: "set1", CredentialGeneration: 3, ConnectionGeneration: 7, Tool: "tool1"}

// exactArgs has spacing and characters encoding/json would rewrite.
const exactArgs = `{"q":  "<a&b>",  "n": 1}`

func (in *instance) prepare() Action {
	in.t.Helper()
	a, err := in.l.Prepare("files", "write", []byte(exactArgs), "writes a file", fp0, contracts.Caller{})
	if err != nil {
		in.t.Fatalf("Prepare: %v", err)
	}
	return a
}

func (in *instance) state(id string) Action {
	in.t.Helper()
	a, err := in.l.Get(id)
	if err != nil {
		in.t.Fatalf("Get(%s): %v", id, err)
	}
	return a
}

func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return contracts.ToError(err).Reason()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func testMigrationLedger(t *testing.T) {
	// A database written by schema 2 gains the ledger's buckets.
	db, path := reopenAtSchema(t, schemaOf(t, "ledger")-1, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketActions, bucketActionsByTime, bucketReceipts} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	l, err := OpenLedger(db, filepath.Join(filepath.Dir(path), "tombstones"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := l.Prepare("s", "t", []byte(`{}`), "", fp0, contracts.Caller{})
	if err != nil {
		t.Fatalf("Prepare after migration: %v", err)
	}
	if got, err := l.List("", 0); err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("List after migration = %v, %v", got, err)
	}
	r, err := l.AddReceipt(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "t", Status: "completed"})
	if err != nil {
		t.Fatalf("AddReceipt after migration: %v", err)
	}
	if _, err := l.Receipt(r.ID); err != nil {
		t.Fatalf("Receipt after migration: %v", err)
	}
}

func TestActionDigest(t *testing.T) {
	base := contracts.ActionDigest("ab", "c", []byte(`{}`), fp0)
	if len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("ActionDigest = %q, want 64 lowercase hex digits", base)
	}
	if again := contracts.ActionDigest("ab", "c", []byte(`{}`), fp0); again != base {
		t.Errorf("ActionDigest is not deterministic: %s != %s", again, base)
	}
	fp := func(f func(*contracts.Fingerprints)) contracts.Fingerprints {
		c := fp0
		f(&c)
		return c
	}
	others := map[string]string{
		"fields shifted":        contracts.ActionDigest("a", "bc", []byte(`{}`), fp0),
		"arguments spacing":     contracts.ActionDigest("ab", "c", []byte(`{ }`), fp0),
		"settings":              contracts.ActionDigest("ab", "c", []byte(`{}`), fp(func(f *contracts.Fingerprints) { f.Settings = "x" })),
		"credential generation": contracts.ActionDigest("ab", "c", []byte(`{}`), fp(func(f *contracts.Fingerprints) { f.CredentialGeneration++ })),
		"connection generation": contracts.ActionDigest("ab", "c", []byte(`{}`), fp(func(f *contracts.Fingerprints) { f.ConnectionGeneration++ })),
		"tool":                  contracts.ActionDigest("ab", "c", []byte(`{}`), fp(func(f *contracts.Fingerprints) { f.Tool = "x" })),
		"tool into settings":    contracts.ActionDigest("ab", "c", []byte(`{}`), contracts.Fingerprints{Settings: "set1tool1", CredentialGeneration: 3, ConnectionGeneration: 7}),
	}
	for name, d := range others {
		if d == base {
			t.Errorf("ActionDigest with %s changed = base digest", name)
		}
	}
}

func TestHappyPath(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	if !validID("act_", a.ID) {
		t.Errorf("action id %q is not act_ + 26 base32 characters", a.ID)
	}
	if a.State != contracts.ActionPrepared || a.Kind != contracts.ReceiptApproved {
		t.Errorf("prepared action = %s/%s, want prepared/mcp_approved", a.State, a.Kind)
	}
	if want := in.clk.now().Add(15 * time.Minute); !a.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", a.ExpiresAt, want)
	}
	if a.Digest != contracts.ActionDigest("files", "write", []byte(exactArgs), fp0) {
		t.Errorf("Digest = %s, not ActionDigest of the call", a.Digest)
	}
	got := in.state(a.ID)
	if string(got.Arguments) != exactArgs || got.ToolDescription != "writes a file" || got.Fingerprints != fp0 {
		t.Errorf("stored action = args %q desc %q fp %+v; want the exact prepared values", got.Arguments, got.ToolDescription, got.Fingerprints)
	}
	if got.State != contracts.ActionPrepared {
		t.Errorf("stored action is %s, want prepared", got.State)
	}

	ap, err := in.l.Approve(a.ID, a.Digest, fp0)
	if err != nil || ap.State != contracts.ActionApproved {
		t.Fatalf("Approve = %s, %v; want approved", ap.State, err)
	}
	d, err := in.l.MarkDispatched(a.ID)
	if err != nil || d.State != contracts.ActionDispatched {
		t.Fatalf("MarkDispatched = %s, %v", d.State, err)
	}
	r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "files", Tool: "write",
		ArgumentsDigest: a.Digest, ActionID: a.ID, Status: "completed", SourceID: "src_1"})
	if err != nil || !validID("rcpt_", r.ID) || r.CreatedAt.IsZero() {
		t.Fatalf("AddReceipt = %+v, %v", r, err)
	}
	f, err := in.l.Finish(a.ID, contracts.ActionCompleted, "", r.ID, "src_1")
	if err != nil || f.State != contracts.ActionCompleted || f.ReceiptID != r.ID || f.SourceID != "src_1" {
		t.Fatalf("Finish = %+v, %v", f, err)
	}
	if s := in.state(a.ID); s.State != contracts.ActionCompleted || s.ReceiptID != r.ID || s.ExpiresAt.IsZero() {
		t.Errorf("stored = %+v", s)
	}
	// A finished action cannot be finished or dispatched again.
	if _, err := in.l.MarkDispatched(a.ID); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("MarkDispatched after completion = %v, want ErrFailedPrecondition", err)
	}
	if _, err := in.l.Finish(a.ID, contracts.ActionFailed, "x", "", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Finish after completion = %v, want ErrFailedPrecondition", err)
	}

	tomb, err := os.ReadFile(in.tombPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(tomb), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], a.ID+" approved ") || !strings.HasPrefix(lines[1], a.ID+" dispatched ") {
		t.Errorf("tombstone file = %q, want an approved then a dispatched line", tomb)
	}
	if fi, err := os.Stat(in.tombPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tombstone file mode = %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestApproveRefusals(t *testing.T) {
	moved := func(f func(*contracts.Fingerprints)) contracts.Fingerprints {
		c := fp0
		f(&c)
		return c
	}
	tests := []struct {
		name string
		// setup runs before the refused approval; it returns the digest and
		// fingerprints to approve with.
		setup      func(in *instance, a Action) (string, contracts.Fingerprints)
		class      error
		reason     string
		state      string // after the refusal
		stateWhy   string // substring of Reason
		retryOK    bool   // a correct approval afterwards succeeds
		retryWhy   string // otherwise its reason
		tombstoned string // state the tombstone file records, if any
	}{
		{
			name:  "wrong digest",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) { return a.Digest[:63] + "0", fp0 },
			class: contracts.ErrPermissionDenied, reason: "digest_mismatch", state: contracts.ActionPrepared, retryOK: true,
		},
		{
			name: "expired",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				in.clk.advance(15*time.Minute + time.Nanosecond)
				return a.Digest, fp0
			},
			class: contracts.ErrFailedPrecondition, reason: "action_expired", state: contracts.ActionExpired,
			stateWhy: "expired", retryWhy: "action_expired",
		},
		{
			name: "settings moved",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				return a.Digest, moved(func(f *contracts.Fingerprints) { f.Settings = "set2" })
			},
			class: contracts.ErrFailedPrecondition, reason: "action_stale", state: contracts.ActionStale,
			stateWhy: "settings changed", retryWhy: "action_stale", tombstoned: "stale",
		},
		{
			name: "credentials moved",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				return a.Digest, moved(func(f *contracts.Fingerprints) { f.CredentialGeneration++ })
			},
			class: contracts.ErrFailedPrecondition, reason: "action_stale", state: contracts.ActionStale,
			stateWhy: "credentials changed", retryWhy: "action_stale", tombstoned: "stale",
		},
		{
			name: "connection moved",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				return a.Digest, moved(func(f *contracts.Fingerprints) { f.ConnectionGeneration++ })
			},
			class: contracts.ErrFailedPrecondition, reason: "action_stale", state: contracts.ActionStale,
			stateWhy: "reconnected", retryWhy: "action_stale", tombstoned: "stale",
		},
		{
			name: "tool definition moved",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				return a.Digest, moved(func(f *contracts.Fingerprints) { f.Tool = "tool2" })
			},
			class: contracts.ErrFailedPrecondition, reason: "action_stale", state: contracts.ActionStale,
			stateWhy: "tool's definition changed", retryWhy: "action_stale", tombstoned: "stale",
		},
		{
			name: "rejected",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				if _, err := in.l.Reject(a.ID, ""); err != nil {
					in.t.Fatalf("Reject: %v", err)
				}
				return a.Digest, fp0
			},
			class: contracts.ErrFailedPrecondition, reason: "action_rejected", state: contracts.ActionRejected,
			retryWhy: "action_rejected", tombstoned: "rejected",
		},
		{
			name: "consumed",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				if _, err := in.l.Approve(a.ID, a.Digest, fp0); err != nil {
					in.t.Fatalf("first Approve: %v", err)
				}
				return a.Digest, fp0
			},
			class: contracts.ErrFailedPrecondition, reason: "action_consumed", state: contracts.ActionApproved,
			retryWhy: "action_consumed", tombstoned: "approved",
		},
		{
			name: "consumed and finished",
			setup: func(in *instance, a Action) (string, contracts.Fingerprints) {
				in.l.Approve(a.ID, a.Digest, fp0)
				in.l.MarkDispatched(a.ID)
				in.l.Finish(a.ID, contracts.ActionFailed, "server error", "", "")
				return a.Digest, fp0
			},
			class: contracts.ErrFailedPrecondition, reason: "action_consumed", state: contracts.ActionFailed,
			stateWhy: "server error", retryWhy: "action_consumed", tombstoned: "dispatched",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInstance(t)
			a := in.prepare()
			digest, fp := tt.setup(in, a)
			_, err := in.l.Approve(a.ID, digest, fp)
			if !errors.Is(err, tt.class) || reasonOf(err) != tt.reason {
				t.Fatalf("Approve = %v (reason %q), want class %v reason %q", err, reasonOf(err), tt.class, tt.reason)
			}
			got := in.state(a.ID)
			if got.State != tt.state || !strings.Contains(got.Reason, tt.stateWhy) {
				t.Errorf("after refusal: state %s reason %q; want %s with %q", got.State, got.Reason, tt.state, tt.stateWhy)
			}
			// The refusal survives a restart.
			in.restart()
			if got := in.state(a.ID); got.State != tt.state && tt.state != contracts.ActionApproved {
				t.Errorf("after restart: state %s, want %s", got.State, tt.state)
			}
			_, err = in.l.Approve(a.ID, a.Digest, fp0)
			if tt.retryOK {
				if err != nil {
					t.Errorf("correct Approve after the refusal = %v, want success", err)
				}
			} else if reasonOf(err) != tt.retryWhy {
				t.Errorf("correct Approve after the refusal = %v (reason %q), want %q", err, reasonOf(err), tt.retryWhy)
			}
			tomb, _ := os.ReadFile(in.tombPath())
			if tt.tombstoned != "" && !strings.Contains(string(tomb), a.ID+" "+tt.tombstoned+" ") {
				t.Errorf("tombstone file %q lacks %s %s", tomb, a.ID, tt.tombstoned)
			}
		})
	}
}

func TestApproveAtExpiryInstant(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	in.clk.advance(ApprovalTTL)
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); err != nil {
		t.Fatalf("Approve exactly at ExpiresAt = %v, want success (expiry is strictly after)", err)
	}
}

func TestUnknownAction(t *testing.T) {
	in := newInstance(t)
	for _, op := range []func() error{
		func() error { _, err := in.l.Get("act_aaaaaaaaaaaaaaaaaaaaaaaaaa"); return err },
		func() error { _, err := in.l.Approve("act_aaaaaaaaaaaaaaaaaaaaaaaaaa", "d", fp0); return err },
		func() error { _, err := in.l.Reject("nope", ""); return err },
		func() error { _, err := in.l.MarkDispatched("nope"); return err },
		func() error { _, err := in.l.Receipt("rcpt_nope"); return err },
	} {
		if err := op(); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("operation on an unknown id = %v, want ErrNotFound", err)
		}
	}
}

func TestRejectDigest(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	if _, err := in.l.Reject(a.ID, "typo"); reasonOf(err) != "digest_mismatch" {
		t.Fatalf("Reject with a wrong digest = %v, want digest_mismatch", err)
	}
	if got := in.state(a.ID); got.State != contracts.ActionPrepared {
		t.Fatalf("after a mistyped reject: %s, want prepared", got.State)
	}
	if r, err := in.l.Reject(a.ID, a.Digest); err != nil || r.State != contracts.ActionRejected {
		t.Fatalf("Reject = %s, %v", r.State, err)
	}
	if _, err := in.l.Reject(a.ID, ""); reasonOf(err) != "action_rejected" {
		t.Errorf("second Reject = %v, want action_rejected", err)
	}
}

func TestConcurrentApprovalsDispatchOnce(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	const n = 100
	var (
		wg         sync.WaitGroup
		start      = make(chan struct{})
		mu         sync.Mutex
		wins       int
		dispatches int
		consumed   int
		other      []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := in.l.Approve(a.ID, a.Digest, fp0)
			if err == nil {
				// The winner sends: dispatch is the side effect.
				_, err := in.l.MarkDispatched(a.ID)
				mu.Lock()
				wins++
				if err == nil {
					dispatches++
				}
				mu.Unlock()
				return
			}
			// A loser that tries to dispatch anyway must not get through.
			_, derr := in.l.MarkDispatched(a.ID)
			mu.Lock()
			defer mu.Unlock()
			if derr == nil {
				dispatches++
			}
			if reasonOf(err) == "action_consumed" {
				consumed++
			} else {
				other = append(other, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || consumed != n-1 || dispatches != 1 || len(other) != 0 {
		t.Fatalf("%d approvals: %d won, %d action_consumed, %d dispatched, others %v; want 1, %d, 1, none",
			n, wins, consumed, dispatches, other, n-1)
	}
	tomb, _ := os.ReadFile(in.tombPath())
	if c := strings.Count(string(tomb), " approved "); c != 1 {
		t.Errorf("tombstone file records %d approvals, want 1:\n%s", c, tomb)
	}
}

func TestRestartRecovery(t *testing.T) {
	in := newInstance(t)
	prepared := in.prepare()
	approved := in.prepare()
	in.l.Approve(approved.ID, approved.Digest, fp0)
	dispatched := in.prepare()
	in.l.Approve(dispatched.ID, dispatched.Digest, fp0)
	in.l.MarkDispatched(dispatched.ID)
	completed := in.prepare()
	in.l.Approve(completed.ID, completed.Digest, fp0)
	in.l.MarkDispatched(completed.ID)
	rcpt, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "files", Tool: "write", ActionID: completed.ID, Status: "completed"})
	if err != nil {
		t.Fatal(err)
	}
	in.l.Finish(completed.ID, contracts.ActionCompleted, "", rcpt.ID, "")
	direct, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "files", "touch", []byte(`{}`), fp0, contracts.Caller{})
	if err != nil || direct.State != contracts.ActionDispatched || direct.Kind != contracts.ReceiptAutonomous {
		t.Fatalf("BeginDirect = %+v, %v", direct, err)
	}
	rejected := in.prepare()
	in.l.Reject(rejected.ID, "")

	in.restart()

	want := []struct {
		id, state, reason string
	}{
		{prepared.ID, contracts.ActionPrepared, ""},
		{approved.ID, contracts.ActionFailed, ReasonStoppedBeforeSend},
		{dispatched.ID, contracts.ActionUncertain, ReasonStoppedWhileOut},
		{completed.ID, contracts.ActionCompleted, ""},
		{direct.ID, contracts.ActionUncertain, ReasonStoppedWhileOut},
		{rejected.ID, contracts.ActionRejected, "rejected by the owner"},
	}
	for _, w := range want {
		got := in.state(w.id)
		if got.State != w.state || got.Reason != w.reason {
			t.Errorf("after restart %s = %s %q, want %s %q", w.id, got.State, got.Reason, w.state, w.reason)
		}
	}
	if n := len(in.l.Recovered()); n != 3 {
		t.Errorf("Recovered() has %d actions, want 3", n)
	}
	if r, err := in.l.Receipt(rcpt.ID); err != nil || r.ActionID != completed.ID || r.Status != "completed" {
		t.Errorf("receipt after restart = %+v, %v", r, err)
	}
	for _, id := range []string{approved.ID, dispatched.ID, direct.ID} {
		if got, want := in.state(id).NotSent, id == approved.ID; got != want {
			t.Errorf("after restart %s NotSent = %v, want %v (only the approved, never dispatched one)", id, got, want)
		}
	}
	if u := in.state(dispatched.ID); u.State != contracts.ActionUncertain || u.Server != "files" {
		t.Errorf("the dispatched action after a restart = %+v, want uncertain, of files", u)
	}
	if got := in.state(completed.ID); got.ReceiptID != rcpt.ID {
		t.Errorf("completed action lost its receipt id: %+v", got)
	}
	// Recovery settled everything: nothing is re-sent or changed again.
	if _, err := in.l.MarkDispatched(approved.ID); err == nil {
		t.Error("MarkDispatched of a recovered approved action succeeded; it must never be sent")
	}
	in.restart()
	if n := len(in.l.Recovered()); n != 0 {
		t.Errorf("second restart recovered %d actions, want 0", n)
	}
	list, err := in.l.List(contracts.ActionUncertain, 0)
	if err != nil || len(list) != 2 {
		t.Errorf("List(uncertain) = %d actions, %v; want 2", len(list), err)
	}
}

func TestRestoreOlderCopy(t *testing.T) {
	tests := []struct {
		name string
		// copyAfter chooses when the database copy is taken: after prepare
		// (0) or after approve (1).
		copyAfter int
		decide    func(in *instance, a Action)
		state     string
		reason    string
	}{
		{"approved", 0, func(in *instance, a Action) { in.l.Approve(a.ID, a.Digest, fp0) },
			contracts.ActionFailed, ReasonRestoredNotSent},
		{"approved and sent", 0, func(in *instance, a Action) {
			in.l.Approve(a.ID, a.Digest, fp0)
			in.l.MarkDispatched(a.ID)
			in.l.Finish(a.ID, contracts.ActionCompleted, "", "", "")
		}, contracts.ActionUncertain, ReasonRestoredSent},
		{"copy while approved, then sent", 1, func(in *instance, a Action) {
			in.l.MarkDispatched(a.ID)
			in.l.Finish(a.ID, contracts.ActionCompleted, "", "", "")
		}, contracts.ActionUncertain, ReasonRestoredSent},
		{"rejected", 0, func(in *instance, a Action) { in.l.Reject(a.ID, "") },
			contracts.ActionRejected, ReasonRestoredDecided},
		{"stale", 0, func(in *instance, a Action) {
			in.l.Approve(a.ID, a.Digest, contracts.Fingerprints{Settings: "other"})
		}, contracts.ActionStale, ReasonRestoredDecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInstance(t)
			a := in.prepare()
			if tt.copyAfter == 1 {
				if _, err := in.l.Approve(a.ID, a.Digest, fp0); err != nil {
					t.Fatal(err)
				}
			}
			backup := filepath.Join(t.TempDir(), "backup.db")
			// An online backup, as an owner's backup tool would take it.
			if err := in.db.bolt.View(func(tx *bolt.Tx) error { return tx.CopyFile(backup, 0o600) }); err != nil {
				t.Fatal(err)
			}
			tt.decide(in, a)
			in.close()
			copyFile(t, backup, in.dbPath())
			in.open()

			got := in.state(a.ID)
			if got.State != tt.state || got.Reason != tt.reason {
				t.Errorf("after restore: %s %q, want %s %q", got.State, got.Reason, tt.state, tt.reason)
			}
			if _, err := in.l.Approve(a.ID, a.Digest, fp0); !errors.Is(err, contracts.ErrFailedPrecondition) {
				t.Errorf("Approve after restore = %v, want refused", err)
			}
			// Restarting again changes nothing further.
			in.restart()
			if again := in.state(a.ID); again.State != tt.state {
				t.Errorf("after a second restart: %s, want %s", again.State, tt.state)
			}
		})
	}
}

func TestRestoreCopyWithoutTheAction(t *testing.T) {
	in := newInstance(t)
	in.close()
	backup := filepath.Join(t.TempDir(), "backup.db")
	copyFile(t, in.dbPath(), backup)
	in.open()
	a := in.prepare()
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); err != nil {
		t.Fatal(err)
	}
	in.close()
	copyFile(t, backup, in.dbPath())
	in.open()
	_, err := in.l.Approve(a.ID, a.Digest, fp0)
	if !errors.Is(err, contracts.ErrNotFound) || !strings.Contains(err.Error(), "restored") {
		t.Errorf("Approve of an id only the tombstones know = %v, want not found naming the restore", err)
	}
}

func TestTombstoneFileDamage(t *testing.T) {
	in := newInstance(t)
	decided := in.prepare()
	torn := in.prepare()
	in.close()
	f, err := os.OpenFile(in.tombPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "garbage line\n")
	fmt.Fprintf(f, "%s approved 1772366400\n", decided.ID)
	fmt.Fprintf(f, "%s appr", torn.ID) // crash mid-append
	f.Close()

	in.open()
	if got := in.state(decided.ID); got.State != contracts.ActionFailed || got.Reason != ReasonRestoredNotSent {
		t.Errorf("tombstoned action = %s %q, want failed %q", got.State, got.Reason, ReasonRestoredNotSent)
	}
	if got := in.state(torn.ID); got.State != contracts.ActionPrepared {
		t.Errorf("action of the torn line = %s, want prepared (its approval never committed)", got.State)
	}
	if _, err := in.l.Approve(torn.ID, torn.Digest, fp0); err != nil {
		t.Fatalf("Approve of the torn line's action = %v", err)
	}
	b, err := os.ReadFile(in.tombPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if last := lines[len(lines)-2]; !strings.HasPrefix(last, torn.ID+" approved ") || !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("tombstone file after a torn line = %q; want the new line on its own", b)
	}
	// The file parses cleanly apart from the one garbage line.
	bad := 0
	for _, line := range lines[:len(lines)-1] {
		if _, _, err := parseTombstone(line); err != nil {
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("tombstone file has %d malformed lines, want 1 (the planted one):\n%s", bad, b)
	}
}

func TestTombstoneBeforeCommit(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	// With the tombstone file unusable, no decision may commit.
	in.l.tombs.close()
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); err == nil {
		t.Fatal("Approve without a writable tombstone file succeeded")
	}
	if _, err := in.l.Reject(a.ID, ""); err == nil {
		t.Fatal("Reject without a writable tombstone file succeeded")
	}
	if got := in.state(a.ID); got.State != contracts.ActionPrepared {
		t.Errorf("state after failed decisions = %s, want prepared", got.State)
	}
}

func TestListOrderFilterAndExpiry(t *testing.T) {
	in := newInstance(t)
	var ids []string
	for range 5 {
		ids = append(ids, in.prepare().ID)
		in.clk.advance(time.Second)
	}
	in.l.Reject(ids[1], "")
	all, err := in.l.List("", 0)
	if err != nil || len(all) != 5 {
		t.Fatalf("List = %d, %v", len(all), err)
	}
	for i, a := range all {
		if a.ID != ids[4-i] {
			t.Errorf("List[%d] = %s, want %s (newest first)", i, a.ID, ids[4-i])
		}
	}
	if two, _ := in.l.List("", 2); len(two) != 2 || two[0].ID != ids[4] {
		t.Errorf("List limit 2 = %v", two)
	}
	if rej, _ := in.l.List(contracts.ActionRejected, 0); len(rej) != 1 || rej[0].ID != ids[1] {
		t.Errorf("List(rejected) = %v", rej)
	}
	if _, err := in.l.List("bogus", 0); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("List(bogus) = %v, want ErrInvalidArgument", err)
	}

	in.clk.advance(ApprovalTTL - 4*time.Second)
	// ids[0] is now past its expiry; the rest are not.
	if prep, _ := in.l.List(contracts.ActionPrepared, 0); len(prep) != 3 {
		t.Errorf("List(prepared) after ids[0] expired = %d actions, want 3", len(prep))
	}
	in.clk.advance(time.Hour)
	if prep, _ := in.l.List(contracts.ActionPrepared, 0); len(prep) != 0 {
		t.Errorf("List(prepared) after expiry = %d actions, want 0", len(prep))
	}
	exp, _ := in.l.List(contracts.ActionExpired, 0)
	if len(exp) != 4 {
		t.Errorf("List(expired) = %d actions, want 4", len(exp))
	}
	// The expiry was recorded, not just shown: it holds after a restart
	// with the clock turned back.
	in.close()
	in.clk = newClock()
	in.open()
	if got := in.state(ids[0]); got.State != contracts.ActionExpired || got.Reason != ReasonExpired {
		t.Errorf("expired action after restart = %s %q", got.State, got.Reason)
	}
	if _, err := in.l.Approve(ids[2], "", fp0); reasonOf(err) != "action_expired" {
		t.Errorf("Approve of an expired action = %v, want action_expired", err)
	}
}

func TestGetRecordsExpiry(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	in.clk.advance(ApprovalTTL + time.Second)
	if got := in.state(a.ID); got.State != contracts.ActionExpired {
		t.Fatalf("Get past expiry = %s, want expired", got.State)
	}
	in.close()
	in.clk = newClock()
	in.open()
	if got := in.state(a.ID); got.State != contracts.ActionExpired {
		t.Errorf("after restart with an early clock: %s, want expired (Get must record it)", got.State)
	}
}

func TestCallValidation(t *testing.T) {
	in := newInstance(t)
	big := []byte(`"` + strings.Repeat("é", contracts.MaxArgumentsChars) + `"`)
	tests := []struct {
		name, server, tool string
		args               []byte
	}{
		{"empty server", "", "t", []byte(`{}`)},
		{"empty tool", "s", "", []byte(`{}`)},
		{"not json", "s", "t", []byte(`{`)},
		{"too many characters", "s", "t", big},
	}
	for _, tt := range tests {
		if _, err := in.l.Prepare(tt.server, tt.tool, tt.args, "", fp0, contracts.Caller{}); !errors.Is(err, contracts.ErrInvalidArgument) {
			t.Errorf("Prepare(%s) = %v, want ErrInvalidArgument", tt.name, err)
		}
		if _, err := in.l.BeginDirect(contracts.ReceiptRead, tt.server, tt.tool, tt.args, fp0, contracts.Caller{}); !errors.Is(err, contracts.ErrInvalidArgument) {
			t.Errorf("BeginDirect(%s) = %v, want ErrInvalidArgument", tt.name, err)
		}
	}
	if _, err := in.l.BeginDirect(contracts.ReceiptApproved, "s", "t", []byte(`{}`), fp0, contracts.Caller{}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("BeginDirect(mcp_approved) = %v, want ErrInvalidArgument", err)
	}
	// Exactly at the cap is fine.
	ok := []byte(`"` + strings.Repeat("é", contracts.MaxArgumentsChars-2) + `"`)
	if _, err := in.l.Prepare("s", "t", ok, "", fp0, contracts.Caller{}); err != nil {
		t.Errorf("Prepare at the cap = %v", err)
	}
}

func TestFinishRules(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	if _, err := in.l.MarkDispatched(a.ID); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("MarkDispatched of a prepared action = %v, want ErrFailedPrecondition", err)
	}
	if _, err := in.l.Finish(a.ID, contracts.ActionCompleted, "", "", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Finish of a prepared action = %v, want ErrFailedPrecondition", err)
	}
	in.l.Approve(a.ID, a.Digest, fp0)
	if _, err := in.l.Finish(a.ID, contracts.ActionRejected, "", "", ""); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("Finish as rejected = %v, want ErrInvalidArgument", err)
	}
	if _, err := in.l.Finish(a.ID, contracts.ActionCompleted, "", "", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Finish completed of an approved, unsent action = %v, want ErrFailedPrecondition", err)
	}
	// Approved but never sent (say the connection was gone): failed.
	f, err := in.l.Finish(a.ID, contracts.ActionFailed, "server not connected; nothing was sent", "", "")
	if err != nil || f.State != contracts.ActionFailed {
		t.Errorf("Finish failed from approved = %+v, %v", f, err)
	}
	if f.NotSent {
		t.Errorf("Finish failed marked the action not sent: %+v", f)
	}
	// A dispatched call that provably never left: failed (not sent), and
	// the advice says to prepare it again.
	b := in.prepare()
	in.l.Approve(b.ID, b.Digest, fp0)
	in.l.MarkDispatched(b.ID)
	ns, err := in.l.FinishNotSent(b.ID, "not sent: connection refused", "rcpt_x")
	if err != nil || ns.State != contracts.ActionFailed || !ns.NotSent || ns.ReceiptID != "rcpt_x" {
		t.Fatalf("FinishNotSent = %+v, %v", ns, err)
	}
	if s := in.state(b.ID); !s.NotSent || s.State != contracts.ActionFailed {
		t.Errorf("not-sent action = %+v", s)
	}
	if _, err := in.l.FinishNotSent(b.ID, "again", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("FinishNotSent of a failed action = %v, want ErrFailedPrecondition", err)
	}
	if _, err := in.l.FinishNotSent(in.prepare().ID, "x", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("FinishNotSent of a prepared action = %v, want ErrFailedPrecondition", err)
	}
	d, _ := in.l.BeginDirect(contracts.ReceiptRead, "s", "t", []byte(`{}`), fp0, contracts.Caller{})
	u, err := in.l.Finish(d.ID, contracts.ActionUncertain, "timed out", "", "")
	if err != nil || u.State != contracts.ActionUncertain || u.Reason != "timed out" {
		t.Errorf("Finish uncertain of a direct call = %+v, %v", u, err)
	}
}

func TestAsyncReceipts(t *testing.T) {
	in := newInstance(t)
	var ids []string
	for i := range 50 {
		r := in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed", SourceID: fmt.Sprint("src_", i)})
		if !validID("rcpt_", r.ID) {
			t.Fatalf("AddReceiptAsync id = %q", r.ID)
		}
		// Readable at once, written or not.
		if got, err := in.l.Receipt(r.ID); err != nil || got.SourceID != r.SourceID {
			t.Fatalf("Receipt right after AddReceiptAsync = %+v, %v", got, err)
		}
		ids = append(ids, r.ID)
	}
	if err := in.l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// After Close the ledger still stores a late receipt, synchronously.
	late := in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed"})
	ids = append(ids, late.ID)
	in.l = nil
	in.restart()
	for i, id := range ids {
		r, err := in.l.Receipt(id)
		if err != nil || r.Kind != contracts.ReceiptRead {
			t.Errorf("receipt %d after reopen = %+v, %v", i, r, err)
		}
	}
}

func TestReceiptValidation(t *testing.T) {
	in := newInstance(t)
	if _, err := in.l.AddReceipt(Receipt{Server: "s", Tool: "t"}); !errors.Is(err, contracts.ErrInvalidArgument) {
		t.Errorf("AddReceipt without kind = %v, want ErrInvalidArgument", err)
	}
}

// TestRevalidate: listing or reviewing a prepared action records it stale
// when a fingerprint moved, naming what moved; nothing else changes it.
func TestRevalidate(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	same, err := in.l.Revalidate(a.ID, fp0)
	if err != nil || same.State != contracts.ActionPrepared {
		t.Fatalf("Revalidate with the same fingerprints = %+v, %v; want prepared", same, err)
	}
	for _, tc := range []struct {
		name string
		now  contracts.Fingerprints
		want []string
		not  []string
	}{
		{"disconnected", contracts.Fingerprints{Settings: fp0.Settings, CredentialGeneration: fp0.CredentialGeneration},
			[]string{"disconnected"}, []string{"reconnected", "definition", "no longer offers"}},
		{"tool gone", contracts.Fingerprints{Settings: fp0.Settings, CredentialGeneration: fp0.CredentialGeneration, ConnectionGeneration: fp0.ConnectionGeneration},
			[]string{"no longer offers the tool"}, []string{"connect"}},
		{"server removed", contracts.Fingerprints{}, []string{"removed from the settings", "disconnected"}, []string{"settings changed"}},
		{"definition", contracts.Fingerprints{Settings: fp0.Settings, CredentialGeneration: fp0.CredentialGeneration, ConnectionGeneration: fp0.ConnectionGeneration, Tool: "tool2"},
			[]string{"tool's definition changed"}, []string{"connect", "settings"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := in.prepare()
			got, err := in.l.Revalidate(a.ID, tc.now)
			if err != nil || got.State != contracts.ActionStale {
				t.Fatalf("Revalidate = %+v, %v; want stale", got, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Reason, w) {
					t.Errorf("reason %q lacks %q", got.Reason, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got.Reason, n) {
					t.Errorf("reason %q names %q, which did not move", got.Reason, n)
				}
			}
			if st := in.state(a.ID); st.State != contracts.ActionStale || st.Reason != got.Reason {
				t.Errorf("stored action = %q (%q), want stale", st.State, st.Reason)
			}
			if ts, _ := in.l.tombs.state(a.ID); ts != contracts.ActionStale {
				t.Errorf("tombstone = %q, want stale", ts)
			}
			// Stale is final: the original fingerprints do not revive it.
			if _, err := in.l.Approve(a.ID, a.Digest, fp0); reasonOf(err) != "action_stale" {
				t.Errorf("Approve after Revalidate = %v, want action_stale", err)
			}
			again, err := in.l.Revalidate(a.ID, fp0)
			if err != nil || again.State != contracts.ActionStale {
				t.Errorf("Revalidate of a stale action = %+v, %v", again, err)
			}
		})
	}
	// Expiry is recorded too.
	b := in.prepare()
	in.clk.advance(ApprovalTTL + time.Second)
	if got, err := in.l.Revalidate(b.ID, fp0); err != nil || got.State != contracts.ActionExpired {
		t.Errorf("Revalidate past expiry = %+v, %v; want expired", got, err)
	}
	if _, err := in.l.Revalidate("act_unknown", fp0); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Revalidate of an unknown action = %v, want ErrNotFound", err)
	}
}

// TestFinishStale: a dispatched call refused at the last moment (the
// tool's definition moved before the request was written) ends stale.
func TestFinishStale(t *testing.T) {
	in := newInstance(t)
	a := in.prepare()
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); err != nil {
		t.Fatal(err)
	}
	if _, err := in.l.MarkDispatched(a.ID); err != nil {
		t.Fatal(err)
	}
	s, err := in.l.Finish(a.ID, contracts.ActionStale, "the tool's definition changed before it was sent; nothing was sent", "", "")
	if err != nil || s.State != contracts.ActionStale {
		t.Fatalf("Finish stale from dispatched = %+v, %v", s, err)
	}
	in.restart()
	if st := in.state(a.ID); st.State != contracts.ActionStale {
		t.Errorf("after restart the action is %q, want stale (recovery must not touch it)", st.State)
	}
	if _, err := in.l.Finish(a.ID, contracts.ActionStale, "", "", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Finish stale of a stale action = %v, want ErrFailedPrecondition", err)
	}
	p := in.prepare()
	if _, err := in.l.Finish(p.ID, contracts.ActionStale, "", "", ""); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("Finish stale of a prepared action = %v, want ErrFailedPrecondition (Revalidate does that)", err)
	}
}
