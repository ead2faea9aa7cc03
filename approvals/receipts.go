package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
)

// Receipt records one executed call: its kind (mcp_approved,
// mcp_autonomous, mcp_read; mcp_resource_read and mcp_prompt_get for the
// reads of resources and prompts, whose Tool is the URI or the prompt's
// name), what was called (the arguments by digest only), how it ended and
// where its original result is retained.
//
// Receipts form a hash chain in the order they commit: Seq is the
// receipt's place (1 for the first) and Prev the hex SHA-256 of the exact
// stored bytes of receipt Seq-1, both assigned inside the transaction that
// stores the receipt. Deleting, reordering or editing a stored receipt
// breaks the chain; VerifyReceipts finds where.
type Receipt struct {
	ID   string `json:"id"`
	Seq  uint64 `json:"seq"`
	Prev string `json:"prev"`
	Kind string `json:"kind"`
	// Server and Tool name the call; Tool is the original tool name.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// ArgumentsDigest is the hex SHA-256 of the exact argument bytes.
	ArgumentsDigest string `json:"argumentsDigest,omitempty"`
	// ActionID is the ledger action the call belongs to.
	ActionID string `json:"actionId,omitempty"`
	// Status is completed, failed or uncertain.
	Status string `json:"status"`
	// SourceID names the retained original result, if any.
	SourceID string `json:"sourceId,omitempty"`
	// Error says why a failed or uncertain call ended so; never a secret
	// (the daemon redacts it before it gets here).
	Error string `json:"error,omitempty"`
	// NotSent marks a failed call that provably never reached the server.
	NotSent bool `json:"notSent,omitempty"`
	// Caller is who asked for the call: for an approved call, who asked
	// for its action. It is omitted when zero, so a receipt without one is
	// stored exactly as receipts were before callers were kept; when set,
	// it is part of the stored bytes the chain's hashes cover.
	Caller    contracts.Caller `json:"caller,omitzero"`
	CreatedAt time.Time        `json:"createdAt"`

	// Hash is the hex SHA-256 of the receipt's stored bytes. It is filled
	// in when the receipt is stored or read back, never stored itself (the
	// successor's Prev holds it). A receipt still queued by
	// AddReceiptAsync has none yet, nor a Seq.
	Hash string `json:"-"`
}

// Info is the receipt as extensions.mcp.receipts shows it.
func (r Receipt) Info() contracts.ReceiptInfo {
	return contracts.ReceiptInfo{
		ID: r.ID, Seq: r.Seq, Kind: r.Kind, Server: r.Server, Tool: r.Tool,
		ArgumentsDigest: r.ArgumentsDigest, ActionID: r.ActionID, Status: r.Status,
		SourceID: r.SourceID, Error: r.Error, NotSent: r.NotSent, Caller: r.Caller,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano),
		Prev:      r.Prev, Hash: r.Hash,
	}
}

func (l *Ledger) fillReceipt(r *Receipt) error {
	if r.Kind == "" || r.Server == "" || r.Tool == "" {
		return fmt.Errorf("recording a receipt: kind, server and tool are required (got %q, %q, %q): %w",
			r.Kind, r.Server, r.Tool, contracts.ErrInvalidArgument)
	}
	if r.ID == "" {
		r.ID = newID("rcpt_")
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = l.stamp()
	}
	r.Caller = r.Caller.Bounded()
	// The chain position is the store's to assign, at commit.
	r.Seq, r.Prev, r.Hash = 0, "", ""
	return nil
}

// chainHead is meta/receipts_head: the newest receipt of the chain.
type chainHead struct {
	Seq  uint64 `json:"seq"`
	ID   string `json:"id"`
	Hash string `json:"hash"`
}

func (h chainHead) info() contracts.ReceiptChainHead {
	return contracts.ReceiptChainHead{Seq: h.Seq, ReceiptID: h.ID, Hash: h.Hash}
}

func readHead(tx *bolt.Tx) (chainHead, error) {
	var h chainHead
	v := tx.Bucket(bucketMeta).Get(keyReceiptsHead)
	if v == nil {
		return h, nil
	}
	if err := json.Unmarshal(v, &h); err != nil {
		return chainHead{}, fmt.Errorf("the receipt chain head (meta/%s) is unreadable: %w", keyReceiptsHead, err)
	}
	return h, nil
}

