package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
)

// Defaults of Spec.
const (
	DefaultWriteTimeout    = 10 * time.Second
	DefaultStderrRingBytes = 16 << 10
	DefaultCloseGrace      = 2 * time.Second
	DefaultTermGrace       = 3 * time.Second
	// DefaultPATH is the child's PATH when neither the spec nor pikod's own
	// environment has one.
	DefaultPATH = "/usr/local/bin:/usr/bin:/bin"
)

// Spec describes one stdio server child.
type Spec struct {
	// ServerID names the server in errors, logs, records and the home dir.
	ServerID string
	// Command is an absolute path or a bare name looked up in PATH (the
	// child's PATH, not pikod's, with exec.LookPath rules except that
	// relative PATH entries are skipped). It runs without a shell.
	Command string
	// Args are passed verbatim: no shell, no $VAR expansion, no globbing.
	Args []string
	// Cwd is the absolute working directory; "" means the disposable home.
	Cwd string
	// Env is the configured env plus secrets, applied last (it may override
	// the defaults). Values never appear in logs or errors.
	Env map[string]string
	// MaxLineBytes caps one stdout line (the server's maxBytes). Default
	// contracts.DefaultMaxBytes.
	MaxLineBytes int
	// WriteTimeout bounds each stdin write. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// RunDir is the absolute parent of disposable homes (STATE/run); it is
	// created 0700 if missing.
	RunDir string
	// CacheDir, when set, is the absolute persistent cache directory of
	// this server (STATE/cache/<id>), created 0700 if missing and kept
	// across connects so npx and uvx start from their caches. The child
	// gets it as XDG_CACHE_HOME, with npm_config_cache=CacheDir/npm and
	// UV_CACHE_DIR=CacheDir/uv; "" leaves the cache in the disposable home.
	CacheDir string
	// StderrRingBytes is how much of the stderr tail is kept. Default
	// DefaultStderrRingBytes.
	StderrRingBytes int
	// Redact removes secret values from each stderr line before the line
	// enters the tail; nil removes nothing.
	Redact func(string) string
	// PATH is the child's PATH. Default: pikod's own PATH value (a search
	// path is not secret and servers started through npx or uvx need the
	// owner's toolchain), else DefaultPATH. Relative entries (including the
	// empty entry, which means ".") are dropped so the cwd cannot shadow a
	// command.
	PATH string
	// CloseGrace is the wait after closing stdin before SIGTERM. Default
	// DefaultCloseGrace.
	CloseGrace time.Duration
	// TermGrace is the wait after SIGTERM before SIGKILL. Default
	// DefaultTermGrace.
	TermGrace time.Duration
	// ShortTempDir gives the child a private temporary directory with a
	// short path (os.MkdirTemp under /tmp, 0700) as TMPDIR instead of the
	// one in its home, removed with the home: a browser's Unix sockets
	// there must fit the 107-byte path limit.
	ShortTempDir bool
}

func (s Spec) withDefaults() Spec {
	if s.MaxLineBytes <= 0 {
		s.MaxLineBytes = contracts.DefaultMaxBytes
	}
	if s.WriteTimeout <= 0 {
		s.WriteTimeout = DefaultWriteTimeout
	}
	if s.StderrRingBytes <= 0 {
		s.StderrRingBytes = DefaultStderrRingBytes
	}
	if s.CloseGrace <= 0 {
		s.CloseGrace = DefaultCloseGrace
	}
	if s.TermGrace <= 0 {
		s.TermGrace = DefaultTermGrace
	}
	if s.PATH == "" {
		s.PATH = os.Getenv("PATH")
	}
	s.PATH = absolutePATH(s.PATH)
	if s.PATH == "" {
		s.PATH = DefaultPATH
	}
	return s
}

