package approvals

import (
	"fmt"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

// refusal is the error for deciding on an action that is no longer
// prepared; its reason says which way it was settled.
func refusal(rec *actionRecord) error {
	switch rec.State {
	case contracts.ActionExpired:
		if rec.Reason == ReasonExpiredReboot {
			return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionExpired,
				"action %s expired: it was prepared before the machine restarted; make the call again to prepare a new action", rec.ID)
		}
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionExpired,
			"action %s expired at %s without a decision; make the call again to prepare a new action",
			rec.ID, rec.ExpiresAt.Format(time.RFC3339))
	case contracts.ActionRejected:
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionRejected,
			"action %s was rejected; make the call again to prepare a new action", rec.ID)
	case contracts.ActionStale:
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionStale,
			"action %s is stale (%s); make the call again to prepare an action against the current server", rec.ID, rec.Reason)
	}
	return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionConsumed,
		"action %s was already decided (it is %s); an approval is used once: make the call again to prepare a new action",
		rec.ID, rec.State)
}

// moved names each fingerprint that differs between was and now. Zero
// values in now mean absent: no settings for the server, no live
// connection, no such tool on the live connection.
func moved(was, now contracts.Fingerprints) []string {
	var out []string
	switch {
	case was.Settings == now.Settings:
	case now.Settings == "":
		out = append(out, "the server was removed from the settings")
	default:
		out = append(out, "the server's settings changed")
	}
	if was.CredentialGeneration != now.CredentialGeneration {
		out = append(out, "the server's credentials changed")
	}
	switch {
	case was.ConnectionGeneration == now.ConnectionGeneration:
	case now.ConnectionGeneration == 0:
		out = append(out, "the server was disconnected")
	default:
		out = append(out, "the server was reconnected")
	}
	switch {
	case was.Tool == now.Tool:
	case now.ConnectionGeneration == 0:
		// Unknown without a connection; the connection already says it.
	case now.Tool == "":
		out = append(out, "the server no longer offers the tool")
	default:
		out = append(out, "the tool's definition changed")
	}
	return out
}

// Moved names what differs between the fingerprints an action was bound
// to and the current ones (nil when nothing moved). Zero values in current
// mean absent: no settings, no live connection, no such tool.
func Moved(was, current contracts.Fingerprints) []string { return moved(was, current) }

// decide runs one decision on a prepared action in a single Update. It
// loads the action; refuses unless prepared (and not tombstoned); records
// expiry; checks the digest; then calls apply, which returns the new state
// and reason or a refusal. A state change is tombstoned and committed; a
// refusal that changed state (expired, stale) is committed too, and the
// refusal returned after.
func (l *Ledger) decide(verb, id string, apply func(rec *actionRecord) (state, reason string, refuse error)) (Action, error) {
	var (
		out     Action
		refused error
		changed bool
	)
	err := l.db.Update(func(tx *bolt.Tx) error {
		refused, changed = nil, false
		rec, err := getAction(tx, id)
		if err != nil {
			return err
		}
		if rec == nil {
			return l.notFound(id)
		}
		out = rec.action()
		if rec.State == contracts.ActionPrepared {
			if t, ok := l.tombs.state(id); ok {
				// The tombstone was written but its commit failed, or the
				// database was replaced while pikod ran: decided is decided.
				rec.State = t
				refused = refusal(rec)
				out = rec.action()
				return nil
			}
		}
		if rec.State != contracts.ActionPrepared {
			refused = refusal(rec)
			return nil
		}
		now := l.now()
		if expired, reason := l.expired(rec, now); expired {
			l.settleExpired(rec, now, reason)
			refused = refusal(rec)
			out = rec.action()
			return putAction(tx, rec)
		}
		out = l.view(rec, now)
		state, reason, refuse := apply(rec)
		if state == "" {
			refused = refuse
			return nil
		}
		if err := l.tombs.add(id, state, now); err != nil {
			return err
		}
		rec.State, rec.Reason, rec.UpdatedAt = state, reason, now.UTC()
		refused, changed = refuse, true
		out = rec.action()
		return putAction(tx, rec)
	})
	if err != nil {
		return Action{}, fmt.Errorf("%s action %s: %w", verb, id, err)
	}
	if changed {
		l.log.Info().Str("action", id).Str("state", out.State).Str("reason", out.Reason).Msg("action decided")
	}
	if refused != nil {
		return out, refused
	}
	return out, nil
}

