// Command pikobench measures pikod against direct MCP SDK calls and one-shot
// CLIs, and writes a Markdown report (bench/REPORT.md by default) that it
// also prints. Numbers are medians and ratios from one run on this machine;
// nothing here is asserted by any test. `make bench` runs it; bench/README.md
// explains the scenarios and how to read them.
//
// It builds pikod, pikoctl and the fixture MCP server release-like (no race
// detector, -trimpath) into a temporary directory, and gives every scenario
// its own daemon with its own state directory and socket, stopped by pid
// with SIGINT at the end.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// scenarioLetters names the scenarios, in the order they run.
const scenarioLetters = "abcdefgp"

// config is what the flags choose.
type config struct {
	root          string
	out           string
	calls, warmup int
	duration      time.Duration
	ctlRuns       int
	inspectorRuns int
	discoveryRuns int
	interopDir    string
	nodeDir       string
	only          map[string]bool
	perfOut       string
	profileDir    string
	stateRoot     string
}

// results are the figures the targets are judged on; nil when the
// scenario did not run.
type results struct {
	haveLatency                                 bool
	directEcho, directAdd, pikodRead, pikodAuto summary
	readRate32                                  *float64
	ctlP50, ctlHelloP50                         *time.Duration
	rss64                                       *int64
	extra                                       extraResults
	// (b) at concurrency 32, and the slower of the two catalog medians
	// of (e).
	directRate32, autoRate32 float64
	readCPU32                *time.Duration
	catalogP50               *time.Duration
	// The floor relay (floor.go): its p50 at concurrency 1, and its
	// rate and CPU per call (ns) at concurrency 32.
	floorRead               *summary
	floorRate32, floorCPU32 float64
	// fsync is the median time of one small write and fdatasync on the
	// state root's file system.
	fsync time.Duration
	// diskPerRead is the state directory's growth per read call in (p).
	diskPerRead int64
}

