package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// register fills the method table: one typed row per method
// (rpc.Handle), which decodes the params once, checks their common
// members (contracts.ParamsChecker) and hands the handler the value.
// Every method of contracts.Methods is registered: the ones not served
// yet answer ErrNotImplemented.
func (d *daemon) register(srv *rpc.Server) {
	// Params that hold secrets are never echoed in a decode error.
	const (
		secretParams     = `invalid params: send {"server":ID,"credentials":{...}}`
		unlockParams     = `invalid params: send {"passphrase":"..."}`
		authParams       = `invalid params: send {"server":ID,"op":"start"|"discover"|"wait"|"complete","flowId"?,"redirectUrl"?}`
		passphraseParams = `invalid params: send {"op":"set"|"change"|"clear","passphrase"?,"newPassphrase"?} with string values`
		migrateParams    = `invalid params: send {"to":"secret-service"|"keychain"|"file"|"file-unlock"}`
	)
	served := map[string]rpc.Method{
		contracts.MethodHello:              rpc.Handle(d.hello),
		contracts.MethodConfigure:          rpc.Handle(d.configure),
		contracts.MethodSettings:           rpc.Handle(d.getSettings),
		contracts.MethodMCPStatus:          rpc.Handle(d.status),
		contracts.MethodMCPConnect:         rpc.Handle(d.connect),
		contracts.MethodMCPDisconnect:      rpc.Handle(d.disconnect),
		contracts.MethodMCPPing:            rpc.Handle(d.ping),
		contracts.MethodMCPCatalog:         rpc.Handle(d.catalog),
		contracts.MethodMCPCall:            rpc.Handle(d.call, rpc.MapErrors(func(err error) error { return unsent(err, "the call") })),
		contracts.MethodMCPResource:        rpc.Handle(d.resource),
		contracts.MethodMCPPrompt:          rpc.Handle(d.prompt),
		contracts.MethodMCPComplete:        rpc.Handle(d.complete),
		contracts.MethodMCPSkills:          rpc.Handle(d.skills),
		contracts.MethodMCPActionsList:     rpc.Handle(d.actionsList),
		contracts.MethodMCPActionsReview:   rpc.Handle(d.actionsReview),
		contracts.MethodMCPActionsApprove:  rpc.Handle(d.actionsApprove, rpc.MapErrors(func(err error) error { return unsent(err, "the approved call") })),
		contracts.MethodMCPActionsResult:   rpc.Handle(d.actionsResult),
		contracts.MethodMCPReceipts:        rpc.Handle(d.receipts),
		contracts.MethodMCPCompact:         rpc.Handle(d.compact),
		contracts.MethodSourceRead:         rpc.Handle(d.sourceRead),
		contracts.MethodSecret:             rpc.Handle(d.secret, rpc.SecretParams(secretParams)),
		contracts.MethodVaultUnlock:        rpc.Handle(d.vaultUnlock, rpc.SecretParams(unlockParams)),
		contracts.MethodVaultMigrate:       rpc.Handle(d.vaultMigrate, rpc.SecretParams(migrateParams)),
		contracts.MethodMCPTrust:           rpc.Handle(d.trust),
		contracts.MethodPassphrase:         rpc.Handle(d.gate.passphrase, rpc.SecretParams(passphraseParams)),
		contracts.MethodMCPWatch:           rpc.Handle(d.watch),
		contracts.MethodMCPLogging:         rpc.Handle(d.logging),
		contracts.MethodMCPAuth:            rpc.Handle(d.auth, rpc.SecretParams(authParams)),
		contracts.MethodMCPAuthCancel:      rpc.Handle(d.authCancel),
		contracts.MethodMCPLogout:          rpc.Handle(d.logout),
		contracts.MethodMCPRequests:        rpc.Handle(d.requestsList),
		contracts.MethodMCPRequestsRead:    rpc.Handle(d.requestsRead),
		contracts.MethodMCPRequestsRespond: rpc.Handle(d.requestsRespond),
		contracts.MethodMCPRequestsPropose: rpc.Handle(d.requestsPropose),
		contracts.MethodMCPSearch:          rpc.Handle(d.search),
		contracts.MethodMCPPause:           rpc.Handle(d.pause),
		contracts.MethodMCPResume:          rpc.Handle(d.resume),
		contracts.MethodMCPArtifact:        rpc.Handle(d.artifact),
		contracts.MethodMCPImport:          rpc.Handle(d.importArtifact),
		contracts.MethodMCPTasks:           rpc.Handle(d.tasks),
	}
	for _, m := range contracts.Methods {
		if row, ok := served[m]; ok {
			srv.Handle(m, row)
		} else {
			srv.Register(m, notImplemented(m))
		}
	}
}

