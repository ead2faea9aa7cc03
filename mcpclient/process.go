package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/rs/zerolog"
)

// Defaults of ProcessSpec.
const (
	DefaultWriteTimeout    = 10 * time.Second
	DefaultStderrRingBytes = 16 << 10
	DefaultCloseGrace      = 2 * time.Second
	DefaultTermGrace       = 3 * time.Second
	// DefaultPATH is the child's PATH when neither the spec nor pikod's own
	// environment has one.
	DefaultPATH = "/usr/local/bin:/usr/bin:/bin"

	// killWait bounds the wait for processes to vanish after SIGKILL: only
	// a process stuck in uninterruptible sleep takes longer.
	killWait = 5 * time.Second
	// pollEvery is how often /proc is re-read while waiting for a group to
	// empty. Exit of the leader is seen at once through Done.
	pollEvery = 20 * time.Millisecond
	// firstScanAfter and scanEvery pace the escapee scan.
	firstScanAfter = 200 * time.Millisecond
	scanEvery      = time.Second
)

// ErrMessageTooLarge is wrapped by the error Process.Stdout returns when the
// server writes a line longer than MaxLineBytes. It is in the
// ErrResourceExhausted class.
var ErrMessageTooLarge = fmt.Errorf("message over maxBytes: %w", contracts.ErrResourceExhausted)

// ProcessSpec describes one stdio server child.
type ProcessSpec struct {
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
}