func hashOf(stored []byte) string {
	sum := sha256.Sum256(stored)
	return hex.EncodeToString(sum[:])
}

// chainWriter appends receipts to the chain inside one transaction: the
// head and the counts are read once, each receipt is encoded and hashed
// once, and the head and counts are written once, by close, however many
// receipts the batch holds. Because the head is read and written in the
// same transaction, receipts chain in the order their transactions commit,
// whoever writes them.
type chainWriter struct {
	tx              *bolt.Tx
	head            chainHead
	stats           receiptStats
	receipts, bySeq *bolt.Bucket
	added           bool
}

func openChain(tx *bolt.Tx) (*chainWriter, error) {
	head, err := readHead(tx)
	if err != nil {
		return nil, err
	}
	stats, err := readStats(tx)
	if err != nil {
		return nil, err
	}
	return &chainWriter{tx: tx, head: head, stats: stats,
		receipts: tx.Bucket(bucketReceipts), bySeq: tx.Bucket(bucketReceiptsBySeq)}, nil
}

// add makes r the newest receipt: the next sequence number, the head's
// hash as Prev, stored under its id and in receipts_by_seq/.
func (c *chainWriter) add(r Receipt) (Receipt, error) {
	r.Seq, r.Prev, r.Hash = c.head.Seq+1, c.head.Hash, ""
	v, err := json.Marshal(r)
	if err != nil {
		return Receipt{}, err
	}
	r.Hash = hashOf(v)
	if err := c.receipts.Put([]byte(r.ID), v); err != nil {
		return Receipt{}, err
	}
	if err := c.bySeq.Put(seqKey(r.Seq), []byte(r.ID)); err != nil {
		return Receipt{}, err
	}
	c.stats.Count++
	c.stats.Bytes += int64(len(v))
	c.head, c.added = chainHead{Seq: r.Seq, ID: r.ID, Hash: r.Hash}, true
	return r, nil
}

// close writes the head and the counts, once, if anything was added.
func (c *chainWriter) close() error {
	if !c.added {
		return nil
	}
	if err := writeStats(c.tx, c.stats); err != nil {
		return err
	}
	hv, err := json.Marshal(c.head)
	if err != nil {
		return err
	}
	return c.tx.Bucket(bucketMeta).Put(keyReceiptsHead, hv)
}

// chainReceipt makes r the newest receipt of the chain, inside tx (the
// time index is the caller's).
func chainReceipt(tx *bolt.Tx, r Receipt) (Receipt, error) {
	c, err := openChain(tx)
	if err != nil {
		return Receipt{}, err
	}
	if r, err = c.add(r); err != nil {
		return Receipt{}, err
	}
	return r, c.close()
}

