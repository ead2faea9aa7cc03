package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// metaApprovalGate is the meta/ key of the gate's durable state (JSON
// gateState): whether a passphrase is set, and the failure and lock
// counters, so a restart of pikod resets nothing.
const metaApprovalGate = "approval_gate"

// maxLock caps the doubling of locks.
const maxLock = 24 * time.Hour

// gateState is the owner approval gate's durable state.
type gateState struct {
	// PassphraseSet says terminal-only calls need the passphrase. It is
	// written before the hash and cleared after it, so a crash in between
	// leaves the gate closed, never open.
	PassphraseSet bool `json:"passphraseSet"`
	// Failures counts wrong passphrases since the last right one or lock.
	Failures int `json:"failures"`
	// Locks counts locks since the last right passphrase.
	Locks       int       `json:"locks"`
	LockedUntil time.Time `json:"lockedUntil,omitzero"`
}

func (s gateState) locked(now time.Time) bool { return now.Before(s.LockedUntil) }

// fail records one wrong passphrase at now: the PassphraseMaxFailures-th
// in a row locks for PassphraseLockSeconds, doubled for every earlier
// lock (at most maxLock), and starts counting again.
func (s gateState) fail(now time.Time) gateState {
	s.Failures++
	if s.Failures >= contracts.PassphraseMaxFailures {
		d := time.Duration(contracts.PassphraseLockSeconds) * time.Second << min(s.Locks, 20)
		s.LockedUntil = now.Add(min(d, maxLock)).UTC()
		s.Locks++
		s.Failures = 0
	}
	return s
}

// succeed forgets failures and locks after a right passphrase.
func (s gateState) succeed() gateState {
	s.Failures, s.Locks, s.LockedUntil = 0, 0, time.Time{}
	return s
}

func (s gateState) status(now time.Time) contracts.ApprovalsStatus {
	st := contracts.ApprovalsStatus{PassphraseSet: s.PassphraseSet, Failures: s.Failures, Locks: s.Locks}
	if s.locked(now) {
		st.LockedUntil = s.LockedUntil.UTC().Format(time.RFC3339)
	}
	return st
}

// ownerGate is the daemon's owner check: rpc.Server runs it for every
// terminal-only call that passed the terminal checks. It asks for the
// owner approval passphrase when one is set, throttles wrong ones, and
// serves extensions.approvals.passphrase.
type ownerGate struct {
	v   *vault.Vault
	db  *approvals.DB
	red *vault.Redactor
	log zerolog.Logger
	now func() time.Time

	// busy serialises checks and changes: one argon2id derivation (64 MiB)
	// at a time, and failures counted in order.
	busy sync.Mutex
	// mu guards st; held only to read or swap it, never during a check,
	// so status never waits behind one.
	mu sync.Mutex
	st gateState
}

func newOwnerGate(v *vault.Vault, db *approvals.DB, red *vault.Redactor, log zerolog.Logger) (*ownerGate, error) {
	g := &ownerGate{v: v, db: db, red: red, log: log, now: time.Now}
	raw, err := db.Meta(metaApprovalGate)
	if err != nil {
		return nil, fmt.Errorf("reading the approval gate state: %w", err)
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &g.st); err != nil {
			// Unreadable state must not open the gate: assume a
			// passphrase is set and let the vault decide.
			log.Error().Err(err).Msg("the approval gate state is unreadable; assuming a passphrase is set")
			g.st = gateState{PassphraseSet: true}
		}
	}
	if g.st.PassphraseSet || g.st.locked(g.now()) {
		log.Info().Bool("passphrase_set", g.st.PassphraseSet).Int("failures", g.st.Failures).
			Time("locked_until", g.st.LockedUntil).Msg("approval gate")
	}
	return g, nil
}

func (g *ownerGate) state() gateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

// save stores st durably, then makes it current. busy must be held.
func (g *ownerGate) save(st gateState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := g.db.SetMeta(metaApprovalGate, string(b)); err != nil {
		return fmt.Errorf("recording the approval gate state: %w", err)
	}
	g.mu.Lock()
	g.st = st
	g.mu.Unlock()
	return nil
}

// Status reports the gate for extensions.mcp.status.
func (g *ownerGate) Status() contracts.ApprovalsStatus { return g.state().status(g.now()) }

