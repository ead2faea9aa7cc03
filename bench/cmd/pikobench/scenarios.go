package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// Arguments of the trivial calls, the same bytes on every path.
var (
	echoArgs = map[string]any{"text": "hi"}
	addArgs  = map[string]any{"a": 1, "b": 2}
	readCall = contracts.CallParams{Server: "fx", Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}
	autoCall = contracts.CallParams{Server: "fx", Tool: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}
)

// fixtureConf is the fx server: echo under the read grant, add under the
// autonomous grant.
func fixtureConf(fixture string) server {
	return server{ID: "fx", Transport: "stdio", Command: fixture,
		Tools: []string{"echo", "add"}, ReadOnlyTools: []string{"echo"}, AutonomousTools: []string{"add"}}
}

// series runs f warmup times, then n timed times, and returns the timings.
func series(warmup, n int, f func() error) ([]time.Duration, error) {
	for range warmup {
		if err := f(); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// withFixtureDaemon starts a daemon with the fx fixture server configured
// and connected, runs f, and stops the daemon.
func (r *runner) withFixtureDaemon(extra []server, f func(d *daemonProc) error, daemonArgs ...string) error {
	return r.withDaemon(append([]server{fixtureConf(r.bin.fixture)}, extra...), f, daemonArgs...)
}

// withDaemon starts a daemon with the servers all configured and
// connected, runs f, and stops the daemon.
func (r *runner) withDaemon(all []server, f func(d *daemonProc) error, daemonArgs ...string) error {
	d, err := startDaemon(r.bin, r.cfg.stateRoot, daemonArgs...)
	if err != nil {
		return err
	}
	ferr := func() error {
		if err := d.configure(settings{Servers: all}); err != nil {
			return fmt.Errorf("configuring: %w", err)
		}
		for _, s := range all {
			if _, err := d.connect(s.ID); err != nil {
				return fmt.Errorf("connecting %s: %w", s.ID, err)
			}
		}
		return f(d)
	}()
	return errors.Join(ferr, d.stop())
}

// scenarioLatency is (a): sequential trivial calls, direct versus through
// pikod, for the read and autonomous grants.
func (r *runner) scenarioLatency() error {
	r.logf("(a) latency: direct mcp-go client")
	dc, err := startDirect(r.bin.fixture)
	if err != nil {
		return err
	}
	directEcho, err := series(r.cfg.warmup, r.cfg.calls, func() error { return dc.call("echo", echoArgs) })
	if err == nil {
		var directAdd []time.Duration
		directAdd, err = series(r.cfg.warmup, r.cfg.calls, func() error { return dc.call("add", addArgs) })
		r.res.directAdd = summarize(directAdd)
	}
	dc.close()
	if err != nil {
		return fmt.Errorf("direct calls: %w", err)
	}
	r.res.directEcho = summarize(directEcho)

	r.logf("(a) latency: the floor relay")
	floorCPU := "—"
	fr, err := r.startFloorRelay()
	if err != nil {
		return err
	}
	floor, err := func() ([]time.Duration, error) {
		defer fr.stop()
		c, err := fr.dial()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cpu0 := procCPU(fr.pid())
		lat, err := series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, readCall) })
		if cpu1 := procCPU(fr.pid()); err == nil && cpu0 >= 0 && cpu1 >= 0 {
			floorCPU = fmtDur((cpu1 - cpu0) / time.Duration(r.cfg.warmup+r.cfg.calls))
		}
		return lat, err
	}()
	if err != nil {
		return fmt.Errorf("floor relay calls: %w", err)
	}
	floorRead := summarize(floor)
	r.res.floorRead = &floorRead

	r.logf("(a) latency: through pikod")
	readCPU, autoCPU := "—", "—"
	err = r.withFixtureDaemon(nil, func(d *daemonProc) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		// CPU per call covers the warm-up calls too.
		perCall := func(before time.Duration) string {
			after := procCPU(d.pid())
			if before < 0 || after < 0 {
				return "—"
			}
			return fmtDur((after - before) / time.Duration(r.cfg.warmup+r.cfg.calls))
		}
		cpu0 := procCPU(d.pid())
		readLat, err := series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, readCall) })
		if err != nil {
			return fmt.Errorf("read-grant calls: %w", err)
		}
		readCPU = perCall(cpu0)
		cpu0 = procCPU(d.pid())
		autoLat, err := series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, autoCall) })
		if err != nil {
			return fmt.Errorf("autonomous-grant calls: %w", err)
		}
		autoCPU = perCall(cpu0)
		r.res.pikodRead, r.res.pikodAuto = summarize(readLat), summarize(autoLat)
		return nil
	})
	if err != nil {
		return err
	}
	r.res.haveLatency = true

	t := &table{header: []string{"path", "tool", "p50", "p90", "p99", "mean", "p50 overhead", "p50 ratio", "pikod CPU/call"}}
	row := func(path, tool string, s, base summary, isBase bool, cpu string) {
		over, ratio := "—", "—"
		if !isBase {
			over, ratio = fmtDur(s.p50-base.p50), fmtRatio(s.p50, base.p50)
		}
		t.add(path, tool, fmtDur(s.p50), fmtDur(s.p90), fmtDur(s.p99), fmtDur(s.mean), over, ratio, cpu)
	}
	res := r.res
	row("direct: mcp-go client in-process", "echo", res.directEcho, res.directEcho, true, "—")
	row("floor relay: jsonrpc2 socket + mcp-go client, no bookkeeping", "echo", floorRead, res.directEcho, false, floorCPU)
	row("pikod, read grant (readOnlyTools)", "echo", res.pikodRead, res.directEcho, false, readCPU)
	row("direct: mcp-go client in-process", "add", res.directAdd, res.directAdd, true, "—")
	row("pikod, autonomous grant (autonomousTools)", "add", res.pikodAuto, res.directAdd, false, autoCPU)
	r.rep.section("(a) One trivial tool call, sequential",
		fmt.Sprintf("%d calls after %d warm-up calls on one connection, one at a time. Direct: an mcp-go "+
			"client (transport.NewIO over os.Pipe, legacy protocol) talking to the fixture process it "+
			"started. pikod: rpc.Dial, then extensions.mcp.call over the socket; the daemon validates the "+
			"arguments against the tool's schema, calls the same fixture over stdio, retains the result and "+
			"writes a receipt (the autonomous grant also records the action in the ledger before and after). "+
			"Overhead and ratio compare p50 with the direct p50 of the same tool. pikod CPU/call is the daemon's "+
			"user+system time over all the calls of the row, warm-up included, per call. The floor relay "+
			"(bench/cmd/pikobench/floor.go) is a process doing the least a daemon on pikod's mandated libraries "+
			"can: sourcegraph/jsonrpc2 on a Unix socket in front of one mcp-go stdio client, arguments passed as "+
			"they came, no schema, grant, receipt or retained result; pikod's overhead over it is what pikod's "+
			"promises cost, its overhead over direct is what no daemon on these libraries can save.", r.cfg.calls, r.cfg.warmup), t)
	return nil
}

