package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/mcpclient/oauth"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
	"github.com/rs/zerolog"
)

// credRecord is one server's private credentials as stored in the vault,
// bound to the identity of the server they were entered for.
type credRecord struct {
	Identity          string            `json:"identity"`
	Generation        uint64            `json:"generation"`
	Env               map[string]string `json:"env,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
	OAuthClientSecret string            `json:"oauthClientSecret,omitempty"`
	// OAuthPrivateKey is a PEM private key for private_key_jwt.
	OAuthPrivateKey string `json:"oauthPrivateKey,omitempty"`
	// OAuthIdentityAssertion is the identity provider's assertion (an ID
	// token) that cross_app_access exchanges.
	OAuthIdentityAssertion string `json:"oauthIdentityAssertion,omitempty"`
	// OAuthAssertion is the workload's assertion that jwt_bearer presents
	// to the authorization server.
	OAuthAssertion string `json:"oauthAssertion,omitempty"`
}

func (r *credRecord) values() []string {
	var out []string
	for _, vs := range r.fieldValues() {
		out = append(out, vs...)
	}
	return out
}

// fieldValues maps each field (env.NAME, headers.NAME,
// oauthClientSecret) to the values redaction looks for.
func (r *credRecord) fieldValues() map[string][]string {
	out := map[string][]string{}
	for k, v := range r.Env {
		out["env."+k] = []string{v}
	}
	for k, v := range r.Headers {
		vs := []string{v}
		// "Bearer TOKEN": the token alone must be found too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			vs = append(vs, tok)
		}
		out["headers."+k] = vs
	}
	if r.OAuthClientSecret != "" {
		out["oauthClientSecret"] = []string{r.OAuthClientSecret}
	}
	if r.OAuthPrivateKey != "" {
		vs := []string{r.OAuthPrivateKey}
		// The key's base64 lines alone, as a log or an error might show
		// them.
		for line := range strings.SplitSeq(r.OAuthPrivateKey, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "-----") {
				vs = append(vs, line)
			}
		}
		out["oauthPrivateKey"] = vs
	}
	if r.OAuthIdentityAssertion != "" {
		out["oauthIdentityAssertion"] = []string{r.OAuthIdentityAssertion}
	}
	if r.OAuthAssertion != "" {
		out["oauthAssertion"] = []string{r.OAuthAssertion}
	}
	return out
}

// unprotected returns the fields (sorted) with a value redaction cannot
// protect (vault.Unprotectable): stored and used, but not kept out of
// output.
func (r *credRecord) unprotected() []string {
	var out []string
	for field, vs := range r.fieldValues() {
		for _, v := range vs {
			if vault.Unprotectable(v) != "" {
				out = append(out, field)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// unprotectedWarning says what a list of unprotected fields means.
func unprotectedWarning(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: a value shorter than %d characters cannot be protected in output: pikod stores and uses it, "+
		"but results, errors, status and logs may show it; use a longer secret", strings.Join(fields, ", "), vault.MinRedactChars)
}

// fields names the stored fields (env.NAME, headers.NAME,
// oauthClientSecret, ...), sorted; never their values.
func (r *credRecord) fields() []string {
	out := []string{}
	for field := range r.fieldValues() {
		out = append(out, field)
	}
	slices.Sort(out)
	return out
}

// merge returns r with the fields of add replacing or adding to its own.
func (r *credRecord) merge(add *credRecord) *credRecord {
	out := &credRecord{Identity: r.Identity, Generation: r.Generation, OAuthClientSecret: r.OAuthClientSecret,
		OAuthPrivateKey: r.OAuthPrivateKey, OAuthIdentityAssertion: r.OAuthIdentityAssertion, OAuthAssertion: r.OAuthAssertion}
	union := func(a, b map[string]string) map[string]string {
		if len(a)+len(b) == 0 {
			return nil
		}
		m := maps.Clone(a)
		if m == nil {
			m = map[string]string{}
		}
		maps.Copy(m, b)
		return m
	}
	out.Env, out.Headers = union(r.Env, add.Env), union(r.Headers, add.Headers)
	for _, f := range []struct {
		dst *string
		src string
	}{{&out.OAuthClientSecret, add.OAuthClientSecret},
		{&out.OAuthPrivateKey, add.OAuthPrivateKey}, {&out.OAuthIdentityAssertion, add.OAuthIdentityAssertion},
		{&out.OAuthAssertion, add.OAuthAssertion}} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	return out
}

// sameValues reports whether r and o store the same fields and values.
func (r *credRecord) sameValues(o *credRecord) bool {
	return maps.Equal(r.Env, o.Env) && maps.Equal(r.Headers, o.Headers) && r.OAuthClientSecret == o.OAuthClientSecret &&
		r.OAuthPrivateKey == o.OAuthPrivateKey && r.OAuthIdentityAssertion == o.OAuthIdentityAssertion && r.OAuthAssertion == o.OAuthAssertion
}

func (r *credRecord) empty() bool {
	return len(r.Env) == 0 && len(r.Headers) == 0 && r.OAuthClientSecret == "" && r.OAuthPrivateKey == "" && r.OAuthIdentityAssertion == "" &&
		r.OAuthAssertion == ""
}

func vaultName(server string) string { return "server/" + server }

// creds is the daemon's view of the vault: records by server, loaded
// lazily, and the redaction set built from them.
type creds struct {
	v   *vault.Vault
	red *vault.Redactor
	log zerolog.Logger

	// mu guards recs, oauthVals and retired, and serialises changes.
	mu   sync.Mutex
	recs map[string]*credRecord // nil value: known to be absent
	// oauthVals are the secret values of each server's stored OAuth
	// record (tokens, a registered client's secret), for redaction.
	oauthVals map[string][]string
	// retired holds, by server, values that were replaced or cleared: a
	// connected server may still use them until it reconnects, so they
	// stay in the redaction set for the daemon's lifetime.
	retired map[string][]string
}

// load returns a server's record (nil when none), reading the vault once.
func (c *creds) load(server string) (*credRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loadLocked(server)
}

func (c *creds) loadLocked(server string) (*credRecord, error) {
	if rec, ok := c.recs[server]; ok {
		return rec, nil
	}
	b, err := c.v.Get(vaultName(server))
	if errors.Is(err, contracts.ErrNotFound) {
		c.recs[server] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of %q: %w", server, err)
	}
	var rec credRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("the vault holds unreadable credentials for %q: %w", server, contracts.ErrFailedPrecondition)
	}
	c.recs[server] = &rec
	c.rebuildLocked()
	if u := rec.unprotected(); len(u) > 0 {
		c.log.Warn().Str("server", server).Strs("fields", u).Int("min_chars", vault.MinRedactChars).
			Msg("stored credentials too short to redact: they may appear in output")
	}
	return &rec, nil
}

// loadAll reads the records of the given servers, so the redaction set is
// complete before anything connects. A locked vault is not an error here.
func (c *creds) loadAll(servers []contracts.ServerSettings) error {
	if c.v.Locked() {
		return nil
	}
	var errs []error
	for i := range servers {
		if _, err := c.load(servers[i].ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rebuildLocked gives the redaction set every value under the server it
// belongs to: which answers a value is removed from depends on it
// (vault.View).
func (c *creds) rebuildLocked() {
	owned := map[string][]string{}
	for srv, vs := range c.retired {
		owned[srv] = append(owned[srv], vs...)
	}
	for srv, r := range c.recs {
		if r != nil {
			owned[srv] = append(owned[srv], r.values()...)
		}
	}
	for srv, vs := range c.oauthVals {
		owned[srv] = append(owned[srv], vs...)
	}
	c.red.SetOwned(owned)
}

// forServer returns what a connect sends: nothing when nothing is stored,
// an error when the vault is locked or the credentials belong to another
// identity of the server.
func (c *creds) forServer(cfg *contracts.ServerSettings) (mcpclient.Credentials, error) {
	if c.v.Locked() {
		return mcpclient.Credentials{}, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked, "the vault is locked, so the credentials of %q cannot be read", cfg.ID),
			"unlock it with 'pikoctl vault unlock'")
	}
	rec, err := c.load(cfg.ID)
	if err != nil || rec == nil {
		return mcpclient.Credentials{}, err
	}
	// Cleared credentials ({}) send nothing, whatever they were entered
	// for: nothing to withhold, so nothing to re-enter.
	if rec.empty() {
		return mcpclient.Credentials{}, nil
	}
	if rec.Identity != vault.Identity(cfg) {
		return mcpclient.Credentials{}, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonCredentialsReenter,
				"the stored credentials of %q were entered for a different command, arguments, working directory or URL; pikod will not send them to the new one", cfg.ID),
			"enter them again with 'pikoctl mcp secret "+cfg.ID+"' (or '{}' to clear them)")
	}
	return mcpclient.Credentials{Env: rec.Env, Headers: rec.Headers, OAuthClientSecret: rec.OAuthClientSecret,
		OAuthPrivateKey: rec.OAuthPrivateKey, OAuthIdentityAssertion: rec.OAuthIdentityAssertion, OAuthAssertion: rec.OAuthAssertion}, nil
}

// state returns a server's credential state, generation and stored field
// names (never values) for status.
func (c *creds) state(cfg *contracts.ServerSettings) (string, uint64, []string) {
	if c.v.Locked() {
		return "unknown", 0, nil
	}
	rec, err := c.load(cfg.ID)
	switch {
	case err != nil:
		return "unknown", 0, nil
	case rec == nil:
		return "none", 0, nil
	case rec.empty():
		return "none", rec.Generation, nil
	case rec.Identity != vault.Identity(cfg):
		return "reenter", rec.Generation, rec.fields()
	}
	return "stored", rec.Generation, rec.fields()
}

// generation is a server's credential generation, bound into actions.
func (c *creds) generation(server string) uint64 {
	if c.v.Locked() {
		return 0
	}
	rec, err := c.load(server)
	if err != nil || rec == nil {
		return 0
	}
	return rec.Generation
}

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// parseCredentials checks a credential object against the server's
// transport. Problems name fields, never values.
// In merge mode an empty value is refused with a hint to replace instead.
func parseCredentials(cfg *contracts.ServerSettings, in map[string]any, merge bool) (*credRecord, error) {
	rec := &credRecord{}
	emptyHint := "leave it out instead"
	if merge {
		emptyHint = "a merge keeps what it is not given and cannot remove a field: send the whole set without \"merge\" to remove one"
	}
	var problems contracts.Problems
	bad := func(field, msg string) {
		problems = append(problems, contracts.Problem{Server: cfg.ID, Field: field, Message: msg})
	}
	stringMap := func(field string, v any, nameRE *regexp.Regexp, what string) map[string]string {
		m, ok := v.(map[string]any)
		if !ok {
			bad(field, "must be an object of "+what+" names to string values")
			return nil
		}
		out := map[string]string{}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for i, k := range names {
			s, ok := m[k].(string)
			fieldName := field + "." + k
			if !nameRE.MatchString(k) {
				fieldName = fmt.Sprintf("%s[#%d]", field, i)
				bad(fieldName, "is not a valid "+what+" name")
				continue
			}
			switch {
			case !ok:
				bad(fieldName, "must be a string")
			case s == "":
				bad(fieldName, "is empty: "+emptyHint)
			case strings.ContainsAny(s, "\x00\r\n"):
				bad(fieldName, "must not contain NUL, CR or LF")
			default:
				out[k] = s
			}
		}
		return out
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		switch {
		case k == "env" && cfg.Transport == contracts.TransportStdio:
			rec.Env = stringMap("env", v, envNameRE, "environment variable")
		case k == "headers" && cfg.Transport != contracts.TransportStdio:
			rec.Headers = stringMap("headers", v, headerNameRE, "header")
			if cfg.OAuth != nil {
				for name := range rec.Headers {
					if strings.EqualFold(name, "Authorization") {
						bad("headers."+name, "a static Authorization header cannot accompany OAuth: OAuth supplies the token")
					}
				}
			}
		case k == "oauthClientSecret" && cfg.Transport != contracts.TransportStdio && cfg.OAuth != nil:
			s, ok := v.(string)
			if ok && s == "" && merge {
				bad(k, "is empty: "+emptyHint)
			} else if !ok || s == "" {
				bad(k, "must be a non-empty string")
			} else {
				rec.OAuthClientSecret = s
			}
		case k == "oauthPrivateKey" && cfg.Transport != contracts.TransportStdio && cfg.OAuth != nil && cfg.OAuth.ClientID != "":
			s, ok := v.(string)
			if ok && s == "" && merge {
				bad(k, "is empty: "+emptyHint)
				continue
			}
			if !ok || s == "" {
				bad(k, "must be a non-empty string: a PEM private key")
				continue
			}
			if _, _, err := oauth.ParsePrivateKey(s); err != nil {
				// The parser's messages never quote the key.
				bad(k, err.Error())
				continue
			}
			rec.OAuthPrivateKey = s
		case k == "oauthIdentityAssertion" && cfg.Transport != contracts.TransportStdio && cfg.OAuth != nil &&
			cfg.OAuth.GrantType == contracts.GrantCrossAppAccess:
			s, ok := v.(string)
			if ok && s == "" && merge {
				bad(k, "is empty: "+emptyHint)
			} else if !ok || s == "" || strings.ContainsAny(s, " \t\r\n\x00") {
				bad(k, "must be the identity provider's assertion: one non-empty token without spaces")
			} else {
				rec.OAuthIdentityAssertion = s
			}
		case k == "oauthAssertion" && cfg.Transport != contracts.TransportStdio && cfg.OAuth != nil &&
			cfg.OAuth.GrantType == contracts.GrantJWTBearer:
			s, ok := v.(string)
			if ok && s == "" && merge {
				bad(k, "is empty: "+emptyHint)
			} else if !ok || s == "" || strings.ContainsAny(s, " \t\r\n\x00") {
				bad(k, "must be the workload's assertion: one non-empty token without spaces (a JWT)")
			} else {
				rec.OAuthAssertion = s
			}
		case k == "oauthPrivateKey":
			bad(k, "needs oauth with a pre-registered clientId in the server's settings (private_key_jwt)")
		case k == "oauthAssertion":
			bad(k, `needs oauth with "grantType": "jwt_bearer" in the server's settings`)
		case k == "oauthIdentityAssertion":
			bad(k, `needs oauth with "grantType": "cross_app_access" in the server's settings`)
		case k == "env" || k == "headers" || k == "oauthClientSecret":
			bad(k, fmt.Sprintf("does not fit a %s server%s", cfg.Transport, fitHint(cfg)))
		default:
			bad(k, `unknown field: use "env" (stdio), "headers" (http, sse), or with oauth "oauthClientSecret", "oauthPrivateKey", "oauthIdentityAssertion", "oauthAssertion"`)
		}
	}
	if len(problems) > 0 {
		return nil, contracts.WithReason(fmt.Errorf("invalid credentials: %w", problems), contracts.ReasonInvalidCredentials)
	}
	return rec, nil
}