// addReceipts stores new receipts in order, chained, with their time index
// entries.
func addReceipts(tx *bolt.Tx, rs []Receipt) ([]Receipt, error) {
	c, err := openChain(tx)
	if err != nil {
		return nil, err
	}
	byTime := tx.Bucket(bucketReceiptsByTime)
	out := make([]Receipt, 0, len(rs))
	for _, r := range rs {
		if c.receipts.Get([]byte(r.ID)) != nil {
			return nil, fmt.Errorf("receipt id %s already in use: %w", r.ID, contracts.ErrInternal)
		}
		r, err := c.add(r)
		if err != nil {
			return nil, err
		}
		if err := byTime.Put(timeKey(r.CreatedAt, r.ID), nil); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, c.close()
}

// AddReceipt stores r durably (one Update) and returns it with its id,
// time, place in the chain and hash filled in. Approved and autonomous
// calls use it: their receipt is on disk before the caller learns the
// result.
func (l *Ledger) AddReceipt(r Receipt) (Receipt, error) {
	if err := l.fillReceipt(&r); err != nil {
		return Receipt{}, err
	}
	var out []Receipt
	err := l.group.update(func(tx *bolt.Tx) error {
		var err error
		out, err = addReceipts(tx, []Receipt{r})
		return err
	}, nil)
	if err != nil {
		return Receipt{}, fmt.Errorf("recording receipt for %s/%s: %w", r.Server, r.Tool, err)
	}
	return out[0], nil
}

// AddReceiptAsync assigns r its id and time now and stores it through a
// background writer that groups receipts into few transactions. It is for
// read receipts, where no side effect waits on the write; Receipt finds it
// at once, and Close flushes whatever is still queued. The receipt takes
// its place in the chain when its group commits, so the one returned has
// no Seq or Hash yet. An invalid receipt is logged and dropped.
func (l *Ledger) AddReceiptAsync(r Receipt) Receipt {
	if err := l.fillReceipt(&r); err != nil {
		l.log.Error().Err(err).Msg("dropping receipt")
		return r
	}
	if !l.async.enqueue(r) {
		// Closed: write it ourselves rather than lose it.
		if _, err := l.AddReceipt(r); err != nil {
			l.log.Error().Err(err).Str("receipt", r.ID).Msg("receipt after close not stored")
		}
	}
	return r
}

// FlushReceipts stores every receipt AddReceiptAsync has queued so far and
// returns once they are on disk (or the write failed; they stay queued).
// Lists and verification call it first, so they see every receipt of a
// call that has already answered.
func (l *Ledger) FlushReceipts() error {
	return l.async.flush()
}

// CarryDeferredSources has the receipt writer commit s's deferred sources
// (SourceStore.PutDeferred) in the same transaction as the receipts it
// writes, so that a read call's result and its receipt cost one commit
// between them instead of one each. FlushReceipts then flushes those
// sources too. s keeps its own writer for what is left when it closes.
func (l *Ledger) CarryDeferredSources(s *SourceStore) {
	l.async.sources.Store(s)
	s.carrier.Store(l.async)
}

// decodeReceipt reads a stored receipt and fills in its hash.
func decodeReceipt(v []byte) (Receipt, error) {
	var r Receipt
	if err := json.Unmarshal(v, &r); err != nil {
		return Receipt{}, err
	}
	r.Hash = hashOf(v)
	return r, nil
}

// Receipt returns the receipt id, including one still queued by
// AddReceiptAsync (without Seq and Hash).
func (l *Ledger) Receipt(id string) (Receipt, error) {
	if r, ok := l.async.pendingReceipt(id); ok {
		return r, nil
	}
	var (
		r     Receipt
		found bool
	)
	err := l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReceipts).Get([]byte(id))
		if v == nil {
			return nil
		}
		found = true
		var err error
		if r, err = decodeReceipt(v); err != nil {
			return unreadableReceipt(id, err)
		}
		return nil
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("reading receipt %s: %w", id, err)
	}
	if !found {
		// It may have been written between the two looks.
		if r, ok := l.async.pendingReceipt(id); ok {
			return r, nil
		}
		return Receipt{}, contracts.WithHint(
			contracts.Errorf(contracts.ErrNotFound, contracts.ReasonReceiptNotFound, "no receipt %q", id),
			"list receipts with 'pikoctl mcp receipts'")
	}
	return r, nil
}

func unreadableReceipt(id string, err error) error {
	return contracts.WithHint(
		contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonReceiptUnreadable,
			"stored receipt %s is not a receipt (%v): the database was damaged or edited", id, err),
		"check the whole chain with 'pikoctl mcp receipts --verify'")
}

// ReceiptQuery selects receipts for ListReceipts.
type ReceiptQuery struct {
	// Server keeps one server's receipts ("" for all).
	Server string
	// Since keeps receipts created at or after it (zero for all).
	Since time.Time
	// Limit bounds the answer (contracts.DefaultReceiptsLimit if <= 0).
	Limit int
}

