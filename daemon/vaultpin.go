package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// The vault backend is chosen once per instance and pinned in pikod.db
// (meta/vault_backend): "auto" decides at the first start and later starts
// open the pinned backend whatever is reachable then, so credentials never
// seem to vanish because a keyring was unreachable one morning (or appear
// elsewhere because one came up). An explicit --vault that names another
// backend is used for that run only and said loudly; only 'pikoctl vault
// migrate' moves the pin, together with every credential.

// How a pin was recorded (vaultChoice.By).
const (
	pinnedByAuto    = "auto"
	pinnedByFlag    = "flag"
	pinnedByMigrate = "migrate"
)

// vaultChoice is meta/vault_choice: how the pinned backend was chosen.
type vaultChoice struct {
	By string `json:"by"`
	// Reason is why auto chose it (vault.Vault.Reason), when it did.
	Reason string `json:"reason,omitempty"`
	// From is the backend a migration moved from.
	From string `json:"from,omitempty"`
	// At is RFC 3339 UTC.
	At string `json:"at"`
}

// vaultPin is the daemon's record of the backend choice.
type vaultPin struct {
	// base locates the backends (directory, key file, service); Backend
	// unset.
	base vault.Config
	// requested is --vault (or PIKO_VAULT), "auto" by default.
	requested string
	db        *approvals.DB
	log       zerolog.Logger

	// mu guards the fields that follow.
	mu     sync.Mutex
	pinned string
	choice vaultChoice
	// firstStart: this start recorded the pin.
	firstStart bool
	// override is set when --vault names another backend than the pin.
	override string
	// leftover says what an interrupted migration left behind, if
	// CleanUp could not remove it.
	leftover string
}

// openVault opens the vault backend the pin and cfg.Vault name, records
// the pin at the first start, and finishes an interrupted migration.
func openVault(cfg Config, db *approvals.DB, log zerolog.Logger) (*vault.Vault, *vaultPin, error) {
	p := &vaultPin{
		base: vault.Config{
			Dir:            filepath.Join(cfg.StateDir, "vault"),
			KeyFile:        filepath.Join(cfg.StateDir, "vault.key"),
			CredentialsDir: cfg.CredentialsDir,
			Service:        "pikod-" + cfg.Instance,
			Log:            log.With().Str("component", "vault").Logger(),
		},
		requested: cfg.Vault,
		db:        db,
		log:       log,
	}
	if p.requested == "" {
		p.requested = vault.BackendAuto
	}
	pinned, err := db.Meta(approvals.MetaVaultBackend)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the vault backend in use: %w", err)
	}
	p.pinned = pinned
	if raw, err := db.Meta(approvals.MetaVaultChoice); err != nil {
		return nil, nil, fmt.Errorf("reading how the vault backend was chosen: %w", err)
	} else if raw != "" {
		if err := json.Unmarshal([]byte(raw), &p.choice); err != nil {
			log.Warn().Err(err).Msg("the record of how the vault backend was chosen is unreadable; it is ignored")
			p.choice = vaultChoice{}
		}
	}
	backend := p.requested
	if backend == vault.BackendAuto && pinned != "" {
		backend = pinned
	}
	c := p.base
	c.Backend = backend
	v, err := vault.Open(c)
	if err != nil {
		if backend == pinned && p.requested == vault.BackendAuto {
			err = fmt.Errorf("the %s backend pinned for this instance did not open (its credentials are there; another backend would start empty): %w", pinned, err)
			var h interface{ Hint() string }
			if !errors.As(err, &h) {
				err = contracts.WithHint(err, "make the "+pinned+" backend reachable and start pikod again")
			}
		}
		return nil, nil, err
	}
	switch {
	case pinned == "":
		by := pinnedByFlag
		if p.requested == vault.BackendAuto {
			by = pinnedByAuto
		}
		choice := vaultChoice{By: by, Reason: v.Reason(), At: time.Now().UTC().Format(time.RFC3339)}
		b, _ := json.Marshal(choice)
		if err := db.UpdateMeta(map[string]string{approvals.MetaVaultBackend: v.Backend(), approvals.MetaVaultChoice: string(b)}); err != nil {
			v.Close()
			return nil, nil, fmt.Errorf("recording the vault backend in use: %w", err)
		}
		p.pinned, p.choice, p.firstStart = v.Backend(), choice, true
	case v.Backend() != pinned:
		p.override = v.Backend()
	}
	if err := p.finishMigration(v.Backend()); err != nil {
		p.leftover = err.Error()
		log.Warn().Err(err).Msg("an interrupted vault migration left copies that could not be removed yet; pikod tries again at its next start")
	}
	return v, p, nil
}

