package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// Receipt suites: every executed call's receipt, listed and read through
// the compiled pikoctl, and the hash chain the receipts form, checked with
// 'pikoctl mcp receipts --verify' after the database file was edited
// offline (with bbolt, as anyone who can write the file could) and after
// pikod was killed with calls out.

// receiptsJSON runs 'pikoctl --json mcp receipts ARGS...' and decodes the
// result; the exit status must be 0.
func receiptsJSON(t testing.TB, d *daemon, args ...string) contracts.ReceiptsResult {
	t.Helper()
	stdout, stderr, code := runCtl(t, d, "", append([]string{"--json", "mcp", "receipts"}, args...)...)
	if code != 0 {
		t.Fatalf("pikoctl --json mcp receipts %v: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
	}
	var res contracts.ReceiptsResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("pikoctl --json mcp receipts %v printed %q: %v", args, stdout, err)
	}
	return res
}

// verifyChain runs 'pikoctl mcp receipts --verify' (and its --json form)
// and returns the verification and the human output; wantOK says which
// exit status to expect (0 intact, 1 broken).
func verifyChain(t testing.TB, d *daemon, wantOK bool) (contracts.ReceiptsVerification, string) {
	t.Helper()
	want := 0
	if !wantOK {
		want = 1
	}
	text, stderr, code := runCtl(t, d, "", "mcp", "receipts", "--verify")
	if code != want {
		t.Fatalf("pikoctl mcp receipts --verify: exit %d, want %d\nstdout: %s\nstderr: %s", code, want, text, stderr)
	}
	stdout, stderr, code := runCtl(t, d, "", "--json", "mcp", "receipts", "--verify")
	if code != want {
		t.Fatalf("pikoctl --json mcp receipts --verify: exit %d, want %d\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
	var res contracts.ReceiptsResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Verification == nil || res.Receipts != nil {
		t.Fatalf("pikoctl --json mcp receipts --verify printed %q (%v), want only a verification", stdout, err)
	}
	if res.Verification.OK != wantOK {
		t.Fatalf("verification %+v (break %+v), want ok=%v", res.Verification, res.Verification.Break, wantOK)
	}
	return *res.Verification, text
}

// receiptIDs returns the ids of a list, in order.
func receiptIDs(rs []contracts.ReceiptInfo) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// mixedCalls makes read, autonomous and approved calls on fx and fy
// (callsServer entries) and returns their receipt ids in call order.
func mixedCalls(t testing.TB, d *daemon, a *approver) []string {
	t.Helper()
	var ids []string
	call := func(server, tool, args, kind string) {
		t.Helper()
		res := callTool(t, d, server, tool, args)
		if res.Status != contracts.CallCompleted || res.ReceiptKind != kind || res.ReceiptID == "" {
			t.Fatalf("%s/%s: %+v, want completed with a %s receipt", server, tool, res, kind)
		}
		ids = append(ids, res.ReceiptID)
	}
	approve := func(server string) {
		t.Helper()
		prep := prepare(t, d, server, "tool-0001", `{}`)
		o := a.approve(d, prep.ActionID, prep.Digest)
		if o.Result == nil || o.Result.Status != contracts.CallCompleted || o.Result.ReceiptKind != contracts.ReceiptApproved {
			t.Fatalf("approving %s: %s", prep.ActionID, o)
		}
		if r := wantState(t, d, prep.ActionID, contracts.ActionCompleted); r.ReceiptID != o.Result.ReceiptID {
			t.Fatalf("action %s names receipt %s, the call answered %s", prep.ActionID, r.ReceiptID, o.Result.ReceiptID)
		}
		ids = append(ids, o.Result.ReceiptID)
	}
	call("fx", "echo", `{"text":"one"}`, contracts.ReceiptRead)
	call("fx", "add", `{"a":1,"b":2}`, contracts.ReceiptAutonomous)
	approve("fx")
	call("fy", "echo", `{"text":"two"}`, contracts.ReceiptRead)
	call("fx", "echo", `{"text":"three"}`, contracts.ReceiptRead)
	call("fy", "add", `{"a":3,"b":4}`, contracts.ReceiptAutonomous)
	approve("fy")
	call("fx", "add", `{"a":5,"b":6}`, contracts.ReceiptAutonomous)
	return ids
}

// receiptsDaemon starts a daemon with callsServer entries fx and fy
// connected.
func receiptsDaemon(t testing.TB) *daemon {
	t.Helper()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t,
		callsServer("fx", filepath.Join(t.TempDir(), "fx.log")),
		callsServer("fy", filepath.Join(t.TempDir(), "fy.log"))))
	connectServer(t, d, "fx")
	connectServer(t, d, "fy")
	return d
}

