// Command pikod is the MCP supervisor daemon. It runs in the foreground
// until SIGINT or SIGTERM; a second signal forces it to quit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	"a.pikod.internal/busenv"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/mcpclient/proc"
	"github.com/pikod/pikod/vault"
	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// Before anything can start a process: a server gets exactly fds 0, 1
	// and 2, never a descriptor pikod inherited.
	inherited, fdErr := proc.MarkInheritedCloseOnExec()
	// A write to a closed stderr (the reader of `pikod 2>&1 | tee log` died
	// first) returns EPIPE instead of killing pikod mid-shutdown. Notify,
	// not Ignore: an ignored signal stays ignored in every server pikod
	// starts, a handled one is reset to the default there.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Stderr, inherited, fdErr))
}

// defaultMemoryLimit is pikod's soft heap limit unless GOMEMLIMIT says
// otherwise.
const defaultMemoryLimit = 48 << 20

// run is pikod; inherited are the descriptors it inherited without
// close-on-exec (marked by main), fdErr what went wrong marking them.
func run(args []string, stderr io.Writer, inherited []int, fdErr error) int {
	fs := flag.NewFlagSet("pikod", flag.ContinueOnError)
	fs.SetOutput(stderr)
	instanceFlag := fs.String("instance", "", "instance name (env "+contracts.EnvInstance+", default \"default\")")
	socketFlag := fs.String("socket", "", "owner socket path (env "+contracts.EnvSocket+")")
	stateFlag := fs.String("state-dir", "", "state directory (env "+contracts.EnvStateDir+")")
	levelFlag := fs.String("log-level", "info", "log level: debug, info, warn or error")
	vaultFlag := fs.String("vault", "", "credential vault: auto, keychain, secret-service, file or file-unlock (env PIKO_VAULT, default auto)")
	requestFlag := fs.Duration("request-limit", daemon.DefaultRequestLimit, "how long a server request (elicitation, sampling) waits for the owner at most (1s to 1h)")
	flowFlag := fs.Duration("oauth-flow-lifetime", mcpclient.FlowLifetime, "how long an OAuth browser sign-in waits for its callback (1s to 10m)")
	pruneFlag := fs.Duration("retention-interval", daemon.DefaultRetentionInterval, "how often receipts are pruned to the retention settings (10s to 24h)")
	logMaxFlag := fs.Int64("log-max-bytes", daemon.DefaultLogMaxBytes, "how large pikod.log grows before it is rotated to pikod.log.1 (the previous one is replaced), in bytes")
	compactFlag := fs.Bool("compact", false, "compact pikod.db at start even when its free pages are few (it is compacted at start anyway when they are over half of it and 16 MiB)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file at a clean stop (for make bench)")
	memProfile := fs.String("memprofile", "", "write a Go allocation profile of the whole run to this file at a clean stop (for make bench)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pikod [flags]\n\npikod supervises MCP servers for its owner; pikoctl talks to it.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pikod: unexpected argument %q (pikod takes only flags; see pikod -h)\n", fs.Arg(0))
		return 2
	}
	if *showVersion {
		fmt.Printf("pikod %s (api %s)\n", version, contracts.APIVersion)
		return 0
	}
	if *requestFlag < time.Second || *requestFlag > time.Hour {
		fmt.Fprintf(stderr, "pikod: invalid --request-limit %s: use 1s to 1h\n", *requestFlag)
		return 2
	}
	if *flowFlag < time.Second || *flowFlag > mcpclient.FlowLifetime {
		fmt.Fprintf(stderr, "pikod: invalid --oauth-flow-lifetime %s: use 1s to %s\n", *flowFlag, mcpclient.FlowLifetime)
		return 2
	}
	if *pruneFlag < 10*time.Second || *pruneFlag > 24*time.Hour {
		fmt.Fprintf(stderr, "pikod: invalid --retention-interval %s: use 10s to 24h\n", *pruneFlag)
		return 2
	}
	if *logMaxFlag < daemon.MinLogMaxBytes {
		fmt.Fprintf(stderr, "pikod: invalid --log-max-bytes %d: use at least %d (64 KiB)\n", *logMaxFlag, daemon.MinLogMaxBytes)
		return 2
	}
	level, err := zerolog.ParseLevel(*levelFlag)
	if err != nil || *levelFlag == "" {
		fmt.Fprintf(stderr, "pikod: invalid --log-level %q: use debug, info, warn or error\n", *levelFlag)
		return 2
	}
	instance, err := contracts.ResolveInstance(*instanceFlag, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		return 2
	}
	stateDir, err := contracts.StateDir(instance, *stateFlag, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		return 1
	}
	socket := contracts.SocketPath(instance, *socketFlag, os.Getenv)

	if err := daemon.EnsureStateDir(stateDir); err != nil {
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		return 1
	}
	logFile, err := daemon.OpenLog(stateDir, *logMaxFlag)
	if err != nil {
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		return 1
	}
	defer logFile.Close()
	// Every log event is redacted as JSON, once, before it is written to
	// the log file and before the console writer formats it for stderr: no
	// known credential value is ever written to either, and the log file
	// stays one valid JSON object per line.
	red := vault.NewRedactor()
	fileLog := zerolog.New(red.Writer(logFile)).With().Timestamp().Str("instance", instance).Logger()
	errOut := &stderrWriter{w: stderr, onBreak: func(err error) {
		fileLog.Warn().Err(err).Msg("stderr is gone; logging continues to the log file only")
	}}
	console := zerolog.ConsoleWriter{Out: errOut, TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}
	log := zerolog.New(red.Writer(zerolog.MultiLevelWriter(logFile, console))).Level(level).With().Timestamp().
		Str("instance", instance).Logger()
	// busenv settled the session bus address before the keyring library
	// could start a bus (its init runs first); say what it did.
	switch bus := busenv.Result(); bus.Set {
	case "":
	case busenv.Disabled:
		log.Warn().Msg(bus.Why + ": the secret-service vault is unavailable; set " + busenv.Variable + " to use one")
	default:
		log.Info().Str("address", bus.Set).Msg(bus.Why)
	}
	if len(inherited) > 0 {
		log.Info().Ints("fds", inherited).Msg("inherited descriptors marked close-on-exec: servers will not get them")
	}
	if fdErr != nil {
		log.Warn().Err(fdErr).Msg("could not mark every inherited descriptor close-on-exec; servers may inherit them")
	}
	if err := daemon.Harden(); err != nil {
		log.Warn().Err(err).Msg("could not keep the daemon out of core dumps and debuggers")
	}
	backend := *vaultFlag
	if backend == "" {
		backend = os.Getenv("PIKO_VAULT")
	}

	// Libraries that log through slog (mcp-go's transports) go to the same
	// log, marked as theirs.
	slog.SetDefault(slog.New(zerolog.NewSlogHandler(log.With().Str("component", "sdk").Logger())))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		log.Info().Str("signal", sig.String()).Msg("shutting down (signal again to force)")
		cancel()
		sig = <-sigs
		log.Warn().Str("signal", sig.String()).Msg("forced quit")
		os.Exit(130)
	}()

	// A soft limit on the heap: pikod's own heap is some tens of MB, and
	// a large result passing through would otherwise let the collector
	// double the heap it leaves behind. Near the limit the collector runs
	// sooner (it never takes more than half the CPU for it, and the limit
	// is not a cap: a heap that needs more gets it). GOMEMLIMIT, when set,
	// is the owner's choice instead.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	stopProfiles, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		return 2
	}
	defer stopProfiles(log)

	err = daemon.Run(ctx, daemon.Config{Instance: instance, SocketPath: socket, StateDir: stateDir, Version: version, Log: log,
		Vault: backend, CredentialsDir: os.Getenv("CREDENTIALS_DIRECTORY"), Redactor: red, OAuthFlowLifetime: *flowFlag, RequestLimit: *requestFlag,
		RetentionInterval: *pruneFlag, Compact: *compactFlag})
	if err != nil {
		log.Error().Err(err).Msg("pikod stopped")
		fmt.Fprintf(stderr, "pikod: %v\n", err)
		var h interface{ Hint() string }
		if errors.As(err, &h) {
			fmt.Fprintf(stderr, "hint: %s\n", h.Hint())
		}
		return 1
	}
	log.Info().Msg("pikod stopped cleanly")
	return 0
}

// stderrWriter passes log lines to stderr until a write fails (a closed
// pipe, a full disk behind a redirection), then drops them: the log file
// still gets every line, and a stderr that is gone must neither fail the
// other writer nor be reported again on stderr.
type stderrWriter struct {
	w       io.Writer
	onBreak func(error)
	broken  atomic.Bool
}

func (s *stderrWriter) Write(p []byte) (int, error) {
	if s.broken.Load() {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil && s.broken.CompareAndSwap(false, true) && s.onBreak != nil {
		s.onBreak(err)
	}
	return len(p), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProfiles starts the CPU profile into cpuPath and arranges for an
// allocation profile in memPath; the function it returns writes and closes
// both. Empty paths mean no profile.
func startProfiles(cpuPath, memPath string) (func(zerolog.Logger), error) {
	var cpu *os.File
	if cpuPath != "" {
		f, err := os.OpenFile(cpuPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		cpu = f
	}
	return func(log zerolog.Logger) {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				log.Error().Err(err).Msg("writing the CPU profile")
			}
		}
		if memPath == "" {
			return
		}
		f, err := os.OpenFile(memPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		if err != nil {
			log.Error().Err(err).Msg("writing the allocation profile")
		}
	}, nil
}