// finishMigration removes what an interrupted migration left behind
// (vault.CleanUp) and forgets it. inUse is the backend open now.
func (p *vaultPin) finishMigration(inUse string) error {
	raw, err := p.db.Meta(approvals.MetaVaultMigration)
	if err != nil || raw == "" {
		return err
	}
	var m vault.Migration
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return fmt.Errorf("the record of an interrupted vault migration is unreadable: %w", contracts.ErrFailedPrecondition)
	}
	p.mu.Lock()
	switched := p.pinned == m.To
	p.mu.Unlock()
	if err := vault.CleanUp(m, switched, inUse, p.base); err != nil {
		return err
	}
	if err := p.db.UpdateMeta(nil, approvals.MetaVaultMigration); err != nil {
		return fmt.Errorf("forgetting the finished vault migration: %w", err)
	}
	side := m.To
	if switched {
		side = m.From
	}
	p.log.Info().Str("from", m.From).Str("to", m.To).Bool("switched", switched).Str("cleaned", side).
		Msg("removed what an interrupted vault migration left behind")
	p.mu.Lock()
	p.leftover = ""
	p.mu.Unlock()
	return nil
}

// Begin implements vault.MigrationLog.
func (p *vaultPin) Begin(m vault.Migration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return p.db.SetMeta(approvals.MetaVaultMigration, string(b))
}

// Switch implements vault.MigrationLog: the pin, how it was chosen and the
// migration record change in one transaction.
func (p *vaultPin) Switch(m vault.Migration) error {
	rec, err := json.Marshal(m)
	if err != nil {
		return err
	}
	choice := vaultChoice{By: pinnedByMigrate, From: m.From, At: time.Now().UTC().Format(time.RFC3339)}
	ch, _ := json.Marshal(choice)
	set := map[string]string{approvals.MetaVaultBackend: m.To, approvals.MetaVaultChoice: string(ch),
		approvals.MetaVaultMigration: string(rec)}
	var del []string
	if len(m.Unnamed) > 0 {
		un, _ := json.Marshal(m.Unnamed)
		set[approvals.MetaVaultUnnamed] = string(un)
	} else {
		del = append(del, approvals.MetaVaultUnnamed)
	}
	if err := p.db.UpdateMeta(set, del...); err != nil {
		return err
	}
	p.mu.Lock()
	p.pinned, p.choice, p.firstStart, p.override = m.To, choice, false, ""
	p.mu.Unlock()
	return nil
}

// Done implements vault.MigrationLog.
func (p *vaultPin) Done() error { return p.db.UpdateMeta(nil, approvals.MetaVaultMigration) }

// migrationTargets lists the backends this build could move to from
// inUse, for the hint.
func migrationTargets(inUse string) []string {
	all := []string{vault.BackendFile, vault.BackendFileUnlock}
	switch runtime.GOOS {
	case "linux":
		all = append([]string{vault.BackendSecretService}, all...)
	case "darwin":
		all = append([]string{vault.BackendKeychain}, all...)
	}
	var out []string
	for _, b := range all {
		if vault.CheckMigration(inUse, b) == nil {
			out = append(out, b)
		}
	}
	return out
}