// ListReceipts returns the stored receipts q selects, newest first by
// creation time, and the chain head read in the same transaction.
// Receipts still queued by AddReceiptAsync are not included: call
// FlushReceipts first.
func (l *Ledger) ListReceipts(q ReceiptQuery) ([]Receipt, contracts.ReceiptChainHead, error) {
	if q.Limit <= 0 {
		q.Limit = contracts.DefaultReceiptsLimit
	}
	var (
		out  []Receipt
		head chainHead
	)
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		if head, err = readHead(tx); err != nil {
			return err
		}
		rb := tx.Bucket(bucketReceipts)
		c := tx.Bucket(bucketReceiptsByTime).Cursor()
		// Keys hold unix nanoseconds, which cover 1970 to 2262.
		var since uint64
		switch {
		case q.Since.After(maxKeyTime):
			return nil
		case q.Since.After(time.Unix(0, 0)):
			since = uint64(q.Since.UnixNano())
		}
		for k, _ := c.Last(); k != nil && len(out) < q.Limit; k, _ = c.Prev() {
			if len(k) <= 8 {
				continue
			}
			if binary.BigEndian.Uint64(k[:8]) < since {
				break
			}
			id := k[8:]
			v := rb.Get(id)
			if v == nil {
				// Gone from the store; verification reports it.
				continue
			}
			r, err := decodeReceipt(v)
			if err != nil {
				return unreadableReceipt(string(id), err)
			}
			if q.Server == "" || r.Server == q.Server {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, contracts.ReceiptChainHead{}, fmt.Errorf("listing receipts: %w", err)
	}
	return out, head.info(), nil
}

// ReceiptsHead returns the chain head: the newest stored receipt's
// sequence number, id and hash (zero before the first receipt).
func (l *Ledger) ReceiptsHead() (contracts.ReceiptChainHead, error) {
	var head chainHead
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		head, err = readHead(tx)
		return err
	})
	if err != nil {
		return contracts.ReceiptChainHead{}, fmt.Errorf("reading the receipt chain head: %w", err)
	}
	return head.info(), nil
}

// maxKeyTime is the latest time a time index key can hold.
var maxKeyTime = time.Unix(0, math.MaxInt64)

// verifyChunk is how many receipts one read transaction of VerifyReceipts
// walks: a long chain is checked in several short transactions, holding
// one hash at a time, so neither memory nor a transaction grows with it.
const verifyChunk = 1024

// VerifyReceipts walks the receipt chain from sequence 1 to the head and
// reports the first break: a missing sequence number or receipt, a receipt
// out of place or unreadable, a receipt whose stored bytes do not hash to
// what its successor recorded, a newest receipt that does not match the
// head, or a stored receipt outside the chain. Receipts committed while it
// runs are walked too. The error is for a failure to read the database,
// not for a broken chain.
func (l *Ledger) VerifyReceipts() (contracts.ReceiptsVerification, error) {
	v := chainWalk{next: 1}
	if err := l.FlushReceipts(); err != nil {
		return contracts.ReceiptsVerification{}, err
	}
	cps, err := l.Checkpoints()
	if err != nil {
		return contracts.ReceiptsVerification{}, fmt.Errorf("verifying the receipt chain: %w", err)
	}
	for i, c := range cps {
		v.out.Pruned = append(v.out.Pruned, c.Info())
		want := uint64(1)
		if i > 0 {
			want = cps[i-1].ToSeq + 1
		}
		if c.FromSeq != want || c.ToSeq < c.FromSeq || c.Count != c.ToSeq-c.FromSeq+1 {
			v.fail(want, "", contracts.ChainCheckpointGap,
				"the checkpoint of pruned receipts from %s covers sequences %d to %d (%d receipts), but the pruned range should continue at %d: a checkpoint was removed or edited",
				c.At.UTC().Format(time.RFC3339), c.FromSeq, c.ToSeq, c.Count, want)
			v.out.Checked = 0
			return v.out, nil
		}
	}
	if n := len(cps); n > 0 {
		last := cps[n-1]
		v.next, v.prevID, v.prevHash, v.pruned = last.ToSeq+1, last.LastID, last.LastHash, true
	}
	for !v.done {
		if err := l.db.View(v.step); err != nil {
			return contracts.ReceiptsVerification{}, fmt.Errorf("verifying the receipt chain: %w", err)
		}
	}
	if v.out.Break == nil {
		var after []byte
		for done := false; !done; {
			err := l.db.View(func(tx *bolt.Tx) error {
				var err error
				after, done, err = v.strays(tx, after)
				return err
			})
			if err != nil {
				return contracts.ReceiptsVerification{}, fmt.Errorf("verifying the receipt chain: %w", err)
			}
		}
	}
	if v.out.Break == nil {
		if err := l.checkActions(&v); err != nil {
			return contracts.ReceiptsVerification{}, fmt.Errorf("verifying the receipt chain: %w", err)
		}
	}
	v.out.OK = v.out.Break == nil
	return v.out, nil
}