// requestContext tells the supervisor when each request arrived: a
// disconnect ends the requests made before it that have not reached the
// server yet, however long they waited for a slot.
func requestContext(ctx context.Context, req *rpc.Request) context.Context {
	return mcpclient.WithRequestTime(ctx, req.Received)
}

func notImplemented(method string) rpc.HandlerFunc {
	return func(context.Context, *rpc.Request) (any, error) {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrNotImplemented, contracts.ReasonNotImplemented, "%s is not implemented yet", method),
			"this pikod build does not serve it; docs/reference/api.md lists the methods served")
	}
}

func (d *daemon) hello(_ context.Context, req *rpc.Request, p *contracts.HelloParams) (any, error) {
	if p.APIVersion != "" && p.APIVersion != contracts.APIVersion {
		d.log.Warn().Str("client_api", p.APIVersion).Str("client_version", p.ClientVersion).Msg("client speaks another api version")
	}
	if (p.Client != contracts.ClientInfo{} || p.Via != "") && req.Conn() != nil {
		// Recorded as declared (bounded) for the actions and receipts
		// this connection's later requests cause; never logged, never
		// trusted.
		req.Conn().Declare(p.Client, p.Via)
	}
	return contracts.HelloResult{
		APIVersion:    contracts.APIVersion,
		DaemonVersion: d.cfg.Version,
		Instance:      d.cfg.Instance,
		PID:           os.Getpid(),
		Socket:        d.cfg.SocketPath,
		StateDir:      d.cfg.StateDir,
		StartedAt:     d.started.Format(time.RFC3339),
	}, nil
}

func checkExtension(ext string) error {
	if ext != contracts.ExtensionMCP {
		return contracts.WithHint(
			contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnknownExtension, "unknown extension %q", ext),
			`the only extension is "mcp"`)
	}
	return nil
}

func (d *daemon) getSettings(_ context.Context, req *rpc.Request, p *contracts.SettingsParams) (any, error) {
	if err := checkExtension(p.Extension); err != nil {
		return nil, err
	}
	rec, err := d.db.Settings(p.Extension)
	if err != nil {
		return nil, err
	}
	res := contracts.SettingsResult{Extension: p.Extension, Revision: rec.Revision, Settings: rec.Settings}
	if rec.Settings == nil {
		res.Settings = json.RawMessage(`{"servers":[]}`)
	} else {
		res.UpdatedAt = rec.UpdatedAt.Format(time.RFC3339Nano)
	}
	return res, nil
}

func (d *daemon) configure(_ context.Context, req *rpc.Request, p *contracts.ConfigureParams) (any, error) {
	if err := checkExtension(p.Extension); err != nil {
		return nil, err
	}
	if len(p.Settings) == 0 {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidSettings,
			`missing "settings": send {"extension":"mcp","settings":{"servers":[...]}}`)
	}
	next, err := contracts.ParseMCPSettings(p.Settings)
	if err != nil {
		return nil, contracts.WithReason(fmt.Errorf("invalid settings: %w", err), contracts.ReasonInvalidSettings)
	}

	// cfgMu serialises configures; mu is held only to read and swap the
	// settings, never while stopping servers or waiting on the vault.
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	d.mu.Lock()
	locked := true
	defer func() {
		if locked {
			d.mu.Unlock()
		}
	}()
	if p.ExpectRevision != 0 && p.ExpectRevision != d.revision {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonRevisionMoved,
				"settings are at revision %d, not %d", d.revision, p.ExpectRevision),
			"read them again with 'pikoctl mcp config' and re-apply your change")
	}
	res := diffSettings(d.settings, next)
	res.Widened = widenedGrants(d.settings, next)
	res.Extension = p.Extension
	res.DryRun = p.DryRun
	res.Revision = d.revision
	canonical := next.Canonical()
	if res.Unchanged && d.settingsErr == nil {
		return res, nil
	}
	res.Revision = d.revision + 1
	if p.DryRun {
		return res, nil
	}
	rec, err := d.db.SaveSettings(p.Extension, canonical, d.revision)
	if err != nil {
		return nil, d.storageFull(err, "the settings are unchanged")
	}
	prev := d.settings
	d.settings, d.revision, d.settingsErr = next, rec.Revision, nil
	d.mu.Unlock()
	locked = false
	// Grants cover the definitions current now: pin them from the
	// catalogs still live, before Apply disconnects the changed servers.
	d.savePins(prev, next, d.liveTools(prev))
	// New servers' stored credentials join the redaction set before
	// anything can connect them. Saving disconnects the servers it changes
	// or removes; nothing new connects until asked or the next start.
	if err := d.creds.loadAll(next.Servers); err != nil {
		d.log.Error().Err(err).Msg("reading stored credentials")
	}
	if err := d.creds.loadOAuth(next.Servers); err != nil {
		d.log.Error().Err(err).Msg("reading stored OAuth grants")
	}
	applied := d.sup.Apply(next.Servers)
	if len(applied.Disconnected) > 0 {
		slices.Sort(applied.Disconnected)
		res.Disconnected = applied.Disconnected
	}
	if len(applied.Live) > 0 {
		slices.Sort(applied.Live)
		res.Live = applied.Live
	}
	d.log.Info().Uint64("revision", rec.Revision).Strs("added", res.Added).Strs("changed", res.Changed).
		Strs("removed", res.Removed).Msg("mcp settings saved")
	if len(res.Widened) > 0 {
		d.log.Warn().Uint64("revision", rec.Revision).Int("peer_pid", req.Peer.PID).Strs("widened", res.Widened).Msg("settings widen grants")
	}
	return res, nil
}

