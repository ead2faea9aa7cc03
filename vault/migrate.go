package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/99designs/keyring"

	"github.com/pikod/pikod/contracts"
)

// Migration is the durable record of a move between backends (Migrate),
// kept from before the first write to the target until every copy it made
// obsolete is gone. It holds item keys (hashes), never names or values.
// Whether the move took effect is not in it: the pinned backend says. While
// the pin still names From, Created are copies in To that nothing uses;
// once it names To, Moved are the old copies in From (CleanUp removes
// either).
type Migration struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Moved is every item key copied to To.
	Moved []string `json:"moved"`
	// Created is the keys To did not hold before: what undoing removes.
	Created []string `json:"created,omitempty"`
	// Unnamed is the keys of Moved whose name was not known (a file
	// vault's items of servers no longer configured): a later migration
	// from a keyring finds them only through MigrateOptions.Keys.
	Unnamed []string `json:"unnamed,omitempty"`
	// FreshTarget is true when To is a file directory that held no vault
	// before: undoing also removes the check item and KDF file it got.
	FreshTarget bool `json:"freshTarget,omitempty"`
}

// MigrationLog keeps a Migration durably; the daemon keeps it in pikod.db
// next to the pinned backend. Migrate calls it under the vault's lock.
type MigrationLog interface {
	// Begin records m before anything is written to the target.
	Begin(m Migration) error
	// Switch records m.To as the backend in use (and m), in one durable
	// step. Until it returns, the old backend stays the one in use.
	Switch(m Migration) error
	// Done forgets the migration: nothing of it is left to remove.
	Done() error
}

// MigrateOptions is what Migrate needs.
type MigrateOptions struct {
	// Target opens the new backend, as Open would: Backend is keychain,
	// secret-service, file or file-unlock; Dir, KeyFile and CredentialsDir
	// as for the daemon's own vault. Service is taken from the vault.
	Target Config
	// Passphrase unlocks a file-unlock target (and sets it when the
	// directory is empty).
	Passphrase Secret
	// Names are the item names the caller uses (server/ID, oauth/ID);
	// the vault adds its own (the approval passphrase). A file vault
	// moves every item it holds, named here or not; a keyring cannot tell
	// this instance's items from others', so it moves the named ones and
	// Keys.
	Names []string
	// Keys are item keys to move besides Names: the Unnamed of earlier
	// migrations, which a keyring cannot list.
	Keys []string
	// Overwrite lets the values in use replace different values the
	// target already holds under the same names.
	Overwrite bool
	// Log records the migration durably; required.
	Log MigrationLog
}

// MigrateResult says what moved: names, never values.
type MigrateResult struct {
	From, To string
	// Names are the known names moved, sorted.
	Names []string
	// Unnamed counts items moved whose name is not among the known ones
	// (items of servers no longer configured: a file vault lists them,
	// Keys names them for a keyring).
	Unnamed int
	// Kept are known names the target already held and the old backend
	// did not: left as they were, and in use from now on. KeptUnnamed
	// counts the target's other items (a file target lists them).
	Kept        []string
	KeptUnnamed int
	// Replaced counts the target's different values that Overwrite
	// replaced.
	Replaced int
	// Leftover counts old copies that could not be removed; the
	// migration stays recorded so CleanUp removes them later.
	Leftover int
	// Warning says what needs the owner, in a sentence.
	Warning string
}

// lister is a store that can list its own items (the file backend).
type lister interface {
	keys() ([]string, error)
}

// migrateItem is one item on its way.
type migrateItem struct {
	key, name string
	val       []byte
	// present: the target held the key before; had is its value there
	// when it differed (a conflict).
	present bool
	had     []byte
	// written: a write to the target was attempted.
	written bool
}

// IsFileBackend reports whether b keeps its items in the file directory.
func IsFileBackend(b string) bool { return b == BackendFile || b == BackendFileUnlock }

// samePlace reports whether two backends keep their items in one place.
func samePlace(a, b string) bool { return a == b || (IsFileBackend(a) && IsFileBackend(b)) }

// CheckMigration refuses a migration that cannot be made whatever the
// backends hold: an unknown target, the backend in use, or the file
// directory's other mode.
func CheckMigration(from, to string) error {
	switch to {
	case BackendKeychain, BackendSecretService, BackendFile, BackendFileUnlock:
	case BackendAuto, "":
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"a migration needs a backend to move to: keychain, secret-service, file or file-unlock (auto is not a place)")
	default:
		return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
			"unknown vault backend %q: use keychain, secret-service, file or file-unlock", to)
	}
	if to == from {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultMigrateSame,
			"the vault already uses the %s backend: nothing to move", to),
			"'pikoctl mcp status' shows the backend in use; name another one")
	}
	if samePlace(from, to) {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultMigrateSamePlace,
			"the %s and %s backends keep their items in the same directory, so pikod cannot move them from one to the other", from, to),
			"migrate to secret-service (or keychain) first, then to "+to+": moving away empties the directory")
	}
	return nil
}

