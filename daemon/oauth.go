package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
)

// grantStore keeps each server's OAuth state (tokens, a dynamically
// registered client) in the vault, one item per server, apart from the
// credentials the owner enters: logging out removes this item and never
// those. Every value it reads or writes joins the redaction set first.
type grantStore struct{ c *creds }

func oauthName(server string) string { return "oauth/" + server }

// Load implements mcpclient.GrantStore.
func (g grantStore) Load(server string) (*mcpclient.OAuthRecord, error) {
	c := g.c
	if c.v.Locked() {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked, "the vault is locked, so the OAuth grant of %q cannot be read", server),
			"unlock it with 'pikoctl vault unlock'")
	}
	b, err := c.v.Get(oauthName(server))
	if errors.Is(err, contracts.ErrNotFound) {
		c.setOAuthValues(server, nil)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec mcpclient.OAuthRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultUnreadable,
			"the vault holds an unreadable OAuth grant for %q", server),
			"'pikoctl mcp logout "+server+"' removes it; then sign in again")
	}
	c.setOAuthValues(server, rec.Values())
	return &rec, nil
}

// Save implements mcpclient.GrantStore: the vault reads every write back
// and compares it.
func (g grantStore) Save(server string, rec *mcpclient.OAuthRecord) error {
	c := g.c
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// Redacted from the moment pikod holds them to keep, whatever happens
	// to the write.
	c.addOAuthValues(server, rec.Values())
	if err := c.v.Set(oauthName(server), b); err != nil {
		return fmt.Errorf("storing the OAuth grant of %q: %w", server, err)
	}
	c.setOAuthValues(server, rec.Values())
	return nil
}

// Delete implements mcpclient.GrantStore.
func (g grantStore) Delete(server string) error {
	if err := g.c.v.Delete(oauthName(server)); err != nil {
		return err
	}
	g.c.setOAuthValues(server, nil)
	return nil
}

// setOAuthValues replaces a server's OAuth values in the redaction set;
// the values it no longer holds stay redacted for the daemon's life (a
// connection may still have sent them).
func (c *creds) setOAuthValues(server string, values []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, old := range c.oauthVals[server] {
		if !slices.Contains(values, old) {
			c.retire(server, old)
		}
	}
	if len(values) == 0 {
		delete(c.oauthVals, server)
	} else {
		c.oauthVals[server] = values
	}
	c.rebuildLocked()
}

// addOAuthValues adds values to a server's OAuth values.
func (c *creds) addOAuthValues(server string, values []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range values {
		if !slices.Contains(c.oauthVals[server], v) {
			c.oauthVals[server] = append(c.oauthVals[server], v)
		}
	}
	c.rebuildLocked()
}

// loadOAuth reads the stored OAuth state of the http and sse servers, so
// their tokens are in the redaction set before anything connects.
func (c *creds) loadOAuth(servers []contracts.ServerSettings) error {
	if c.v.Locked() {
		return nil
	}
	var errs []error
	for i := range servers {
		if servers[i].Transport == contracts.TransportStdio {
			continue
		}
		if _, err := (grantStore{c}).Load(servers[i].ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// auth serves extensions.mcp.auth.
func (d *daemon) auth(ctx context.Context, req *rpc.Request, p *contracts.AuthParams) (any, error) {
	return d.sup.Auth(ctx, *p)
}

// authCancel serves extensions.mcp.auth.cancel.
func (d *daemon) authCancel(_ context.Context, _ *rpc.Request, p *contracts.ServerParams) (any, error) {
	id := p.Server
	return d.sup.AuthCancel(id)
}

// logout serves extensions.mcp.logout.
func (d *daemon) logout(ctx context.Context, _ *rpc.Request, p *contracts.ServerParams) (any, error) {
	id := p.Server
	return d.sup.Logout(ctx, id)
}
