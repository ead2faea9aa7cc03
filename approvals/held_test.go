package approvals

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testdisk"
)

// TestHeldOutcomes: on a full disk (a tmpfs of the test's own), the end of
// a sent call that the database cannot take is held in the reserve file;
// a ledger closed with it held records it at the next open, before
// recovery (the action ends as the outcome said, not as interrupted); one
// held while running is recorded once space returns, without a restart.
func TestHeldOutcomes(t *testing.T) {
	disk := testdisk.Small(t, "4m")
	in := &instance{t: t, dir: disk, clk: newClock()}
	in.opts = []LedgerOption{WithReserve(filepath.Join(disk, "outcomes.reserve"))}
	in.open()
	t.Cleanup(in.close)
	if fi, err := os.Stat(filepath.Join(disk, "outcomes.reserve")); err != nil || fi.Size() != ReserveBytes {
		t.Fatalf("the reserve file: %v %v, want %d bytes", fi, err, ReserveBytes)
	}
	// The outcome's receipt is large, so recording it needs room the
	// database file does not have.
	ending := func(a Action) Settlement {
		return Settlement{ActionID: a.ID, State: contracts.ActionUncertain, Reason: "answered, but the disk was full",
			Receipt: Receipt{Kind: contracts.ReceiptAutonomous, Server: "s", Tool: "touch", Status: contracts.CallUncertain,
				ActionID: a.ID, Error: strings.Repeat("e", 300<<10)}}
	}
	begin := func() Action {
		a, err := in.l.BeginDirect(contracts.ReceiptAutonomous, "s", "touch", []byte(`{}`), contracts.Fingerprints{}, contracts.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	hold := func(a Action) Receipt {
		t.Helper()
		_, err := in.l.Settle(ending(a))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("recording the outcome on a full disk: %v, want ENOSPC", err)
		}
		r, saved, err := in.l.Hold(ending(a))
		if err != nil || !saved {
			t.Fatalf("Hold: saved %v, %v", saved, err)
		}
		if got, _ := in.l.Get(a.ID); got.State != contracts.ActionDispatched || in.l.HeldOutcomes() != 1 {
			t.Fatalf("while held: action %s, %d held", got.State, in.l.HeldOutcomes())
		}
		return r
	}
	check := func(a Action, r Receipt) {
		t.Helper()
		got, err := in.l.Get(a.ID)
		if err != nil || got.State != contracts.ActionUncertain || got.Reason != "answered, but the disk was full" || got.ReceiptID != r.ID {
			t.Errorf("the held outcome recorded as %+v %v", got, err)
		}
		if _, err := in.l.Receipt(r.ID); err != nil {
			t.Errorf("its receipt: %v", err)
		}
		verifyOK(t, in)
	}

	// Held, then pikod stops with the disk still full.
	a := begin()
	filler := testdisk.Fill(t, disk)
	r := hold(a)
	in.close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	in.open()
	if len(in.l.Recovered()) != 0 {
		t.Errorf("recovery settled %+v: the held outcome should have come first", in.l.Recovered())
	}
	check(a, r)
	if in.l.HeldOutcomes() != 0 {
		t.Errorf("%d outcomes still held after the start recorded them", in.l.HeldOutcomes())
	}

	// Held while running: recorded once space returns.
	b := begin()
	filler = testdisk.Fill(t, disk)
	r = hold(b)
	time.Sleep(2 * heldRetry) // retried, and still no room
	if in.l.HeldOutcomes() != 1 {
		t.Fatalf("recorded with the disk full?")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for in.l.HeldOutcomes() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	check(b, r)
	// Nothing is left for the next start.
	in.close()
	in.open()
	if len(in.l.Recovered()) != 0 || in.l.HeldOutcomes() != 0 {
		t.Errorf("after a restart: recovered %+v, %d held", in.l.Recovered(), in.l.HeldOutcomes())
	}
}
