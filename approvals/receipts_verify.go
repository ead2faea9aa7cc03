package approvals

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pikod/pikod/contracts"
	bolt "go.etcd.io/bbolt"
)

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