// Check is the rpc.Options.OwnerCheck: it runs before the handler of
// every terminal-only call that is not exempt, after the peer passed the
// terminal checks. It reads the passphrase from the params as the
// method's row decoded them (contracts.OwnerParams), the very value the
// handler gets. The passphrase is never logged or put in an error, and
// it is never a redaction value: it never goes to a server, and removing
// it from answers would tell a caller when one of its strings equals it.
func (g *ownerGate) Check(ctx context.Context, req *rpc.Request) error {
	var pass string
	if p, ok := req.Decoded().(contracts.OwnerParams); ok {
		pass = p.OwnerPassphrase()
	}
	g.busy.Lock()
	defer g.busy.Unlock()
	now := g.now()
	st := g.state()
	log := g.log.With().Str("method", req.Method).Int("peer_pid", req.Peer.PID).Logger()
	if st.locked(now) {
		log.Warn().Time("locked_until", st.LockedUntil).Msg("terminal-only call refused: approvals locked")
		return lockedError(st)
	}
	if !st.PassphraseSet {
		return nil
	}
	if pass == "" {
		if p, ok := req.Decoded().(*contracts.PassphraseParams); ok && p.Op == contracts.PassphraseOpSet {
			// The hash was lost from the vault (see passphrase_missing):
			// setting a new one is how the owner recovers.
			has, err := g.v.HasApprovalPassphrase()
			if err != nil {
				return fmt.Errorf("checking the approval passphrase: %w", err)
			}
			if !has {
				return nil
			}
		}
		log.Warn().Msg("terminal-only call refused: no approval passphrase given")
		return contracts.WithHint(
			contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonPassphraseRequired,
				"%s needs the owner approval passphrase", req.Method),
			`pikoctl asks for it at the terminal; over the API, put it in the "passphrase" member of the params`)
	}
	ok, err := g.v.CheckApprovalPassphrase(vault.NewSecret(pass))
	switch {
	case errors.Is(err, contracts.ErrNotFound):
		log.Error().Msg("terminal-only call refused: an approval passphrase is set but its hash is missing from the vault")
		return contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonPassphraseMissing,
				"an approval passphrase is set but its hash is no longer in the vault, so %s cannot be checked: refused", req.Method),
			"set a new one with 'pikoctl approvals passphrase set' (and check which vault backend pikod uses)")
	case err != nil:
		return fmt.Errorf("checking the approval passphrase: %w", err)
	}
	if !ok {
		next := st.fail(now)
		if err := g.save(next); err != nil {
			log.Error().Err(err).Msg("cannot record a wrong approval passphrase")
			return err
		}
		ev := log.Warn().Int("failures", next.Failures).Int("locks", next.Locks)
		if next.locked(now) {
			ev = ev.Time("locked_until", next.LockedUntil)
		}
		ev.Msg("wrong approval passphrase")
		if next.locked(now) {
			return contracts.WithHint(
				contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonPassphraseWrong,
					"wrong approval passphrase; after %d wrong ones in a row, terminal-only methods are locked until %s",
					contracts.PassphraseMaxFailures, next.LockedUntil.Format(time.RFC3339)),
				"wait, then try again; each further lock lasts twice as long")
		}
		return contracts.WithHint(
			contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonPassphraseWrong,
				"wrong approval passphrase (%d of %d before terminal-only methods lock)", next.Failures, contracts.PassphraseMaxFailures),
			"type the owner approval passphrase set with 'pikoctl approvals passphrase set'")
	}
	if st.Failures != 0 || st.Locks != 0 {
		if err := g.save(st.succeed()); err != nil {
			return err
		}
	}
	return nil
}

func lockedError(st gateState) error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonApprovalsLocked,
			"terminal-only methods are locked until %s after %d wrong approval passphrases",
			st.LockedUntil.UTC().Format(time.RFC3339), contracts.PassphraseMaxFailures),
		"wait until then; 'pikoctl mcp status' shows the lock")
}

// passphrase serves extensions.approvals.passphrase (terminal-only: the
// gate has checked the terminal, the lock and the current passphrase).
func (g *ownerGate) passphrase(ctx context.Context, req *rpc.Request, p *contracts.PassphraseParams) (any, error) {
	newPass := vault.NewSecret(p.NewPassphrase)
	switch p.Op {
	case contracts.PassphraseOpSet, contracts.PassphraseOpChange:
		if err := vault.ValidateApprovalPassphrase(newPass); err != nil {
			return nil, contracts.WithHint(err, `give the new one in "newPassphrase"`)
		}
	case contracts.PassphraseOpClear:
		if p.NewPassphrase != "" {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument, `"clear" takes no "newPassphrase"`)
		}
	default:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument, `"op" must be "set", "change" or "clear"`)
	}
	g.busy.Lock()
	defer g.busy.Unlock()
	st := g.state()
	log := g.log.With().Int("peer_pid", req.Peer.PID).Logger()
	switch p.Op {
	case contracts.PassphraseOpSet:
		if st.PassphraseSet {
			has, err := g.v.HasApprovalPassphrase()
			if err != nil {
				return nil, fmt.Errorf("checking the approval passphrase: %w", err)
			}
			if has {
				return nil, contracts.WithHint(
					contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonPassphraseAlreadySet, "an approval passphrase is already set"),
					"change it with 'pikoctl approvals passphrase change'")
			}
		}
		// The flag first: a crash before the hash is stored leaves the
		// gate closed (passphrase_missing), never open.
		next := st
		next.PassphraseSet = true
		if err := g.save(next); err != nil {
			return nil, err
		}
		if err := g.v.SetApprovalPassphrase(newPass); err != nil {
			if !st.PassphraseSet {
				if rerr := g.save(st); rerr != nil {
					log.Error().Err(rerr).Msg("cannot undo the approval passphrase flag")
				}
			}
			return nil, err
		}
		log.Info().Msg("approval passphrase set")
	case contracts.PassphraseOpChange:
		if !st.PassphraseSet {
			return nil, notSet()
		}
		if err := g.v.SetApprovalPassphrase(newPass); err != nil {
			return nil, err
		}
		log.Info().Msg("approval passphrase changed")
	case contracts.PassphraseOpClear:
		if !st.PassphraseSet {
			return nil, notSet()
		}
		// The hash first: a crash before the flag is cleared leaves the
		// gate closed.
		if err := g.v.ClearApprovalPassphrase(); err != nil {
			return nil, err
		}
		if err := g.save(gateState{}); err != nil {
			return nil, err
		}
		log.Info().Msg("approval passphrase cleared")
	}
	return contracts.PassphraseResult{Op: p.Op, Approvals: g.Status()}, nil
}

func notSet() error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonPassphraseNotSet, "no approval passphrase is set"),
		"set one with 'pikoctl approvals passphrase set'")
}
