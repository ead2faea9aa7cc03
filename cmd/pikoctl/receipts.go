package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newReceiptsCmds() []*cobra.Command {
	return []*cobra.Command{a.newReceiptsCmd(), a.newReceiptCmd(), a.newCompactCmd()}
}

func (a *app) newCompactCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Give the space that pruning freed in pikod.db back to the disk, with pikod running",
		Long: `compact copies pikod.db into a new file without its free pages and
switches to it, with pikod running: calls go on during the copy and wait
only for the switch (the time is printed). Every record is kept byte for
byte. pikod also compacts at start and after a pruning run when the free
pages are over half the file and at least 16 MiB.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res contracts.CompactResult
			if err := a.call(cmd.Context(), contracts.MethodMCPCompact, contracts.CompactParams{}, &res); err != nil {
				return err
			}
			if a.jsonOut {
				return printJSON(a.stdout, res)
			}
			fmt.Fprintf(a.stdout, "compacted pikod.db: %s -> %s (%s were free pages) in %.1f ms; writes waited %.1f ms for the switch, reads %.1f ms\n",
				byteSize(res.BeforeBytes), byteSize(res.AfterBytes), byteSize(res.FreeBytes), res.TookMs, res.HeldMs, res.ReadsHeldMs)
			return nil
		},
	}
}

func (a *app) newReceiptsCmd() *cobra.Command {
	var (
		since  string
		limit  int
		verify bool
		prune  bool
		export string
	)
	cmd := &cobra.Command{
		Use:   "receipts [SERVER] [--since T] [--limit N] | receipts --verify [FILE] | receipts --prune | receipts --export FILE",
		Short: "List the receipts of executed calls, or verify their hash chain",
		Long: `receipts lists the receipts executed calls left, newest first: all of them,
or one server's, or those created since T (an RFC 3339 time such as
2026-03-01T12:00:00Z, or a duration back from now such as 90m, 24h or 7d).
Receipts keep the name of a server removed since; when a SERVER has none
and is not configured, a note on stderr says so.

--verify walks the whole receipt chain instead and reports the first break:
a receipt edited, deleted or moved since it was written, or a newest receipt
that does not match the chain head. Exit status 0 when the chain is intact,
1 when it is broken (docs/approvals.md, Receipts, says what this does and does not prove).
Receipts pruned by retention are accounted for by checkpoints: the walk
starts after the newest one and names every pruned range. It also checks
receipts against actions: a receipt whose action is gone, or an executed
action whose receipt is neither stored nor pruned, is a break.

--export FILE writes every receipt kept, with the checkpoints of those
pruned, to FILE (a new file, 0600) as JSON lines, each receipt exactly as
stored, so that --verify FILE checks the chain from the file alone (no
daemon needed): archive receipts before retention prunes them.