// checkActions walks the actions and fails on the first executed one
// whose receipt is neither stored nor pruned by retention.
func (l *Ledger) checkActions(w *chainWalk) error {
	var after []byte
	for done := false; !done; {
		err := l.db.View(func(tx *bolt.Tx) error {
			rb := tx.Bucket(bucketReceipts)
			c := tx.Bucket(bucketActions).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for n := 0; ; k, v = c.Next() {
				if k == nil {
					done = true
					return nil
				}
				if n == verifyChunk {
					return nil
				}
				n++
				after = bytes.Clone(k)
				rec, err := decodeAction(v)
				if err != nil {
					return err
				}
				if rec.ReceiptID == "" {
					continue
				}
				w.out.Actions++
				if rec.ReceiptPruned || rb.Get([]byte(rec.ReceiptID)) != nil {
					continue
				}
				if _, queued := l.async.pendingReceipt(rec.ReceiptID); queued {
					continue
				}
				w.fail(0, rec.ReceiptID, contracts.ChainEffectWithoutReceipt,
					"action %s (%s of %s on %s, %s) names receipt %s, which is neither stored nor pruned by retention: it was deleted",
					rec.ID, rec.Kind, rec.Tool, rec.Server, rec.State, rec.ReceiptID)
				done = true
				return nil
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// chainWalk is the state VerifyReceipts carries from one transaction to
// the next: the sequence number expected next and the receipt before it.
type chainWalk struct {
	next     uint64
	prevID   string
	prevHash string
	// pruned: the walk starts after a checkpoint (prevID, prevHash are
	// the last receipt pruned).
	pruned bool
	done   bool
	out    contracts.ReceiptsVerification
}

// fail records the first break: the receipt at seq is at fault, so only
// the ones before it count as checked.
func (w *chainWalk) fail(seq uint64, id, problem, format string, args ...any) {
	w.out.Break = &contracts.ReceiptChainBreak{Seq: seq, ReceiptID: id, Problem: problem, Message: fmt.Sprintf(format, args...)}
	if seq > 0 {
		w.out.Checked = min(w.out.Checked, seq-1)
	}
	w.done = true
}

// step walks up to verifyChunk receipts in one transaction; reaching the
// end of the chain, it checks the head read in that same transaction.
func (w *chainWalk) step(tx *bolt.Tx) error {
	head, err := readHead(tx)
	if err != nil {
		w.fail(w.next-1, w.prevID, contracts.ChainHeadMismatch, "%v", err)
		return nil
	}
	w.out.Head = head.info()
	rb := tx.Bucket(bucketReceipts)
	c := tx.Bucket(bucketReceiptsBySeq).Cursor()
	n := 0
	for k, idb := c.Seek(seqKey(w.next)); ; k, idb = c.Next() {
		if k == nil {
			w.end(head)
			return nil
		}
		if n == verifyChunk {
			return nil
		}
		n++
		id := string(idb)
		if len(k) != 8 {
			w.fail(w.next, id, contracts.ChainOutOfOrder, "the sequence index has a malformed key %x naming receipt %s", k, id)
			return nil
		}
		seq := binary.BigEndian.Uint64(k)
		switch {
		case seq > head.Seq:
			w.fail(seq, id, contracts.ChainHeadMismatch,
				"receipt %s (sequence %d) follows the chain head, which records sequence %d (receipt %s): the head was rolled back or receipts were added",
				id, seq, head.Seq, head.ID)
			return nil
		case seq != w.next:
			w.fail(w.next, "", contracts.ChainSequenceMissing,
				"no receipt has sequence number %d: %s; it was deleted", w.next, w.between(id, seq))
			return nil
		}
		stored := rb.Get(idb)
		if stored == nil {
			w.fail(seq, id, contracts.ChainReceiptMissing,
				"receipt %s (sequence %d) is missing: the sequence index names it, the store does not hold it; it was deleted", id, seq)
			return nil
		}
		var r Receipt
		if err := json.Unmarshal(stored, &r); err != nil {
			w.fail(seq, id, contracts.ChainUnreadable, "receipt %s (sequence %d) is not a receipt (%v): it was edited or damaged", id, seq, err)
			return nil
		}
		if r.ActionID != "" && tx.Bucket(bucketActions).Get([]byte(r.ActionID)) == nil {
			w.fail(seq, id, contracts.ChainReceiptWithoutAction,
				"receipt %s (sequence %d) names action %s, which the ledger does not hold: it was deleted", id, seq, r.ActionID)
			return nil
		}
		if r.ID != id || r.Seq != seq {
			w.fail(seq, id, contracts.ChainOutOfOrder,
				"place %d of the chain holds receipt %s, which records id %q and sequence %d: receipts were moved", seq, id, r.ID, r.Seq)
			return nil
		}
		if r.Prev != w.prevHash {
			if w.pruned && w.prevID != "" && seq == w.next && w.out.Checked == 0 {
				w.fail(seq, id, contracts.ChainCheckpointGap,
					"receipt %s (sequence %d), the oldest kept, does not continue the checkpoint of the pruned receipts (last %s): it was edited, or the checkpoint was", id, seq, w.prevID)
			} else if seq == 1 {
				w.fail(seq, id, contracts.ChainContentMismatch,
					"receipt %s (sequence 1) records a predecessor, but it is the first receipt: it was edited, or receipts before it were removed", id)
			} else {
				w.fail(seq-1, w.prevID, contracts.ChainContentMismatch,
					"receipt %s (sequence %d) does not match the hash its successor %s (sequence %d) recorded: %s was edited (or %s was moved or edited)",
					w.prevID, seq-1, id, seq, w.prevID, id)
			}
			return nil
		}
		w.prevID, w.prevHash = id, hashOf(stored)
		w.next++
		w.out.Checked++
	}
}

// between describes the gap before the receipt at seq.
func (w *chainWalk) between(id string, seq uint64) string {
	if w.prevID == "" {
		return fmt.Sprintf("the first receipt in the chain is %s (sequence %d)", id, seq)
	}
	return fmt.Sprintf("the chain goes from %s (sequence %d) to %s (sequence %d)", w.prevID, w.next-1, id, seq)
}

// end checks the head against the last receipt walked.
func (w *chainWalk) end(head chainHead) {
	last := w.next - 1
	w.done = true
	switch {
	case head.Seq > last:
		id := ""
		if head.Seq == last+1 {
			id = head.ID
		}
		w.fail(last+1, id, contracts.ChainSequenceMissing,
			"the chain head records sequence %d (receipt %s), but the last receipt is sequence %d: the newest receipts were deleted",
			head.Seq, head.ID, last)
	case last == 0:
		// No receipts, and a head that says so.
	case head.ID != w.prevID:
		w.fail(last, w.prevID, contracts.ChainHeadMismatch,
			"the chain head names receipt %s, but the newest receipt (sequence %d) is %s", head.ID, last, w.prevID)
	case head.Hash != w.prevHash:
		w.fail(last, w.prevID, contracts.ChainHeadMismatch,
			"receipt %s (sequence %d, the newest) does not match the hash the chain head recorded: it was edited (or the head was)",
			w.prevID, last)
	}
}

// strays walks up to verifyChunk stored receipts by id, starting after
// the key after, and fails on the first one that no place of the chain
// holds. It returns the last key walked and whether the store ended.
func (w *chainWalk) strays(tx *bolt.Tx, after []byte) ([]byte, bool, error) {
	bySeq := tx.Bucket(bucketReceiptsBySeq)
	c := tx.Bucket(bucketReceipts).Cursor()
	k, v := c.First()
	if after != nil {
		if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
			k, v = c.Next()
		}
	}
	for n := 0; k != nil; k, v = c.Next() {
		if n == verifyChunk {
			return bytes.Clone(after), false, nil
		}
		n++
		var r struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			w.fail(0, string(k), contracts.ChainUnreadable, "stored receipt %s is not a receipt (%v) and is outside the chain", k, err)
			return nil, true, nil
		}
		if !bytes.Equal(bySeq.Get(seqKey(r.Seq)), k) {
			w.fail(r.Seq, string(k), contracts.ChainNotInChain,
				"stored receipt %s records sequence %d, but that place of the chain holds another receipt (or none): it was added or moved", k, r.Seq)
			return nil, true, nil
		}
		after = k
	}
	return nil, true, nil
}

// asyncWriter stores queued receipts in the background, many per
// transaction. Losing queued read receipts to a crash loses no decision,
// so they need not be on disk before the caller goes on.
type asyncWriter struct {
	db *groupCommitter
	// sources, when set, has its deferred sources committed with each
	// flush (Ledger.CarryDeferredSources).
	sources atomic.Pointer[SourceStore]
	log     zerolog.Logger
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	// flushMu serialises flushes (the writer's own and FlushReceipts), so
	// that a flush that returns has seen every earlier one commit.
	flushMu sync.Mutex

	// mu guards the fields that follow.
	mu      sync.Mutex
	queue   []Receipt
	pending map[string]Receipt
	closed  bool
	lastErr error
}

func startAsyncWriter(db *groupCommitter, log zerolog.Logger) *asyncWriter {
	w := &asyncWriter{
		db: db, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		pending: map[string]Receipt{},
	}
	go w.run()
	return w
}

func (w *asyncWriter) enqueue(r Receipt) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, r)
	w.pending[r.ID] = r
	w.mu.Unlock()
	w.kick()
	return true
}

// kickOpen wakes the writer unless it is closed (then it says false: its
// last flush may be over).
func (w *asyncWriter) kickOpen() bool {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if !closed {
		w.kick()
	}
	return !closed
}

// kick wakes the writer.
func (w *asyncWriter) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *asyncWriter) pendingReceipt(id string) (Receipt, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.pending[id]
	return r, ok
}

