package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pikod/pikod/contracts"
)

// Meta keys the bridge puts in a tool's _meta.
const (
	MetaServer = "io.pikod/server"
	MetaTool   = "io.pikod/tool"
	MetaGrant  = "io.pikod/grant"
)

// ensureLoaded loads the catalog on the host's first list request,
// connecting the exposed servers that are enabled but not connected.
func (b *Bridge) ensureLoaded(ctx context.Context) {
	b.catMu.Lock()
	loaded := b.loaded
	b.catMu.Unlock()
	if loaded {
		return
	}
	if err := b.load(ctx, true); err != nil {
		b.logToHost(mcp.LoggingLevelError, "loading pikod's catalog: "+err.Error())
	}
}

// load reads every exposed server's catalog from pikod and replaces what
// the host sees. With connect, enabled servers that are not connected are
// connected first, each bounded by its own timeout; a server that fails
// is left out and named in a log message to the host.
func (b *Bridge) load(ctx context.Context, connect bool) error {
	c, err := b.conn(ctx)
	if err != nil {
		return err
	}
	var st contracts.StatusResult
	if err := c.Call(ctx, contracts.MethodMCPStatus, struct{}{}, &st); err != nil {
		return fmt.Errorf("reading pikod's status: %w", err)
	}
	known := map[string]contracts.ServerStatus{}
	for _, s := range st.Servers {
		known[s.ID] = s
	}
	var ids []string
	if len(b.opts.Servers) > 0 {
		for _, id := range b.opts.Servers {
			if _, ok := known[id]; !ok {
				b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("server %q (from --servers) is not configured in pikod; left out", id))
				continue
			}
			ids = append(ids, id)
		}
	} else {
		for _, s := range st.Servers {
			if s.Enabled {
				ids = append(ids, s.ID)
			}
		}
	}
	timeouts := b.timeouts(ctx)
	cats := make([]*contracts.CatalogResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		s := known[id]
		if !s.Enabled {
			b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("server %q is disabled in pikod; left out (enable it with 'pikoctl mcp enable %s')", id, id))
			continue
		}
		if s.State != "connected" && !connect {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeouts[id])
			defer cancel()
			if s.State != "connected" {
				if err := c.Call(cctx, contracts.MethodMCPConnect, contracts.ServerParams{Server: id}, nil); err != nil {
					b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("server %q left out: connecting failed: %v", id, err))
					return
				}
			}
			var cat contracts.CatalogResult
			if err := c.Call(cctx, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: id}, &cat); err != nil {
				b.logToHost(mcp.LoggingLevelWarning, fmt.Sprintf("server %q left out: reading its catalog failed: %v", id, err))
				return
			}
			cats[i] = &cat
		}()
	}
	wg.Wait()
	b.apply(ids, cats)
	return nil
}

// timeouts returns each server's connect bound: its timeoutMs, else
// connectCap.
func (b *Bridge) timeouts(ctx context.Context) map[string]time.Duration {
	out := map[string]time.Duration{}
	c, err := b.conn(ctx)
	if err != nil {
		return out
	}
	var res struct {
		Settings contracts.MCPSettings `json:"settings"`
	}
	if c.Call(ctx, contracts.MethodSettings, map[string]string{"extension": "mcp"}, &res) != nil {
		return out
	}
	for _, s := range res.Settings.Servers {
		d := connectCap
		if s.TimeoutMs > 0 {
			d = time.Duration(s.TimeoutMs) * time.Millisecond
		}
		out[s.ID] = d
	}
	return out
}

