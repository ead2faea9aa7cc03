package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
)

// Ledger is the durable record of actions and receipts. Every state change
// is committed (on disk when it returns, possibly in a transaction shared
// with concurrent calls) before the side effect it permits; decisions are also appended to the tombstone file
// first, so a database restored from an older copy cannot bring a decided
// action back to life.
type Ledger struct {
	db    *handle
	now   func() time.Time
	boot  BootClock
	log   zerolog.Logger
	tombs *tombstones
	async *asyncWriter
	// group commits the writes of calls, many per transaction.
	group *groupCommitter

	// held keeps the outcomes a full disk could not take (held.go), also
	// in the reserve file at reservePath when it is set.
	held        *held
	reservePath string

	// recovered lists the actions OpenLedger changed, for the daemon's log.
	recovered []Action
	closeOnce sync.Once
	closeErr  error
}

// LedgerOption configures OpenLedger.
type LedgerOption func(*Ledger)

// WithLogger gives the ledger a logger (default: none).
func WithLogger(log zerolog.Logger) LedgerOption {
	return func(l *Ledger) { l.log = log }
}

// OpenLedger opens the ledger in db with its tombstone file at
// tombstonePath (created 0600 if absent) and recovers from whatever the
// last run left: a dispatched action becomes uncertain (never re-sent), an
// approved one that was provably never sent becomes failed, and a prepared
// one the tombstones say was already decided (the database was restored
// from an older copy) is settled so it cannot be approved again. now is
// the clock (nil: time.Now).
func OpenLedger(db *DB, tombstonePath string, now func() time.Time, opts ...LedgerOption) (*Ledger, error) {
	if now == nil {
		now = time.Now
	}
	l := &Ledger{db: db.bolt, group: db.group, now: now, boot: systemBootClock, log: zerolog.Nop()}
	for _, o := range opts {
		o(l)
	}
	tombs, err := openTombstones(tombstonePath, l.log)
	if err != nil {
		return nil, err
	}
	l.tombs = tombs
	// Outcomes the last run held on a full disk are facts: recorded
	// before recovery takes their actions for interrupted.
	if err := l.openHeld(); err != nil {
		tombs.close()
		return nil, err
	}
	if err := l.recover(); err != nil {
		tombs.close()
		if l.held.res != nil {
			l.held.res.f.Close()
		}
		return nil, err
	}
	l.async = startAsyncWriter(l.group, l.log)
	go l.runHeld()
	return l, nil
}

// Recovered returns the actions OpenLedger changed while recovering.
func (l *Ledger) Recovered() []Action { return l.recovered }

// recover settles, in one Update, every action the previous run left in
// flight and every prepared action that the tombstones say was decided.
func (l *Ledger) recover() error {
	at := l.stamp()
	var changed []Action
	err := l.db.Update(func(tx *bolt.Tx) error {
		changed = changed[:0]
		b := tx.Bucket(bucketActions)
		var recs []*actionRecord
		err := b.ForEach(func(_, v []byte) error {
			rec, err := decodeAction(v)
			if err != nil {
				return err
			}
			recs = append(recs, rec)
			return nil
		})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			tomb, tombed := l.tombs.state(rec.ID)
			var state, reason string
			switch rec.State {
			case contracts.ActionDispatched:
				state, reason = contracts.ActionUncertain, ReasonStoppedWhileOut
			case contracts.ActionApproved:
				if tomb == contracts.ActionDispatched {
					state, reason = contracts.ActionUncertain, ReasonRestoredSent
				} else {
					state, reason = contracts.ActionFailed, ReasonStoppedBeforeSend
				}
			case contracts.ActionPrepared:
				if !tombed {
					continue
				}
				switch tomb {
				case contracts.ActionDispatched:
					state, reason = contracts.ActionUncertain, ReasonRestoredSent
				case contracts.ActionApproved:
					state, reason = contracts.ActionFailed, ReasonRestoredNotSent
				case contracts.ActionRejected:
					state, reason = contracts.ActionRejected, ReasonRestoredDecided
				default:
					state, reason = contracts.ActionStale, ReasonRestoredDecided
				}
			default:
				continue
			}
			rec.State, rec.Reason, rec.UpdatedAt = state, reason, at
			// Approved, never dispatched: provably nothing left pikod.
			rec.NotSent = reason == ReasonStoppedBeforeSend || reason == ReasonRestoredNotSent
			if state == contracts.ActionUncertain && rec.ReceiptID == "" {
				// A call that may have acted gets its receipt now, in the
				// same transaction: the chain holds every one of them.
				r := Receipt{ID: newID("rcpt_"), Kind: rec.Kind, Server: rec.Server, Tool: rec.Tool,
					ArgumentsDigest: hashOf(rec.Arguments), ActionID: rec.ID, Status: contracts.CallUncertain,
					Error: reason, CreatedAt: at, Caller: rec.Caller.Bounded()}
				if _, err := addReceipts(tx, []Receipt{r}); err != nil {
					return fmt.Errorf("recording the receipt of %s: %w", rec.ID, err)
				}
				rec.ReceiptID = r.ID
			}
			if err := putAction(tx, rec); err != nil {
				return err
			}
			changed = append(changed, rec.action())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recovering the action ledger: %w", err)
	}
	// One line per action the last run left unsettled, then a summary: the
	// owner should check the servers for the uncertain ones.
	counts := map[string]int{}
	for _, a := range changed {
		counts[a.State]++
		l.log.Warn().Str("action", a.ID).Str("server", a.Server).Str("tool", a.Tool).
			Str("state", a.State).Bool("not_sent", a.NotSent).Str("reason", a.Reason).Msg("action settled at startup")
	}
	if len(changed) > 0 {
		ev := l.log.Warn().Int("actions", len(changed))
		for _, st := range allStates {
			if counts[st] > 0 {
				ev = ev.Int(st, counts[st])
			}
		}
		ev.Msg("recovered the ledger after an unclean stop: uncertain calls may have reached their servers and are never sent again")
	}
	l.recovered = changed
	return nil
}

func (l *Ledger) stamp() time.Time { return l.now().UTC() }

func decodeAction(v []byte) (*actionRecord, error) {
	var rec actionRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("decoding a stored action: %w", err)
	}
	return &rec, nil
}

