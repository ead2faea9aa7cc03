package approvals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// TestPruneActionsAndSources: ended actions past the age bound leave the
// list (slimmed while their receipt is kept, removed otherwise), open and
// uncertain ones stay whole, a pruned receipt takes its source and its
// slimmed action with it, sources past their age are evicted, and the
// chain with its cross-checks verifies throughout.
func TestPruneActionsAndSources(t *testing.T) {
	in := newInstance(t)
	src, err := OpenSourceStore(in.db, filepath.Join(in.dir, "sources"), 0, in.clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.inlineMax = 8 // results of more than 8 bytes get files of their own

	// Six completed calls, each with a receipt and a retained source.
	var done []Action
	var srcs []SourceMeta
	for i := range 6 {
		a, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(fmt.Sprintf(`{"i":%d}`, i)), contracts.Fingerprints{}, contracts.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := src.Put("s", "touch", []byte(fmt.Sprintf(`{"result":"number %d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: "completed", ActionID: a.ID, SourceID: m.ID})
		if err != nil {
			t.Fatal(err)
		}
		if a, err = in.l.Finish(a.ID, contracts.ActionCompleted, "", r.ID, m.ID); err != nil {
			t.Fatal(err)
		}
		done, srcs = append(done, a), append(srcs, m)
		in.clk.advance(time.Minute)
	}
	// Three rejected, one uncertain, one still dispatched (sent, no end).
	var rejected []Action
	for i := range 3 {
		a, err := in.l.Prepare("s", "write", []byte(fmt.Sprintf(`{"n":%d}`, i)), "writes", contracts.Fingerprints{}, contracts.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		if a, err = in.l.Reject(a.ID, a.Digest); err != nil {
			t.Fatal(err)
		}
		rejected = append(rejected, a)
	}
	unsure, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(`{"unsure":true}`), contracts.Fingerprints{}, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	if unsure, err = in.l.Finish(unsure.ID, contracts.ActionUncertain, "the connection broke", "", ""); err != nil {
		t.Fatal(err)
	}
	open, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(`{"open":true}`), contracts.Fingerprints{}, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	in.clk.advance(2 * time.Hour)
	// One more completed call, recent: within the bound.
	recent, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(`{"recent":1}`), contracts.Fingerprints{}, contracts.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := in.l.AddReceipt(Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: "completed", ActionID: recent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.l.Finish(recent.ID, contracts.ActionCompleted, "", r.ID, ""); err != nil {
		t.Fatal(err)
	}

	rep, err := in.l.PruneActions(context.Background(), time.Hour, in.clk.now(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 3 || rep.Slimmed != 6 || rep.Batches < 4 {
		t.Fatalf("PruneActions: %+v, want 3 removed, 6 slimmed, in batches of 2", rep)
	}
	for _, a := range rejected {
		_, err := in.l.Get(a.ID)
		if !errors.Is(err, contracts.ErrNotFound) || !strings.Contains(err.Error(), "retention") {
			t.Errorf("rejected %s after pruning: %v, want not found naming retention", a.ID, err)
		}
		if _, err := in.l.Approve(a.ID, a.Digest, contracts.Fingerprints{}); err == nil {
			t.Errorf("a pruned rejected action %s was approved", a.ID)
		}
	}
	for _, a := range done {
		got, err := in.l.Get(a.ID)
		if err != nil || !got.ArgumentsPruned || got.Arguments != nil || got.Digest != a.Digest || got.ReceiptID != a.ReceiptID || got.State != contracts.ActionCompleted {
			t.Errorf("completed %s after pruning: %+v %v; want slimmed, digest and receipt kept", a.ID, got, err)
		}
	}
	for _, a := range []Action{unsure, open} {
		got, err := in.l.Get(a.ID)
		if err != nil || got.ArgumentsPruned || string(got.Arguments) != string(a.Arguments) {
			t.Errorf("%s action %s was pruned: %+v %v", a.State, a.ID, got, err)
		}
	}
	list, err := in.l.List("", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	// open and unsure share a creation time: their order is the ids'.
	want := []string{open.ID, unsure.ID}
	slices.Sort(want)
	slices.Reverse(want)
	if want = append([]string{recent.ID}, want...); fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("listed after pruning %v, want %v (newest first)", ids, want)
	}
	verifyOK(t, in)

	// Pruning receipts down to 3 takes the four oldest (the sources of
	// the first four calls and their slimmed actions with them).
	if _, err := in.l.PruneReceipts(context.Background(), 0, 3, 0, in.clk.now(), 0, src); err != nil {
		t.Fatal(err)
	}
	for i, a := range done {
		_, aerr := in.l.Get(a.ID)
		_, serr := src.Meta(srcs[i].ID)
		_, ferr := os.Stat(filepath.Join(in.dir, "sources", srcs[i].ID))
		if gone := i < 4; gone != (aerr != nil) || gone != (serr != nil) || gone != errors.Is(ferr, os.ErrNotExist) {
			t.Errorf("call %d after its receipt was pruned (%v): action %v, source %v, file %v", i, gone, aerr, serr, ferr)
		}
	}
	if used := src.UsedBytes(); used != srcs[4].Bytes+srcs[5].Bytes {
		t.Errorf("sources use %d bytes, want the two kept: %d", used, srcs[4].Bytes+srcs[5].Bytes)
	}
	verifyOK(t, in)

	// Sources past their age are evicted (a tombstone stays until the
	// receipt goes); a newer one is not.
	in.clk.advance(time.Minute)
	fresh, err := src.Put("s", "touch", []byte(`{"result":"fresh"}`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := src.EvictOlder(context.Background(), 30*time.Second, in.clk.now(), 1)
	if err != nil || n != 2 {
		t.Fatalf("EvictOlder: %d %v, want the 2 old sources", n, err)
	}
	if _, err := src.Read(srcs[5].ID, 0, 0); !errors.Is(err, contracts.ErrNotFound) || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("an evicted source reads as %v", err)
	}
	if got, err := src.Read(fresh.ID, 0, 0); err != nil || got.Text != `{"result":"fresh"}` {
		t.Errorf("the fresh source: %+v %v", got, err)
	}
	if used := src.UsedBytes(); used != fresh.Bytes {
		t.Errorf("sources use %d bytes after eviction, want %d", used, fresh.Bytes)
	}
	// The cap applies too: lowered below the fresh source, it goes.
	src.SetCap(1)
	if n, err := src.EvictOlder(context.Background(), 0, in.clk.now(), 0); err != nil || n != 1 {
		t.Errorf("EvictOlder under a lowered cap: %d %v", n, err)
	}
	verifyOK(t, in)
}
