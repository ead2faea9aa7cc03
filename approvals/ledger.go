package approvals

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
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

// ApprovalTTL is how long a prepared action can be approved: 15 minutes
// (contracts.ApprovalTTLMinutes). Past it the action reads as expired.
//
// The TTL is measured on two clocks and the earlier expiry wins: the wall
// clock (expiresAt, what people read) and the machine's boot clock (see
// BootClock), which no one can set back. A wall clock set back therefore
// never lets an action live longer than its TTL, within one daemon life or
// across restarts in the same boot; one set forward only ends it early,
// and ending early is safe (rejection is the default). An action prepared
// before the machine rebooted has expired: how long it waited is unknown.
// An action stored without a boot deadline (an older pikod, or a platform
// without a boot clock) goes by the wall clock alone.
const ApprovalTTL = contracts.ApprovalTTLMinutes * time.Minute

// Reasons recovery and restores give actions; tests and the README quote
// them.
const (
	ReasonStoppedWhileOut   = "pikod stopped while the call was out; the server may have acted on it"
	ReasonStoppedBeforeSend = "pikod stopped before sending it; nothing was sent"
	ReasonRestoredDecided   = "restored database: this action was already decided"
	ReasonRestoredSent      = "the tombstone file says this call was sent, the database does not (restored from an older copy, or pikod stopped mid-write); the server may have acted on it"
	ReasonRestoredNotSent   = "the tombstone file says this action was approved, the database does not (restored from an older copy, or pikod stopped mid-write); it was never sent"
	ReasonExpired           = "not decided before it expired"
	ReasonExpiredReboot     = "prepared before the machine restarted, so how long it waited is unknown; it expired"
)

// Action is one call the ledger knows: a prepared action awaiting the
// owner, or a call being (or having been) executed. Arguments are the exact
// bytes that are (or would be) sent; Digest binds them with the server,
// tool and fingerprints.
type Action struct {
	ID    string
	State string
	// Kind is the receipt kind the call leaves: mcp_approved for prepared
	// actions, mcp_autonomous or mcp_read for direct ones.
	Kind         string
	Server, Tool string
	// Arguments is the exact JSON text that will be sent.
	Arguments json.RawMessage
	// ToolDescription is the server's description at prepare time, raw;
	// it is sanitised where it is shown.
	ToolDescription string
	Fingerprints    contracts.Fingerprints
	// Digest is ActionDigest of the fields above; approve must quote it.
	Digest string
	// ExpiresAt is zero for direct calls.
	CreatedAt, ExpiresAt, UpdatedAt time.Time
	// Reason says why the action is stale, failed, uncertain or expired.
	Reason    string
	ReceiptID string
	// ReceiptPruned: retention pruned the receipt (see PruneReceipts).
	ReceiptPruned bool
	// ArgumentsPruned: the action ended longer ago than the actions' age
	// bound, and retention dropped its arguments and tool description;
	// the record stays, with its digest, as long as its receipt does
	// (see PruneActions).
	ArgumentsPruned bool
	SourceID        string
	// NotSent marks a failed action that provably never reached the
	// server: it may be prepared again.
	NotSent bool
	// Caller is who asked for the call; zero for actions stored before
	// pikod kept callers. It is not part of Digest: it records who asked,
	// it does not change what is sent.
	Caller contracts.Caller
}

// actionRecord is Action as stored. Arguments are kept as base64 bytes:
// encoding/json compacts and HTML-escapes a RawMessage, which would change
// the exact bytes the owner reviewed.
type actionRecord struct {
	ID              string                 `json:"id"`
	State           string                 `json:"state"`
	Kind            string                 `json:"kind"`
	Server          string                 `json:"server"`
	Tool            string                 `json:"tool"`
	Arguments       []byte                 `json:"arguments"`
	ToolDescription string                 `json:"toolDescription,omitempty"`
	Fingerprints    contracts.Fingerprints `json:"fingerprints"`
	Digest          string                 `json:"digest"`
	CreatedAt       time.Time              `json:"createdAt"`
	ExpiresAt       time.Time              `json:"expiresAt,omitzero"`
	UpdatedAt       time.Time              `json:"updatedAt"`
	Reason          string                 `json:"reason,omitempty"`
	ReceiptID       string                 `json:"receiptId,omitempty"`
	// ReceiptPruned says the receipt was pruned by retention (its range
	// is in a checkpoint): not a missing receipt.
	ReceiptPruned bool `json:"receiptPruned,omitempty"`
	// ArgumentsPruned: see Action.ArgumentsPruned.
	ArgumentsPruned bool   `json:"argumentsPruned,omitempty"`
	SourceID        string `json:"sourceId,omitempty"`
	NotSent         bool   `json:"notSent,omitempty"`
	// ExpiresBoot is the expiry on the boot clock (prepared actions).
	ExpiresBoot *bootDeadline `json:"expiresBoot,omitempty"`
	// Caller is who asked (absent in actions stored before it was kept).
	Caller contracts.Caller `json:"caller,omitzero"`
}