// apply replaces the tools, resources, templates and prompts the host
// sees with those of cats (nil entries are servers left out). mcp-go
// tells the host the lists changed.
func (b *Bridge) apply(ids []string, cats []*contracts.CatalogResult) {
	tools := map[string]exposedTool{}
	var servers []string
	uriCount := map[string]int{}
	promptCount := map[string]int{}
	// skillFiles holds, per server, the URIs its skills list: they are
	// exposed as skill files only (see skills.go).
	skills := make([][]skillEntry, len(cats))
	skillFiles := make([]map[string]bool, len(cats))
	for i, cat := range cats {
		if cat == nil {
			continue
		}
		skills[i], skillFiles[i] = skillsOf(cat), map[string]bool{}
		for _, e := range skills[i] {
			for _, f := range e.skillFiles() {
				if !skillFiles[i][f.URI] {
					skillFiles[i][f.URI] = true
					uriCount[f.URI]++
				}
			}
		}
		for _, raw := range cat.Resources {
			var r struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(raw, &r) == nil && !skillFiles[i][r.URI] {
				uriCount[r.URI]++
			}
		}
		for _, raw := range cat.ResourceTemplates {
			var r struct {
				URITemplate string `json:"uriTemplate"`
			}
			if json.Unmarshal(raw, &r) == nil {
				uriCount[r.URITemplate]++
			}
		}
		for _, raw := range cat.Prompts {
			var p struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(raw, &p) == nil {
				promptCount[p.Name]++
			}
		}
	}
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	var prompts []server.ServerPrompt
	promptRefs := map[string]promptRef{}
	templateRefs := map[string]string{}
	for i, cat := range cats {
		if cat == nil {
			continue
		}
		id := ids[i]
		servers = append(servers, id)
		for _, t := range cat.Tools {
			if !t.Selected || t.Grant == contracts.GrantNotSelected {
				continue
			}
			tools[t.Name] = exposedTool{t}
		}
		for _, raw := range cat.Resources {
			var r mcp.Resource
			if json.Unmarshal(raw, &r) != nil || r.URI == "" || skillFiles[i][r.URI] {
				continue
			}
			orig := r.URI
			if uriCount[orig] > 1 {
				r.URI = namespacedURI(id, orig)
			}
			resources = append(resources, server.ServerResource{Resource: r, Handler: b.readResource(id, orig)})
		}
		resources = append(resources, b.skillResources(id, skills[i], uriCount)...)
		for _, raw := range cat.ResourceTemplates {
			var t mcp.ResourceTemplate
			if json.Unmarshal(raw, &t) != nil || t.URITemplate == nil {
				continue
			}
			raw := t.URITemplate.Raw()
			if uriCount[raw] > 1 {
				// Two servers list the same template: the host reads
				// either through pikod's namespaced form.
				t = mcp.NewResourceTemplate(namespacedURI(id, "")+"{+uri}", t.Name, mcp.WithTemplateDescription(
					fmt.Sprintf("%s (server %s; the template %s is listed by more than one server)", t.Description, id, raw)))
			}
			templateRefs[t.URITemplate.Raw()] = id
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: b.readTemplate(id)})
		}
		for _, raw := range cat.Prompts {
			var p mcp.Prompt
			if json.Unmarshal(raw, &p) != nil || p.Name == "" {
				continue
			}
			orig := p.Name
			if promptCount[orig] > 1 {
				p.Name = id + "__" + orig
			}
			promptRefs[p.Name] = promptRef{server: id, name: orig}
			prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: b.getPrompt(id, orig)})
		}
	}
	b.catMu.Lock()
	firstLoad := !b.loaded
	b.loaded = true
	b.tools, b.servers, b.prompts, b.templates = tools, servers, promptRefs, templateRefs
	switch b.opts.Tools {
	case ToolsSearch:
		b.search = true
	case ToolsAll:
		b.search = false
	default:
		b.search = len(tools) > AutoSearchAbove
	}
	search := b.search
	b.catMu.Unlock()
	b.srv.SetTools(b.serverTools(tools, search)...)
	templates = append(templates, server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(SourceURIPrefix+"{id}", "pikod retained result",
			mcp.WithTemplateDescription("the whole original result of a call pikod cut short: read it with resources/read")),
		Handler: b.readSource,
	}, server.ServerResourceTemplate{Template: sourceWindowTemplate(), Handler: b.readSource})
	b.srv.SetResources(resources...)
	b.srv.SetResourceTemplates(templates...)
	b.srv.SetPrompts(prompts...)
	if firstLoad {
		fmt.Fprintf(b.opts.Log, "pikoctl mcp serve: exposing %d tools of %d servers (%s)\n", len(tools), len(servers), strings.Join(servers, ", "))
	}
}

// serverTools is what tools/list shows: every exposed tool, or in search
// mode the search and call tools; pikod_action_status always.
func (b *Bridge) serverTools(tools map[string]exposedTool, search bool) []server.ServerTool {
	var out []server.ServerTool
	if search {
		out = append(out, server.ServerTool{Tool: searchTool(), Handler: b.handleSearch},
			server.ServerTool{Tool: callTool(), Handler: b.handleCallTool})
	} else {
		names := make([]string, 0, len(tools))
		for n := range tools {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			out = append(out, server.ServerTool{Tool: hostTool(tools[n].CatalogTool), Handler: b.handleTool(n)})
		}
	}
	return append(out, server.ServerTool{Tool: actionStatusTool(), Handler: b.handleActionStatus})
}

// hostTool is a catalog tool as the host sees it: pikod's model-facing
// name, the server's description, schemas and annotations (claims, never
// grants), and _meta naming the server, original tool and pikod's grant.
func hostTool(t contracts.CatalogTool) mcp.Tool {
	out := mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		Meta: &mcp.Meta{AdditionalFields: map[string]any{
			MetaServer: t.Server, MetaTool: t.OriginalName, MetaGrant: t.Grant,
		}},
	}
	if len(t.InputSchema) > 0 {
		out.RawInputSchema = t.InputSchema
	} else {
		out.InputSchema = mcp.ToolInputSchema{Type: "object"}
	}
	if len(t.OutputSchema) > 0 {
		out.RawOutputSchema = t.OutputSchema
	}
	if len(t.Annotations) > 0 {
		_ = json.Unmarshal(t.Annotations, &out.Annotations)
	}
	return out
}

// namespacedURI is the URI under which the host reads uri of server when
// more than one server lists it.
func namespacedURI(server, uri string) string {
	return "pikod://resource/" + server + "/" + url.PathEscape(uri)
}

// exposedURI is the URI the host knows for server's uri.
func (b *Bridge) exposedURI(server, uri string) string {
	for _, r := range b.srv.ListResources() {
		if r.Resource.URI == namespacedURI(server, uri) {
			return r.Resource.URI
		}
	}
	return uri
}

// resourceServer finds which server lists uri (as the host names it) and
// the URI to ask that server for.
func (b *Bridge) resourceServer(uri string) (server, orig string, ok bool) {
	if rest, found := strings.CutPrefix(uri, "pikod://resource/"); found {
		id, esc, found := strings.Cut(rest, "/")
		if u, err := url.PathUnescape(esc); found && err == nil {
			return id, u, true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectCap)
	defer cancel()
	c, err := b.conn(ctx)
	if err != nil {
		return "", "", false
	}
	b.catMu.Lock()
	servers := slices.Clone(b.servers)
	b.catMu.Unlock()
	for _, id := range servers {
		var cat contracts.CatalogResult
		if c.Call(ctx, contracts.MethodMCPCatalog, contracts.CatalogParams{Server: id}, &cat) != nil {
			continue
		}
		for _, raw := range cat.Resources {
			var r struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(raw, &r) == nil && r.URI == uri {
				return id, uri, true
			}
		}
	}
	return "", "", false
}