func putAction(tx *bolt.Tx, rec *actionRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketActions).Put([]byte(rec.ID), v)
}

func getAction(tx *bolt.Tx, id string) (*actionRecord, error) {
	v := tx.Bucket(bucketActions).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	return decodeAction(v)
}

// notFound is the error for an id the ledger has no record of. An id the
// tombstones know (decided, then pruned by retention or lost to a restore
// of an older copy) says so.
func (l *Ledger) notFound(id string) error {
	if _, ok := l.tombs.state(id); ok {
		return contracts.Errorf(contracts.ErrNotFound, contracts.ReasonActionNotFound,
			"action %s was decided and is no longer in the ledger (retention removed it after retention.actions.maxAge, or the database was restored from an older copy); it cannot be approved again: make the call again to prepare a new action", id)
	}
	return contracts.Errorf(contracts.ErrNotFound, contracts.ReasonActionNotFound,
		"no action %q (ended actions leave the ledger after retention.actions.maxAge): list actions with 'pikoctl mcp actions'", id)
}

// expiry returns when rec expires on the wall clock as it reads now: its
// expiresAt, or earlier when the boot clock has less time left (the wall
// clock was set back), or now when it was prepared in an earlier boot.
// reason is what an expiry records. See ApprovalTTL.
func (l *Ledger) expiry(rec *actionRecord, now time.Time) (at time.Time, reason string) {
	at, reason = rec.ExpiresAt, ReasonExpired
	b := rec.ExpiresBoot
	if b == nil {
		return at, reason
	}
	boot, since, ok := l.boot()
	switch {
	case !ok:
	case boot != b.Boot:
		return now.Add(-time.Nanosecond), ReasonExpiredReboot
	default:
		if left := now.Add(b.At - since); left.Before(at) {
			at = left
		}
	}
	return at, reason
}

// expired reports whether rec is a prepared action past its expiry, and
// if so the reason to record.
func (l *Ledger) expired(rec *actionRecord, now time.Time) (bool, string) {
	if rec.State != contracts.ActionPrepared || rec.ExpiresAt.IsZero() {
		return false, ""
	}
	at, reason := l.expiry(rec, now)
	return now.After(at), reason
}

// settleExpired records rec, which expired, as expired: when the boot
// clock ended it before its expiresAt (the wall clock was set back),
// expiresAt becomes that moment on the wall clock as it reads now.
func (l *Ledger) settleExpired(rec *actionRecord, now time.Time, reason string) {
	if at, _ := l.expiry(rec, now); reason == ReasonExpired && at.Before(rec.ExpiresAt) {
		rec.ExpiresAt = at.UTC()
	}
	rec.State, rec.Reason, rec.UpdatedAt = contracts.ActionExpired, reason, now.UTC()
}

