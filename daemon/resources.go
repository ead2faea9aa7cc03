package daemon

import (
	"context"
	"fmt"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon/present"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// maxReceiptURIChars bounds the URI a resource read's receipt names; the
// receipt's argumentsDigest covers the whole URI.
const maxReceiptURIChars = 2000

// resource serves extensions.mcp.resource.
func (d *daemon) resource(ctx context.Context, req *rpc.Request, p *contracts.ResourceParams) (any, error) {
	if p.Op == "" {
		p.Op = contracts.ResourceOpList
	}
	switch p.Op {
	case contracts.ResourceOpList, contracts.ResourceOpTemplates:
		if p.URI != "" {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedURI, `op %q takes no "uri": read a resource with op "read"`, p.Op)
		}
		l, err := d.sup.Resources(ctx, p.Server)
		if err != nil {
			return nil, err
		}
		res := contracts.ResourceListResult{Server: p.Server, Op: p.Op, Complete: l.Complete, Problem: l.Problem}
		if p.Op == contracts.ResourceOpList {
			res.Resources = l.Resources
		} else {
			res.ResourceTemplates = l.Templates
		}
		return res, nil
	case contracts.ResourceOpRead:
		if err := d.checkRotated(p.Server); err != nil {
			return nil, err
		}
		return d.readResource(ctx, req, *p, req.Caller())
	case contracts.ResourceOpSubscribe:
		return d.sup.Subscribe(ctx, p.Server, p.URI)
	case contracts.ResourceOpUnsubscribe:
		return d.sup.Unsubscribe(ctx, p.Server, p.URI)
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp,
		`"op" must be "list", "templates", "read", "subscribe" or "unsubscribe", not %q`, clipText(p.Op, 40))
}

// readResource reads one resource: the original result is retained (as a
// call's is), the caller gets a bounded preview and a receipt names the
// read.
func (d *daemon) readResource(ctx context.Context, req *rpc.Request, p contracts.ResourceParams, caller contracts.Caller) (any, error) {
	raw, err := d.sup.ReadResource(ctx, p.Server, p.URI)
	if err != nil {
		return nil, err
	}
	// Redacted before it is retained or previewed, as the server's output
	// (vault.View): every cut comes after.
	text := d.answerView(req, p.Server).JSON(raw)
	uri := d.keptView(req).Text(p.URI)
	meta, err := d.sources.PutDeferred(p.Server, clipText(uri, maxReceiptURIChars), text)
	if err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("retaining a resource read")
		return nil, fmt.Errorf("the resource was read but its contents could not be retained: %w", err)
	}
	contents, truncated, perr := present.PreviewResource(text, present.PreviewLimits{})
	rec, err := d.retainedReceipt(approvals.Receipt{Kind: contracts.ReceiptResourceRead, Server: p.Server, Tool: clipText(uri, maxReceiptURIChars),
		ArgumentsDigest: contracts.SHA256Hex([]byte(p.URI)), SourceID: meta.ID, Caller: caller}, perr, truncated, "resources/read", "a resource read result")
	if err != nil {
		return nil, err
	}
	return contracts.ResourceReadResult{Server: p.Server, Op: p.Op, URI: p.URI, Contents: contents, Truncated: truncated,
		OriginalResultSourceID: meta.ID, ReceiptID: rec.ID, ReceiptKind: rec.Kind}, nil
}

// prompt serves extensions.mcp.prompt.
func (d *daemon) prompt(ctx context.Context, req *rpc.Request, p *contracts.PromptParams) (any, error) {
	if p.Op == "" {
		p.Op = contracts.PromptOpList
	}
	switch p.Op {
	case contracts.PromptOpList:
		if p.Name != "" || len(p.Arguments) > 0 {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedName,
				`op "list" takes no "name" or "arguments": get a prompt with op "get"`)
		}
		l, err := d.sup.Prompts(ctx, p.Server)
		if err != nil {
			return nil, err
		}
		return contracts.PromptListResult{Server: p.Server, Op: p.Op, Prompts: l.Prompts, Complete: l.Complete, Problem: l.Problem}, nil
	case contracts.PromptOpGet:
		if err := d.checkRotated(p.Server); err != nil {
			return nil, err
		}
		return d.getPrompt(ctx, req, *p, req.Caller())
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp, `"op" must be "list" or "get", not %q`, clipText(p.Op, 40))
}