// Approve approves the prepared action id, once. digest must be the one
// the owner reviewed and current the fingerprints as they are now. It is
// refused (state unchanged) for a wrong digest; refused for an action that
// is not prepared, saying how it was settled; and refused after recording
// it as expired past its expiry, or as stale (naming what moved) when any
// fingerprint differs. Of concurrent approvals exactly one succeeds; the
// others get reason action_consumed. With a refusal it still returns the
// action as it now stands (zero if unknown).
func (l *Ledger) Approve(id, digest string, current contracts.Fingerprints) (Action, error) {
	return l.decide("approving", id, func(rec *actionRecord) (string, string, error) {
		if digest != rec.Digest {
			return "", "", contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonDigestMismatch,
				"digest %q is not the digest of action %s; review it again with 'pikoctl mcp review %s' and quote the digest shown",
				digest, rec.ID, rec.ID)
		}
		if state, reason, err := staleness(rec, current); state != "" {
			return state, reason, err
		}
		return contracts.ActionApproved, "", nil
	})
}

// staleness returns stale with the reason and the refusal when any
// fingerprint of rec moved; "" otherwise.
func staleness(rec *actionRecord, current contracts.Fingerprints) (string, string, error) {
	m := moved(rec.Fingerprints, current)
	if len(m) == 0 {
		return "", "", nil
	}
	reason := strings.Join(m, "; ") + " since it was prepared"
	return contracts.ActionStale, reason, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionStale,
		"action %s is stale: %s; make the call again to prepare an action against the current server", rec.ID, reason)
}

// Revalidate checks a prepared action against the fingerprints as they
// are now, before it is shown as approvable: past its expiry it is
// recorded as expired, and with a moved fingerprint as stale (naming what
// moved, tombstoned like a decision). It returns the action as it now
// stands; an action that is not prepared is returned unchanged.
func (l *Ledger) Revalidate(id string, current contracts.Fingerprints) (Action, error) {
	a, err := l.decide("revalidating", id, func(rec *actionRecord) (string, string, error) {
		return staleness(rec, current)
	})
	if err == nil || a.ID != "" {
		// Nothing moved (no change), or a refusal: the action is settled,
		// now or before, and a is how it stands. Only a failed read or
		// write leaves a zero action.
		return a, nil
	}
	return Action{}, err
}

// Reject rejects the prepared action id. An empty digest rejects whatever
// was prepared (refusing is always safe); a non-empty one must match, so a
// typo decides nothing.
func (l *Ledger) Reject(id, digest string) (Action, error) {
	return l.decide("rejecting", id, func(rec *actionRecord) (string, string, error) {
		if digest != "" && digest != rec.Digest {
			return "", "", contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonDigestMismatch,
				"digest %q is not the digest of action %s; review it again with 'pikoctl mcp review %s'", digest, rec.ID, rec.ID)
		}
		return contracts.ActionRejected, "rejected by the owner", nil
	})
}

// transition moves id from one of the states in from to state in one
// Update; edit runs inside the transaction, before the commit, and may
// refuse it.
func (l *Ledger) transition(verb, id string, from []string, state string, edit func(rec *actionRecord) error) (Action, error) {
	var out Action
	err := l.db.Update(func(tx *bolt.Tx) error {
		var err error
		out, err = l.transitionTx(tx, id, from, state, edit)
		return err
	})
	if err != nil {
		return Action{}, fmt.Errorf("%s action %s: %w", verb, id, err)
	}
	return out, nil
}

