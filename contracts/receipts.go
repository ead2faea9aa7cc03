package contracts

// Limits of extensions.mcp.receipts.
const (
	// DefaultReceiptsLimit is how many receipts a list returns when no
	// limit is given.
	DefaultReceiptsLimit = 100
	// MaxReceiptsLimit is the largest limit a list accepts.
	MaxReceiptsLimit = 1000
)

// ReceiptsParams is the params of extensions.mcp.receipts. It does one of
// three things:
//
//   - list (no ID, no Verify): receipts newest first by creation time.
//     Server keeps one server's; Since (RFC 3339) keeps those created at or
//     after it; Limit bounds the answer (default DefaultReceiptsLimit, at
//     most MaxReceiptsLimit).
//   - read (ID): that one receipt.
//   - verify (Verify): walk the whole receipt chain and report the first
//     break. Verify takes no other member: the chain is checked whole.
type ReceiptsParams struct {
	Server string `json:"server,omitempty"`
	Since  string `json:"since,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	ID     string `json:"id,omitempty"`
	Verify bool   `json:"verify,omitempty"`
	// Prune applies the retention bounds now (as the background pruner
	// does every few minutes) and answers what it did (Pruned).
	Prune bool `json:"prune,omitempty"`
	// Export writes the receipts and checkpoints to this absolute path (a
	// new file, 0600) as JSON lines that VerifyReceiptExport checks, and
	// answers what it wrote (Exported).
	Export string `json:"export,omitempty"`
}

// ReceiptExportResult is what an export wrote.
type ReceiptExportResult struct {
	Path     string           `json:"path"`
	Receipts uint64           `json:"receipts"`
	Bytes    int64            `json:"bytes"`
	Head     ReceiptChainHead `json:"head"`
}

// PruneStatus is what a pruning run did: when it started (RFC 3339),
// how many receipts it removed in how many batches, what is kept, how long
// it took, and the error that stopped it, if any.
type PruneStatus struct {
	At        string `json:"at,omitempty"`
	Pruned    uint64 `json:"pruned"`
	Batches   int    `json:"batches"`
	Kept      uint64 `json:"kept"`
	KeptBytes int64  `json:"keptBytes"`
	// ActionsRemoved and ActionsSlimmed are the ended actions past
	// retention.actions.maxAge that the run removed, or slimmed to what
	// their kept receipt needs; SourcesEvicted the sources it evicted for
	// retention.sources.
	ActionsRemoved int    `json:"actionsRemoved,omitempty"`
	ActionsSlimmed int    `json:"actionsSlimmed,omitempty"`
	SourcesEvicted int    `json:"sourcesEvicted,omitempty"`
	TookMs         int64  `json:"tookMs"`
	Error          string `json:"error,omitempty"`
}

// ReceiptsResult is the result of extensions.mcp.receipts. A list or a
// read has Receipts (possibly empty) and Head; a verify has Verification
// only.
type ReceiptsResult struct {
	Receipts []ReceiptInfo `json:"receipts,omitzero"`
	// Head is the chain head when the answer was read: write it down
	// somewhere else to notice later if the whole chain was rebuilt.
	Head         *ReceiptChainHead     `json:"head,omitempty"`
	Verification *ReceiptsVerification `json:"verification,omitempty"`
	Pruned       *PruneStatus          `json:"pruned,omitempty"`
	Exported     *ReceiptExportResult  `json:"exported,omitempty"`
}

// ReceiptInfo is one receipt: the record an executed call left. Seq is its
// place in the chain (1 for the first receipt); Prev is the hex SHA-256 of
// the stored bytes of receipt Seq-1 ("" for the first); Hash is the hex
// SHA-256 of this receipt's own stored bytes, which its successor records.
type ReceiptInfo struct {
	ID   string `json:"id"`
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	// Server and Tool name the call; Tool is the tool's original name (the
	// URI for mcp_resource_read, the prompt's name for mcp_prompt_get, the
	// file's URI for mcp_skill_load and mcp_skill_read).
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// ArgumentsDigest is the hex SHA-256 of the exact argument bytes sent
	// (of the URI for mcp_resource_read).
	ArgumentsDigest string `json:"argumentsDigest,omitempty"`
	ActionID        string `json:"actionId,omitempty"`
	// Status is completed, failed or uncertain.
	Status string `json:"status"`
	// SourceID is the retained original result (read it with source.read).
	SourceID string `json:"sourceId,omitempty"`
	// Error says why a failed or uncertain call ended so (redacted).
	Error string `json:"error,omitempty"`
	// NotSent marks a failed call that provably never reached the server.
	NotSent bool `json:"notSent,omitempty"`
	// Caller is who asked for the call (for an approved call, who asked
	// for the action, not the owner who approved it); absent on receipts
	// written before pikod kept callers. It is part of the stored bytes
	// the chain hashes.
	Caller Caller `json:"caller,omitzero"`
	// CreatedAt is RFC 3339 with fractional seconds, UTC.
	CreatedAt string `json:"createdAt"`
	Prev      string `json:"prev"`
	Hash      string `json:"hash"`
}

// ReceiptChainHead is the newest receipt of the chain as the database
// records it: its sequence number, id and hash. Seq 0 means no receipt yet.
type ReceiptChainHead struct {
	Seq       uint64 `json:"seq"`
	ReceiptID string `json:"receiptId,omitempty"`
	Hash      string `json:"hash,omitempty"`
}

// ReceiptsVerification is the outcome of walking the receipt chain. OK
// means every receipt from sequence 1 to the head is present, in order,
// stored exactly as written, the head matches the newest one, and no
// stored receipt lies outside the chain. Otherwise Break is the first
// problem found. Checked counts the receipts found intact: all of them
// when OK, else those before the receipt at fault.
type ReceiptsVerification struct {
	OK      bool               `json:"ok"`
	Checked uint64             `json:"checked"`
	Head    ReceiptChainHead   `json:"head"`
	Break   *ReceiptChainBreak `json:"break,omitempty"`
	// Pruned lists the checkpoints retention left, oldest first: the
	// walk starts after the newest one, whose hash the oldest receipt
	// kept must record. Empty when nothing was pruned.
	Pruned []ReceiptCheckpoint `json:"pruned,omitempty"`
	// Actions counts the executed actions cross-checked against their
	// receipts.
	Actions uint64 `json:"actions,omitempty"`
}

// ReceiptCheckpoint is one pruning run: the range of sequence numbers it
// removed (FromSeq..ToSeq, Count receipts created OldestAt..NewestAt), the
// last receipt removed and the SHA-256 of its stored bytes, and when (At,
// RFC 3339).
type ReceiptCheckpoint struct {
	FromSeq  uint64 `json:"fromSeq"`
	ToSeq    uint64 `json:"toSeq"`
	Count    uint64 `json:"count"`
	LastID   string `json:"lastId"`
	LastHash string `json:"lastHash"`
	OldestAt string `json:"oldestAt"`
	NewestAt string `json:"newestAt"`
	At       string `json:"at"`
}

// Problems a chain verification reports (ReceiptChainBreak.Problem).
const (
	// ChainContentMismatch: the receipt's stored bytes do not hash to what
	// its successor recorded (it was edited, or its successor was moved or
	// edited).
	ChainContentMismatch = "content_mismatch"
	// ChainHeadMismatch: the newest receipt does not match the chain head
	// (edited, or the head was), or receipts follow the recorded head.
	ChainHeadMismatch = "head_mismatch"
	// ChainSequenceMissing: no receipt has this sequence number (deleted).
	ChainSequenceMissing = "sequence_missing"
	// ChainReceiptMissing: the sequence index names a receipt that is not
	// stored (deleted).
	ChainReceiptMissing = "receipt_missing"
	// ChainOutOfOrder: the receipt at this place records another sequence
	// number or id (moved).
	ChainOutOfOrder = "out_of_order"
	// ChainUnreadable: the stored bytes are not a receipt.
	ChainUnreadable = "unreadable"
	// ChainNotInChain: a stored receipt that no place of the chain holds
	// (inserted, or its place was taken).
	ChainNotInChain = "not_in_chain"
	// ChainCheckpointGap: the checkpoints of pruned receipts do not cover
	// 1..N without a gap, or the oldest receipt kept does not continue
	// the newest checkpoint.
	ChainCheckpointGap = "checkpoint_gap"
	// ChainReceiptWithoutAction: a receipt names an action the ledger
	// does not hold.
	ChainReceiptWithoutAction = "receipt_without_action"
	// ChainEffectWithoutReceipt: an executed action names a receipt that
	// is neither stored nor pruned by retention.
	ChainEffectWithoutReceipt = "effect_without_receipt"
)

// ReceiptChainBreak is the first problem a verification found: the
// sequence number and (when known) the id of the receipt at fault, the
// problem (one of the Chain* constants) and a sentence for a person.
type ReceiptChainBreak struct {
	Seq       uint64 `json:"seq"`
	ReceiptID string `json:"receiptId,omitempty"`
	Problem   string `json:"problem"`
	Message   string `json:"message"`
}
