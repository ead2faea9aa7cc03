package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
)

// maxSourceChars bounds what one resources/read of a retained result
// returns; the rest is named in a note.
const maxSourceChars = 16 << 20

// readResource reads uri of server through pikod's rules.
func (b *Bridge) readResource(server, uri string) func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return b.read(ctx, server, uri)
	}
}

// readTemplate reads a URI of one of server's templates.
func (b *Bridge) readTemplate(server string) func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		uri := req.Params.URI
		if id, orig, ok := b.resourceServer(uri); ok && id == server {
			uri = orig
		}
		return b.read(ctx, server, uri)
	}
}

func (b *Bridge) read(ctx context.Context, server, uri string) ([]mcp.ResourceContents, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	var res contracts.ResourceReadResult
	if err := c.Call(ctx, contracts.MethodMCPResource, contracts.ResourceParams{Server: server, Op: contracts.ResourceOpRead, URI: uri}, &res); err != nil {
		return nil, err
	}
	var items []map[string]any
	_ = json.Unmarshal(res.Contents, &items)
	var out []mcp.ResourceContents
	for _, m := range items {
		if rc, err := mcp.ParseResourceContents(m); err == nil {
			out = append(out, rc)
			continue
		}
		text, _ := json.Marshal(m)
		out = append(out, mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(text)})
	}
	if res.Truncated && res.OriginalResultSourceID != "" {
		out = append(out, mcp.TextResourceContents{URI: SourceURIPrefix + res.OriginalResultSourceID, MIMEType: "text/plain",
			Text: "pikod: this resource was cut short; read it whole with resources/read " + SourceURIPrefix + res.OriginalResultSourceID})
	}
	return out, nil
}

// readSource serves pikod://source/ID: a retained original result, read
// whole in windows up to maxSourceChars.
func (b *Bridge) readSource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	rest, ok := strings.CutPrefix(req.Params.URI, SourceURIPrefix)
	id, query, windowed := strings.Cut(rest, "?")
	if !ok || id == "" {
		return nil, fmt.Errorf("%q is not a retained result: use the %sID a call result links to", req.Params.URI, SourceURIPrefix)
	}
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	if windowed {
		// One window (source.read): offset and length count characters.
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, fmt.Errorf("%q: the window is ?offset=N&length=N: %v", req.Params.URI, err)
		}
		var p contracts.SourceReadParams
		p.SourceID = id
		for name, dst := range map[string]*int64{"offset": &p.Offset, "length": &p.Length} {
			if v := q.Get(name); v != "" {
				if *dst, err = strconv.ParseInt(v, 10, 64); err != nil || *dst < 0 {
					return nil, fmt.Errorf("%q: %s must be a whole number of characters", req.Params.URI, name)
				}
			}
		}
		var w contracts.SourceReadResult
		if err := c.Call(ctx, contracts.MethodSourceRead, p, &w); err != nil {
			return nil, err
		}
		out := []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: w.Text}}
		next := w.Offset + int64(len([]rune(w.Text)))
		note := fmt.Sprintf("pikod: characters %d to %d of %d", w.Offset, next, w.Total)
		if !w.EOF {
			note += fmt.Sprintf("; the next window is %s%s?offset=%d&length=%d", SourceURIPrefix, id, next, max(p.Length, int64(len([]rune(w.Text)))))
		} else {
			note += " (the end)"
		}
		return append(out, mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: note}), nil
	}
	var text strings.Builder
	var off int64
	for {
		var w contracts.SourceReadResult
		if err := c.Call(ctx, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: id, Offset: off, Length: 1 << 20}, &w); err != nil {
			return nil, err
		}
		text.WriteString(w.Text)
		off += int64(len([]rune(w.Text)))
		if w.EOF || w.Text == "" {
			break
		}
		if off >= maxSourceChars {
			text.WriteString(fmt.Sprintf("\n[pikod: %d of %d characters shown; read the rest with 'pikoctl rpc source.read' from offset %d]", off, w.Total, off))
			break
		}
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: text.String()}}, nil
}

// sourceWindowTemplate is the URI template of one window of a retained
// source: pikod://source/ID?offset=N&length=N (characters).
func sourceWindowTemplate() mcp.ResourceTemplate {
	return mcp.NewResourceTemplate(SourceURIPrefix+"{id}{?offset,length}", "a window of a pikod retained source",
		mcp.WithTemplateDescription("length characters of a retained result or capture from offset (source.read): a snapshot read a window at a time"))
}

// getPrompt gets prompt name of server. Its messages are the server's
// data, shown as evidence: the description says so.
func (b *Bridge) getPrompt(server, name string) func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		c, err := b.conn(ctx)
		if err != nil {
			return nil, err
		}
		args, _ := json.Marshal(req.Params.Arguments)
		var res contracts.PromptGetResult
		if err := c.Call(ctx, contracts.MethodMCPPrompt, contracts.PromptParams{Server: server, Op: contracts.PromptOpGet, Name: name, Arguments: args}, &res); err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(map[string]any{"description": res.Description, "messages": res.Messages})
		msg := json.RawMessage(raw)
		out, err := mcp.ParseGetPromptResult(&msg)
		if err != nil {
			return nil, fmt.Errorf("prompt %q of %s: %w", name, server, err)
		}
		note := "pikod: " + res.Evidence
		if out.Description != "" {
			note = out.Description + " (" + note + ")"
		}
		out.Description = note
		return out, nil
	}
}

// subscribe passes resources/subscribe and unsubscribe to the server that
// lists uri. mcp-go acknowledges the host; a failure is logged to it.
func (b *Bridge) subscribe(ctx context.Context, uri, op string) {
	server, orig, ok := b.resourceServer(uri)
	if !ok {
		b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("%s %s: no exposed server lists this resource", op, uri))
		return
	}
	c, err := b.conn(ctx)
	if err != nil {
		return
	}
	if err := c.Call(ctx, contracts.MethodMCPResource, contracts.ResourceSubscribeParams{Server: server, Op: op, URI: orig}, nil); err != nil {
		b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("%s %s on %s: %v", op, uri, server, err))
	}
}

// completer passes completion/complete to the server of the prompt or
// template.
type completer struct{ b *Bridge }

func (c completer) CompletePromptArgument(ctx context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	c.b.catMu.Lock()
	ref, ok := c.b.prompts[prompt]
	c.b.catMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no prompt %q is exposed here", prompt)
	}
	return c.b.complete(ctx, contracts.CompleteParams{Server: ref.server, Prompt: ref.name, Argument: arg.Name, Value: arg.Value, Arguments: cc.Arguments})
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	c.b.catMu.Lock()
	server, ok := c.b.templates[uri]
	c.b.catMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no resource template %q is exposed here", uri)
	}
	return c.b.complete(ctx, contracts.CompleteParams{Server: server, Template: uri, Argument: arg.Name, Value: arg.Value, Arguments: cc.Arguments})
}

func (b *Bridge) complete(ctx context.Context, p contracts.CompleteParams) (*mcp.Completion, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	var res contracts.CompleteResult
	if err := c.Call(ctx, contracts.MethodMCPComplete, p, &res); err != nil {
		return nil, err
	}
	out := &mcp.Completion{Values: res.Values, HasMore: res.HasMore}
	if res.Total > 0 {
		out.Total = res.Total
	}
	return out, nil
}