// loadResult is one throughput measurement.
type loadResult struct {
	calls   int
	elapsed time.Duration
	lat     summary
	// cpu is the CPU time (user+system) each watched process used
	// during the load.
	cpu []time.Duration
}

// cpuPerCall formats the i-th watched process's CPU time per call.
func (l loadResult) cpuPerCall(i int) string {
	if i >= len(l.cpu) || l.calls == 0 || l.cpu[i] < 0 {
		return "—"
	}
	return fmtDur(l.cpu[i] / time.Duration(l.calls))
}

func (l loadResult) rate() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.calls) / l.elapsed.Seconds()
}

// runLoad runs each worker in its own goroutine, as fast as it can, until
// dur has passed, and counts the calls and the CPU time the watched
// processes used meanwhile.
func runLoad(workers []func() error, dur time.Duration, watch ...int) (loadResult, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		all   []time.Duration
		errs  []error
		start = make(chan struct{})
	)
	var deadline time.Time
	for _, w := range workers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 4096)
			<-start
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				if err := w(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	before := make([]time.Duration, len(watch))
	for i, pid := range watch {
		before[i] = procCPU(pid)
	}
	t0 := time.Now()
	deadline = t0.Add(dur)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	if len(errs) > 0 {
		return loadResult{}, errs[0]
	}
	cpu := make([]time.Duration, len(watch))
	for i, pid := range watch {
		cpu[i] = -1
		if after := procCPU(pid); after >= 0 && before[i] >= 0 {
			cpu[i] = after - before[i]
		}
	}
	return loadResult{calls: len(all), elapsed: elapsed, lat: summarize(all), cpu: cpu}, nil
}