// retainedReceipt writes the receipt of a read whose answer is retained
// at rec.SourceID: completed, or failed when the answer was not a result
// of its kind (perr, redacted), and then that is the error returned,
// with where the answer can be read.
func (d *daemon) retainedReceipt(rec approvals.Receipt, perr error, truncated bool, method, kind string) (approvals.Receipt, error) {
	rec.Status = contracts.CallCompleted
	if perr != nil {
		rec.Status, rec.Error = contracts.CallFailed, d.red.Text(perr.Error())
	}
	rec = d.ledger.AddReceiptAsync(rec)
	d.log.Debug().Str("server", rec.Server).Str("source", rec.SourceID).Str("receipt", rec.ID).Bool("truncated", truncated).Msg(method)
	if perr != nil {
		return rec, contracts.WithHint(contracts.WithReason(fmt.Errorf("the server's answer to %s is not %s (%v): %w",
			method, kind, perr, contracts.ErrUpstream), contracts.ReasonInvalidResult), "its answer is retained: read it with source.read at "+rec.SourceID)
	}
	return rec, nil
}

// getPrompt gets one prompt: the original result is retained, the caller
// gets its messages as bounded, safe evidence, and a receipt names the
// get.
func (d *daemon) getPrompt(ctx context.Context, req *rpc.Request, p contracts.PromptParams, caller contracts.Caller) (any, error) {
	out, err := d.sup.GetPrompt(ctx, mcpclient.PromptRequest{Server: p.Server, Name: p.Name, Arguments: p.Arguments})
	if err != nil {
		return nil, err
	}
	text := d.answerView(req, p.Server).JSON(out.Result)
	name := d.keptView(req).Text(p.Name)
	meta, err := d.sources.PutDeferred(p.Server, name, text)
	if err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("retaining a prompt")
		return nil, fmt.Errorf("the prompt was answered but its messages could not be retained: %w", err)
	}
	desc, messages, truncated, perr := present.PreviewPrompt(text, present.PreviewLimits{})
	rec, err := d.retainedReceipt(approvals.Receipt{Kind: contracts.ReceiptPromptGet, Server: p.Server, Tool: name,
		ArgumentsDigest: contracts.SHA256Hex(out.Arguments), SourceID: meta.ID, Caller: caller}, perr, truncated, "prompts/get", "a prompt result")
	if err != nil {
		return nil, err
	}
	return contracts.PromptGetResult{Server: p.Server, Op: p.Op, Name: p.Name, Description: desc, Messages: messages,
		Evidence: contracts.PromptEvidence, Truncated: truncated, OriginalResultSourceID: meta.ID,
		ReceiptID: rec.ID, ReceiptKind: rec.Kind}, nil
}

// complete serves extensions.mcp.complete.
func (d *daemon) complete(ctx context.Context, req *rpc.Request, p *contracts.CompleteParams) (any, error) {
	out, err := d.sup.Complete(ctx, mcpclient.CompleteRequest{Server: p.Server, Prompt: p.Prompt, Template: p.Template,
		Argument: p.Argument, Value: p.Value, Context: p.Arguments})
	if err != nil {
		return nil, err
	}
	return contracts.CompleteResult{Server: p.Server, Prompt: p.Prompt, Template: p.Template, Argument: p.Argument,
		Values: out.Values, Total: out.Total, HasMore: out.HasMore, Omitted: out.Omitted}, nil
}

// clipText cuts s to at most n characters, marking a cut with "…".
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