// targetError says that the target could not be opened, keeping the
// class and reason of err and its hint, or giving one.
func targetError(to string, err error) error {
	hint := ""
	switch to {
	case BackendSecretService:
		hint = "start pikod where DBUS_SESSION_BUS_ADDRESS reaches your session bus with GNOME Keyring or KWallet running " +
			"(a bus that appeared after pikod started needs a pikod restart), then migrate again"
	case BackendKeychain:
		hint = "the Keychain needs pikod built with cgo on macOS; elsewhere choose secret-service or file"
	case BackendFile, BackendFileUnlock:
		hint = "fix the file vault as the message says, then migrate again"
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		hint = h.Hint()
	}
	return contracts.WithHint(fmt.Errorf("cannot move the credentials to the %s backend (nothing was changed): %w", to, err), hint)
}

// Migrate moves every item to the backend opts.Target names and makes it
// the one this Vault uses. The order keeps every item somewhere whatever
// stops it: each item is written to the target and read back; when all
// are written, each is read back again and compared byte for byte; then
// opts.Log.Switch records the target as the backend in use; only then
// does this Vault use the target, and only then are the old copies
// removed. A failure before the switch removes what was written and
// changes nothing else. Every other vault call waits until Migrate
// returns, so nothing is written to the old backend meanwhile.
//
// A target that already holds a different value under a moved name is a
// conflict: refused, unless opts.Overwrite. Items the target holds that
// the old backend does not are left as they are (MigrateResult.Kept).
func (v *Vault) Migrate(opts MigrateOptions) (MigrateResult, error) {
	from, to := v.Backend(), opts.Target.Backend
	res := MigrateResult{From: from, To: to}
	if err := CheckMigration(from, to); err != nil {
		return res, err
	}
	if opts.Log == nil {
		return res, contracts.Errorf(contracts.ErrInternal, contracts.ReasonInternal, "vault.Migrate needs a MigrationLog")
	}
	if v.Locked() {
		return res, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked,
			"the vault is locked, so its items cannot be read to move them; nothing was changed"),
			"run 'pikoctl vault unlock', then migrate")
	}
	cfg := opts.Target
	cfg.Service = v.service
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = v.opTimeout
	}
	fresh := IsFileBackend(to) && cfg.Dir != "" && emptyVaultDir(cfg.Dir, v.service)
	dst, err := Open(cfg)
	if err != nil {
		return res, targetError(to, err)
	}
	defer dst.Close()
	if dst.Locked() {
		if opts.Passphrase.IsZero() {
			return res, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument,
				"moving to the file-unlock backend needs its passphrase; nothing was changed")
		}
		if err := dst.Unlock(opts.Passphrase); err != nil {
			return res, targetError(to, err)
		}
	}
	dst.mu.Lock()
	tgt := dst.st
	dst.mu.Unlock()
	dst.infoMu.RLock()
	newBackend, newNote, newFile := dst.backend, dst.note, dst.file
	dst.infoMu.RUnlock()

	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return res, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultClosed, "the vault is closed")
	}
	if v.st == nil {
		return res, errLocked()
	}
	if v.backend != from {
		return res, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultMigrateSame,
			"another migration moved the vault to the %s backend meanwhile; nothing was changed", v.backend)
	}
	src := v.st
	// bounded runs one call on the target (or, after the switch, on the
	// old store), bounded like every vault call. A call that times out
	// stops the migration; its goroutine belongs to a store nothing else
	// uses.
	bounded := func(fn func() error) error {
		_, err := runBounded(v.opTimeout, fn)
		return err
	}

	// What the old backend holds.
	byKey := map[string]string{}
	for _, n := range append(slices.Clone(opts.Names), approvalItem) {
		if n != "" {
			byKey[itemKey(v.service, n)] = n
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	for _, k := range opts.Keys {
		if _, ok := byKey[k]; !ok && isItemName(k) {
			byKey[k] = ""
			keys = append(keys, k)
		}
	}
	if l, ok := src.(lister); ok {
		var listed []string
		if err := v.boundedLocked(func() (err error) { listed, err = l.keys(); return err }); err != nil {
			return res, fmt.Errorf("listing the items of the %s backend (nothing was changed): %w", from, err)
		}
		for _, k := range listed {
			if _, ok := byKey[k]; !ok {
				byKey[k] = ""
				keys = append(keys, k)
			}
		}
	}
	what := func(it *migrateItem) string {
		if it.name == "" {
			return "an item of a server no longer configured"
		}
		return fmt.Sprintf("%q", it.name)
	}
	var items []*migrateItem
	var absent []string
	for _, k := range keys {
		var b []byte
		err := v.boundedLocked(func() (err error) { b, err = src.get(k); return err })
		if errors.Is(err, keyring.ErrKeyNotFound) {
			absent = append(absent, k)
			continue
		}
		it := &migrateItem{key: k, name: byKey[k]}
		if err != nil {
			return res, v.opError(fmt.Sprintf("reading %s from the %s backend (nothing was changed)", what(it), from), err)
		}
		it.val = b
		items = append(items, it)
	}

	// What the target holds already.
	var conflicts []string
	for _, it := range items {
		var b []byte
		err := bounded(func() (err error) { b, err = tgt.get(it.key); return err })
		switch {
		case errors.Is(err, keyring.ErrKeyNotFound):
		case err != nil:
			return res, targetError(to, fmt.Errorf("reading what it holds for %s: %w", what(it), err))
		case bytes.Equal(b, it.val):
			it.present = true
		default:
			it.present, it.had = true, b
			conflicts = append(conflicts, what(it))
		}
	}
	for _, k := range absent {
		err := bounded(func() error { _, err := tgt.get(k); return err })
		switch {
		case errors.Is(err, keyring.ErrKeyNotFound):
		case err != nil:
			return res, targetError(to, fmt.Errorf("reading what it holds for %q: %w", byKey[k], err))
		default:
			res.Kept = append(res.Kept, byKey[k])
		}
	}
	if l, ok := tgt.(lister); ok {
		var listed []string
		if err := bounded(func() (err error) { listed, err = l.keys(); return err }); err != nil {
			return res, targetError(to, err)
		}
		for _, k := range listed {
			if _, ok := byKey[k]; !ok {
				res.KeptUnnamed++
			}
		}
	}
	if len(conflicts) > 0 && !opts.Overwrite {
		return res, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultMigrateConflict,
			"the %s backend already holds different values for %s (from an earlier use of it); nothing was changed",
			to, strings.Join(conflicts, ", ")),
			"add --overwrite to replace them with the values in use now, or start pikod with --vault "+to+" to look at them first")
	}

	m := Migration{From: from, To: newBackend, FreshTarget: fresh}
	for _, it := range items {
		m.Moved = append(m.Moved, it.key)
		if it.name == "" {
			m.Unnamed = append(m.Unnamed, it.key)
		}
		if !it.present {
			m.Created = append(m.Created, it.key)
		}
	}
	if err := opts.Log.Begin(m); err != nil {
		return res, fmt.Errorf("recording the migration before writing anything (nothing was changed): %w", err)
	}
	// undo takes the target back to what it held; the old backend was
	// never touched. The record stays when the target does not answer,
	// so CleanUp finishes the job later.
	undo := func() error {
		var errs []error
		for _, it := range items {
			switch {
			case !it.written:
			case !it.present:
				errs = append(errs, bounded(func() error { return tgt.remove(it.key) }))
			case it.had != nil:
				errs = append(errs, bounded(func() error { return tgt.set(it.key, it.had) }))
			}
		}
		if fresh && len(errs) == 0 {
			errs = append(errs, removeFileItems(cfg.Dir, v.service, nil, true))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return opts.Log.Done()
	}
	fail := func(err error) (MigrateResult, error) {
		if uerr := undo(); uerr != nil {
			v.log.Warn().Err(uerr).Str("to", to).Msg("vault migration: the copies already written could not all be removed; they are removed at the next start")
			err = fmt.Errorf("%w (the copies already written to %s could not all be removed: pikod removes them at its next start)", err, to)
		}
		v.log.Warn().Err(err).Str("from", from).Str("to", to).Msg("vault migration failed; nothing changed")
		return MigrateResult{From: from, To: to}, err
	}

	// Write each, read it back, then compare every one again.
	for _, it := range items {
		if it.present && it.had == nil {
			continue // the target holds this very value
		}
		it.written = true
		err := bounded(func() error {
			if err := tgt.set(it.key, it.val); err != nil {
				return err
			}
			got, err := tgt.get(it.key)
			if err != nil {
				return fmt.Errorf("reading it back: %w", err)
			}
			if !bytes.Equal(got, it.val) {
				return errors.New("it reads back differently")
			}
			return nil
		})
		if err != nil {
			return fail(targetError(to, fmt.Errorf("writing %s: %w", what(it), err)))
		}
	}
	for _, it := range items {
		var got []byte
		err := bounded(func() (err error) { got, err = tgt.get(it.key); return err })
		if err == nil && !bytes.Equal(got, it.val) {
			err = errors.New("it reads back differently than was written")
		}
		if err != nil {
			return fail(targetError(to, fmt.Errorf("verifying %s: %w", what(it), err)))
		}
	}

	// The switch: from here on the target is the vault.
	if err := opts.Log.Switch(m); err != nil {
		return fail(fmt.Errorf("recording %s as the backend in use (nothing was changed): %w", to, err))
	}
	v.infoMu.Lock()
	v.backend, v.note, v.reason, v.file = newBackend, newNote, "", newFile
	v.infoMu.Unlock()
	v.st = tgt
	v.locked.Store(false)

	// The old copies go last.
	for i, it := range items {
		err := bounded(func() error { return src.remove(it.key) })
		if err == nil {
			continue
		}
		v.log.Warn().Err(err).Str("backend", from).Msg("vault migration: an old copy could not be removed")
		if errors.Is(err, contracts.ErrUnavailable) { // timed out: the rest would too
			res.Leftover += len(items) - i
			break
		}
		res.Leftover++
	}
	if fsrc, ok := src.(*fileStore); ok && res.Leftover == 0 {
		if err := removeFileItems(fsrc.dir, v.service, nil, true); err != nil {
			v.log.Warn().Err(err).Msg("vault migration: the emptied file vault keeps its check item")
		}
	}
	for _, it := range items {
		if it.had != nil {
			res.Replaced++
		}
		if it.name == "" {
			res.Unnamed++
		} else {
			res.Names = append(res.Names, it.name)
		}
	}
	slices.Sort(res.Names)
	slices.Sort(res.Kept)
	switch {
	case res.Leftover > 0:
		res.Warning = fmt.Sprintf("%d old copies in the %s backend could not be removed: pikod removes them at its next start", res.Leftover, from)
	default:
		if err := opts.Log.Done(); err != nil {
			res.Warning = fmt.Sprintf("the move is complete but its record could not be cleared (%v): pikod clears it at its next start", err)
		}
	}
	v.log.Info().Str("from", from).Str("to", newBackend).Int("moved", len(items)).Int("kept", len(res.Kept)+res.KeptUnnamed).
		Int("leftover", res.Leftover).Msg("vault migrated")
	return res, nil
}

