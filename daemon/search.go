package daemon

import (
	"context"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// search serves extensions.mcp.search: BM25 over the live catalogs of the
// connected servers, ranked by mcpclient.RankTools. It never connects a
// server.
func (d *daemon) search(ctx context.Context, req *rpc.Request, p *contracts.SearchParams) (any, error) {
	if strings.TrimSpace(p.Query) == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingQuery, `missing "query": give the words to search for`)
	}
	if len(p.Query) > contracts.MaxSearchQuery {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonQueryTooLong, "the query is longer than %d bytes", contracts.MaxSearchQuery)
	}
	switch {
	case p.Limit == 0:
		p.Limit = contracts.DefaultSearchLimit
	case p.Limit < 1 || p.Limit > contracts.MaxSearchLimit:
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidLimit, "limit must be 1..%d", contracts.MaxSearchLimit)
	}
	d.mu.Lock()
	var ids []string
	for _, s := range d.settings.Servers {
		if p.Server == "" || s.ID == p.Server {
			ids = append(ids, s.ID)
		}
	}
	d.mu.Unlock()
	if p.Server != "" && len(ids) == 0 {
		return nil, contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", p.Server)
	}
	res := contracts.SearchResult{Query: p.Query, Results: []contracts.SearchHit{}, Searched: []string{}, NotSearched: []string{}}
	var tools []contracts.CatalogTool
	for _, id := range ids {
		live, ok, err := d.sup.LiveTools(ctx, id, false)
		if err != nil || !ok {
			res.NotSearched = append(res.NotSearched, id)
			continue
		}
		res.Searched = append(res.Searched, id)
		tools = append(tools, live...)
	}
	res.Results = mcpclient.RankTools(p.Query, tools, p.Limit)
	return res, nil
}