func (s ProcessSpec) withDefaults() ProcessSpec {
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

// Process is one supervised stdio child: the leader of its own process
// group. Hand Stdout, Stdin (and nothing for stderr: the Process drains it)
// to transport.NewIO. Every Process must be stopped, even after it exited
// on its own: on Linux the exited leader is kept as a zombie until Stop so
// its group id cannot be reused while pikod may still signal the group.
type Process struct {
	spec    ProcessSpec
	records ProcessRecords
	log     zerolog.Logger

	cmd       *exec.Cmd
	pid       int
	ticks     uint64
	startedAt time.Time
	home      string

	stdin  *stdinWriter
	stdout *lineCapReader
	outR   *os.File
	errR   *os.File
	tail   *stderrTail

	done       chan struct{} // closed by the owner goroutine when the leader exited
	stderrDone chan struct{} // closed when the stderr drain ends
	stopScan   chan struct{} // closed by Stop to end the escapee scan
	scanDone   chan struct{} // closed when the escapee scan ends

	stopOnce sync.Once
	stopErr  error

	// scanMu serialises escapee scans (the loop, ScanNow and Stop).
	scanMu sync.Mutex

	// mu guards the fields that follow.
	mu         sync.Mutex
	exitStatus string
	escapees   map[int]uint64 // pid -> start ticks of recorded setsid escapees
	reaped     bool           // the leader was reaped: its pgid may be reused
	closeErr   error
}

// StartProcess starts spec's command in its own process group with a
// scrubbed environment and a disposable home, and records the group in
// records before returning. The caller must Stop the Process.
func StartProcess(spec ProcessSpec, records ProcessRecords, log zerolog.Logger) (*Process, error) {
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
	home, env, err := makeHome(spec)
	if err != nil {
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
		return nil, fmt.Errorf("starting server %q: creating pipes: %w", spec.ServerID, err)
	}

	cmd := &exec.Cmd{
		Path:        bin,
		Args:        append([]string{spec.Command}, spec.Args...),
		Env:         env,
		Dir:         cwd,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		_ = os.RemoveAll(home)
		return nil, fmt.Errorf("starting server %q: running %q: %w", spec.ServerID, bin, err)
	}
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
		outR:       outR,
		errR:       errR,
		tail:       newStderrTail(spec.StderrRingBytes, spec.Redact),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
		stopScan:   make(chan struct{}),
		scanDone:   make(chan struct{}),
		escapees:   make(map[int]uint64),
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
		err = records.PutProcess(ProcessRecord{ServerID: spec.ServerID, PID: p.pid, PGID: p.pid, StartTicks: p.ticks, HomeDir: home})
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
// may hold tokens and must never leak to a server.
func makeHome(spec ProcessSpec) (string, []string, error) {
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
	for k, v := range spec.Env {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return home, env, nil
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

// Stdout returns the child's stdout, capped per line: a line over
// MaxLineBytes ends the stream with an error wrapping ErrMessageTooLarge
// (complete lines before it are still delivered).
func (p *Process) Stdout() io.Reader { return p.stdout }

// Stdin returns the child's stdin. Each Write must make progress within
// WriteTimeout; after a timeout every later Write fails too, since a frame
// may have been cut in half.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// StderrTail returns the last StderrRingBytes of stderr, redacted line by
// line (ProcessSpec.Redact) and made safe for a terminal
// (contracts.SafeText: escapes and controls rendered visibly, lines kept),
// as valid UTF-8.
func (p *Process) StderrTail() string {
	return contracts.SafeText(p.tail.String(), contracts.Lines, 0)
}

// PID returns the leader's pid.
func (p *Process) PID() int { return p.pid }

// PGID returns the process group id (the leader's pid).
func (p *Process) PGID() int { return p.pid }

// StartedAt returns when the child was started.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// HomeDir returns the disposable home, removed by Stop.
func (p *Process) HomeDir() string { return p.home }

// Done is closed when the leader has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus describes how the leader ended ("exit status 3",
// "signal: killed"); "" while it runs.
func (p *Process) ExitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitStatus
}

// CloseReason returns why pikod gave up on the connection (an oversized
// stdout line, a stdin write timeout), or nil.
func (p *Process) CloseReason() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closeErr
}

func (p *Process) setCloseReason(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closeErr == nil {
		p.closeErr = err
	}
}

// Owns reports whether pid belongs to this server: its leader, a recorded
// escapee, or (until the leader is reaped) a member of its group. The
// supervisor's known func for SweepAdopted is built from it.
func (p *Process) Owns(pid int) bool {
	if pid == p.pid {
		return true
	}
	p.mu.Lock()
	_, esc := p.escapees[pid]
	reaped := p.reaped
	p.mu.Unlock()
	if esc {
		return true
	}
	if reaped {
		return false
	}
	info, ok := readProc(pid)
	return ok && info.PGID == p.pid
}

// own waits for the leader to exit and publishes how it ended.
func (p *Process) own() {
	status := awaitExit(p)
	p.mu.Lock()
	p.exitStatus = status
	p.mu.Unlock()
	close(p.done)
	p.log.Info().Int("pid", p.pid).Str("exit_status", status).Msg("server process exited")
}

func (p *Process) drainStderr() {
	defer close(p.stderrDone)
	_, _ = io.Copy(p.tail, p.errR)
	_ = p.tail.Close()
}

func (p *Process) scanLoop() {
	defer close(p.scanDone)
	t := time.NewTimer(firstScanAfter)
	defer t.Stop()
	for {
		select {
		case <-p.stopScan:
			return
		case <-t.C:
			p.ScanNow()
			t.Reset(scanEvery)
		}
	}
}

// ScanNow looks for descendants of the group that left it (setsid, setpgid)
// and records each, with its start time, as an escapee that Stop and
// ReapOrphans will kill. It runs every second on its own; an escapee that
// appears and detaches from the tree (its parent exits) between two scans
// is missed, and so is one that double-forks away after pikod died. It
// returns how many new escapees it recorded.
func (p *Process) ScanNow() int {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	p.mu.Lock()
	if p.reaped {
		p.mu.Unlock()
		return 0
	}
	known := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		known[pid] = t
	}
	p.mu.Unlock()

	procs, err := listProcs()
	if err != nil {
		p.log.Warn().Err(err).Msg("listing processes for escapees")
		return 0
	}
	children := make(map[int][]procInfo)
	byPID := make(map[int]procInfo, len(procs))
	for _, pr := range procs {
		children[pr.PPID] = append(children[pr.PPID], pr)
		byPID[pr.PID] = pr
	}
	var queue []procInfo
	for _, pr := range procs {
		if pr.PGID == p.pid {
			queue = append(queue, pr)
		}
	}
	for pid, t := range known {
		if pr, ok := byPID[pid]; ok && pr.Ticks == t {
			queue = append(queue, pr)
		} else {
			p.forgetEscapee(pid)
		}
	}
	seen := make(map[int]bool)
	var found []procInfo
	for len(queue) > 0 {
		pr := queue[0]
		queue = queue[1:]
		if seen[pr.PID] {
			continue
		}
		seen[pr.PID] = true
		if pr.PGID != p.pid && !pr.Zombie {
			if t, ok := known[pr.PID]; !ok || t != pr.Ticks {
				found = append(found, pr)
			}
		}
		queue = append(queue, children[pr.PID]...)
	}
	for _, pr := range found {
		p.mu.Lock()
		p.escapees[pr.PID] = pr.Ticks
		p.mu.Unlock()
		rec := ProcessRecord{ServerID: p.spec.ServerID, PID: pr.PID, PGID: pr.PGID, StartTicks: pr.Ticks, Escapee: true}
		if err := p.records.PutProcess(rec); err != nil {
			p.log.Warn().Err(err).Int("pid", pr.PID).Msg("recording escaped process")
		}
		p.log.Info().Int("pid", pr.PID).Int("pgid", pr.PGID).Msg("server process left its group; recorded")
	}
	return len(found)
}

func (p *Process) forgetEscapee(pid int) {
	p.mu.Lock()
	delete(p.escapees, pid)
	p.mu.Unlock()
	if err := p.records.DeleteProcess(pid); err != nil {
		p.log.Warn().Err(err).Int("pid", pid).Msg("deleting the record of a gone escapee")
	}
}

// Stop ends the child: close stdin, wait CloseGrace, SIGTERM the group and
// the recorded escapees, wait TermGrace, SIGKILL them; then reap, remove
// the home and delete the records. A done ctx skips the graceful waits.
// It is idempotent and safe to call concurrently; later callers get the
// first result. Records are kept when something survived SIGKILL so the
// next daemon start retries.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.stopErr = p.stop(ctx, true)
	})
	return p.stopErr
}