// CleanUp removes what an interrupted migration m left behind: when
// switched (the pinned backend is m.To) the old copies in m.From, else the
// copies written to m.To. inUse is the backend opened now: copies that
// share its place are left (an error says so), since they may be what it
// uses. cfg locates the backends as for Open.
func CleanUp(m Migration, switched bool, inUse string, cfg Config) error {
	side, keys := m.To, m.Created
	if switched {
		side, keys = m.From, m.Moved
	}
	if samePlace(side, inUse) {
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultInUse,
			"an interrupted migration left copies in the %s backend, which this pikod uses now; they stay", side),
			"start pikod without --vault (it then uses the pinned backend) to let it remove them")
	}
	if cfg.Service == "" {
		cfg.Service = "pikod"
	}
	if IsFileBackend(side) {
		// Removing needs no key: the files are removed by name.
		if cfg.Dir == "" {
			return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidArgument, "the file vault needs a directory (Config.Dir)")
		}
		return removeFileItems(filepath.Clean(cfg.Dir), cfg.Service, keys, switched || m.FreshTarget)
	}
	if len(keys) == 0 {
		return nil
	}
	cfg.Backend = side
	r, err := Open(cfg)
	if err != nil {
		return fmt.Errorf("opening the %s backend to remove what an interrupted migration left there: %w", side, err)
	}
	defer r.Close()
	var errs []error
	for _, k := range keys {
		errs = append(errs, r.call(func(s store) error { return s.remove(k) }))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing what an interrupted migration left in the %s backend: %w", side, err)
	}
	return nil
}

// removeFileItems removes the item files keys from a file vault's
// directory, and with marks, once no item is left, its check item and KDF
// file too, so the directory can become a vault of either file mode.
func removeFileItems(dir, service string, keys []string, marks bool) error {
	var errs []error
	rm := func(name string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, k := range keys {
		if isItemName(k) {
			rm(k)
		}
	}
	if marks && len(errs) == 0 {
		check := itemKey(service, checkItemName)
		left, err := itemFiles(dir, check)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			errs = append(errs, err)
		case len(left) == 0:
			rm(check)
			rm(kdfFileName)
		}
	}
	if len(keys) > 0 || marks {
		if err := syncPath(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// emptyVaultDir reports whether dir holds no vault: missing, or without
// items, check item and KDF file.
func emptyVaultDir(dir, service string) bool {
	fv := &fileVault{dir: dir, service: service}
	inv, err := fv.inventory()
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return inv.items == 0 && !inv.hasCheck && !inv.hasKDF
}