// transitionTx is transition inside tx. It writes nothing when it refuses.
func (l *Ledger) transitionTx(tx *bolt.Tx, id string, from []string, state string, edit func(rec *actionRecord) error) (Action, error) {
	rec, err := getAction(tx, id)
	if err != nil {
		return Action{}, err
	}
	if rec == nil {
		return Action{}, l.notFound(id)
	}
	ok := false
	for _, f := range from {
		ok = ok || rec.State == f
	}
	if !ok {
		return Action{}, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonActionState,
			"action %s is %s, not %s", id, rec.State, strings.Join(from, " or "))
	}
	rec.State, rec.UpdatedAt = state, l.stamp()
	if edit != nil {
		if err := edit(rec); err != nil {
			return Action{}, err
		}
	}
	return rec.action(), putAction(tx, rec)
}

// MarkDispatched moves an approved action to dispatched; call it right
// before sending. The tombstone file learns of it first, so that even a
// database restored from a copy made before this moment reads the action
// as possibly sent.
func (l *Ledger) MarkDispatched(id string) (Action, error) {
	return l.transition("dispatching", id, []string{contracts.ActionApproved}, contracts.ActionDispatched, func(rec *actionRecord) error {
		return l.tombs.add(id, contracts.ActionDispatched, l.now())
	})
}

// Finish ends a dispatched action as completed, failed or uncertain, with
// the reason (for failed and uncertain), its receipt and retained source.
// An approved action that was never sent may also finish as failed. A
// dispatched (or approved) action finishes as stale only when the call was
// provably never sent because what it was bound to moved at the last
// moment (the tool's definition changed before the request was written).
func (l *Ledger) Finish(id, state, reason, receiptID, sourceID string) (Action, error) {
	return l.finish(id, state, reason, receiptID, sourceID, false)
}

// FinishNotSent ends a dispatched (or approved) action as failed because
// the call provably never left pikod: not one byte reached the server.
// Such an action reads "failed (not sent)" and may be prepared again.
func (l *Ledger) FinishNotSent(id, reason, receiptID string) (Action, error) {
	return l.finish(id, contracts.ActionFailed, reason, receiptID, "", true)
}

func (l *Ledger) finish(id, state, reason, receiptID, sourceID string, notSent bool) (Action, error) {
	edit, err := l.finishTx(id, state, reason, receiptID, sourceID, notSent)
	if err != nil {
		return Action{}, err
	}
	var out Action
	err = l.group.update(func(tx *bolt.Tx) error {
		var err error
		out, err = edit(tx)
		return err
	}, nil)
	if err != nil {
		return Action{}, fmt.Errorf("finishing action %s: %w", id, err)
	}
	return out, nil
}

// finishTx checks the end state of Finish (or FinishNotSent, with notSent)
// and returns the transition to run inside a transaction.
func (l *Ledger) finishTx(id, state, reason, receiptID, sourceID string, notSent bool) (func(tx *bolt.Tx) (Action, error), error) {
	from := []string{contracts.ActionDispatched}
	switch {
	case notSent:
		state = contracts.ActionFailed
		from = append(from, contracts.ActionApproved)
	case state == contracts.ActionCompleted, state == contracts.ActionUncertain:
	case state == contracts.ActionFailed, state == contracts.ActionStale:
		from = append(from, contracts.ActionApproved)
	default:
		return nil, fmt.Errorf("finishing action %s: state %q is not completed, failed, uncertain or stale: %w",
			id, state, contracts.ErrInvalidArgument)
	}
	return func(tx *bolt.Tx) (Action, error) {
		return l.transitionTx(tx, id, from, state, func(rec *actionRecord) error {
			rec.Reason, rec.ReceiptID = reason, receiptID
			if notSent {
				rec.NotSent = true
			} else {
				rec.SourceID = sourceID
			}
			return nil
		})
	}, nil
}
