package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
	bolt "go.etcd.io/bbolt"
)

// agent is a caller as the daemon records one from a bridge connection.
var agent = contracts.Caller{
	PID: 4242, Executable: "/home/me/.local/bin/pikoctl",
	Client: contracts.ClientInfo{Name: "claude-code", Version: "2.1.0"}, Via: "pikoctl mcp serve",
}

func TestCallerPersisted(t *testing.T) {
	in := newInstance(t)
	prepared, err := in.l.Prepare("files", "write", []byte(`{"path":"a"}`), "", fp0, agent)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "files", "touch", []byte(`{}`), fp0, contracts.Caller{PID: 7})
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := in.l.Prepare("files", "write", []byte(`{}`), "", fp0, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	digest := contracts.ActionDigest("files", "write", []byte(`{"path":"a"}`), fp0)
	if prepared.Digest != digest {
		t.Errorf("digest with a caller = %s, want %s: who asked must not change what is approved", prepared.Digest, digest)
	}

	in.restart()
	for _, tc := range []struct {
		id   string
		want contracts.Caller
	}{
		{prepared.ID, agent},
		{direct.ID, contracts.Caller{PID: 7}},
		{unknown.ID, contracts.Caller{}},
	} {
		a := in.state(tc.id)
		if a.Caller != tc.want {
			t.Errorf("action %s after a restart has caller %+v, want %+v", tc.id, a.Caller, tc.want)
		}
	}
	list, err := in.l.List("", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.ID == prepared.ID && a.Caller != agent {
			t.Errorf("listed action has caller %+v, want %+v", a.Caller, agent)
		}
	}
	// Decisions keep it.
	if _, err := in.l.Approve(prepared.ID, prepared.Digest, fp0); err != nil {
		t.Fatal(err)
	}
	if a := in.state(prepared.ID); a.Caller != agent {
		t.Errorf("approved action has caller %+v, want %+v", a.Caller, agent)
	}
}

// TestCallerBounded: a hostile caller is stored bounded and as declared;
// daemon/present's TestReviewShowsCallerSafely shows it safely.
func TestCallerBounded(t *testing.T) {
	in := newInstance(t)
	hostile := contracts.Caller{
		PID:        99,
		Executable: "/tmp/\x1b[2Jevil",
		Client:     contracts.ClientInfo{Name: "\x1b]0;pwned\x07" + strings.Repeat("N\x1b[31m", 2000), Version: strings.Repeat("\u202e1", 100)},
		Via:        strings.Repeat("v", 10_000),
	}
	a, err := in.l.Prepare("s", "t", []byte(`{}`), "", fp0, hostile)
	if err != nil {
		t.Fatal(err)
	}
	got := in.state(a.ID).Caller
	if got.Client.Name == "" {
		t.Fatalf("stored caller = %+v, want the hostile one bounded", got)
	}
	for what, tc := range map[string]struct {
		s   string
		max int
	}{
		"name": {got.Client.Name, contracts.MaxClientNameChars}, "version": {got.Client.Version, contracts.MaxClientVersionChars},
		"via": {got.Via, contracts.MaxViaChars},
	} {
		if n := utf8.RuneCountInString(tc.s); n > tc.max {
			t.Errorf("stored %s is %d characters, want at most %d", what, n, tc.max)
		}
	}
	if !strings.HasPrefix(got.Client.Name, "\x1b]0;pwned") {
		t.Errorf("stored name %q: want it kept as declared (sanitised where shown, not where stored)", got.Client.Name)
	}

}