// TestReceipts lists and reads the receipts of read, autonomous and
// approved calls, filtered by server, time and count.
func TestReceipts(t *testing.T) {
	t.Parallel()
	d := receiptsDaemon(t)
	a := startApprover(t)

	empty := receiptsJSON(t, d)
	if empty.Receipts == nil || len(empty.Receipts) != 0 || empty.Head == nil || empty.Head.Seq != 0 {
		t.Fatalf("receipts before any call: %+v, want an empty list and head 0", empty)
	}
	if v, _ := verifyChain(t, d, true); v.Checked != 0 {
		t.Errorf("verification of no receipts checked %d", v.Checked)
	}

	ids := mixedCalls(t, d, a)
	n := len(ids)
	all := receiptsJSON(t, d)
	// Calls ran one after the other, so creation order is call order and
	// the list is newest first.
	want := slices.Clone(ids)
	slices.Reverse(want)
	if got := receiptIDs(all.Receipts); !slices.Equal(got, want) {
		t.Fatalf("receipts listed %v, want newest first %v", got, want)
	}
	seqs := map[uint64]bool{}
	for _, r := range all.Receipts {
		seqs[r.Seq] = true
		if len(r.Hash) != 64 || (r.Seq == 1) != (r.Prev == "") || r.Status != contracts.CallCompleted || r.ArgumentsDigest == "" || r.SourceID == "" {
			t.Errorf("receipt %+v: want a hash, a prev (except seq 1), completed, an arguments digest and a source", r)
		}
		if (r.Kind == contracts.ReceiptRead) != (r.ActionID == "") {
			t.Errorf("receipt %s (%s) has action %q: approved and autonomous calls have one, reads none", r.ID, r.Kind, r.ActionID)
		}
	}
	for s := uint64(1); s <= uint64(n); s++ {
		if !seqs[s] {
			t.Errorf("no receipt has sequence %d; listed %+v", s, all.Receipts)
		}
	}
	if all.Head == nil || all.Head.Seq != uint64(n) {
		t.Fatalf("head %+v, want sequence %d", all.Head, n)
	}
	kinds := map[string]int{}
	for _, r := range all.Receipts {
		kinds[r.Kind]++
	}
	if kinds[contracts.ReceiptRead] != 3 || kinds[contracts.ReceiptAutonomous] != 3 || kinds[contracts.ReceiptApproved] != 2 {
		t.Errorf("receipt kinds %v, want 3 mcp_read, 3 mcp_autonomous, 2 mcp_approved", kinds)
	}

	t.Run("table", func(t *testing.T) {
		stdout, stderr, code := runCtl(t, d, "", "mcp", "receipts")
		if code != 0 || !strings.HasPrefix(stdout, "SEQ") || !strings.Contains(stdout, "chain head: sequence "+fmt.Sprint(n)) {
			t.Fatalf("pikoctl mcp receipts: exit %d\nstdout:\n%s\nstderr: %s", code, stdout, stderr)
		}
		for _, id := range ids {
			if !strings.Contains(stdout, id) {
				t.Errorf("the table lacks receipt %s:\n%s", id, stdout)
			}
		}
	})

	t.Run("by server", func(t *testing.T) {
		fy := receiptsJSON(t, d, "fy")
		var want []string
		for _, r := range all.Receipts {
			if r.Server == "fy" {
				want = append(want, r.ID)
			}
		}
		if got := receiptIDs(fy.Receipts); len(want) != 3 || !slices.Equal(got, want) {
			t.Errorf("receipts of fy: %v, want %v", got, want)
		}
		if none := receiptsJSON(t, d, "nosuch"); len(none.Receipts) != 0 {
			t.Errorf("receipts of an unknown server: %v", receiptIDs(none.Receipts))
		}
	})

	t.Run("since", func(t *testing.T) {
		// all.Receipts[3] is the fifth call's: since its time, the last
		// four calls.
		since := all.Receipts[3].CreatedAt
		got := receiptIDs(receiptsJSON(t, d, "--since", since).Receipts)
		if !slices.Equal(got, want[:4]) {
			t.Errorf("receipts since %s: %v, want %v", since, got, want[:4])
		}
		if got := receiptIDs(receiptsJSON(t, d, "fx", "--since", since).Receipts); len(got) != 2 {
			t.Errorf("receipts of fx since %s: %v, want the last two fx calls", since, got)
		}
		// A duration back from now: everything was made in the last hour,
		// nothing in the future.
		if got := receiptsJSON(t, d, "--since", "1h").Receipts; len(got) != n {
			t.Errorf("receipts since 1h ago: %d, want %d", len(got), n)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if got := receiptsJSON(t, d, "--since", future).Receipts; len(got) != 0 {
			t.Errorf("receipts since %s: %v", future, receiptIDs(got))
		}
		_, stderr, code := runCtl(t, d, "", "mcp", "receipts", "--since", "yesterday")
		if code != 2 || !strings.Contains(stderr, "RFC 3339") {
			t.Errorf("--since yesterday: exit %d, stderr %q; want a usage error naming the formats", code, stderr)
		}
		// The daemon checks too.
		we := d.callErr(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Since: "yesterday"})
		if we.Reason() != "invalid_since" || !errors.Is(we, contracts.ErrInvalidArgument) {
			t.Errorf("since yesterday over the socket: %+v", we)
		}
	})

	t.Run("limit", func(t *testing.T) {
		if got := receiptIDs(receiptsJSON(t, d, "--limit", "2").Receipts); !slices.Equal(got, want[:2]) {
			t.Errorf("--limit 2: %v, want %v", got, want[:2])
		}
		_, _, code := runCtl(t, d, "", "mcp", "receipts", "--limit", "0")
		if code != 2 {
			t.Errorf("--limit 0: exit %d, want 2", code)
		}
		we := d.callErr(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Limit: contracts.MaxReceiptsLimit + 1})
		if we.Reason() != "invalid_limit" {
			t.Errorf("limit %d over the socket: %+v", contracts.MaxReceiptsLimit+1, we)
		}
	})

	t.Run("one receipt", func(t *testing.T) {
		r := all.Receipts[5] // an approved one: the third call
		if r.Kind != contracts.ReceiptApproved {
			t.Fatalf("receipt %+v is not the approved call's", r)
		}
		stdout, stderr, code := runCtl(t, d, "", "mcp", "receipt", r.ID)
		if code != 0 {
			t.Fatalf("pikoctl mcp receipt %s: exit %d, stderr %q", r.ID, code, stderr)
		}
		for _, s := range []string{r.ID, "sequence:  " + fmt.Sprint(r.Seq), r.Kind, r.Server, r.Tool, r.ActionID, r.ArgumentsDigest, r.SourceID, r.Prev, r.Hash} {
			if !strings.Contains(stdout, s) {
				t.Errorf("pikoctl mcp receipt %s lacks %q:\n%s", r.ID, s, stdout)
			}
		}
		stdout, _, code = runCtl(t, d, "", "--json", "mcp", "receipt", r.ID)
		var one contracts.ReceiptsResult
		if code != 0 || json.Unmarshal([]byte(stdout), &one) != nil || len(one.Receipts) != 1 || one.Receipts[0] != r || one.Head == nil || *one.Head != *all.Head {
			t.Errorf("pikoctl --json mcp receipt %s: exit %d, %s; want exactly %+v and the head", r.ID, code, stdout, r)
		}
		_, stderr, code = runCtl(t, d, "", "mcp", "receipt", "rcpt_nosuch")
		if code != 1 || !strings.Contains(stderr, `no receipt "rcpt_nosuch"`) {
			t.Errorf("pikoctl mcp receipt rcpt_nosuch: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("verify", func(t *testing.T) {
		v, text := verifyChain(t, d, true)
		if v.Checked != uint64(n) || v.Head != *all.Head {
			t.Errorf("verification %+v, want %d receipts up to head %+v", v, n, *all.Head)
		}
		if !strings.Contains(text, fmt.Sprintf("intact: %d receipts", n)) || !strings.Contains(text, all.Head.Hash) {
			t.Errorf("pikoctl mcp receipts --verify says:\n%s", text)
		}
		_, stderr, code := runCtl(t, d, "", "mcp", "receipts", "fx", "--verify")
		if code != 2 || !strings.Contains(stderr, "whole chain") {
			t.Errorf("--verify with a server: exit %d, stderr %q; want a usage error", code, stderr)
		}
		we := d.callErr(t, contracts.MethodMCPReceipts, contracts.ReceiptsParams{Verify: true, Server: "fx"})
		if we.Reason() != "invalid_receipts_query" {
			t.Errorf("verify with a server over the socket: %+v", we)
		}
	})

	// The list and the chain survive a restart, and the chain goes on.
	d.restart()
	connectServer(t, d, "fx")
	res := callTool(t, d, "fx", "echo", `{"text":"after"}`)
	after := receiptsJSON(t, d)
	if len(after.Receipts) != n+1 || after.Receipts[0].ID != res.ReceiptID || after.Receipts[0].Seq != uint64(n+1) || after.Receipts[0].Prev != all.Head.Hash {
		t.Errorf("after a restart and one more call: %+v; want receipt %s at sequence %d after the old head", after.Receipts, res.ReceiptID, n+1)
	}
	verifyChain(t, d, true)
}

// copyTree copies the regular files and directories under from to to,
// keeping their modes.
func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm())
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", from, to, err)
	}
}