func fitHint(cfg *contracts.ServerSettings) string {
	switch {
	case cfg.Transport == contracts.TransportStdio:
		return `: use {"env":{...}}`
	case cfg.OAuth == nil:
		return `: use {"headers":{...}} (oauthClientSecret needs "oauth" in the settings)`
	}
	return `: use {"headers":{...}} or {"oauthClientSecret":"..."}`
}

// secret serves extensions.secret.
func (d *daemon) secret(_ context.Context, req *rpc.Request, p *contracts.SecretParams) (any, error) {
	if p.Extension != "" {
		if err := checkExtension(p.Extension); err != nil {
			return nil, err
		}
	}
	if p.Server == "" || p.Credentials == nil {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingServer,
			`send {"server":ID,"credentials":{...}}; {} as credentials clears them`)
	}
	cfg, ok := d.serverSettings(p.Server)
	if !ok {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrNotFound, contracts.ReasonUnknownServer, "no server %q is configured", p.Server),
			"configure the server first, then enter its credentials")
	}
	rec, err := parseCredentials(&cfg, p.Credentials, p.Merge)
	if err != nil {
		return nil, err
	}
	if d.creds.v.Locked() {
		return nil, contracts.WithHint(
			contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked, "the vault is locked"),
			"unlock it with 'pikoctl vault unlock'")
	}
	c := d.creds
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.loadLocked(p.Server)
	if err != nil {
		return nil, err
	}
	rec.Identity = vault.Identity(&cfg)
	if p.Merge && old != nil {
		if old.Identity != rec.Identity && !old.empty() {
			// Merging would carry values entered for another command, URL
			// or directory over to this one.
			return nil, contracts.WithHint(
				contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonCredentialsReenter,
					"the stored credentials of %q were entered for a different command, arguments, working directory or URL: a merge cannot keep them", p.Server),
				"send the whole set without --merge ('pikoctl mcp secret "+p.Server+"')")
		}
		merged := old.merge(rec)
		if merged.sameValues(old) {
			res := contracts.SecretResult{Server: p.Server, Fields: old.fields(), Cleared: old.empty(), Unchanged: true,
				Generation: old.Generation, Unprotected: old.unprotected()}
			res.Warning = unprotectedWarning(res.Unprotected)
			d.log.Info().Str("server", p.Server).Strs("fields", res.Fields).Uint64("generation", old.Generation).Msg("credentials merged: nothing changed")
			return res, nil
		}
		rec = merged
	}
	if old != nil {
		rec.Generation = old.Generation
	}
	rec.Generation++
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if err := c.v.Set(vaultName(p.Server), b); err != nil {
		// A write that timed out may still land when the keyring wakes up:
		// forget the cached record so the next use reads what is there.
		delete(c.recs, p.Server)
		if errors.Is(err, contracts.ErrUnavailable) {
			return nil, contracts.WithHint(fmt.Errorf("storing the credentials of %q did not finish: %w", p.Server, err),
				"they may still be stored when the keyring responds: check 'pikoctl mcp status "+p.Server+"' and enter them again if needed")
		}
		return nil, fmt.Errorf("storing the credentials of %q: %w", p.Server, err)
	}
	if old != nil {
		c.retire(p.Server, old.values()...)
	}
	c.recs[p.Server] = rec
	c.rebuildLocked()
	res := contracts.SecretResult{Server: p.Server, Fields: rec.fields(), Cleared: rec.empty(), Generation: rec.Generation,
		ReconnectRequired: d.sup.Generation(p.Server) != 0, Unprotected: rec.unprotected()}
	d.markRotated(p.Server)
	res.Warning = unprotectedWarning(res.Unprotected)
	verb := "credentials replaced"
	if p.Merge {
		verb = "credentials merged"
	}
	d.log.Info().Str("server", p.Server).Strs("fields", res.Fields).Uint64("generation", rec.Generation).Msg(verb)
	if len(res.Unprotected) > 0 {
		d.log.Warn().Str("server", p.Server).Strs("fields", res.Unprotected).Int("min_chars", vault.MinRedactChars).
			Msg("credentials too short to redact: they may appear in output")
	}
	return res, nil
}

// vaultUnlock serves vault.unlock.
func (d *daemon) vaultUnlock(_ context.Context, req *rpc.Request, p *contracts.VaultUnlockParams) (any, error) {
	if err := d.creds.v.Unlock(vault.NewSecret(p.Passphrase)); err != nil {
		return nil, err
	}
	d.mu.Lock()
	servers := d.settings.Servers
	d.mu.Unlock()
	if err := d.creds.loadAll(servers); err != nil {
		d.log.Error().Err(err).Msg("reading credentials after unlock")
	}
	if err := d.creds.loadOAuth(servers); err != nil {
		d.log.Error().Err(err).Msg("reading OAuth grants after unlock")
	}
	d.log.Info().Msg("vault unlocked")
	return contracts.VaultUnlockResult{Vault: d.vaultStatus()}, nil
}

// retire keeps values a server held in the redaction set (mu held).
func (c *creds) retire(server string, values ...string) {
	if c.retired == nil {
		c.retired = map[string][]string{}
	}
	c.retired[server] = append(c.retired[server], values...)
}
