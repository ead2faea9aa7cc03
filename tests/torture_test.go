package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// tortureSeedEnv replays one run of TestKillTorture: the seed is logged.
const tortureSeedEnv = "PIKO_TORTURE_SEED"

// tortureAttempt is one approval sent while pikod was about to die.
type tortureAttempt struct {
	round         int
	nonce         string
	actionID      string
	digest        string
	delay         time.Duration
	acknowledged  bool
	outcome       approveOutcome
	stateAfterAll string
}

// tortureBatch is how many actions are approved at once in one daemon
// life: the approvals race each other and the kill, and 500 rounds cost
// 125 restarts.
const tortureBatch = 4

// TestKillTorture approves actions and SIGKILLs pikod at a random moment
// around the approvals, round after round, then checks the ledger against
// what reached the server: an acknowledged approval is recorded as such,
// nothing is sent twice, every interrupted action is settled, and an
// uncertain action is never sent again.
func TestKillTorture(t *testing.T) {
	t.Parallel()
	rounds := 500
	if testing.Short() {
		rounds = 32
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(tortureSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", tortureSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, tortureSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	callLog := filepath.Join(t.TempDir(), "calls.log")
	d := startDaemon(t)
	configureMCP(t, d, mcpSettings(t, countServer("fx", callLog)))
	a := startApprover(t)
	started := time.Now()

	attempts := make([]*tortureAttempt, 0, rounds)
	kills := 0
	var compacted atomic.Int64
	for len(attempts) < rounds {
		connectServer(t, d, "fx")
		var batch []*tortureAttempt
		var targets []approveTarget
		delay := time.Duration(rng.IntN(40_001)) * time.Microsecond
		for range min(tortureBatch, rounds-len(attempts)) {
			at := &tortureAttempt{round: len(attempts), delay: delay}
			at.nonce = fmt.Sprintf("torture-%d-%s", at.round, randomHex(t, 4))
			prep := prepareCount(t, d, "fx", at.nonce)
			at.actionID, at.digest = prep.ActionID, prep.Digest
			attempts = append(attempts, at)
			batch = append(batch, at)
			targets = append(targets, approveTarget{ActionID: at.actionID, Digest: at.digest})
		}
		// One round in four compacts the database with the approvals in
		// flight, so that kills land before, during and after a switch.
		var compacting chan struct{}
		if rng.IntN(4) == 0 {
			compacting = make(chan struct{})
			go func() {
				defer close(compacting)
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				c, err := rpc.Dial(ctx, d.socket)
				if err != nil {
					return
				}
				defer c.Close()
				var res contracts.CompactResult
				if c.Call(ctx, contracts.MethodMCPCompact, contracts.CompactParams{}, &res) == nil && res.Compacted {
					compacted.Add(1)
				}
			}()
		}
		id := a.send(approveJob{Socket: d.socket, Targets: targets})
		a.event(id, "sent")
		// The delay is the experiment, not synchronisation: it places the
		// kill before, during or after the approvals.
		time.Sleep(delay)
		d.kill9()
		kills++
		if compacting != nil {
			<-compacting
		}
		for i, o := range a.event(id, "done").Outcomes {
			batch[i].outcome = o
			batch[i].acknowledged = o.Result != nil || o.Error != nil
		}
		startQuick(t, d)
	}
	t.Logf("%d rounds, %d kill -9 in %v, %d compactions finished before a kill", rounds, kills, time.Since(started).Round(time.Millisecond), compacted.Load())

	// Ask the ledger about every action, then try to approve each again:
	// whatever its state, nothing may be sent. A review records an action
	// still prepared from an earlier life as stale (bound to a connection
	// of that life) before showing it.
	connectServer(t, d, "fx")
	for _, at := range attempts {
		at.stateAfterAll = review(t, d, at.actionID).State
	}
	for _, at := range attempts {
		o := a.approve(d, at.actionID, at.digest)
		want := "action_consumed"
		if at.stateAfterAll == contracts.ActionPrepared || at.stateAfterAll == contracts.ActionStale {
			want = "action_stale"
		}
		if o.reason() != want {
			t.Errorf("round %d: approving %s (%s) again after the restarts: %s, want %s", at.round, at.actionID, at.stateAfterAll, o, want)
		}
	}
	// The receipt chain and its cross-check with the actions survived
	// every kill, compactions included.
	verifyChain(t, d, true)
	d.stop(t)
	// Every fixture process (each life's, and any a killed daemon left)
	// must be gone before the call log is final.
	poll(t, "every fixture process to end", func() bool { return len(procsWithArg(t, callLog)) == 0 }, nil)
	sent := nonceCounts(t, callLog)

	tally := map[string]int{}
	for _, at := range attempts {
		n := sent[at.nonce]
		state := at.stateAfterAll
		key := state
		if at.acknowledged {
			key += " (acknowledged)"
		}
		tally[key]++
		if n > 1 {
			t.Errorf("round %d: nonce %s reached the server %d times", at.round, at.nonce, n)
		}
		if at.acknowledged {
			r := at.outcome.Result
			switch {
			case r == nil:
				t.Errorf("round %d: the approval was refused (%s) though nothing else decided the action", at.round, at.outcome)
			case r.Status == contracts.CallCompleted && (state != contracts.ActionCompleted || n != 1):
				t.Errorf("round %d: acknowledged completed, but the action is %s and its nonce was sent %d times", at.round, state, n)
			case r.Status == contracts.CallFailed && state != contracts.ActionFailed:
				t.Errorf("round %d: acknowledged failed, but the action is %s", at.round, state)
			case r.Status == contracts.CallUncertain && state != contracts.ActionUncertain:
				t.Errorf("round %d: acknowledged uncertain, but the action is %s", at.round, state)
			case r.Status != contracts.CallCompleted && r.Status != contracts.CallFailed && r.Status != contracts.CallUncertain:
				t.Errorf("round %d: acknowledged with status %q", at.round, r.Status)
			}
			continue
		}
		switch state {
		case contracts.ActionPrepared, contracts.ActionStale, contracts.ActionFailed:
			// Never approved (stale once its connection's life ended), or
			// approved and provably never sent.
			if n != 0 {
				t.Errorf("round %d: action %s is %s but its nonce reached the server", at.round, at.actionID, state)
			}
		case contracts.ActionCompleted:
			// Finished and recorded; only the answer was lost.
			if n != 1 {
				t.Errorf("round %d: action %s is completed but its nonce was sent %d times", at.round, at.actionID, n)
			}
		case contracts.ActionUncertain:
			// May or may not have been sent: at most once (checked above).
		default:
			t.Errorf("round %d: after restarts action %s is %q, want a settled state (delay %v)", at.round, at.actionID, state, at.delay)
		}
	}
	// Nothing reached the server that no action accounts for.
	known := map[string]bool{}
	for _, at := range attempts {
		known[at.nonce] = true
	}
	for nonce, n := range sent {
		if !known[nonce] {
			t.Errorf("nonce %q reached the server %d times without an action", nonce, n)
		}
	}
	t.Logf("outcomes: %v", tally)
}

// startQuick starts pikod on d after a kill and makes it current. It
// polls system.hello every 2 ms rather than with waitReady's backoff: a
// round of the torture is mostly this wait, and the backoff's steps
// would add half of it again.
func startQuick(t testing.TB, d *daemon) {
	t.Helper()
	p := d.spawn(t)
	deadline := time.Now().Add(readyTimeout)
	for {
		h, err := rawHello(d.socket, time.Second)
		if err == nil && h.PID == p.pid() {
			break
		}
		if p.exited() {
			t.Fatalf("pikod exited with code %d before it was ready; stderr:\n%s", p.code, p.stderr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("pikod not ready after %v (last probe: %v); stderr:\n%s", readyTimeout, err, p.stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	d.mu.Lock()
	d.cur = p
	d.mu.Unlock()
}
