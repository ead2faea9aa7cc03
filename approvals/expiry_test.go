package approvals

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// bootClock is an injectable boot clock: a boot id and the time since that
// boot, moved by hand like clock.
type bootClock struct {
	mu    sync.Mutex
	id    string
	since time.Duration
	none  bool // the platform has no boot clock
}

func (b *bootClock) read() (string, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id, b.since, !b.none
}

func (b *bootClock) advance(d time.Duration) {
	b.mu.Lock()
	b.since += d
	b.mu.Unlock()
}

func (b *bootClock) reboot(id string) {
	b.mu.Lock()
	b.id, b.since = id, 3*time.Second
	b.mu.Unlock()
}

// newBootInstance is an instance whose ledger reads boot from the clock
// returned with it.
func newBootInstance(t *testing.T) (*instance, *bootClock) {
	t.Helper()
	boot := &bootClock{id: "boot-1", since: 5 * time.Hour}
	in := &instance{t: t, dir: t.TempDir(), clk: newClock(), opts: []LedgerOption{WithBootClock(boot.read)}}
	in.open()
	t.Cleanup(in.close)
	return in, boot
}

// setWall moves the wall clock by d (negative: set back) without touching
// the boot clock, as an owner or NTP step would.
func (in *instance) setWall(d time.Duration) { in.clk.advance(d) }

func TestExpiryWallClockSetBack(t *testing.T) {
	in, boot := newBootInstance(t)
	a := in.prepare()
	b := in.prepare()
	if !a.ExpiresAt.Equal(a.CreatedAt.Add(ApprovalTTL)) {
		t.Fatalf("ExpiresAt = %v, want CreatedAt + %v", a.ExpiresAt, ApprovalTTL)
	}
	// An hour back on the wall; all but a second of the TTL on the boot clock.
	in.setWall(-time.Hour)
	boot.advance(ApprovalTTL - time.Second)
	in.setWall(ApprovalTTL - time.Second)
	got := in.state(a.ID)
	if got.State != contracts.ActionPrepared {
		t.Fatalf("with a second of its TTL left, the action is %s (%s)", got.State, got.Reason)
	}
	if want := in.clk.now().Add(time.Second); !got.ExpiresAt.Equal(want) {
		t.Errorf("shown expiry = %v, want %v (a second from now on the wall clock as it reads now), not the stored %v",
			got.ExpiresAt, want, a.ExpiresAt)
	}
	summaries, err := in.l.List(contracts.ActionPrepared, 0)
	if err != nil || len(summaries) != 2 || !summaries[0].ExpiresAt.Equal(got.ExpiresAt) {
		t.Errorf("List shows %+v, %v; want both prepared, expiring at %v", summaries, err, got.ExpiresAt)
	}
	// Two seconds later the TTL is over, although the wall clock says
	// there is an hour to go.
	boot.advance(2 * time.Second)
	in.setWall(2 * time.Second)
	if in.clk.now().After(a.ExpiresAt) {
		t.Fatal("test bug: the wall clock alone would expire the action")
	}
	got = in.state(a.ID)
	if got.State != contracts.ActionExpired || got.Reason != ReasonExpired {
		t.Fatalf("past its TTL on the boot clock, the action is %s %q; want expired", got.State, got.Reason)
	}
	if !got.ExpiresAt.Before(in.clk.now()) {
		t.Errorf("recorded expiry %v is not in the past of the wall clock %v", got.ExpiresAt, in.clk.now())
	}
	_, err = in.l.Approve(b.ID, b.Digest, fp0)
	if reasonOf(err) != "action_expired" {
		t.Fatalf("Approve past the TTL with the wall clock set back = %v, want action_expired", err)
	}
	if got := in.state(b.ID); got.State != contracts.ActionExpired {
		t.Errorf("after the refused approval the action is %s, want expired", got.State)
	}
}

func TestExpiryAcrossRestartSameBoot(t *testing.T) {
	in, boot := newBootInstance(t)
	a := in.prepare()
	in.close()
	// pikod restarts in the same boot, after the wall clock went back a day.
	in.setWall(-24 * time.Hour)
	boot.advance(ApprovalTTL + time.Second)
	in.open()
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); reasonOf(err) != "action_expired" {
		t.Fatalf("Approve after a restart past the TTL (wall clock set back) = %v, want action_expired", err)
	}
}

func TestExpiryAfterReboot(t *testing.T) {
	in, boot := newBootInstance(t)
	a := in.prepare()
	in.close()
	// The machine restarts a minute later by the wall clock; the boot clock
	// starts over and cannot say how long the action waited.
	boot.reboot("boot-2")
	in.setWall(time.Minute)
	in.open()
	got := in.state(a.ID)
	if got.State != contracts.ActionExpired || got.Reason != ReasonExpiredReboot {
		t.Fatalf("after a reboot the action is %s %q, want expired %q", got.State, got.Reason, ReasonExpiredReboot)
	}
	if _, err := in.l.Approve(a.ID, a.Digest, fp0); reasonOf(err) != "action_expired" || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("Approve after a reboot = %v, want action_expired saying the machine restarted", err)
	}
}

func TestExpiryWallClockForward(t *testing.T) {
	// A wall clock set forward ends an action early: never later than the
	// TTL on either clock.
	in, boot := newBootInstance(t)
	a := in.prepare()
	boot.advance(time.Minute)
	in.setWall(ApprovalTTL + time.Second)
	if got := in.state(a.ID); got.State != contracts.ActionExpired {
		t.Fatalf("wall clock past expiresAt: action is %s, want expired", got.State)
	}
}

func TestExpiryWithoutBootClock(t *testing.T) {
	// Without a boot clock (or for an action stored without a boot
	// deadline) the wall clock alone decides.
	in, boot := newBootInstance(t)
	boot.none = true
	a := in.prepare()
	boot.none = false
	boot.advance(ApprovalTTL + time.Minute)
	in.setWall(ApprovalTTL - time.Second)
	if got := in.state(a.ID); got.State != contracts.ActionPrepared {
		t.Fatalf("an action without a boot deadline is %s before its wall-clock expiry, want prepared", got.State)
	}
	in.setWall(2 * time.Second)
	if got := in.state(a.ID); got.State != contracts.ActionExpired {
		t.Fatalf("past its wall-clock expiry the action is %s, want expired", got.State)
	}
}
