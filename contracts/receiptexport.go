package contracts

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// ReceiptExportFormat names a receipts export in its header line.
const ReceiptExportFormat = "pikod-receipts"

// MaxExportLine bounds one line of a receipts export.
const MaxExportLine = 1 << 20

// VerifyReceiptExport checks a receipts export (pikoctl mcp receipts
// --export FILE) from the file alone: its header, checkpoints that cover
// sequence 1 onwards without a gap, and every receipt in order, each
// recording the SHA-256 of the exact bytes of the line before it (the
// newest checkpoint's hash for the first), the last one matching the
// header's head. The error is for a file that is not an export at all;
// a break is reported in the verification.
func VerifyReceiptExport(r io.Reader) (ReceiptsVerification, error) {
	var out ReceiptsVerification
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxExportLine)
	fail := func(seq uint64, id, problem, format string, args ...any) (ReceiptsVerification, error) {
		out.Break = &ReceiptChainBreak{Seq: seq, ReceiptID: id, Problem: problem, Message: fmt.Sprintf(format, args...)}
		return out, nil
	}
	if !sc.Scan() {
		return out, fmt.Errorf("the file is empty or unreadable: not a receipts export (%v)", sc.Err())
	}
	var hdr struct {
		Format  string           `json:"pikodReceipts"`
		Version int              `json:"version"`
		Head    ReceiptChainHead `json:"head"`
		Count   uint64           `json:"count"`
	}
	if err := json.Unmarshal(sc.Bytes(), &hdr); err != nil || hdr.Format != ReceiptExportFormat {
		return out, fmt.Errorf("line 1 is not the header of a receipts export (made by 'pikoctl mcp receipts --export FILE')")
	}
	if hdr.Version != 1 {
		return out, fmt.Errorf("the export is version %d; this pikoctl reads version 1", hdr.Version)
	}
	out.Head = hdr.Head
	next, prevHash, prevID, lineNo := uint64(1), "", "", 1
	fromCheckpoint := false
	for sc.Scan() {
		lineNo++
		b := sc.Bytes()
		var probe struct {
			Checkpoint *ReceiptCheckpoint `json:"checkpoint"`
			ID         string             `json:"id"`
			Seq        uint64             `json:"seq"`
			Prev       *string            `json:"prev"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return fail(next, "", ChainUnreadable, "line %d is not JSON (%v): the file was edited or damaged", lineNo, err)
		}
		if c := probe.Checkpoint; c != nil {
			if out.Checked > 0 {
				return fail(next, "", ChainCheckpointGap, "line %d is a checkpoint after receipts: the file was edited", lineNo)
			}
			if c.FromSeq != next || c.ToSeq < c.FromSeq || c.Count != c.ToSeq-c.FromSeq+1 {
				return fail(next, "", ChainCheckpointGap, "the checkpoint on line %d covers %d to %d (%d receipts); the pruned range should continue at %d",
					lineNo, c.FromSeq, c.ToSeq, c.Count, next)
			}
			out.Pruned = append(out.Pruned, *c)
			next, prevHash, prevID, fromCheckpoint = c.ToSeq+1, c.LastHash, c.LastID, true
			continue
		}
		if probe.ID == "" || probe.Prev == nil {
			return fail(next, "", ChainUnreadable, "line %d is neither a checkpoint nor a receipt", lineNo)
		}
		switch {
		case probe.Seq != next:
			return fail(next, probe.ID, ChainSequenceMissing, "line %d holds receipt %s with sequence %d where sequence %d belongs: receipts were removed or moved",
				lineNo, probe.ID, probe.Seq, next)
		case *probe.Prev != prevHash && fromCheckpoint && out.Checked == 0:
			return fail(probe.Seq, probe.ID, ChainCheckpointGap, "receipt %s (sequence %d) does not continue the checkpoint (last %s): it or the checkpoint was edited",
				probe.ID, probe.Seq, prevID)
		case *probe.Prev != prevHash:
			return fail(probe.Seq-1, prevID, ChainContentMismatch, "receipt %s (sequence %d) does not match the hash its successor %s recorded: it was edited",
				prevID, probe.Seq-1, probe.ID)
		}
		sum := sha256.Sum256(bytes.Clone(b))
		prevHash, prevID = hex.EncodeToString(sum[:]), probe.ID
		next++
		out.Checked++
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading the export: %w", err)
	}
	switch {
	case next-1 != hdr.Head.Seq:
		return fail(next, "", ChainSequenceMissing, "the header records the head at sequence %d, but the last receipt is sequence %d: receipts were removed",
			hdr.Head.Seq, next-1)
	case hdr.Head.Seq > 0 && (prevID != hdr.Head.ReceiptID || prevHash != hdr.Head.Hash):
		return fail(next-1, prevID, ChainHeadMismatch, "the newest receipt %s does not match the head the header records (%s): it or the header was edited",
			prevID, hdr.Head.ReceiptID)
	}
	out.OK = true
	return out, nil
}