// status adds the choice to the vault's own status.
func (p *vaultPin) status(v *vault.Vault) contracts.VaultStatus {
	st := v.Status()
	inUse := v.Backend()
	p.mu.Lock()
	defer p.mu.Unlock()
	st.Requested, st.Pinned, st.PinnedBy = p.requested, p.pinned, p.choice.By
	if st.Reason == "" && p.choice.By == pinnedByAuto && inUse == p.pinned {
		st.Reason = p.choice.Reason
	}
	at := ""
	if p.choice.At != "" {
		at = " (" + p.choice.At + ")"
	}
	var chosen string
	switch {
	case p.override != "":
		chosen = fmt.Sprintf("--vault %s (or PIKO_VAULT) overrides, for this run only, the %s backend pinned for this instance", inUse, p.pinned)
	case p.choice.By == pinnedByMigrate:
		chosen = fmt.Sprintf("pinned to %s by 'pikoctl vault migrate' from %s%s: later starts keep it", p.pinned, p.choice.From, at)
	case p.choice.By == pinnedByAuto && p.firstStart:
		chosen = fmt.Sprintf("auto chose %s: %s; pinned: later starts keep %s even when another backend becomes available", inUse, p.choice.Reason, inUse)
	case p.choice.By == pinnedByAuto:
		chosen = fmt.Sprintf("auto chose %s at the first start%s: %s; pinned: later starts keep %s even when another backend becomes available",
			inUse, at, p.choice.Reason, inUse)
	case p.choice.By == pinnedByFlag && p.firstStart:
		chosen = fmt.Sprintf("--vault %s (or PIKO_VAULT) chose it at this first start; pinned: later starts with auto keep it", p.pinned)
	case p.choice.By == pinnedByFlag:
		chosen = fmt.Sprintf("pinned to %s by the first start, which named it (--vault or PIKO_VAULT)%s: later starts with auto keep it", p.pinned, at)
	default:
		chosen = fmt.Sprintf("pinned to %s at an earlier start (how it was chosen was not recorded): later starts with auto keep it", p.pinned)
	}
	switch {
	case p.override != "":
		// Warning says what to do; a migration would move the pin away
		// from the credentials.
	case p.requested != vault.BackendAuto && !p.firstStart && p.choice.By != pinnedByMigrate:
		chosen += fmt.Sprintf(" (this start named it too: --vault %s)", p.requested)
		fallthrough
	default:
		if ts := migrationTargets(inUse); len(ts) > 0 {
			chosen += fmt.Sprintf("; 'pikoctl vault migrate --to %s' moves every credential to another backend and pins it", strings.Join(ts, "|"))
		}
	}
	st.Chosen = chosen
	var warns []string
	switch {
	case p.override != "":
		warns = append(warns, fmt.Sprintf("the credentials stored in the pinned %s backend are not used by this run: start pikod without --vault (and PIKO_VAULT) to use them "+
			"('pikoctl vault migrate --to %s' brings what this run stored there)", p.pinned, p.pinned))
	case p.requested != vault.BackendAuto && p.requested != p.pinned:
		warns = append(warns, fmt.Sprintf("this pikod was started with --vault %s (or PIKO_VAULT), but the credentials are now in %s: start it without --vault next time, or it opens %s",
			p.requested, p.pinned, p.requested))
	}
	if p.leftover != "" {
		warns = append(warns, "an interrupted vault migration left copies that could not be removed yet ("+p.leftover+"); pikod tries again at its next start and before the next migration")
	}
	st.Warning = strings.Join(warns, "; ")
	return st
}

// vaultStatus is the vault part of status.
func (d *daemon) vaultStatus() contracts.VaultStatus { return d.vpin.status(d.creds.v) }