// view is rec as callers see it now: a prepared action shows the expiry
// that will actually apply.
func (l *Ledger) view(rec *actionRecord, now time.Time) Action {
	a := rec.action()
	if rec.State == contracts.ActionPrepared && !rec.ExpiresAt.IsZero() {
		if at, _ := l.expiry(rec, now); at.Before(a.ExpiresAt) {
			a.ExpiresAt = at.UTC()
		}
	}
	return a
}

func checkCall(server, tool string, args []byte) error {
	switch {
	case server == "":
		return fmt.Errorf("recording a call: server is empty: %w", contracts.ErrInvalidArgument)
	case tool == "":
		return fmt.Errorf("recording a call to %q: tool is empty: %w", server, contracts.ErrInvalidArgument)
	case !json.Valid(args):
		return fmt.Errorf("recording a call to %s/%s: arguments are not valid JSON: %w", server, tool, contracts.ErrInvalidArgument)
	case utf8.RuneCount(args) > contracts.MaxArgumentsChars:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArgumentsTooLarge,
			"recording a call to %s/%s: arguments are %d characters of JSON, more than the %d an action can hold; send less",
			server, tool, utf8.RuneCount(args), contracts.MaxArgumentsChars)
	}
	return nil
}

// insert stores a new action and its time index entry in one Update.
func (l *Ledger) insert(rec *actionRecord) error {
	return l.group.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketActions).Get([]byte(rec.ID)) != nil {
			return fmt.Errorf("action id %s already in use: %w", rec.ID, contracts.ErrInternal)
		}
		if err := putAction(tx, rec); err != nil {
			return err
		}
		return tx.Bucket(bucketActionsByTime).Put(timeKey(rec.CreatedAt, rec.ID), nil)
	}, nil)
}

func (l *Ledger) freshID() string {
	for {
		id := newID("act_")
		if _, ok := l.tombs.state(id); !ok {
			return id
		}
	}
}

// Prepare records a call that needs the owner's approval and returns it in
// state prepared, expiring after ApprovalTTL. args are kept byte for byte;
// desc is the tool's description as the server gave it; caller is who
// asked (zero when unknown), kept bounded.
func (l *Ledger) Prepare(server, tool string, args []byte, desc string, fp contracts.Fingerprints, caller contracts.Caller) (Action, error) {
	return l.PrepareKind(contracts.ReceiptApproved, server, tool, args, desc, fp, caller)
}

// PrepareKind is Prepare for an action of kind mcp_approved (a tools/call),
// mcp_task_create (a task-augmented tools/call) or mcp_task_cancel
// (tasks/cancel, whose tool is "tasks/cancel" and arguments
// {"taskId":…}). The digest binds the kind (KindDigest).
func (l *Ledger) PrepareKind(kind, server, tool string, args []byte, desc string, fp contracts.Fingerprints, caller contracts.Caller) (Action, error) {
	if err := checkCall(server, tool, args); err != nil {
		return Action{}, err
	}
	switch kind {
	case contracts.ReceiptApproved, contracts.ReceiptTaskCreate, contracts.ReceiptTaskCancel:
	default:
		return Action{}, fmt.Errorf("preparing a call to %s/%s: kind %q cannot be prepared: %w", server, tool, kind, contracts.ErrInvalidArgument)
	}
	now := l.stamp()
	rec := &actionRecord{
		ID: l.freshID(), State: contracts.ActionPrepared, Kind: kind,
		Server: server, Tool: tool, Arguments: bytes.Clone(args), ToolDescription: desc,
		Fingerprints: fp, Digest: contracts.KindDigest(kind, server, tool, args, fp),
		CreatedAt: now, ExpiresAt: now.Add(ApprovalTTL), UpdatedAt: now,
		Caller: caller.Bounded(),
	}
	if boot, since, ok := l.boot(); ok {
		rec.ExpiresBoot = &bootDeadline{Boot: boot, At: since + ApprovalTTL}
	}
	if err := l.insert(rec); err != nil {
		return Action{}, fmt.Errorf("preparing a call to %s/%s: %w", server, tool, err)
	}
	l.log.Info().Str("action", rec.ID).Str("kind", kind).Str("server", server).Str("tool", tool).Msg("action prepared")
	return rec.action(), nil
}