// editReceiptOffline opens the database file with bbolt, without pikod,
// and changes one byte of the receipt at sequence seq (the first letter of
// its status). It returns the receipt's id.
func editReceiptOffline(t testing.TB, dbPath string, seq uint64) string {
	t.Helper()
	db, err := bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("opening %s with bbolt: %v", dbPath, err)
	}
	defer db.Close()
	var id string
	err = db.Update(func(tx *bolt.Tx) error {
		idb := tx.Bucket([]byte("receipts_by_seq")).Get(binary.BigEndian.AppendUint64(nil, seq))
		if idb == nil {
			return fmt.Errorf("no receipt at sequence %d", seq)
		}
		id = string(idb)
		rb := tx.Bucket([]byte("receipts"))
		v := bytes.Clone(rb.Get(idb))
		i := bytes.Index(v, []byte(`"status":"`))
		if i < 0 {
			return fmt.Errorf("receipt %s has no status: %s", id, v)
		}
		i += len(`"status":"`)
		v[i] ^= 0x20 // completed -> Completed
		return rb.Put(idb, v)
	})
	if err != nil {
		t.Fatalf("editing the receipt at sequence %d: %v", seq, err)
	}
	return id
}

// TestReceiptsTampered edits one receipt's bytes in a copy of pikod.db
// and starts a daemon on the copy: --verify names that receipt.
func TestReceiptsTampered(t *testing.T) {
	t.Parallel()
	d := receiptsDaemon(t)
	a := startApprover(t)
	ids := mixedCalls(t, d, a)
	n := uint64(len(ids))
	d.stop(t)

	for _, tc := range []struct {
		name    string
		seq     uint64
		problem string
		says    string
	}{
		{"one in the middle", 3, contracts.ChainContentMismatch, "does not match the hash its successor"},
		{"the newest", n, contracts.ChainHeadMismatch, "does not match the hash the chain head recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			copyTree(t, d.stateDir, dir)
			id := editReceiptOffline(t, filepath.Join(dir, "pikod.db"), tc.seq)
			c := startDaemon(t, withStateDir(dir))
			v, text := verifyChain(t, c, false)
			b := v.Break
			if b == nil || b.Seq != tc.seq || b.ReceiptID != id || b.Problem != tc.problem || !strings.Contains(b.Message, tc.says) {
				t.Fatalf("break %+v, want %s at sequence %d (receipt %s) saying %q", b, tc.problem, tc.seq, id, tc.says)
			}
			if v.Checked != tc.seq-1 {
				t.Errorf("%d receipts verified before the break, want %d", v.Checked, tc.seq-1)
			}
			if !strings.Contains(text, fmt.Sprintf("BROKEN at sequence %d, receipt %s", tc.seq, id)) {
				t.Errorf("pikoctl mcp receipts --verify says:\n%s", text)
			}
			if len(c.logLines(t, "receipt chain verified", tc.problem, id)) == 0 {
				t.Errorf("the daemon log does not record the broken chain at %s", id)
			}
			// The edited receipt still reads; what it says is what the
			// file says now.
			stdout, _, code := runCtl(t, c, "", "mcp", "receipt", id)
			if code != 0 || !strings.Contains(stdout, "Completed") {
				t.Errorf("pikoctl mcp receipt %s on the edited copy: exit %d\n%s", id, code, stdout)
			}
		})
	}

	// The original file was not touched.
	d.start(t)
	if v, _ := verifyChain(t, d, true); v.Checked != n {
		t.Errorf("the original chain verified %d receipts, want %d", v.Checked, n)
	}
}

