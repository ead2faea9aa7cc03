package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
	"github.com/rs/zerolog"
)

// DBLockTimeout bounds how long a starting daemon waits for the database
// lock before concluding another daemon owns the instance.
const DBLockTimeout = time.Second

// Config is what Run needs; cmd/pikod fills it from flags and environment.
type Config struct {
	Instance   string
	SocketPath string
	StateDir   string
	Version    string
	Log        zerolog.Logger
	// Vault is the credential backend: auto, keychain, secret-service,
	// file or file-unlock.
	Vault string
	// CredentialsDir is systemd's $CREDENTIALS_DIRECTORY, if any.
	CredentialsDir string
	// Redactor receives the known credential values; cmd/pikod puts its
	// log writers behind it. Nil makes a private one.
	Redactor *vault.Redactor
	// OAuthFlowLifetime bounds how long a browser sign-in waits for its
	// callback; 0 means mcpclient.FlowLifetime (10 minutes).
	OAuthFlowLifetime time.Duration
	// RetentionInterval is how often receipts are pruned to the retention
	// bounds; 0 means DefaultRetentionInterval.
	RetentionInterval time.Duration
	// Compact compacts pikod.db at start whatever its free pages (else
	// only past CompactMinFree and CompactRatio).
	Compact bool
	// RequestLimit bounds how long a server request waits for the owner
	// (the call it belongs to may end it sooner); default
	// DefaultRequestLimit.
	RequestLimit time.Duration
}

// DBPath returns the database file of a state directory.
func DBPath(stateDir string) string { return filepath.Join(stateDir, "pikod.db") }

// LogPath returns the JSON log file of a state directory.
func LogPath(stateDir string) string { return filepath.Join(stateDir, "pikod.log") }

// EnsureStateDir creates dir (and parents) with mode 0700, or checks that an
// existing dir is a directory owned by this uid and tightens it to 0700.
func EnsureStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a directory: %w", dir, contracts.ErrFailedPrecondition)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("state directory %s belongs to uid %d, not to us (uid %d): pick another --state-dir: %w",
			dir, st.Uid, os.Getuid(), contracts.ErrPermissionDenied)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making state directory %s private: %w", dir, err)
		}
	}
	return nil
}