// BeginDirect records a call that executes without approval (kind
// mcp_autonomous or mcp_read) as already dispatched, before it is sent: a
// crash while it is out leaves it uncertain, never re-sent. End it with
// Finish. caller is who asked (zero when unknown).
func (l *Ledger) BeginDirect(kind, server, tool string, args []byte, fp contracts.Fingerprints, caller contracts.Caller) (Action, error) {
	if err := checkCall(server, tool, args); err != nil {
		return Action{}, err
	}
	if kind != contracts.ReceiptAutonomous && kind != contracts.ReceiptRead {
		return Action{}, fmt.Errorf("recording a direct call to %s/%s: kind %q is not %s or %s: %w",
			server, tool, kind, contracts.ReceiptAutonomous, contracts.ReceiptRead, contracts.ErrInvalidArgument)
	}
	now := l.stamp()
	rec := &actionRecord{
		ID: l.freshID(), State: contracts.ActionDispatched, Kind: kind,
		Server: server, Tool: tool, Arguments: bytes.Clone(args),
		Fingerprints: fp, Digest: contracts.ActionDigest(server, tool, args, fp),
		CreatedAt: now, UpdatedAt: now,
		Caller: caller.Bounded(),
	}
	if err := l.insert(rec); err != nil {
		return Action{}, fmt.Errorf("recording a direct call to %s/%s: %w", server, tool, err)
	}
	return rec.action(), nil
}

// Get returns the action id. A prepared action past its expiry is recorded
// as expired first.
func (l *Ledger) Get(id string) (Action, error) {
	var rec *actionRecord
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = getAction(tx, id)
		return err
	})
	if err != nil {
		return Action{}, fmt.Errorf("reading action %s: %w", id, err)
	}
	if rec == nil {
		return Action{}, l.notFound(id)
	}
	now := l.now()
	if due, reason := l.expired(rec, now); due {
		if err := l.expire([]string{rec.ID}, now); err != nil {
			return Action{}, err
		}
		l.settleExpired(rec, now, reason)
	}
	return l.view(rec, now), nil
}

// expire records every listed action that is still prepared and past its
// expiry as expired, in one Update.
func (l *Ledger) expire(ids []string, now time.Time) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		for _, id := range ids {
			rec, err := getAction(tx, id)
			if err != nil {
				return err
			}
			if rec == nil {
				continue
			}
			due, reason := l.expired(rec, now)
			if !due {
				continue
			}
			l.settleExpired(rec, now, reason)
			if err := putAction(tx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording expired actions: %w", err)
	}
	return nil
}

// DefaultListLimit is List's limit when none is given.
const DefaultListLimit = 100

// List returns up to limit actions (DefaultListLimit if limit <= 0),
// newest first, only those in state if state is not empty. Prepared
// actions past their expiry are recorded as expired first.
func (l *Ledger) List(state string, limit int) ([]Action, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	if state != "" && !knownState(state) {
		return nil, fmt.Errorf("listing actions: unknown state %q (one of %s): %w",
			state, strings.Join(allStates, ", "), contracts.ErrInvalidArgument)
	}
	now := l.now()
	var (
		out []Action
		due []string
	)
	err := l.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketActions)
		c := tx.Bucket(bucketActionsByTime).Cursor()
		for k, _ := c.Last(); k != nil && len(out) < limit; k, _ = c.Prev() {
			if len(k) <= 8 {
				continue
			}
			v := b.Get(k[8:])
			if v == nil {
				continue
			}
			rec, err := decodeAction(v)
			if err != nil {
				return err
			}
			if expired, reason := l.expired(rec, now); expired {
				due = append(due, rec.ID)
				l.settleExpired(rec, now, reason)
			}
			if state == "" || rec.State == state {
				out = append(out, l.view(rec, now))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing actions: %w", err)
	}
	if len(due) > 0 {
		if err := l.expire(due, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var allStates = []string{
	contracts.ActionPrepared, contracts.ActionApproved, contracts.ActionDispatched,
	contracts.ActionCompleted, contracts.ActionFailed, contracts.ActionUncertain,
	contracts.ActionRejected, contracts.ActionExpired, contracts.ActionStale,
}

func knownState(s string) bool {
	for _, k := range allStates {
		if s == k {
			return true
		}
	}
	return false
}

// Close flushes receipts written with AddReceiptAsync, stops their writer
// and closes the tombstone file. The database stays open (its owner closes
// it after).
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = errors.Join(l.async.close(), l.closeHeld(), l.tombs.close())
	})
	return l.closeErr
}