// diffSettings names the servers added, changed and removed between two
// settings, comparing each entry's digest.
func diffSettings(prev, next *contracts.MCPSettings) contracts.ConfigureResult {
	res := contracts.ConfigureResult{Added: []string{}, Changed: []string{}, Removed: []string{}, Disconnected: []string{}, Live: []string{}, Widened: []string{}}
	old := map[string]string{}
	for i := range prev.Servers {
		old[prev.Servers[i].ID] = prev.Servers[i].Digest()
	}
	seen := map[string]bool{}
	for i := range next.Servers {
		s := &next.Servers[i]
		seen[s.ID] = true
		switch dg, ok := old[s.ID]; {
		case !ok:
			res.Added = append(res.Added, s.ID)
		case dg != s.Digest():
			res.Changed = append(res.Changed, s.ID)
		}
	}
	for i := range prev.Servers {
		if !seen[prev.Servers[i].ID] {
			res.Removed = append(res.Removed, prev.Servers[i].ID)
		}
	}
	slices.Sort(res.Added)
	slices.Sort(res.Changed)
	slices.Sort(res.Removed)
	// Order matters to no one but is part of the canonical form.
	sameOrder := len(prev.Servers) == len(next.Servers)
	for i := 0; sameOrder && i < len(next.Servers); i++ {
		sameOrder = prev.Servers[i].ID == next.Servers[i].ID
	}
	sameRetention := bytes.Equal((&contracts.MCPSettings{Retention: prev.Retention}).Canonical(),
		(&contracts.MCPSettings{Retention: next.Retention}).Canonical())
	res.Unchanged = sameOrder && sameRetention && len(res.Added)+len(res.Changed)+len(res.Removed) == 0
	return res
}

func (d *daemon) status(_ context.Context, req *rpc.Request, p *contracts.StatusParams) (any, error) {
	servers, err := d.sup.Status(p.Server)
	if err != nil {
		return nil, err
	}
	for i := range servers {
		if cfg, ok := d.serverSettings(servers[i].ID); ok {
			servers[i].Credentials, servers[i].CredentialGeneration, servers[i].CredentialFields = d.creds.state(&cfg)
		}
		servers[i].ReconnectRequired = d.reconnectRequired(servers[i].ID)
	}
	d.markPaused(servers)
	d.mu.Lock()
	rev := d.revision
	d.mu.Unlock()
	return contracts.StatusResult{Revision: rev, Servers: servers, Vault: d.vaultStatus(), Approvals: d.gate.Status(),
		Storage: d.storageStatus()}, nil
}

func (d *daemon) connect(ctx context.Context, _ *rpc.Request, p *contracts.ServerParams) (any, error) {
	id := p.Server
	st, err := d.sup.Connect(ctx, id)
	if err != nil {
		return nil, err
	}
	return contracts.ConnectResult{Server: st}, nil
}

func (d *daemon) disconnect(ctx context.Context, _ *rpc.Request, p *contracts.ServerParams) (any, error) {
	id := p.Server
	was, err := d.sup.Disconnect(ctx, id)
	if err != nil {
		return nil, err
	}
	return contracts.DisconnectResult{Server: id, WasConnected: was}, nil
}

func (d *daemon) ping(ctx context.Context, _ *rpc.Request, p *contracts.ServerParams) (any, error) {
	id := p.Server
	return d.sup.Ping(ctx, id)
}

func (d *daemon) catalog(ctx context.Context, req *rpc.Request, p *contracts.CatalogParams) (any, error) {
	// Served from the encoding kept until the catalog changes.
	enc, err := d.sup.CatalogJSON(ctx, p.Server)
	if err != nil {
		return nil, err
	}
	return rpc.Encoded(enc), nil
}