// putLegacyReceipt chains r as the previous pikod stored receipts: its
// own encoding, the hash of those bytes as the head.
func putLegacyReceipt(t *testing.T, db *DB, r testsupport.LegacyReceipt) {
	t.Helper()
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		var head chainHead
		if v := tx.Bucket(bucketMeta).Get(keyReceiptsHead); v != nil {
			if err := json.Unmarshal(v, &head); err != nil {
				return err
			}
		}
		r.Seq, r.Prev = head.Seq+1, head.Hash
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		hv, _ := json.Marshal(chainHead{Seq: r.Seq, ID: r.ID, Hash: sha(v)})
		return errors.Join(
			tx.Bucket(bucketReceipts).Put([]byte(r.ID), v),
			tx.Bucket(bucketReceiptsBySeq).Put(seqKey(r.Seq), []byte(r.ID)),
			tx.Bucket(bucketReceiptsByTime).Put(timeKey(r.CreatedAt, r.ID), nil),
			tx.Bucket(bucketMeta).Put(keyReceiptsHead, hv),
		)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCallerReceiptChain checks that receipts stored before callers were
// kept still verify, alongside new ones with and without a caller; that a
// receipt without one is stored byte for byte as before; and that the
// caller is covered by the chain: editing it breaks verification.
func TestCallerReceiptChain(t *testing.T) {
	in := newInstance(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	putLegacyReceipt(t, in.db, testsupport.LegacyReceipt{ID: "rcpt_legacyaaaaaaaaaaaaaaaaaaaa", Kind: contracts.ReceiptRead, Server: "s", Tool: "read",
		Status: "completed", SourceID: "src_1", CreatedAt: at})
	putLegacyReceipt(t, in.db, testsupport.LegacyReceipt{ID: "rcpt_legacybbbbbbbbbbbbbbbbbbbb", Kind: contracts.ReceiptApproved, Server: "s", Tool: "write",
		ArgumentsDigest: strings.Repeat("ab", 32), ActionID: "act_x", Status: "completed", CreatedAt: at.Add(time.Second)})
	// The action the approved receipt belongs to (verification checks it).
	if err := in.db.bolt.Update(func(tx *bolt.Tx) error {
		return putAction(tx, &actionRecord{ID: "act_x", State: contracts.ActionCompleted, Kind: contracts.ReceiptApproved, Server: "s", Tool: "write",
			ReceiptID: "rcpt_legacybbbbbbbbbbbbbbbbbbbb", CreatedAt: at, UpdatedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, in.l, 2)

	plain, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed", CreatedAt: at.Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	withCaller, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptApproved, Server: "s", Tool: "write", Status: "completed",
		ArgumentsDigest: strings.Repeat("cd", 32), Caller: agent})
	if err != nil {
		t.Fatal(err)
	}
	in.l.AddReceiptAsync(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed", Caller: contracts.Caller{PID: 5, Executable: "/bin/sh"}})
	if err := in.l.FlushReceipts(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptRead, Server: "s", Tool: "read", Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, in.l, 6)
	in.restart()
	mustVerify(t, in.l, 6)

	// A receipt without a caller is the old encoding exactly.
	chain, _ := rawChain(t, in.db)
	old, err := json.Marshal(testsupport.LegacyReceipt{ID: plain.ID, Seq: plain.Seq, Prev: plain.Prev, Kind: plain.Kind, Server: plain.Server,
		Tool: plain.Tool, Status: plain.Status, CreatedAt: plain.CreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	if got := chain[plain.Seq-1].stored; !bytes.Equal(got, old) {
		t.Errorf("receipt without a caller stored as\n%s\nwant the old encoding\n%s", got, old)
	}
	stored := chain[withCaller.Seq-1].stored
	if !bytes.Contains(stored, []byte(`"caller":{"pid":4242,"executable":"/home/me/.local/bin/pikoctl","client":{"name":"claude-code","version":"2.1.0"},"via":"pikoctl mcp serve"}`)) {
		t.Errorf("receipt with a caller stored as %s: want the caller in the hashed bytes", stored)
	}
	r, err := in.l.Receipt(withCaller.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Caller != agent || r.Info().Caller != agent {
		t.Errorf("receipt read back with caller %+v (info %+v), want %+v", r.Caller, r.Info().Caller, agent)
	}
	if legacy, err := in.l.Receipt("rcpt_legacyaaaaaaaaaaaaaaaaaaaa"); err != nil || !legacy.Caller.IsZero() || !legacy.Info().Caller.IsZero() {
		t.Errorf("legacy receipt = %+v, %v; want it read without a caller", legacy, err)
	}

	// Tampering with the stored caller, even keeping the JSON valid and
	// the length, breaks the chain at that receipt.
	for _, tc := range []struct{ name, from, to string }{
		{"executable", "/home/me/.local/bin/pikoctl", "/home/me/.local/bin/pikoctX"},
		{"pid", `"pid":4242`, `"pid":4243`},
		{"declared name", `"name":"claude-code"`, `"name":"cursor-code"`},
		{"removed", `"via":"pikoctl mcp serve"`, `"xia":"pikoctl mcp serve"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := in.db.bolt.Update(func(tx *bolt.Tx) error {
				rb := tx.Bucket(bucketReceipts)
				v := rb.Get([]byte(withCaller.ID))
				edited := bytes.Replace(bytes.Clone(v), []byte(tc.from), []byte(tc.to), 1)
				if bytes.Equal(edited, v) {
					t.Fatalf("%q not found in %s", tc.from, v)
				}
				return rb.Put([]byte(withCaller.ID), edited)
			})
			if err != nil {
				t.Fatal(err)
			}
			v, err := in.l.VerifyReceipts()
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || v.Break == nil || v.Break.Seq != withCaller.Seq || v.Break.ReceiptID != withCaller.ID || v.Break.Problem != contracts.ChainContentMismatch {
				t.Errorf("verify after editing the caller's %s = %+v (break %+v), want content_mismatch at seq %d (%s)",
					tc.name, v, v.Break, withCaller.Seq, withCaller.ID)
			}
			// Put it back: the chain verifies again.
			if err := in.db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketReceipts).Put([]byte(withCaller.ID), stored) }); err != nil {
				t.Fatal(err)
			}
			mustVerify(t, in.l, 6)
		})
	}
}