func (w *asyncWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			if !linger(w.stop) {
				w.flush()
				return
			}
			w.flush()
		case <-w.stop:
			w.flush()
			return
		}
	}
}

// maxLoggedIDs bounds the receipt ids one log line names.
const maxLoggedIDs = 8

// asyncLinger is how long a background writer waits, once woken, for more
// work to join the same transaction. One commit costs far more than one
// record, so at a steady trickle of reads this turns a commit per call into
// one per few milliseconds.
const asyncLinger = 10 * time.Millisecond

// linger waits asyncLinger, or until stop closes (returning false).
func linger(stop <-chan struct{}) bool {
	t := time.NewTimer(asyncLinger)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// flush writes everything queued in one Update, chained in queue order
// after whatever committed before. On failure the receipts go back to the
// front of the queue for the next flush.
func (w *asyncWriter) flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	// The deferred sources of the same reads ride in the same commit.
	var (
		recs   []*sourceRecord
		srcs   []sourceRecord
		after  func()
		source = w.sources.Load()
	)
	if source != nil {
		recs, srcs = source.takeDeferred()
	}
	if len(batch) == 0 && len(srcs) == 0 {
		return nil
	}
	err := w.db.update(func(tx *bolt.Tx) error {
		after = nil
		if len(recs) > 0 {
			a, err := source.commitTx(tx, recs)
			if err != nil {
				return fmt.Errorf("retaining %d results: %w", len(recs), err)
			}
			after = a
		}
		if len(batch) == 0 {
			return nil
		}
		_, err := addReceipts(tx, batch)
		return err
	}, func() {
		if after != nil {
			after()
		}
	})
	if len(srcs) > 0 {
		source.deferredDone(srcs, err)
		if err != nil {
			w.log.Error().Err(err).Int("sources", len(srcs)).
				Msg("retaining the results of read calls failed; those results are not kept")
		}
	}
	if len(batch) == 0 {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.lastErr = fmt.Errorf("storing %d read receipts: %w", len(batch), err)
		ids := make([]string, 0, min(len(batch), maxLoggedIDs))
		for _, r := range batch[:cap(ids)] {
			ids = append(ids, r.ID)
		}
		w.log.Error().Err(err).Int("receipts", len(batch)).Strs("receipt_ids", ids).
			Msg("storing read receipts failed; they stay queued and the next write tries again")
		w.queue = append(batch, w.queue...)
		return w.lastErr
	}
	w.lastErr = nil
	for _, r := range batch {
		delete(w.pending, r.ID)
	}
	return nil
}

// close stops accepting, flushes and waits for the writer; it reports a
// final flush that failed.
func (w *asyncWriter) close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}