// absolutePATH drops relative and empty entries from a PATH value.
func absolutePATH(path string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// Start starts spec's command in its own process group with a
// scrubbed environment and a disposable home, and records the group in
// records before returning. The caller must Stop the Process.
func Start(spec Spec, records Records, log zerolog.Logger) (*Process, error) {
	spec = spec.withDefaults()
	if spec.ServerID == "" {
		return nil, fmt.Errorf("starting a server process: empty server id: %w", contracts.ErrInvalidArgument)
	}
	if records == nil {
		return nil, fmt.Errorf("starting server %q: no process records store: %w", spec.ServerID, contracts.ErrInvalidArgument)
	}
	if !filepath.IsAbs(spec.RunDir) {
		return nil, fmt.Errorf("starting server %q: run dir %q is not absolute: %w", spec.ServerID, spec.RunDir, contracts.ErrInvalidArgument)
	}
	// The lookup uses the PATH the child will see; a PATH from Env (which
	// may hold secrets) is not quoted in errors.
	lookPATH, showPATH := spec.PATH, true
	if v, ok := spec.Env["PATH"]; ok {
		lookPATH, showPATH = v, false
	}
	bin, err := lookCommand(spec.Command, lookPATH, showPATH)
	if err != nil {
		return nil, fmt.Errorf("starting server %q: %w", spec.ServerID, err)
	}
	if spec.Cwd != "" {
		if err := checkCwd(spec.Cwd); err != nil {
			return nil, fmt.Errorf("starting server %q: %w", spec.ServerID, err)
		}
	}
	if err := os.MkdirAll(spec.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("starting server %q: creating run dir: %w", spec.ServerID, err)
	}
	if spec.CacheDir != "" {
		if !filepath.IsAbs(spec.CacheDir) {
			return nil, fmt.Errorf("starting server %q: cache dir %q is not absolute: %w", spec.ServerID, spec.CacheDir, contracts.ErrInvalidArgument)
		}
		if err := os.MkdirAll(spec.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("starting server %q: creating cache dir: %w", spec.ServerID, err)
		}
	}
	mark, err := newMark()
	if err != nil {
		return nil, fmt.Errorf("starting server %q: %w", spec.ServerID, err)
	}
	var tmp string
	if spec.ShortTempDir {
		if tmp, err = os.MkdirTemp(shortTempBase(), "pikod-"); err != nil {
			return nil, fmt.Errorf("starting server %q: creating a short temporary directory: %w", spec.ServerID, err)
		}
		spec.Env = withTMPDIR(spec.Env, tmp)
	}
	home, env, err := makeHome(spec, mark)
	if err != nil {
		removeTemp(tmp)
		return nil, fmt.Errorf("starting server %q: %w", spec.ServerID, err)
	}
	cwd := spec.Cwd
	if cwd == "" {
		cwd = home
	}

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		_ = os.RemoveAll(home)
		removeTemp(tmp)
		return nil, fmt.Errorf("starting server %q: creating pipes: %w", spec.ServerID, err)
	}

	cmd := &exec.Cmd{
		Path:   bin,
		Args:   append([]string{spec.Command}, spec.Args...),
		Env:    env,
		Dir:    cwd,
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
		// A session of its own: the server leads its process group and
		// has no controlling terminal, so it can never reach the terminal
		// pikod runs on (make run) to pass the owner checks.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		_ = os.RemoveAll(home)
		removeTemp(tmp)
		return nil, fmt.Errorf("starting server %q: running %q: %w", spec.ServerID, bin, err)
	}
	addLeader(cmd.Process.Pid)
	// The child holds its own copies; ours would keep stdout and stderr
	// from ever reaching EOF.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	// The caller's logger names the server already (one "server" key).
	p := &Process{
		spec:       spec,
		records:    records,
		log:        log,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		startedAt:  time.Now(),
		home:       home,
		tmp:        tmp,
		outR:       outR,
		errR:       errR,
		tail:       newStderrTail(spec.StderrRingBytes, spec.Redact),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
		stopScan:   make(chan struct{}),
		scanDone:   make(chan struct{}),
		escapees:   make(map[int]uint64),
		mark:       mark,
		unmarked:   make(map[procKey]bool),
	}
	p.stdin = &stdinWriter{p: p, f: inW, timeout: spec.WriteTimeout}
	p.stdout = &lineCapReader{p: p, f: outR, max: spec.MaxLineBytes}

	go p.own()
	go p.drainStderr()

	// The leader cannot vanish before it is reaped, so its start time is
	// readable here whatever it does.
	info, ok := readProc(p.pid)
	if !ok {
		err = fmt.Errorf("reading the start time of pid %d", p.pid)
	} else {
		p.ticks = info.Ticks
		err = records.PutProcess(Record{ServerID: spec.ServerID, PID: p.pid, PGID: p.pid, StartTicks: p.ticks, HomeDir: home, TempDir: tmp, Mark: mark})
	}
	if err != nil {
		// Without a durable record a daemon crash would leak the group:
		// refuse to run it.
		close(p.stopScan)
		close(p.scanDone)
		_ = p.stop(context.Background(), false)
		return nil, fmt.Errorf("starting server %q: recording process group %d: %w", spec.ServerID, p.pid, err)
	}
	go p.scanLoop()

	log.Info().Int("pid", p.pid).Int("pgid", p.pid).Str("command", bin).Str("home", home).Msg("server process started")
	return p, nil
}

