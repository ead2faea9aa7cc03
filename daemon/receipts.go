package daemon

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// receipts serves extensions.mcp.receipts: a list, one receipt, or a
// verification of the whole chain. Queued read receipts are stored first,
// so every call that has answered is in what it reads.
func (d *daemon) receipts(ctx context.Context, req *rpc.Request, p *contracts.ReceiptsParams) (any, error) {
	filtered := p.Server != "" || p.Since != "" || p.Limit != 0
	switch {
	case p.Prune && (filtered || p.ID != "" || p.Verify):
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReceiptsQuery,
			`"prune" applies the retention bounds and takes no other member`)
	case p.Export != "" && (filtered || p.ID != "" || p.Verify || p.Prune):
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReceiptsQuery,
			`"export" writes every receipt and takes no other member`)
	case p.Export != "":
		return d.exportReceipts(p.Export)
	case p.Prune:
		st, err := d.pruner.prune(ctx)
		if err != nil {
			return nil, err
		}
		return contracts.ReceiptsResult{Pruned: &st}, nil
	case p.Verify && (filtered || p.ID != ""):
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReceiptsQuery,
			`"verify" checks the whole chain and takes no "server", "since", "limit" or "id"`)
	case p.ID != "" && filtered:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidReceiptsQuery,
			`"id" names one receipt and takes no "server", "since" or "limit"`)
	}
	if err := d.ledger.FlushReceipts(); err != nil {
		// What is on disk can still be read; the log says what failed.
		d.log.Error().Err(err).Msg("storing queued read receipts before reading receipts")
	}
	if p.Verify {
		v, err := d.ledger.VerifyReceipts()
		if err != nil {
			return nil, err
		}
		ev := d.log.Info()
		if !v.OK {
			ev = d.log.Warn().Uint64("break_seq", v.Break.Seq).Str("receipt", v.Break.ReceiptID).Str("problem", v.Break.Problem)
		}
		ev.Bool("ok", v.OK).Uint64("checked", v.Checked).Uint64("head_seq", v.Head.Seq).Msg("receipt chain verified")
		return contracts.ReceiptsResult{Verification: &v}, nil
	}
	if p.ID != "" {
		r, err := d.ledger.Receipt(p.ID)
		if err != nil {
			return nil, err
		}
		head, err := d.ledger.ReceiptsHead()
		if err != nil {
			return nil, err
		}
		return contracts.ReceiptsResult{Receipts: []contracts.ReceiptInfo{r.Info()}, Head: &head}, nil
	}
	q := approvals.ReceiptQuery{Server: p.Server, Limit: p.Limit}
	if p.Limit < 0 || p.Limit > contracts.MaxReceiptsLimit {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidLimit,
			`"limit" must be between 1 and %d (0 or absent: %d)`, contracts.MaxReceiptsLimit, contracts.DefaultReceiptsLimit)
	}
	if p.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, p.Since)
		if err != nil {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidSince,
				`"since" must be an RFC 3339 time such as 2026-03-01T12:00:00Z (got %q)`, p.Since)
		}
		q.Since = t
	}
	list, head, err := d.ledger.ListReceipts(q)
	if err != nil {
		return nil, err
	}
	out := contracts.ReceiptsResult{Receipts: make([]contracts.ReceiptInfo, 0, len(list)), Head: &head}
	for _, r := range list {
		out.Receipts = append(out.Receipts, r.Info())
	}
	return out, nil
}

// exportReceipts writes the receipts to path: a new file, written under a
// temporary name, fsynced, then renamed, so a path that exists holds a
// whole export. Pruning waits meanwhile.
func (d *daemon) exportReceipts(path string) (any, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidExportPath,
			"the export path %q must be a clean absolute path", path)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrAlreadyExists, contracts.ReasonExportExists,
			"%s already exists; nothing was written", path), "choose a new file name: an export never overwrites one")
	}
	d.pruner.run.Lock()
	defer d.pruner.run.Unlock()
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonExportFailed, "creating %s: %v", tmp, err)
	}
	defer os.Remove(tmp)
	w := bufio.NewWriterSize(f, 1<<20)
	hdr, err := d.ledger.ExportReceipts(w, time.Now())
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	st, serr := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = serr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonExportFailed, "writing the receipts to %s: %v; nothing was kept", path, err)
	}
	d.log.Info().Str("path", path).Uint64("receipts", hdr.Count).Int64("bytes", st.Size()).Msg("receipts exported")
	return contracts.ReceiptsResult{Exported: &contracts.ReceiptExportResult{Path: path, Receipts: hdr.Count, Bytes: st.Size(), Head: hdr.Head}}, nil
}