func (p *Process) stop(ctx context.Context, graceful bool) error {
	_ = p.stdin.Close()
	if graceful {
		p.waitGone(ctx, p.spec.CloseGrace)
	}
	if graceful && p.alive() > 0 && ctx.Err() == nil {
		p.ScanNow()
		p.signalAll(syscall.SIGTERM)
		p.waitGone(ctx, p.spec.TermGrace)
	}
	var errs []error
	if p.alive() > 0 {
		p.ScanNow()
		p.signalAll(syscall.SIGKILL)
		if !p.waitGone(context.Background(), killWait) {
			errs = append(errs, fmt.Errorf("stopping server %q: processes of group %d survived SIGKILL", p.spec.ServerID, p.pid))
		}
	}
	select {
	case <-p.stopScan:
	default:
		close(p.stopScan)
	}
	<-p.scanDone

	select {
	case <-p.done:
		// Under scanMu so that no scan uses the group id once it is free.
		p.scanMu.Lock()
		reapLeader(p)
		p.mu.Lock()
		p.reaped = true
		p.mu.Unlock()
		p.scanMu.Unlock()
	default:
	}
	// Anything still holding the pipes is beyond reach; closing our ends
	// ends the drain and mcp-go's reader.
	_ = p.outR.Close()
	_ = p.errR.Close()
	<-p.stderrDone

	if err := os.RemoveAll(p.home); err != nil {
		errs = append(errs, fmt.Errorf("stopping server %q: removing home: %w", p.spec.ServerID, err))
	}
	if len(errs) == 0 {
		p.mu.Lock()
		pids := make([]int, 0, len(p.escapees))
		for pid := range p.escapees {
			pids = append(pids, pid)
		}
		p.mu.Unlock()
		for _, pid := range append(pids, p.pid) {
			if err := p.records.DeleteProcess(pid); err != nil {
				errs = append(errs, fmt.Errorf("stopping server %q: deleting process record %d: %w", p.spec.ServerID, pid, err))
			}
		}
		// The pids are free for reuse now: Owns must not claim them.
		p.mu.Lock()
		clear(p.escapees)
		p.mu.Unlock()
	}
	err := errors.Join(errs...)
	p.log.Info().Int("pid", p.pid).Str("exit_status", p.ExitStatus()).AnErr("error", err).Msg("server process stopped")
	return err
}

// waitGone waits up to d (or until ctx ends) for the whole tree to go.
func (p *Process) waitGone(ctx context.Context, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	done := p.done
	for {
		if p.alive() == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return p.alive() == 0
		case <-done:
			done = nil // seen once; later members are polled
		case <-tick.C:
		}
	}
}

// alive counts the living processes of the tree: the leader until it
// exits, group members and recorded escapees. Members and escapees that
// died as pikod's adopted children (subreaper) are reaped on the way.
func (p *Process) alive() int {
	n := 0
	select {
	case <-p.done:
	default:
		n++
	}
	procs, err := listProcs()
	if err != nil {
		p.log.Warn().Err(err).Msg("listing processes")
		return n + 1
	}
	p.mu.Lock()
	esc := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		esc[pid] = t
	}
	p.mu.Unlock()
	self := os.Getpid()
	for _, pr := range procs {
		if pr.PID == p.pid {
			continue
		}
		t, isEsc := esc[pr.PID]
		if pr.PGID != p.pid && (!isEsc || t != pr.Ticks) {
			continue
		}
		if pr.Zombie {
			if pr.PPID == self {
				reapChild(pr.PID, 0)
			}
			continue
		}
		n++
	}
	return n
}