--prune applies the retention bounds of the settings now (pikod does it in
the background every 10 minutes) and says what it removed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var params contracts.ReceiptsParams
			if verify && len(args) == 1 && since == "" && !cmd.Flags().Changed("limit") && !prune && export == "" {
				// One argument with --verify is an export file; a
				// word that names no file is most likely a server,
				// which --verify does not take.
				if _, err := os.Stat(args[0]); err != nil && errors.Is(err, fs.ErrNotExist) {
					return usageErrorf("--verify checks the whole chain, or an export file with --verify FILE, and there is no file %q: it takes no SERVER, --since or --limit", clean(args[0]))
				}
				return a.verifyExport(args[0])
			}
			if export != "" {
				if verify || prune || len(args) > 0 || since != "" || cmd.Flags().Changed("limit") {
					return usageErrorf("--export FILE writes every receipt: it takes no SERVER, --since, --limit, --verify or --prune")
				}
				path, err := filepath.Abs(export)
				if err != nil {
					return &usageError{err: err}
				}
				return a.receiptsOp(cmd.Context(), contracts.ReceiptsParams{Export: path}, func(res contracts.ReceiptsResult) {
					if e := res.Exported; e != nil {
						fmt.Fprintf(a.stdout, "exported %d receipts (%d bytes) to %s; head sequence %d; check it with 'pikoctl mcp receipts --verify %s'\n",
							e.Receipts, e.Bytes, clean(e.Path), e.Head.Seq, clean(e.Path))
					}
				})
			}
			if prune {
				if verify || len(args) > 0 || since != "" || cmd.Flags().Changed("limit") {
					return usageErrorf("--prune applies the retention bounds: it takes no SERVER, --since, --limit or --verify")
				}
				return a.receiptsOp(cmd.Context(), contracts.ReceiptsParams{Prune: true}, func(res contracts.ReceiptsResult) {
					if p := res.Pruned; p != nil {
						fmt.Fprintf(a.stdout, "pruned %d receipts in %d batches (%d ms); %d kept, %d bytes\n", p.Pruned, p.Batches, p.TookMs, p.Kept, p.KeptBytes)
						if p.ActionsRemoved+p.ActionsSlimmed+p.SourcesEvicted > 0 {
							fmt.Fprintf(a.stdout, "ended actions past retention.actions.maxAge: %d removed, %d kept without their arguments for their receipts; %d retained results evicted\n",
								p.ActionsRemoved, p.ActionsSlimmed, p.SourcesEvicted)
						}
					}
				})
			}
			if verify {
				if len(args) > 0 || since != "" || cmd.Flags().Changed("limit") {
					return usageErrorf("--verify checks the whole chain (or an export: --verify FILE): it takes no SERVER, --since or --limit")
				}
				params.Verify = true
			} else {
				if len(args) == 1 {
					params.Server = args[0]
				}
				if limit < 1 || limit > contracts.MaxReceiptsLimit {
					return usageErrorf("--limit must be between 1 and %d", contracts.MaxReceiptsLimit)
				}
				params.Limit = limit
				if since != "" {
					t, err := parseSince(since, time.Now())
					if err != nil {
						return &usageError{err: err}
					}
					params.Since = t.UTC().Format(time.RFC3339Nano)
				}
			}
			var raw json.RawMessage
			if err := a.call(cmd.Context(), contracts.MethodMCPReceipts, params, &raw); err != nil {
				return err
			}
			var res contracts.ReceiptsResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("decoding the extensions.mcp.receipts result: %w", err)
			}
			if verify {
				if res.Verification == nil {
					return fmt.Errorf("the daemon answered a verification without one: %s", clip(string(raw), 200))
				}
				if a.jsonOut {
					if err := printRaw(a.stdout, raw); err != nil {
						return err
					}
				} else {
					w := &errWriter{w: a.stdout}
					writeVerification(w, res.Verification)
					if w.err != nil {
						return w.err
					}
				}
				if !res.Verification.OK {
					return &statusExit{code: exitFailure, msg: "the receipt chain is broken"}
				}
				return nil
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			w := a.tableOut()
			writeReceipts(w, &res)
			if params.Server != "" && len(res.Receipts) == 0 {
				a.noteUnconfigured(cmd.Context(), params.Server)
			}
			return w.err
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only receipts created at or after T (RFC 3339, or a duration ago: 90m, 24h, 7d)")
	cmd.Flags().IntVar(&limit, "limit", contracts.DefaultReceiptsLimit, fmt.Sprintf("at most this many (up to %d)", contracts.MaxReceiptsLimit))
	cmd.Flags().BoolVar(&verify, "verify", false, "walk the whole receipt chain and report the first break (exit 1 if broken)")
	cmd.Flags().BoolVar(&prune, "prune", false, "apply the retention bounds now and say what was removed")
	cmd.Flags().StringVar(&export, "export", "", "write every receipt and checkpoint to this new file (JSON lines)")
	return cmd
}

func (a *app) newReceiptCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "receipt RECEIPT_ID",
		Short: "Show one receipt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res contracts.ReceiptsResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPReceipts, contracts.ReceiptsParams{ID: args[0]}, &res); printed || err != nil {
				return err
			}
			if len(res.Receipts) != 1 {
				return fmt.Errorf("the daemon answered %d receipts for one id", len(res.Receipts))
			}
			w := &errWriter{w: a.stdout}
			writeReceipt(w, &res.Receipts[0])
			return w.err
		},
	}
}

// parseSince reads --since: an RFC 3339 time, or a duration back from now
// (Go's units, plus d for days).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	var (
		d   time.Duration
		err error
	)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		if n, err = strconv.ParseFloat(days, 64); err == nil {
			d = time.Duration(n * float64(24*time.Hour))
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q is neither an RFC 3339 time (2026-03-01T12:00:00Z) nor a duration ago (90m, 24h, 7d)", s)
	}
	return now.Add(-d), nil
}

func writeReceipts(w *errWriter, res *contracts.ReceiptsResult) {
	if len(res.Receipts) == 0 {
		fmt.Fprintln(w, "no receipts")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tRECEIPT\tCREATED\tKIND\tSERVER\tTOOL\tSTATUS\tCALLER")
		for _, r := range res.Receipts {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, cell(r.ID), cell(w.when(r.CreatedAt)), cell(r.Kind),
				cell(r.Server), cell(w.clip(r.Tool, 30)), cell(r.Status), cell(w.caller(r.Caller)))
		}
		if err := tw.Flush(); err != nil {
			return
		}
	}
	if res.Head != nil && res.Head.Seq > 0 {
		fmt.Fprintf(w, "chain head: sequence %d, %s, sha256 %s\n", res.Head.Seq, clean(res.Head.ReceiptID), clean(res.Head.Hash))
	}
}

