package approvals

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/pikod/pikod/contracts"
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
