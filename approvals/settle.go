package approvals

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Settlement is what the end of an executed call records: its receipt,
// the retained result (nil when there is none) and, for a call the ledger
// holds as an action, the action's final state.
type Settlement struct {
	Receipt Receipt
	Source  *StagedSource
	// ActionID, when not empty, is finished like Finish (or FinishNotSent
	// when NotSent) with State and Reason, naming the receipt and the
	// source.
	ActionID      string
	State, Reason string
	NotSent       bool
}

// Settled is what Settle stored.
type Settled struct {
	// Receipt is the stored receipt.
	Receipt Receipt
	// FinishErr says why the action could not be finished (it was not in
	// a state a call ends from); the receipt and source are stored anyway.
	FinishErr error
}

// Settle records the end of a call with effects in one durable
// transaction, shared with concurrent writes: the retained result, the
// receipt (chained) and the action's final state are all on disk when it
// returns without error, or none of them is (then the staged source is
// discarded).
func (l *Ledger) Settle(s Settlement) (Settled, error) {
	r := s.Receipt
	discard := func() {
		if s.Source != nil {
			s.Source.Discard()
		}
	}
	if err := l.fillReceipt(&r); err != nil {
		discard()
		return Settled{}, err
	}
	var sourceID string
	if s.Source != nil {
		sourceID = s.Source.rec.ID
		r.SourceID = sourceID
	}
	var finish func(tx *bolt.Tx) (Action, error)
	if s.ActionID != "" {
		var err error
		if finish, err = l.finishTx(s.ActionID, s.State, s.Reason, r.ID, sourceID, s.NotSent); err != nil {
			discard()
			return Settled{}, err
		}
	}
	var (
		out   Settled
		after func()
	)
	err := l.group.update(func(tx *bolt.Tx) error {
		out, after = Settled{}, nil
		if s.Source != nil {
			rec := s.Source.rec
			a, err := s.Source.store.commitTx(tx, []*sourceRecord{&rec})
			if err != nil {
				return fmt.Errorf("retaining the result: %w", err)
			}
			after = a
		}
		rs, err := addReceipts(tx, []Receipt{r})
		if err != nil {
			return err
		}
		out.Receipt = rs[0]
		if finish != nil {
			// A refusal writes nothing; the receipt still commits.
			if _, err := finish(tx); err != nil {
				out.FinishErr = fmt.Errorf("finishing action %s: %w", s.ActionID, err)
			}
		}
		return nil
	}, func() {
		if after != nil {
			after()
		}
	})
	if err != nil {
		discard()
		return Settled{}, fmt.Errorf("recording the end of a call to %s/%s: %w", r.Server, r.Tool, err)
	}
	return out, nil
}