// vaultMigrate serves vault.migrate. cfgMu is held throughout: the names
// moved are those of the settings, which no configure may change meanwhile.
func (d *daemon) vaultMigrate(_ context.Context, req *rpc.Request, p *contracts.VaultMigrateParams) (any, error) {
	v := d.creds.v
	if err := vault.CheckMigration(v.Backend(), p.To); err != nil {
		return nil, err
	}
	d.cfgMu.Lock()
	defer d.cfgMu.Unlock()
	d.vpin.mu.Lock()
	override, pinned := d.vpin.override, d.vpin.pinned
	d.vpin.mu.Unlock()
	if override != "" && p.To != pinned {
		// The pin says where the credentials are; moving it away from
		// them would leave them behind.
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultMigrateOverride,
			"this pikod uses %s because --vault (or PIKO_VAULT) overrides the pinned %s backend, which holds the credentials: "+
				"moving to %s now would leave them behind; nothing was changed", override, pinned, p.To),
			"start pikod without --vault (it then opens "+pinned+"), then migrate; or migrate to "+pinned+" to bring this run's items there")
	}
	if err := d.vpin.finishMigration(v.Backend()); err != nil {
		d.vpin.mu.Lock()
		d.vpin.leftover = err.Error()
		d.vpin.mu.Unlock()
		return nil, contracts.WithHint(fmt.Errorf("an earlier vault migration left copies that could not be removed, so none is started now: %w", err),
			"make that backend reachable (or start pikod without --vault), then migrate again")
	}
	d.mu.Lock()
	servers := d.settings.Servers
	d.mu.Unlock()
	names := make([]string, 0, 2*len(servers))
	for _, s := range servers {
		names = append(names, vaultName(s.ID), oauthName(s.ID))
	}
	// Items of servers no longer configured that an earlier migration
	// moved out of a file vault: a keyring cannot list them.
	var keys []string
	if raw, err := d.db.Meta(approvals.MetaVaultUnnamed); err != nil {
		return nil, fmt.Errorf("reading the vault's unnamed items: %w", err)
	} else if raw != "" {
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			d.log.Warn().Err(err).Msg("the list of the vault's unnamed items is unreadable; only configured servers' items move")
		}
	}
	target := d.vpin.base
	target.Backend = p.To
	res, err := v.Migrate(vault.MigrateOptions{Target: target, Passphrase: vault.NewSecret(p.VaultPassphrase),
		Names: names, Keys: keys, Overwrite: p.Overwrite, Log: d.vpin})
	if err != nil {
		return nil, err
	}
	// The values are the same, but the target may hold items the old
	// backend did not (Kept): read everything again, so the redaction set
	// and the cached records are what the vault now holds.
	if err := d.creds.reload(servers); err != nil {
		d.log.Error().Err(err).Msg("reading the credentials again after the vault migration")
	}
	out := contracts.VaultMigrateResult{From: res.From, To: res.To, Moved: res.Names, Unnamed: res.Unnamed, Kept: res.Kept,
		KeptUnnamed: res.KeptUnnamed, Replaced: res.Replaced, Leftover: res.Leftover, Warning: res.Warning, Vault: d.vaultStatus()}
	if out.Moved == nil {
		out.Moved = []string{}
	}
	if out.Vault.Warning != "" {
		out.Warning = strings.TrimPrefix(out.Warning+"; "+out.Vault.Warning, "; ")
	}
	d.log.Info().Str("from", res.From).Str("to", res.To).Strs("moved", res.Names).Int("unnamed", res.Unnamed).
		Strs("kept", res.Kept).Int("replaced", res.Replaced).Int("leftover", res.Leftover).Msg("vault migrated: the new backend is pinned")
	return out, nil
}

// reload reads every configured server's credentials and OAuth state
// again and replaces the cache in one step, so the redaction set never
// lacks a value in between. The values the cache held stay redacted.
func (c *creds) reload(servers []contracts.ServerSettings) error {
	fresh := map[string]*credRecord{}
	var errs []error
	for i := range servers {
		id := servers[i].ID
		b, err := c.v.Get(vaultName(id))
		if errors.Is(err, contracts.ErrNotFound) {
			fresh[id] = nil
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the credentials of %q: %w", id, err))
			continue
		}
		var rec credRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			errs = append(errs, fmt.Errorf("the vault holds unreadable credentials for %q: %w", id, contracts.ErrFailedPrecondition))
			continue
		}
		fresh[id] = &rec
	}
	c.mu.Lock()
	for srv, r := range c.recs {
		if r != nil {
			c.retire(srv, r.values()...)
		}
	}
	c.recs = fresh
	c.rebuildLocked()
	c.mu.Unlock()
	errs = append(errs, c.loadOAuth(servers))
	return errors.Join(errs...)
}