// perfRecord samples pid's stacks with perf for dur, when asked to.
func (r *runner) perfRecord(pid int, dur time.Duration) func() {
	if r.cfg.perfOut == "" {
		return func() {}
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		r.logf("perf not found; no profile")
		return func() {}
	}
	cmd := exec.Command(perf, "record", "-F", "999", "-g", "-p", fmt.Sprint(pid), "-o", r.cfg.perfOut,
		"--", "sleep", fmt.Sprintf("%.1f", dur.Seconds()))
	out, err := os.Create(r.cfg.perfOut + ".log")
	if err == nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		r.logf("perf record: %v", err)
		return func() {}
	}
	return func() {
		_ = cmd.Wait()
		if out != nil {
			out.Close()
		}
		r.logf("perf profile of pikod written to %s", r.cfg.perfOut)
	}
}

// scenarioThroughput is (b): calls per second at several concurrencies,
// each worker with its own connection.
func (r *runner) scenarioThroughput() error {
	levels := []int{1, 8, 32}
	t := &table{header: []string{"path", "concurrency", "calls", "calls/s", "p50", "p99", "pikod CPU/call", "server CPU/call"}}
	// add takes a result whose watched processes are pikod then the
	// server, or the server alone (the floor relay's: the relay alone).
	add := func(path string, level int, l loadResult) {
		daemonCPU, serverCPU := "—", l.cpuPerCall(0)
		switch {
		case len(l.cpu) == 2:
			daemonCPU, serverCPU = l.cpuPerCall(0), l.cpuPerCall(1)
		case strings.HasPrefix(path, "floor relay"):
			daemonCPU, serverCPU = l.cpuPerCall(0), "—"
		}
		t.add(path, fmt.Sprint(level), groupThousands(int64(l.calls)), fmtRate(l.rate()), fmtDur(l.lat.p50), fmtDur(l.lat.p99), daemonCPU, serverCPU)
	}

	r.logf("(b) throughput: direct mcp-go client")
	dc, err := startDirect(r.bin.fixture)
	if err != nil {
		return err
	}
	direct := map[int]loadResult{}
	for _, level := range levels {
		workers := make([]func() error, level)
		for i := range workers {
			workers[i] = func() error { return dc.call("echo", echoArgs) }
		}
		if _, err = runLoad(workers, r.cfg.duration/10); err != nil { // warm-up
			break
		}
		var l loadResult
		if l, err = runLoad(workers, r.cfg.duration, dc.cmd.Process.Pid); err != nil {
			break
		}
		direct[level] = l
	}
	dc.close()
	if err != nil {
		return fmt.Errorf("direct load: %w", err)
	}

	floor := map[int]loadResult{}
	err = r.floorLoad(levels, floor)
	if err != nil {
		return fmt.Errorf("floor relay load: %w", err)
	}

	read, auto := map[int]loadResult{}, map[int]loadResult{}
	err = r.withFixtureDaemon(nil, func(d *daemonProc) error {
		var st contracts.StatusResult
		if err := d.call(contracts.MethodMCPStatus, contracts.StatusParams{Server: "fx"}, &st); err != nil {
			return err
		}
		if len(st.Servers) != 1 || st.Servers[0].PID == 0 {
			return fmt.Errorf("status of fx has no pid: %+v", st.Servers)
		}
		serverPID := st.Servers[0].PID
		for _, grant := range []struct {
			name   string
			params contracts.CallParams
			out    map[int]loadResult
		}{{"read", readCall, read}, {"autonomous", autoCall, auto}} {
			for _, level := range levels {
				r.logf("(b) throughput: pikod %s grant, concurrency %d", grant.name, level)
				clients := make([]*rpc.Client, 0, level)
				workers := make([]func() error, 0, level)
				for range level {
					c, err := d.dial()
					if err != nil {
						return err
					}
					defer c.Close()
					clients = append(clients, c)
					workers = append(workers, func() error { return pikodCall(c, grant.params) })
				}
				if _, err := runLoad(workers, r.cfg.duration/10); err != nil {
					return fmt.Errorf("%s warm-up: %w", grant.name, err)
				}
				done := func() {}
				if grant.name == "read" && level == levels[len(levels)-1] {
					done = r.perfRecord(d.pid(), r.cfg.duration-r.cfg.duration/5)
				}
				l, err := runLoad(workers, r.cfg.duration, d.pid(), serverPID)
				done()
				if err != nil {
					return fmt.Errorf("%s load at %d: %w", grant.name, level, err)
				}
				grant.out[level] = l
				for _, c := range clients {
					c.Close()
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, level := range levels {
		add("direct: mcp-go client, echo (one shared client)", level, direct[level])
	}
	for _, level := range levels {
		add("floor relay, echo (its CPU in the pikod column)", level, floor[level])
	}
	for _, level := range levels {
		add("pikod, read grant, echo", level, read[level])
	}
	for _, level := range levels {
		add("pikod, autonomous grant, add", level, auto[level])
	}
	if l := floor[32]; len(l.cpu) > 0 && l.cpu[0] >= 0 && l.calls > 0 {
		r.res.floorRate32, r.res.floorCPU32 = l.rate(), float64(l.cpu[0])/float64(l.calls)
	}
	rate := read[32].rate()
	r.res.readRate32 = &rate
	r.res.directRate32, r.res.autoRate32 = direct[32].rate(), auto[32].rate()
	if l := read[32]; len(l.cpu) > 0 && l.cpu[0] >= 0 && l.calls > 0 {
		cpu := l.cpu[0] / time.Duration(l.calls)
		r.res.readCPU32 = &cpu
	}
	r.rep.section("(b) Throughput",
		fmt.Sprintf("Each level runs for %v after a short warm-up. pikod: every worker goroutine has its own "+
			"socket connection; direct: the workers share one mcp-go client, as pikod shares one connection "+
			"to the server. The load generator, pikod and the fixture share the machine's %d cores. "+
			"CPU/call is the process's user+system time during the level (from /proc/PID/stat) divided by the calls.",
			r.cfg.duration, r.nproc), t)
	return nil
}

// floorLoad runs the read load of (b) against the floor relay at each
// level, its clients dialled as pikod's are (one connection a worker).
func (r *runner) floorLoad(levels []int, out map[int]loadResult) error {
	r.logf("(b) throughput: the floor relay")
	fr, err := r.startFloorRelay()
	if err != nil {
		return err
	}
	defer fr.stop()
	for _, level := range levels {
		workers := make([]func() error, 0, level)
		for range level {
			c, err := fr.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			workers = append(workers, func() error { return pikodCall(c, readCall) })
		}
		if _, err := runLoad(workers, r.cfg.duration/10); err != nil {
			return err
		}
		l, err := runLoad(workers, r.cfg.duration, fr.pid())
		if err != nil {
			return err
		}
		out[level] = l
	}
	return nil
}

// serverEverything returns the command that runs the pinned
// server-everything over stdio, or why it cannot run.
func (r *runner) serverEverything() (node, script string, err error) {
	script = filepath.Join(r.cfg.interopDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("%w: server-everything is not installed (run make interop-deps)", errUnavailable)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("%w: node is not on PATH", errUnavailable)
	}
	return node, script, nil
}

// scenarioCLI is (c): pikoctl process time versus one-shot CLI calls.
func (r *runner) scenarioCLI() error {
	t := &table{header: []string{"command", "runs", "p50", "p90", "mean", "p50 ratio to pikoctl (fixture)"}}
	node, script, evErr := r.serverEverything()
	var extra []server
	if evErr == nil {
		extra = append(extra, server{ID: "ev", Transport: "stdio", Command: node, Args: []string{script},
			Tools: []string{"echo"}, ReadOnlyTools: []string{"echo"}})
	}
	var base time.Duration
	row := func(name string, runs int, s summary) {
		t.add(name, fmt.Sprint(runs), fmtDur(s.p50), fmtDur(s.p90), fmtDur(s.mean), fmtRatio(s.p50, base))
	}
	unavailable := func(name string, err error) {
		why := strings.TrimPrefix(err.Error(), errUnavailable.Error()+": ")
		t.add(name, "0", "not run", "", "", why)
	}
	err := r.withFixtureDaemon(extra, func(d *daemonProc) error {
		ctl := func(stdin string, args ...string) func() error {
			return func() error {
				cmd := exec.Command(r.bin.pikoctl, append([]string{"--socket", d.socket}, args...)...)
				cmd.Env = d.env
				_, _, err := timeProcess(cmd, stdin)
				return err
			}
		}
		r.logf("(c) pikoctl runs")
		fx, err := series(3, r.cfg.ctlRuns, ctl(`{"text":"hi"}`, "mcp", "call", "fx", "echo"))
		if err != nil {
			return err
		}
		s := summarize(fx)
		base = s.p50
		r.res.ctlP50 = &base
		row("`pikoctl mcp call fx echo` (fixture, daemon keeps the connection)", len(fx), s)
		if evErr == nil {
			ev, err := series(3, r.cfg.ctlRuns, ctl(`{"message":"hi"}`, "mcp", "call", "ev", "echo"))
			if err != nil {
				return err
			}
			row("`pikoctl mcp call ev echo` (server-everything, daemon keeps the connection)", len(ev), summarize(ev))
		} else {
			unavailable("`pikoctl mcp call ev echo` (server-everything)", evErr)
		}
		hello, err := series(3, r.cfg.ctlRuns, ctl(`{}`, "rpc", "system.hello"))
		if err != nil {
			return err
		}
		hs := summarize(hello)
		r.res.ctlHelloP50 = &hs.p50
		row("`pikoctl rpc system.hello` (floor: process start + one round trip)", len(hello), hs)
		return nil
	})
	if err != nil {
		return err
	}

	// One-shot clients pay for starting the server on every call.
	if evErr == nil {
		r.logf("(c) one-shot mcp-go client of server-everything")
		oneShot, err := series(1, r.cfg.inspectorRuns, func() error {
			dc, err := startDirect(node, script)
			if err != nil {
				return err
			}
			defer dc.close()
			return dc.call("echo", map[string]any{"message": "hi"})
		})
		if err != nil {
			return fmt.Errorf("one-shot mcp-go client of server-everything: %w", err)
		}
		row("one-shot mcp-go client in-process: start server-everything, initialize, call echo", len(oneShot), summarize(oneShot))
	} else {
		unavailable("one-shot mcp-go client of server-everything", evErr)
	}
	inspectorArgs := []string{"--cli", node, script, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hi"}
	for _, v := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"`npx @modelcontextprotocol/inspector --cli node server-everything --method tools/call --tool-name echo`",
			func() *exec.Cmd {
				return exec.Command("npx", append([]string{"--no-install", "@modelcontextprotocol/inspector"}, inspectorArgs...)...)
			}},
		{"the same inspector CLI without npx (`node_modules/.bin/mcp-inspector --cli …`)",
			func() *exec.Cmd {
				return exec.Command(filepath.Join(r.cfg.nodeDir, "node_modules", ".bin", "mcp-inspector"), inspectorArgs...)
			}},
	} {
		if evErr != nil {
			unavailable(v.name, evErr)
			continue
		}
		if err := r.inspectorInstalled(); err != nil {
			unavailable(v.name, err)
			continue
		}
		r.logf("(c) %s", v.name)
		runs, err := series(1, r.cfg.inspectorRuns, func() error {
			cmd := v.cmd()
			cmd.Dir = r.cfg.nodeDir
			home, err := os.MkdirTemp("", "pkn")
			if err != nil {
				return err
			}
			defer os.RemoveAll(home)
			cmd.Env = append(baseEnv(home), "npm_config_cache="+filepath.Join(os.Getenv("HOME"), ".npm"))
			_, out, err := timeProcess(cmd, "")
			if err == nil && !strings.Contains(out, "Echo: hi") {
				err = fmt.Errorf("unexpected output: %s", clip(out))
			}
			return err
		})
		if err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			r.logf("inspector failed: %v", err)
			unavailable(v.name, fmt.Errorf("%w: the inspector failed here: %s", errUnavailable, first))
			continue
		}
		row(v.name, len(runs), summarize(runs))
	}
	r.rep.section("(c) End-to-end CLI call, process wall time",
		fmt.Sprintf("Wall time of one process, from exec to exit, arguments on stdin. pikoctl runs %d times "+
			"after 3 warm-up runs against a daemon that is already connected to the server: that is the point "+
			"of the daemon. The one-shot clients (%d runs after 1 warm-up) start server-everything (node) on "+
			"every call. Inspector: %s.", r.cfg.ctlRuns, r.cfg.inspectorRuns, r.inspectorVersion()), t)
	return nil
}

// inspectorInstalled says whether the bench-local inspector is installed.
func (r *runner) inspectorInstalled() error {
	if _, err := os.Stat(filepath.Join(r.cfg.nodeDir, "node_modules", ".bin", "mcp-inspector")); err != nil {
		return fmt.Errorf("%w: the inspector is not installed in %s (make bench runs npm ci there; it needs npm and the npm registry)",
			errUnavailable, r.cfg.nodeDir)
	}
	if _, err := exec.LookPath("npx"); err != nil {
		return fmt.Errorf("%w: npx is not on PATH", errUnavailable)
	}
	return nil
}

// inspectorVersion reads the installed inspector's version.
func (r *runner) inspectorVersion() string {
	b, err := os.ReadFile(filepath.Join(r.cfg.nodeDir, "node_modules", "@modelcontextprotocol", "inspector", "package.json"))
	if err != nil {
		return "not installed"
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil || p.Version == "" {
		return "unknown version"
	}
	v := "@modelcontextprotocol/inspector " + p.Version
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		v += " on node " + strings.TrimSpace(string(out))
	}
	return v
}

// scenarioRSS is (d): the daemon's resident memory with N connected
// fixture servers.
func (r *runner) scenarioRSS() error {
	t := &table{header: []string{"servers connected", "pikod VmRSS (median of 5)", "pikod VmHWM (peak)", "per server over 0", "fixture children RSS (not counted)"}}
	var zero int64
	for _, n := range []int{0, 1, 16, 64} {
		r.logf("(d) RSS with %d servers", n)
		d, err := startDaemon(r.bin, r.cfg.stateRoot)
		if err != nil {
			return err
		}
		var rss, hwm, kids int64
		var nkids int
		ferr := func() error {
			if n > 0 {
				var s settings
				for i := range n {
					s.Servers = append(s.Servers, server{ID: fmt.Sprintf("fx%02d", i+1), Transport: "stdio", Command: r.bin.fixture})
				}
				if err := d.configure(s); err != nil {
					return fmt.Errorf("configuring %d servers: %w", n, err)
				}
				if err := connectAll(d, s.Servers, 8); err != nil {
					return err
				}
			}
			// Let the start-up garbage be collected before sampling.
			time.Sleep(time.Second)
			var samples []time.Duration // bytes, reusing the median helper
			for i := range 5 {
				if i > 0 {
					time.Sleep(200 * time.Millisecond)
				}
				v, err := procStatusBytes(d.pid(), "VmRSS")
				if err != nil {
					return err
				}
				samples = append(samples, time.Duration(v))
			}
			rss = int64(median(samples))
			hwm, _ = procStatusBytes(d.pid(), "VmHWM")
			kids, nkids = childrenRSS(d.pid())
			if nkids != n {
				return fmt.Errorf("pikod has %d child processes, want %d", nkids, n)
			}
			return nil
		}()
		if err := errors.Join(ferr, d.stop()); err != nil {
			return err
		}
		per := "—"
		if n == 0 {
			zero = rss
		} else {
			per = fmtMB((rss - zero) / int64(n))
		}
		t.add(fmt.Sprint(n), fmtMB(rss), fmtMB(hwm), per, fmt.Sprintf("%s in %d processes", fmtMB(kids), nkids))
		if n == 64 {
			r.res.rss64 = &rss
		}
	}
	r.rep.section("(d) Daemon memory with connected servers",
		"A fresh daemon per row; N fixture servers (stdio, default catalog) configured, enabled and connected "+
			"(extensions.mcp.connect for each), then one second to settle and five samples of VmRSS from "+
			"/proc/PID/status of the pikod process alone, 200 ms apart. Child processes are not counted in "+
			"pikod's figure; their sum is shown for scale. MB are 10^6 bytes.", t)
	return nil
}

// connectAll connects servers with at most par requests in flight.
func connectAll(d *daemonProc, servers []server, par int) error {
	sem := make(chan struct{}, par)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, s := range servers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := d.connect(s.ID)
			if err == nil && st.State != contracts.StateConnected {
				err = fmt.Errorf("server %s is %s after connect", s.ID, st.State)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("connecting %s: %w", s.ID, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// scenarioDiscovery is (e): discovery of a 10,000-tool catalog.
func (r *runner) scenarioDiscovery() error {
	// The fixture generates at most 9,999 tools; its 9 fixed tools make
	// the catalog exactly 10,000.
	const tools, generated = 10000, 9991
	t := &table{header: []string{"path", "page size", "tools", "median of " + fmt.Sprint(r.cfg.discoveryRuns), "min", "max", "ratio to direct"}}
	for _, page := range []int{100, 1000} {
		args := []string{"--tools", fmt.Sprint(generated), "--page-size", fmt.Sprint(page)}

		r.logf("(e) discovery, page size %d: direct", page)
		var direct []time.Duration
		var directTools int
		for i := range r.cfg.discoveryRuns + 1 {
			start := time.Now()
			dc, err := startDirect(r.bin.fixture, args...)
			if err != nil {
				return err
			}
			n, err := dc.listAll()
			elapsed := time.Since(start)
			dc.close()
			if err != nil {
				return fmt.Errorf("direct discovery: %w", err)
			}
			directTools = n
			if i > 0 {
				direct = append(direct, elapsed)
			}
		}

		r.logf("(e) discovery, page size %d: pikod", page)
		d, err := startDaemon(r.bin, r.cfg.stateRoot)
		if err != nil {
			return err
		}
		var connect, catalog, catalogCPU []time.Duration
		var got, catBytes int
		ferr := func() error {
			if err := d.configure(settings{Servers: []server{{ID: "big", Transport: "stdio", Command: r.bin.fixture, Args: args}}}); err != nil {
				return err
			}
			c, err := d.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			for i := range r.cfg.discoveryRuns + 1 {
				start := time.Now()
				var res contracts.ConnectResult
				if err := callOn(c, contracts.MethodMCPConnect, contracts.ServerParams{Server: "big"}, &res); err != nil {
					return fmt.Errorf("connecting: %w", err)
				}
				elapsed := time.Since(start)
				if !res.Server.CatalogComplete || res.Server.ToolCount < tools {
					return fmt.Errorf("catalog after connect: complete=%v tools=%d problem=%q", res.Server.CatalogComplete, res.Server.ToolCount, res.Server.CatalogProblem)
				}
				got = res.Server.ToolCount
				cpu0 := procCPU(d.pid())
				start = time.Now()
				var cat json.RawMessage
				if err := callOn(c, contracts.MethodMCPCatalog, contracts.ServerParams{Server: "big"}, &cat); err != nil {
					return fmt.Errorf("catalog: %w", err)
				}
				catElapsed := time.Since(start)
				catCPU := procCPU(d.pid()) - cpu0
				catBytes = len(cat)
				if i > 0 {
					connect = append(connect, elapsed)
					catalog = append(catalog, catElapsed)
					if cpu0 >= 0 {
						catalogCPU = append(catalogCPU, catCPU)
					}
				}
				if err := callOn(c, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "big"}, nil); err != nil {
					return fmt.Errorf("disconnecting: %w", err)
				}
			}
			return nil
		}()
		if err := errors.Join(ferr, d.stop()); err != nil {
			return err
		}
		ds, cs, ks := summarize(direct), summarize(connect), summarize(catalog)
		if r.res.catalogP50 == nil || ks.p50 > *r.res.catalogP50 {
			p50 := ks.p50
			r.res.catalogP50 = &p50
		}
		t.add("direct: spawn + initialize + every page of every list (mcp-go)", fmt.Sprint(page), fmt.Sprint(directTools),
			fmtDur(ds.p50), fmtDur(minOf(direct)), fmtDur(maxOf(direct)), "—")
		t.add("pikod: extensions.mcp.connect (spawn, handshake, complete catalog)", fmt.Sprint(page), fmt.Sprint(got),
			fmtDur(cs.p50), fmtDur(minOf(connect)), fmtDur(maxOf(connect)), fmtRatio(cs.p50, ds.p50))
		catCPU := "not measured"
		if len(catalogCPU) > 0 {
			catCPU = fmtDur(median(catalogCPU))
		}
		t.add(fmt.Sprintf("pikod: extensions.mcp.catalog of the connected server (%.1f MB of JSON; pikod CPU per request, median: %s)", float64(catBytes)/1e6, catCPU),
			fmt.Sprint(page), fmt.Sprint(got), fmtDur(ks.p50), fmtDur(minOf(catalog)), fmtDur(maxOf(catalog)), "—")
	}
	r.rep.section("(e) Discovery of a 10,000-tool catalog",
		fmt.Sprintf("The fixture with --tools %d, which with its fixed tools makes %d (plus 2 resources, 2 templates, 2 prompts), "+
			"paginated. pikod: time from the connect request to its response, which comes once the whole "+
			"catalog is discovered (names, grants, digests); then a disconnect, %d times after one warm-up. "+
			"Direct: the same work minus pikod's bookkeeping, from process start to the last page.",
			generated, tools, r.cfg.discoveryRuns), t)
	return nil
}

func minOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	m := d[0]
	for _, v := range d {
		m = min(m, v)
	}
	return m
}

func maxOf(d []time.Duration) time.Duration {
	m := time.Duration(0)
	for _, v := range d {
		m = max(m, v)
	}
	return m
}
