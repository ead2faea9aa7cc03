package approvals

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
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

// idEncoding is base32 with its alphabet in ASCII order, so that ids sort
// as their bytes do (the characters are those of lowercase standard
// base32, which ids made before used).
var idEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// newID returns prefix followed by 128 bits in base32 (26 characters):
// the time in milliseconds (48 bits), then 80 random bits. Ids made later
// sort later, so the records keyed by them are appended to their buckets
// and pruned from one end, touching few pages, instead of anywhere in the
// tree; 80 random bits keep them unguessable.
func newID(prefix string) string {
	return prefix + idEncoding.EncodeToString(timeOrdered())
}

// timeOrdered is 16 bytes: the current Unix time in milliseconds, big
// endian in 6 bytes, then 10 random bytes.
func timeOrdered() []byte {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	rand.Read(b[6:]) // never fails (crypto/rand panics rather than return short)
	return b[:]
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