// Run starts the daemon and blocks until ctx is cancelled (a clean stop,
// returning nil) or start-up fails. Shutdown runs in reverse start order:
// stop accepting and drain requests, then close the database.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if err := EnsureStateDir(cfg.StateDir); err != nil {
		return err
	}
	dbPath := DBPath(cfg.StateDir)
	// Freed pages go back to the file system only by a copy: at start,
	// before anything uses the file, when they are worth it (or asked).
	compactAt := time.Now()
	startRep, startErr := approvals.CompactFile(dbPath, DBLockTimeout, CompactMinFree, CompactRatio, cfg.Compact)
	if rep, err := startRep, startErr; err != nil {
		if errors.Is(err, approvals.ErrLocked) {
			return fmt.Errorf("another pikod is running for instance %q (database %s is locked): %w",
				cfg.Instance, dbPath, contracts.ErrAlreadyExists)
		}
		log.Error().Err(err).Msg("compacting the database; going on with it as it is")
	} else if rep.Compacted {
		log.Info().Int64("before", rep.Before).Int64("after", rep.After).Int64("free", rep.Free).
			Int64("took_ms", rep.Took.Milliseconds()).Msg("database compacted")
	}
	db, err := approvals.Open(dbPath, DBLockTimeout)
	if errors.Is(err, approvals.ErrLocked) {
		return fmt.Errorf("another pikod is running for instance %q (database %s is locked): %w",
			cfg.Instance, dbPath, contracts.ErrAlreadyExists)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error().Err(err).Msg("closing database")
		}
		log.Info().Msg("database closed")
	}()
	log.Info().Str("db", dbPath).Int("schema", approvals.SchemaVersion).Msg("database open")

	d := &daemon{cfg: cfg, db: db, log: log, started: time.Now().UTC()}
	if startRep.Compacted || startErr != nil {
		d.compacts.record(compactResult("start", compactAt, startRep, startErr))
	}
	if err := d.loadSettings(); err != nil {
		return err
	}
	if err := d.loadPauses(); err != nil {
		return err
	}

	// Processes a killed daemon left behind are ended before anything new
	// starts; orphans of our own servers get reparented to us from now on.
	records := processRecords{db}
	if err := proc.SetSubreaper(); err != nil {
		log.Warn().Err(err).Msg("cannot become a child subreaper; escaped server descendants will not be adopted")
	}
	if n, err := proc.ReapOrphans(records, log.With().Str("component", "reaper").Logger()); err != nil {
		log.Error().Err(err).Msg("reaping processes left by a previous daemon")
	} else if n > 0 {
		log.Warn().Int("killed", n).Msg("ended processes left behind by a previous daemon")
	}
	runDir := filepath.Join(cfg.StateDir, "run")
	if _, err := proc.CleanRunDir(runDir, func(string) bool { return false }); err != nil {
		log.Warn().Err(err).Msg("removing disposable server homes left by a previous daemon")
	}
	if cfg.Redactor == nil {
		cfg.Redactor = vault.NewRedactor()
	}
	// "auto" chooses once: later starts use the pinned backend (vaultpin.go).
	v, vpin, err := openVault(cfg, db, log)
	if err != nil {
		return fmt.Errorf("opening the vault: %w", err)
	}
	defer func() {
		if err := v.Close(); err != nil {
			log.Error().Err(err).Msg("closing the vault")
		}
	}()
	d.vpin = vpin
	vs := vpin.status(v)
	log.Info().Str("backend", vs.Backend).Str("requested", vs.Requested).Str("pinned", vs.Pinned).Str("pinned_by", vs.PinnedBy).
		Str("reason", vs.Reason).Bool("locked", vs.Locked).Str("chosen", vs.Chosen).Msg("vault open")
	if vs.Warning != "" {
		log.Warn().Str("backend", vs.Backend).Str("pinned", vs.Pinned).Msg("vault: " + vs.Warning)
	}
	d.creds = &creds{v: v, red: cfg.Redactor, log: log.With().Str("component", "vault").Logger(), recs: map[string]*credRecord{},
		oauthVals: map[string][]string{}}
	if err := d.creds.loadAll(d.settings.Servers); err != nil {
		log.Error().Err(err).Msg("reading stored credentials")
	}
	if err := d.creds.loadOAuth(d.settings.Servers); err != nil {
		log.Error().Err(err).Msg("reading stored OAuth grants")
	}
	d.red = cfg.Redactor
	gate, err := newOwnerGate(v, db, cfg.Redactor, log.With().Str("component", "approvals").Logger())
	if err != nil {
		return err
	}
	d.gate = gate

	// The ledger logs what crash recovery settled and receipts it could
	// not store.
	ledger, err := approvals.OpenLedger(db, filepath.Join(cfg.StateDir, "tombstones"), time.Now,
		approvals.WithLogger(log.With().Str("component", "ledger").Logger()),
		approvals.WithReserve(filepath.Join(cfg.StateDir, "outcomes.reserve")))
	if err != nil {
		return fmt.Errorf("opening the action ledger: %w", err)
	}
	defer func() {
		if err := ledger.Close(); err != nil {
			log.Error().Err(err).Msg("closing the action ledger")
		}
	}()
	// The sources' byte bound of the settings applies from the start.
	sources, err := approvals.OpenSourceStore(db, filepath.Join(cfg.StateDir, "sources"), d.settings.Retention.Resolved().SourceMaxBytes, time.Now)
	if err != nil {
		return fmt.Errorf("opening the retained results: %w", err)
	}
	defer sources.Close()
	d.ledger, d.sources = ledger, sources
	// A read's retained result commits with its receipt.
	ledger.CarryDeferredSources(sources)
	if head, err := ledger.ReceiptsHead(); err == nil {
		d.startSeq = head.Seq
	}

	// Events go to the socket's watchers; the hub closes after the
	// supervisor (which still reports state changes as it stops).
	d.events = newEvents(log.With().Str("component", "events").Logger())
	defer d.events.close()
	// Task statuses servers announce are recorded against the tasks pikod
	// created; the recorder stops after the supervisor (its only source).
	notes := startTaskNotes(ledger, cfg.Redactor.Text, log.With().Str("component", "tasks").Logger())
	defer notes.close()
	publish := func(ev contracts.EventParams) {
		if ev.Kind == contracts.EventTask {
			notes.offer(ev)
		}
		d.events.publish(ev)
	}
	d.sup = mcpclient.NewSupervisor(mcpclient.Options{
		Log:    log.With().Str("component", "mcp").Logger(),
		RunDir: runDir,
		// npx and uvx keep their downloads across connects (HOME stays
		// disposable).
		CacheDir:      filepath.Join(cfg.StateDir, "cache"),
		Records:       records,
		ClientVersion: cfg.Version,
		// The session's own settings decide: identity is checked against
		// what will actually run.
		Credentials: d.creds.forServer,
		// OAuth grants and registrations live in the vault too.
		Grants:       grantStore{d.creds},
		FlowLifetime: cfg.OAuthFlowLifetime,
		// Grants cover pinned tool definitions (pikod.db pins/).
		Pins: pinStore{db, cfg.Redactor}, SkillPins: skillPinStore{db, cfg.Redactor},
		// Text from servers is redacted before anything cuts it.
		Redact: cfg.Redactor.Text,
		Event:  publish,
		// Elicitations and samplings wait for the owner in the queue.
		ServerRequest: d.serverRequest,
	})
	defer func() {
		d.sup.Close()
		log.Info().Msg("mcp servers stopped")
	}()
	d.sup.Apply(d.settings.Servers)

	ln, err := rpc.Listen(cfg.SocketPath, log.With().Str("component", "rpc").Logger())
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.SocketPath, err)
	}
	// Every frame leaving the socket passes redaction last; it works on
	// JSON values, so every frame stays valid JSON.
	// Terminal-only methods are checked by the server before any handler
	// runs: the peer's terminal first, then the owner gate (passphrase).
	d.probes.log = log.With().Str("component", "redaction").Logger()
	srv := rpc.NewServer(rpc.Options{Log: log.With().Str("component", "rpc").Logger(), Filter: d.filterFrame,
		OwnerCheck: d.gate.Check, RequestContext: requestContext})
	d.register(srv)
	log.Info().Str("socket", cfg.SocketPath).Int("pid", os.Getpid()).
		Str("version", cfg.Version).Msg("pikod ready")
	// Receipts are pruned to the retention bounds in the background.
	pctx, stopPruner := context.WithCancel(ctx)
	waitPruner := d.startPruner(pctx, cfg.RetentionInterval)
	defer func() {
		stopPruner()
		waitPruner()
	}()
	// Enabled servers connect in the background: the socket serves at once.
	d.sup.ConnectEnabled()
	err = srv.Serve(ctx, ln)
	log.Info().Msg("stopped serving")
	return err
}