type runner struct {
	cfg   config
	bin   *binaries
	nproc int
	res   results
	rep   report
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == floorArg {
		if err := runFloorRelay(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "pikobench floor relay:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pikobench:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	var only string
	flag.StringVar(&cfg.out, "out", "bench/REPORT.md", "report file (relative to the module root)")
	flag.IntVar(&cfg.calls, "calls", 2000, "timed sequential calls per path in (a)")
	flag.IntVar(&cfg.warmup, "warmup", 200, "warm-up calls per path in (a)")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "duration of each throughput level in (b)")
	flag.IntVar(&cfg.ctlRuns, "ctl-runs", 50, "pikoctl process runs per command in (c)")
	flag.IntVar(&cfg.inspectorRuns, "inspector-runs", 8, "one-shot client runs per command in (c)")
	flag.IntVar(&cfg.discoveryRuns, "discovery-runs", 5, "timed discoveries per page size in (e)")
	flag.StringVar(&cfg.interopDir, "interop", "tests/interop", "npm prefix holding server-everything (make interop-deps)")
	flag.StringVar(&cfg.nodeDir, "node", "bench/node", "npm prefix holding @modelcontextprotocol/inspector")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run (letters of "+scenarioLetters+"); default all")
	flag.StringVar(&cfg.stateRoot, "state-root", os.TempDir(), "directory for the daemons' state dirs and sockets (its file system shows in the numbers: retained results are files)")
	flag.StringVar(&cfg.perfOut, "perf", "", "record a perf profile of pikod during the read-grant load at concurrency 32 into this file")
	flag.StringVar(&cfg.profileDir, "profiles", "bench/profiles", "directory for the Go CPU and allocation profiles of pikod written by scenario (p)")
	var sc soakConfig
	soak := flag.Bool("soak", false, "run the soak instead of the scenarios (make soak): -soak-calls calls against one daemon with low retention; writes -soak-out")
	flag.IntVar(&sc.calls, "soak-calls", 5_000_000, "calls in the soak")
	flag.IntVar(&sc.workers, "soak-workers", 32, "concurrent clients in the soak (one in four autonomous)")
	flag.DurationVar(&sc.sample, "soak-sample", 10*time.Second, "the soak's sampling window")
	flag.DurationVar(&sc.compact, "soak-compact", time.Minute, "how often the soak asks for a compaction (0: never; pikod still compacts after prunes that free enough)")
	flag.DurationVar(&sc.interval, "soak-retention-interval", 30*time.Second, "pikod's --retention-interval in the soak")
	flag.StringVar(&sc.out, "soak-out", "bench/SOAK.md", "the soak's report (relative to the module root)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if only != "" {
		cfg.only = map[string]bool{}
		for s := range strings.SplitSeq(only, ",") {
			s = strings.TrimSpace(s)
			if len(s) != 1 || !strings.Contains(scenarioLetters, s) {
				return fmt.Errorf("-only: unknown scenario %q (want one of the letters %s)", s, scenarioLetters)
			}
			cfg.only[s] = true
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cfg.root = root
	for _, p := range []*string{&cfg.out, &cfg.interopDir, &cfg.nodeDir, &cfg.profileDir} {
		if !filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
	// Children the daemon starts must never reach a desktop session bus.
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", "disabled:")

	r := &runner{cfg: cfg, nproc: runtime.NumCPU()}
	r.logf("building pikod, pikoctl and the fixture (-trimpath, no -race)")
	if r.bin, err = buildBinaries(root); err != nil {
		return err
	}
	defer os.RemoveAll(r.bin.dir)
	defer removeInstanceDirs()

	started := time.Now()
	r.rep.header = r.machine(started)
	if *soak {
		sc.out = soakOut(root, sc.out)
		return r.soak(sc)
	}
	var failed []error
	for _, s := range []struct {
		key string
		run func() error
	}{
		{"a", r.scenarioLatency},
		{"b", r.scenarioThroughput},
		{"c", r.scenarioCLI},
		{"d", r.scenarioRSS},
		{"e", r.scenarioDiscovery},
		{"f", r.scenarioExtra},
		{"g", r.scenarioBridge},
		{"p", r.scenarioProfiles},
	} {
		if cfg.only != nil && !cfg.only[s.key] {
			continue
		}
		if err := s.run(); err != nil {
			// Keep going: one broken scenario should not hide the others.
			r.logf("scenario (%s) failed: %v", s.key, err)
			r.rep.section(fmt.Sprintf("(%s) FAILED", s.key), "This scenario did not complete: "+firstLine(err.Error()), nil)
			failed = append(failed, fmt.Errorf("scenario (%s): %w", s.key, err))
		}
	}
	r.rep.targets = r.targets()
	r.rep.footer = fmt.Sprintf("Total benchmark time: %.0f s. Load average at the end (1, 5, 15 min): %s; "+
		"anything else running on the machine shows in the numbers.", time.Since(started).Seconds(), loadAverage())

	text := r.rep.markdown()
	fmt.Print("\n" + text)
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	r.logf("report written to %s", cfg.out)
	return errors.Join(failed...)
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pikobench: "+format+"\n", args...)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// moduleRoot finds the directory of go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root with go env GOMOD: %w", err)
	}
	p := strings.TrimSpace(string(out))
	if p == "" || p == os.DevNull {
		return "", errors.New("not inside the pikod module: run from the repository (make bench)")
	}
	return filepath.Dir(p), nil
}

// machine describes where and when the numbers were taken.
func (r *runner) machine(now time.Time) string {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	cmdOut := func(dir, name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(string(out))
	}
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		mem = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| date | %s |\n", now.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "| commit | %s |\n", cmdOut(r.cfg.root, "git", "describe", "--tags", "--always", "--dirty"))
	fmt.Fprintf(&b, "| cores (nproc) | %d |\n", r.nproc)
	fmt.Fprintf(&b, "| CPU | %s |\n", cpu)
	fmt.Fprintf(&b, "| memory | %s |\n", mem)
	fmt.Fprintf(&b, "| kernel | %s |\n", cmdOut("", "uname", "-sr"))
	fmt.Fprintf(&b, "| Go | %s |\n", runtime.Version())
	fmt.Fprintf(&b, "| node | %s |\n", cmdOut("", "node", "--version"))
	fmt.Fprintf(&b, "| daemon state dirs | %s |\n", fileSystemOf(r.cfg.stateRoot))
	if d, err := fsyncCost(r.cfg.stateRoot); err == nil {
		r.res.fsync = d
		fmt.Fprintf(&b, "| one 4 KiB write + fdatasync there (median of 50) | %s |\n", fmtDur(d))
	} else {
		fmt.Fprintf(&b, "| one 4 KiB write + fdatasync there | not measured: %v |\n", err)
	}
	fmt.Fprintf(&b, "| load average at start (1, 5, 15 min) | %s |\n", loadAverage())
	fmt.Fprintf(&b, "| build | pikod, pikoctl, fixture: `go build -trimpath` (no -race); pikod at its default log level (info) |\n")
	return b.String()
}

// loadAverage reads the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// target is one goal of the issue and what this run measured.
type target struct {
	goal, measured string
	met            *bool
}

func (r *runner) targets() []target {
	verdict := func(ok bool) *bool { return &ok }
	res := r.res
	var ts []target
	add := func(goal string, measured func() (string, bool), have bool) {
		t := target{goal: goal, measured: "not measured"}
		if have {
			m, ok := measured()
			t.measured, t.met = m, verdict(ok)
		}
		ts = append(ts, t)
	}
	add("read call p50 overhead over direct (stdio fixture, concurrency 1) ≤ 100 µs", func() (string, bool) {
		over := res.pikodRead.p50 - res.directEcho.p50
		return fmt.Sprintf("%s (pikod %s, direct %s%s)", fmtDur(over), fmtDur(res.pikodRead.p50), fmtDur(res.directEcho.p50),
			floorNote(res.floorRead != nil, func() string { return "+" + fmtDur(res.floorRead.p50-res.directEcho.p50) })), over <= 100*time.Microsecond
	}, res.haveLatency)
	add("pikod CPU per read call at concurrency 32 ≤ 60 µs", func() (string, bool) {
		return fmtDur(*res.readCPU32) + floorNote(res.floorCPU32 > 0, func() string { return fmtDur(time.Duration(res.floorCPU32)) }), *res.readCPU32 <= 60*time.Microsecond
	}, res.readCPU32 != nil)
	add("read calls/s at concurrency 32 ≥ 0.45 × direct", func() (string, bool) {
		ratio := 0.0
		if res.directRate32 > 0 {
			ratio = *res.readRate32 / res.directRate32
		}
		return fmt.Sprintf("%s calls/s (%.2f × direct %s) on %d cores%s", fmtRate(*res.readRate32), ratio, fmtRate(res.directRate32), r.nproc,
				floorNote(res.floorRate32 > 0 && res.directRate32 > 0, func() string { return fmt.Sprintf("%.2f ×", res.floorRate32/res.directRate32) })),
			ratio >= 0.45
	}, res.readRate32 != nil)
	add("autonomous call p50 at concurrency 1 ≤ direct + 2 fsyncs + 150 µs", func() (string, bool) {
		limit := res.directAdd.p50 + 2*res.fsync + 150*time.Microsecond
		return fmt.Sprintf("%s (direct %s, fsync %s: limit %s)", fmtDur(res.pikodAuto.p50), fmtDur(res.directAdd.p50), fmtDur(res.fsync), fmtDur(limit)),
			res.pikodAuto.p50 <= limit
	}, res.haveLatency && res.fsync > 0)
	add("autonomous calls/s at concurrency 32 ≥ 3,000 (group commit)", func() (string, bool) {
		return fmtRate(res.autoRate32) + " calls/s", res.autoRate32 >= 3000
	}, res.readRate32 != nil)
	add("extensions.mcp.catalog of a connected 10,000-tool server ≤ 100 ms", func() (string, bool) {
		return fmtDur(*res.catalogP50) + " (the slower page size's median)", *res.catalogP50 <= 100*time.Millisecond
	}, res.catalogP50 != nil)
	add("20 MB tool result: wall time ≤ 2 × direct, pikod peak RSS growth ≤ 2.5 × payload", func() (string, bool) {
		x := res.extra
		growth := "not measured"
		if x.bigRSSGrowth >= 0 {
			growth = fmt.Sprintf("%s (×%.1f)", fmtMB(x.bigRSSGrowth), float64(x.bigRSSGrowth)/bigResultBytes)
		}
		return fmt.Sprintf("%s (%s direct), growth %s", fmtDur(x.bigPikod), fmtRatio(x.bigPikod, x.bigDirect), growth),
			x.bigPikod <= 2*x.bigDirect && x.bigRSSGrowth >= 0 && float64(x.bigRSSGrowth) <= 2.5*bigResultBytes
	}, res.extra.have["big"])
	add("read call over Streamable HTTP (loopback): overhead ≤ 120 µs over direct", func() (string, bool) {
		over := res.extra.httpPikod.p50 - res.extra.httpDirect.p50
		return fmt.Sprintf("%s (pikod %s, direct %s)", fmtDur(over), fmtDur(res.extra.httpPikod.p50), fmtDur(res.extra.httpDirect.p50)), over <= 120*time.Microsecond
	}, res.extra.have["http"])
	add(fmt.Sprintf("read overhead with %d secrets in the vault ≤ +15 µs over none", secretCount), func() (string, bool) {
		over := res.extra.redactSecret.p50 - res.extra.redactNone.p50
		return fmt.Sprintf("%s (p50 %s with, %s without)", fmtDur(over), fmtDur(res.extra.redactSecret.p50), fmtDur(res.extra.redactNone.p50)), over <= 15*time.Microsecond
	}, res.extra.have["redaction"])
	add("`pikoctl mcp call` p50 ≤ `pikoctl rpc system.hello` p50 + 1 ms", func() (string, bool) {
		over := *res.ctlP50 - *res.ctlHelloP50
		return fmt.Sprintf("+%s (call %s, hello %s; fixture echo)", fmtDur(over), fmtDur(*res.ctlP50), fmtDur(*res.ctlHelloP50)), over <= time.Millisecond
	}, res.ctlP50 != nil && res.ctlHelloP50 != nil)
	add("pikod RSS with 64 connected servers ≤ 32 MB", func() (string, bool) {
		return fmtMB(*res.rss64), *res.rss64 <= 32_000_000
	}, res.rss64 != nil)
	return ts
}

// floorNote is "; floor relay: " and what f says, or nothing when the
// floor relay was not measured (have is false).
func floorNote(have bool, f func() string) string {
	if !have {
		return ""
	}
	return "; floor relay: " + f()
}

// report is the Markdown document the run produces.
type report struct {
	header   string
	targets  []target
	sections []section
	footer   string
}

type section struct {
	title, note string
	table       *table
}

func (rep *report) section(title, note string, t *table) {
	rep.sections = append(rep.sections, section{title: title, note: note, table: t})
}

type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) markdown() string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(t.header)
	sep := make([]string, len(t.header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

func (rep *report) markdown() string {
	var b strings.Builder
	b.WriteString("# pikod benchmark report\n\n")
	b.WriteString("Written by `make bench` (bench/cmd/pikobench). Medians and ratios from one run on the " +
		"machine below; no test asserts any of them. bench/README.md explains each scenario.\n\n")
	b.WriteString(rep.header + "\n")
	b.WriteString("## Targets\n\n")
	tt := &table{header: []string{"target", "this run", "verdict"}}
	for _, t := range rep.targets {
		v := "not measured"
		if t.met != nil {
			v = map[bool]string{true: "met", false: "not met"}[*t.met]
		}
		tt.add(t.goal, t.measured, v)
	}
	b.WriteString(tt.markdown() + "\n")
	for _, t := range rep.targets {
		switch {
		case t.met == nil:
			fmt.Fprintf(&b, "- Target %s: not measured in this run.\n", t.goal)
		case *t.met:
			fmt.Fprintf(&b, "- Target %s: met (%s).\n", t.goal, t.measured)
		default:
			fmt.Fprintf(&b, "- Target %s: not met (%s).\n", t.goal, t.measured)
		}
	}
	b.WriteString("\n")
	for _, s := range rep.sections {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", s.title, s.note)
		if s.table != nil {
			b.WriteString(s.table.markdown() + "\n")
		}
	}
	b.WriteString(rep.footer + "\n")
	return b.String()
}

// fsyncCost is the median time of a 4 KiB write and fdatasync of a file
// in dir: the floor under every durable commit there.
func fsyncCost(dir string) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "pkb-fsync-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var times []time.Duration
	for i := range 50 {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i%8)*4096); err != nil {
			return 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
	}
	return median(times), nil
}