// bootDeadline is an instant on the boot clock of one boot.
type bootDeadline struct {
	Boot string `json:"boot"`
	// At is the time since that boot began, in nanoseconds.
	At time.Duration `json:"at"`
}

func (r *actionRecord) action() Action {
	return Action{
		ID: r.ID, State: r.State, Kind: r.Kind, Server: r.Server, Tool: r.Tool,
		Arguments: json.RawMessage(bytes.Clone(r.Arguments)), ToolDescription: r.ToolDescription,
		Fingerprints: r.Fingerprints, Digest: r.Digest,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, UpdatedAt: r.UpdatedAt,
		Reason: r.Reason, ReceiptID: r.ReceiptID, ReceiptPruned: r.ReceiptPruned, ArgumentsPruned: r.ArgumentsPruned, SourceID: r.SourceID, NotSent: r.NotSent,
		Caller: r.Caller,
	}
}

// ActionDigest is the hex SHA-256 of the server, tool, exact argument bytes
// and the four fingerprints, each field length-prefixed so that no two
// different actions share an encoding.
func ActionDigest(server, tool string, args []byte, fp contracts.Fingerprints) string {
	return KindDigest(contracts.ReceiptApproved, server, tool, args, fp)
}

// KindDigest is ActionDigest of an action of kind: a task creation or
// cancellation (mcp_task_create, mcp_task_cancel) also binds its kind, so
// an approval of one is never the approval of a plain call with the same
// arguments. For every other kind it equals ActionDigest.
func KindDigest(kind, server, tool string, args []byte, fp contracts.Fingerprints) string {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	switch kind {
	case contracts.ReceiptTaskCreate, contracts.ReceiptTaskCancel:
		field([]byte("pikod task action v1"))
		field([]byte(kind))
	default:
		field([]byte("pikod action v1"))
	}
	field([]byte(server))
	field([]byte(tool))
	field(args)
	field([]byte(fp.Settings))
	field(binary.BigEndian.AppendUint64(nil, fp.CredentialGeneration))
	field(binary.BigEndian.AppendUint64(nil, fp.ConnectionGeneration))
	field([]byte(fp.Tool))
	return hex.EncodeToString(h.Sum(nil))
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newID returns prefix followed by 128 random bits in lowercase base32
// (26 characters).
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return prefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// validID reports whether id has the shape newID gives prefix.
func validID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func timeKey(t time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())), id...)
}

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
		Fingerprints: fp, Digest: KindDigest(kind, server, tool, args, fp),
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
		Fingerprints: fp, Digest: ActionDigest(server, tool, args, fp),
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

// Advice says what the owner can do about an action in its state.
func (a Action) Advice() string {
	switch a.State {
	case contracts.ActionPrepared:
		return fmt.Sprintf("review with 'pikoctl mcp review %s', then approve or reject", a.ID)
	case contracts.ActionApproved:
		return "approved; pikod is about to send it"
	case contracts.ActionDispatched:
		return "the call is out; its result will be recorded here"
	case contracts.ActionCompleted:
		if a.ReceiptID != "" {
			return "done; receipt " + a.ReceiptID
		}
		return "done"
	case contracts.ActionFailed:
		if a.NotSent {
			return "nothing was sent; make the call again to prepare it again (an approval must be given again)"
		}
		return "nothing more will happen"
	case contracts.ActionUncertain:
		return fmt.Sprintf("the outcome is unknown: check %s for the effect before preparing the call again; pikod will not resend it", a.Server)
	case contracts.ActionRejected:
		return "nothing was sent"
	case contracts.ActionExpired:
		return "nothing was sent; make the call again to prepare a new action"
	case contracts.ActionStale:
		return "nothing was sent; make the call again to prepare an action against the current server"
	}
	return ""
}

// Summary is the action as extensions.mcp.actions.list shows it.
func (a Action) Summary() contracts.ActionSummary {
	s := contracts.ActionSummary{
		ID: a.ID, State: a.State, Kind: a.Kind, Server: a.Server, Tool: a.Tool,
		CreatedAt: a.CreatedAt.UTC().Format(time.RFC3339),
		UpdatedAt: a.UpdatedAt.UTC().Format(time.RFC3339),
		Reason:    a.Reason, Advice: a.Advice(), ReceiptID: a.ReceiptID, NotSent: a.NotSent,
		ArgumentsPruned: a.ArgumentsPruned, Caller: a.Caller,
	}
	if !a.ExpiresAt.IsZero() {
		s.ExpiresAt = a.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return s
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