// signalAll signals the group and every recorded escapee. The group is
// signalled by number, which is safe because the leader is not reaped
// before Stop is done with it.
func (p *Process) signalAll(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.log.Warn().Err(err).Int("pgid", p.pid).Str("signal", sig.String()).Msg("signalling server process group")
	}
	p.mu.Lock()
	esc := make(map[int]uint64, len(p.escapees))
	for pid, t := range p.escapees {
		esc[pid] = t
	}
	p.mu.Unlock()
	for pid, t := range esc {
		if _, err := signalVerified(pid, t, sig); err != nil {
			p.log.Warn().Err(err).Int("pid", pid).Str("signal", sig.String()).Msg("signalling escaped server process")
		}
	}
	p.log.Info().Int("pgid", p.pid).Int("escapees", len(esc)).Str("signal", sig.String()).Msg("signalled server processes")
}

// reapChild reaps pid if it is pikod's child, polling up to within.
// It waits for that pid only, never -1: a wildcard wait would steal exit
// statuses that os/exec is waiting for.
func reapChild(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case wpid == pid, errors.Is(err, syscall.ECHILD):
			return true
		case err != nil:
			return false
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// describeExit formats an exit like os.ProcessState.String.
func describeExit(exited bool, code int, sig syscall.Signal, core bool) string {
	if exited {
		return fmt.Sprintf("exit status %d", code)
	}
	s := "signal: " + sig.String()
	if core {
		s += " (core dumped)"
	}
	return s
}

// lineCapReader passes stdout through while counting bytes since the last
// newline.
type lineCapReader struct {
	p   *Process
	f   *os.File
	max int

	// mu guards the fields that follow (mcp-go reads from one goroutine,
	// but nothing forbids two).
	mu   sync.Mutex
	line int
	err  error
}

func (r *lineCapReader) Read(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.f.Read(b)
	for i := 0; i < n; i++ {
		if b[i] == '\n' {
			r.line = 0
			continue
		}
		r.line++
		if r.line > r.max {
			r.err = &messageTooLargeError{server: r.p.spec.ServerID, max: r.max}
			r.p.setCloseReason(r.err)
			r.p.log.Warn().Int("max_bytes", r.max).Msg("server sent an oversized message; closing the connection")
			// Deliver the complete lines before the oversized one.
			keep := 0
			for j := i; j > 0; j-- {
				if b[j-1] == '\n' {
					keep = j
					break
				}
			}
			if keep > 0 {
				return keep, nil
			}
			return 0, r.err
		}
	}
	return n, err
}

type messageTooLargeError struct {
	server string
	max    int
}

func (e *messageTooLargeError) Error() string {
	return fmt.Sprintf("server %q sent a message over maxBytes (%d bytes): closing the connection", e.server, e.max)
}

func (e *messageTooLargeError) Unwrap() error { return ErrMessageTooLarge }

// stdinWriter gives every Write a deadline. os.Pipe files are pollable, so
// SetWriteDeadline works on them. Every Write is one frame (mcp-go writes
// each message, newline included, in one call), and the writer records
// whether any byte of it went into the pipe: a failed Write that wrote
// nothing carries an unsentError, and written counts every byte that did
// go, so a caller can tell that nothing at all was written while its
// request was out.
type stdinWriter struct {
	p         *Process
	f         *os.File
	timeout   time.Duration
	closeOnce sync.Once
	// written counts the bytes that went into the pipe.
	written atomic.Uint64

	// mu serialises writes and guards err.
	mu  sync.Mutex
	err error
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, &unsentError{err: w.err}
	}
	if err := w.f.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		// Closed by Stop (os.ErrClosed) or never pollable: nothing written.
		return 0, &unsentError{err: fmt.Errorf("writing to server %q: %w", w.p.spec.ServerID, err)}
	}
	n, err := w.f.Write(b)
	w.written.Add(uint64(n))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.err = fmt.Errorf("writing to server %q: stdin took nothing for %s (the server is not reading): %w: %w", w.p.spec.ServerID, w.timeout, contracts.ErrDeadlineExceeded, err)
			w.p.setCloseReason(w.err)
			w.p.log.Warn().Dur("write_timeout", w.timeout).Int("frame_bytes_written", n).Msg("server stopped reading stdin; closing the connection")
			err = w.err
		} else {
			err = fmt.Errorf("writing to server %q: %w", w.p.spec.ServerID, err)
		}
		if n == 0 {
			// A pipe whose reader is gone (EPIPE) or a full pipe that
			// took nothing: not one byte of this frame left.
			return 0, &unsentError{err: err}
		}
		return n, err
	}
	return n, nil
}

// StdinWritten returns how many bytes have gone into the server's stdin.
// When it is the same before and after a request, not one byte of that
// request was written.
func (p *Process) StdinWritten() uint64 { return p.stdin.written.Load() }

// Close closes stdin at once, failing a Write in progress; closing twice
// is not an error.
func (w *stdinWriter) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.f.Close() })
	return err
}