// lookCommand resolves command in path. A command with a slash must be
// absolute: a relative one would depend on pikod's own cwd.
func lookCommand(command, path string, showPATH bool) (string, error) {
	if command == "" {
		return "", fmt.Errorf("empty command: %w", contracts.ErrInvalidArgument)
	}
	if strings.ContainsRune(command, '/') {
		if !filepath.IsAbs(command) {
			return "", fmt.Errorf("command %q must be an absolute path or a bare name looked up in PATH: %w", command, contracts.ErrInvalidArgument)
		}
		if err := checkExecutable(command); err != nil {
			return "", fmt.Errorf("command %q cannot be run: %w: %w", command, err, contracts.ErrFailedPrecondition)
		}
		return command, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, command)
		if checkExecutable(cand) == nil {
			return cand, nil
		}
	}
	where := "PATH from env"
	if showPATH {
		where = fmt.Sprintf("PATH %q", path)
	}
	return "", fmt.Errorf("command %q not found in %s (install it or give an absolute path): %w", command, where, contracts.ErrFailedPrecondition)
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("cwd %q is not an absolute path: %w", cwd, contracts.ErrInvalidArgument)
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return fmt.Errorf("cwd %q is not usable (create it or fix the setting): %w: %w", cwd, err, contracts.ErrFailedPrecondition)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cwd %q is not a directory: %w", cwd, contracts.ErrFailedPrecondition)
	}
	return nil
}

// homeSubdirs are created 0700 inside a disposable home; the env var
// naming each comes first.
var homeSubdirs = [][2]string{
	{"TMPDIR", "tmp"},
	{"XDG_CONFIG_HOME", ".config"},
	{"XDG_CACHE_HOME", ".cache"},
	{"XDG_DATA_HOME", ".local/share"},
	{"XDG_STATE_HOME", ".local/state"},
	{"XDG_RUNTIME_DIR", "run"},
}

// makeHome creates RunDir/<id>-<random> with its XDG tree and returns the
// child's whole environment, built from nothing: pikod's own environment
// may hold tokens and must never leak to a server. MarkVariable=mark comes
// last, so no configured env can replace it.
func makeHome(spec Spec, mark string) (string, []string, error) {
	home, err := os.MkdirTemp(spec.RunDir, safeName(spec.ServerID)+"-")
	if err != nil {
		return "", nil, fmt.Errorf("creating a disposable home: %w", err)
	}
	vars := map[string]string{
		"PATH":   spec.PATH,
		"HOME":   home,
		"LANG":   "C.UTF-8",
		"LC_ALL": "C.UTF-8",
	}
	for _, sd := range homeSubdirs {
		dir := filepath.Join(home, sd[1])
		if err := os.MkdirAll(dir, 0o700); err != nil {
			_ = os.RemoveAll(home)
			return "", nil, fmt.Errorf("creating a disposable home: %w", err)
		}
		vars[sd[0]] = dir
	}
	// The persistent cache replaces the disposable one; package managers
	// that ignore XDG get their own variables. Configured env still wins.
	if spec.CacheDir != "" {
		vars["XDG_CACHE_HOME"] = spec.CacheDir
		vars["npm_config_cache"] = filepath.Join(spec.CacheDir, "npm")
		vars["UV_CACHE_DIR"] = filepath.Join(spec.CacheDir, "uv")
	}
	for k, v := range spec.Env {
		vars[k] = v
	}
	vars[MarkVariable] = mark
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return home, env, nil
}

// shortTempBase is where short temporary directories go: /tmp when it is
// a directory, else the system's temporary directory.
func shortTempBase() string {
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		return "/tmp"
	}
	return os.TempDir()
}

// withTMPDIR returns env with TMPDIR (and TMP, TEMP) set to dir, unless
// the configured env names TMPDIR itself.
func withTMPDIR(env map[string]string, dir string) map[string]string {
	out := make(map[string]string, len(env)+3)
	out["TMPDIR"], out["TMP"], out["TEMP"] = dir, dir, dir
	for k, v := range env {
		out[k] = v
	}
	return out
}

// removeTemp removes a short temporary directory ("" is none).
func removeTemp(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// safeName keeps a server id usable as a file-name prefix.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, id)
}