func writeReceipt(w *errWriter, r *contracts.ReceiptInfo) {
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-10s %s\n", label+":", clean(value))
		}
	}
	line("receipt", r.ID)
	line("sequence", strconv.FormatUint(r.Seq, 10))
	line("kind", r.Kind)
	line("server", r.Server)
	line("tool", r.Tool)
	line("status", r.Status)
	line("created", r.CreatedAt)
	line("action", r.ActionID)
	line("caller", r.Caller.Describe())
	if r.ArgumentsDigest != "" {
		line("arguments", "sha256 "+r.ArgumentsDigest)
	}
	if r.SourceID != "" {
		line("result", r.SourceID+" (pikoctl mcp source "+r.SourceID+")")
	}
	line("error", r.Error)
	if r.Seq == 0 {
		fmt.Fprintln(w, "chain:     not stored yet (a read receipt waiting to be written)")
		return
	}
	prev := r.Prev
	if prev == "" {
		prev = "none (the first receipt)"
	}
	line("prev", prev)
	line("hash", r.Hash)
}

func writeVerification(w *errWriter, v *contracts.ReceiptsVerification) {
	for _, c := range v.Pruned {
		fmt.Fprintf(w, "pruned at %s: %d receipts, sequence %d to %d (created %s to %s), last %s sha256 %s\n",
			clean(c.At), c.Count, c.FromSeq, c.ToSeq, clean(c.OldestAt), clean(c.NewestAt), clean(c.LastID), clean(c.LastHash))
	}
	if v.OK {
		if v.Head.Seq == 0 {
			fmt.Fprintln(w, "receipt chain intact: no receipts yet")
			return
		}
		first := uint64(1)
		if n := len(v.Pruned); n > 0 {
			first = v.Pruned[n-1].ToSeq + 1
		}
		fmt.Fprintf(w, "receipt chain intact: %d receipts, sequence %d to %d", v.Checked, first, v.Head.Seq)
		if first > 1 {
			fmt.Fprintf(w, " (continuing the checkpoint of sequence %d)", first-1)
		}
		if v.Actions > 0 {
			fmt.Fprintf(w, "; %d executed actions cross-checked with their receipts", v.Actions)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "head: %s, sha256 %s\n", clean(v.Head.ReceiptID), clean(v.Head.Hash))
		return
	}
	b := v.Break
	if b == nil {
		fmt.Fprintln(w, "receipt chain BROKEN (the daemon gave no detail)")
		return
	}
	at := fmt.Sprintf("sequence %d", b.Seq)
	if b.ReceiptID != "" {
		at += ", receipt " + clean(b.ReceiptID)
	}
	fmt.Fprintf(w, "receipt chain BROKEN at %s: %s\n", at, strings.ReplaceAll(clean(b.Problem), "_", " "))
	fmt.Fprintf(w, "  %s\n", clean(b.Message))
	fmt.Fprintf(w, "%d receipts before it verified; the chain head records sequence %d\n", v.Checked, v.Head.Seq)
}

// verifyExport checks an export file locally (no daemon).
func (a *app) verifyExport(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening the export: %w", err)
	}
	defer f.Close()
	v, err := contracts.VerifyReceiptExport(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if a.jsonOut {
		if err := printJSON(a.stdout, contracts.ReceiptsResult{Verification: &v}); err != nil {
			return err
		}
	} else {
		w := &errWriter{w: a.stdout}
		fmt.Fprintf(w, "export %s:\n", clean(path))
		writeVerification(w, &v)
		if w.err != nil {
			return w.err
		}
	}
	if !v.OK {
		return &statusExit{code: exitFailure, msg: "the exported receipt chain is broken"}
	}
	return nil
}

// receiptsOp makes one extensions.mcp.receipts call and prints its result:
// as JSON with --json, else with human.
func (a *app) receiptsOp(ctx context.Context, params contracts.ReceiptsParams, human func(contracts.ReceiptsResult)) error {
	var res contracts.ReceiptsResult
	if err := a.call(ctx, contracts.MethodMCPReceipts, params, &res); err != nil {
		return err
	}
	if a.jsonOut {
		return printJSON(a.stdout, res)
	}
	human(res)
	return nil
}

// noteUnconfigured tells the owner, on stderr, that server is not
// configured when a list of its receipts came back empty: receipts keep a
// removed server's name, so the list is not refused, but a mistyped name
// or a flag written as a word ("receipts verify") would otherwise read as
// "no receipts".
func (a *app) noteUnconfigured(ctx context.Context, server string) {
	s, _, err := a.currentSettings(ctx)
	if err != nil || serverIndex(s, server) >= 0 {
		return
	}
	fmt.Fprintf(a.stderr, "note: no server %q is configured (receipts keep the name of a removed server)\n", clean(server))
	switch server {
	case "verify", "prune", "export":
		fmt.Fprintf(a.stderr, "hint: for the %s operation write --%s ('pikoctl mcp receipts --help')\n", server, server)
	default:
		fmt.Fprintln(a.stderr, "hint: 'pikoctl mcp status' lists the configured servers")
	}
}