// TestReceiptsKill9 kills pikod with SIGKILL while a call is out and
// others come and go, round after round: every restart finds a chain that
// verifies and holds every receipt a call answered with for an effect.
func TestReceiptsKill9(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, callsServer("fx", filepath.Join(t.TempDir(), "calls.log"))))
	var acked []string // receipts of autonomous calls that answered
	for round := range 4 {
		connectServer(t, d, "fx")
		c := d.client(t)
		out := make(chan struct{})
		var once sync.Once
		c.OnNotification(func(method string, _ json.RawMessage) {
			if method == contracts.NotifyMCPProgress {
				once.Do(func() { close(out) })
			}
		})
		slow := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var res contracts.CallResult
			slow <- c.Call(ctx, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: "sleep", Arguments: json.RawMessage(`{"ms":30000}`)}, &res)
		}()
		select {
		case <-out:
		case err := <-slow:
			t.Fatalf("round %d: the slow call ended before it reported progress: %v", round, err)
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: no progress from the slow call", round)
		}
		// Read and autonomous calls race the kill: receipts are being
		// grouped and committed when it lands.
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			stop    atomic.Bool
			started = make(chan struct{}, 8)
		)
		for w := range 4 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					tool, args := "echo", fmt.Sprintf(`{"text":"r%d-%d-%d"}`, round, w, i)
					if (w+i)%2 == 0 {
						tool, args = "add", fmt.Sprintf(`{"a":%d,"b":%d}`, w, i)
					}
					var res contracts.CallResult
					err := callSocket(d.socket, contracts.MethodMCPCall, contracts.CallParams{Server: "fx", Tool: tool, Arguments: json.RawMessage(args)}, &res)
					if err != nil {
						return // the daemon is gone
					}
					if i == 3 {
						started <- struct{}{}
					}
					if tool == "add" && res.ReceiptID != "" {
						mu.Lock()
						acked = append(acked, res.ReceiptID)
						mu.Unlock()
					}
				}
			})
		}
		for range 4 {
			select {
			case <-started:
			case <-time.After(waitTimeout):
				t.Fatalf("round %d: the callers did not get going", round)
			}
		}
		d.kill9()
		stop.Store(true)
		wg.Wait()
		if err := <-slow; !errors.Is(err, rpc.ErrConnectionLost) {
			t.Errorf("round %d: the slow call ended with %v, want a lost connection", round, err)
		}
		d.start(t)
		v, _ := verifyChain(t, d, true)
		all := receiptsJSON(t, d, "--limit", fmt.Sprint(contracts.MaxReceiptsLimit))
		if uint64(len(all.Receipts)) != v.Head.Seq || v.Checked != v.Head.Seq {
			t.Errorf("round %d: %d receipts listed, %d verified, head at %d", round, len(all.Receipts), v.Checked, v.Head.Seq)
		}
		have := map[string]bool{}
		for _, r := range all.Receipts {
			have[r.ID] = true
		}
		mu.Lock()
		for _, id := range acked {
			if !have[id] {
				t.Errorf("round %d: receipt %s of an answered autonomous call is gone after kill -9", round, id)
			}
		}
		t.Logf("round %d: %d receipts in the chain, %d acknowledged autonomous", round, len(all.Receipts), len(acked))
		mu.Unlock()
	}
}
