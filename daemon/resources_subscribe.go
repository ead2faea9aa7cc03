package daemon

import (
	"context"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// resourceSubscribe serves extensions.mcp.resource op subscribe.
func (d *daemon) resourceSubscribe(ctx context.Context, server, uri string) (any, error) {
	return d.sup.Subscribe(ctx, server, uri)
}

// resourceUnsubscribe serves extensions.mcp.resource op unsubscribe.
func (d *daemon) resourceUnsubscribe(ctx context.Context, server, uri string) (any, error) {
	return d.sup.Unsubscribe(ctx, server, uri)
}

// resource serves extensions.mcp.resource for the ops subscriptions own
// (subscribe, unsubscribe). The other ops (list, templates, read) belong
// to the resources handler, which takes this one's place: it calls
// resourceSubscribe and resourceUnsubscribe for these two ops.
func (d *daemon) resource(ctx context.Context, req *rpc.Request) (any, error) {
	var p contracts.ResourceSubscribeParams
	if err := rpc.DecodeParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.Server == "" {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, "missing_server", `missing "server": name a configured server id`)
	}
	switch p.Op {
	case contracts.ResourceOpSubscribe:
		return d.resourceSubscribe(ctx, p.Server, p.URI)
	case contracts.ResourceOpUnsubscribe:
		return d.resourceUnsubscribe(ctx, p.Server, p.URI)
	case "list", "templates", "read":
		return nil, contracts.Errorf(contracts.ErrNotImplemented, "not_implemented", "extensions.mcp.resource op %q is not implemented yet", p.Op)
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, "invalid_op", `"op" must be "subscribe" or "unsubscribe" (list, templates and read are not in this build)`)
}