// pikod.db is compacted at start when its free pages take at least
// CompactMinFree bytes and CompactRatio of the file.
const (
	CompactMinFree = 16 << 20
	CompactRatio   = 0.5
)

// daemon holds the running state behind the method table.
type daemon struct {
	cfg   Config
	db    *approvals.DB
	sup   *mcpclient.Supervisor
	creds *creds
	// vpin is the vault backend's pin and how it was chosen.
	vpin *vaultPin
	// gate is the owner approval gate (passphrase and lockout).
	gate    *ownerGate
	ledger  *approvals.Ledger
	sources *approvals.SourceStore
	// capturesSeen are the browser captures imported lately (captures).
	capturesSeen captureCache
	// events delivers the supervisor's events to watching connections.
	events *events
	// requests are the server requests waiting for the owner.
	requests requestQueue
	// red removes known credential values from everything that leaves
	// the daemon or is stored; the vault's records feed it.
	red *vault.Redactor
	// probes counts the replacements in each connection's answers.
	probes probes
	// paused holds the servers handed over to the owner (pause.go).
	paused pauses
	// rotated holds the servers whose credentials changed while
	// connected (rotation.go).
	rotated rotations
	// pruner applies the retention bounds (retention.go); startSeq is the
	// receipt chain's head sequence when this pikod started, for the
	// growth rate.
	pruner   *pruner
	startSeq uint64
	// compacts runs the compactions with pikod serving (compact.go).
	compacts compactions
	// fullAt is when a write last failed for want of disk space (Unix
	// nanoseconds; 0: not since the disk had room; storage.go).
	fullAt  atomic.Int64
	log     zerolog.Logger
	started time.Time

	// cfgMu serialises configures (held across the save, the vault reads
	// and stopping changed servers).
	cfgMu sync.Mutex
	// mu guards the fields that follow; never held across slow work.
	mu       sync.Mutex
	settings *contracts.MCPSettings
	revision uint64
	// settingsErr is set when the stored settings no longer parse under
	// this build's rules; they are kept untouched and reported.
	settingsErr error
}

func (d *daemon) loadSettings() error {
	rec, err := d.db.Settings(contracts.ExtensionMCP)
	if err != nil {
		return err
	}
	d.revision = rec.Revision
	d.settings = &contracts.MCPSettings{Servers: []contracts.ServerSettings{}}
	if rec.Settings == nil {
		return nil
	}
	s, err := contracts.ParseMCPSettings(rec.Settings)
	if err != nil {
		// Keep the stored bytes; the owner fixes them with a new configure.
		d.settingsErr = err
		d.log.Error().Err(err).Uint64("revision", rec.Revision).Msg("stored mcp settings are invalid under this version; servers stay unconfigured until fixed")
		return nil
	}
	d.settings = s
	return nil
}

// processRecords keeps the supervisor's process records in the database.
type processRecords struct{ db *approvals.DB }

func (r processRecords) PutProcess(rec proc.Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.db.PutProcess(rec.PID, b)
}

func (r processRecords) DeleteProcess(pid int) error { return r.db.DeleteProcess(pid) }

func (r processRecords) ListProcesses() ([]proc.Record, error) {
	raw, err := r.db.ListProcesses()
	if err != nil {
		return nil, err
	}
	out := make([]proc.Record, 0, len(raw))
	for _, b := range raw {
		var rec proc.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("decoding a process record: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}
