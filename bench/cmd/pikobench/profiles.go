package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pikod/pikod/rpc"
)

// profileConcurrency is the load the profiles are taken under.
const profileConcurrency = 32

// scenarioProfiles is (p): Go CPU and allocation profiles of pikod under the
// read-grant and the autonomous-grant load of (b) at concurrency 32, each
// from a daemon of its own started with --cpuprofile and --memprofile, so
// the timed scenarios run without a profiler. The profiles stay in
// cfg.profileDir; the top entries go into the report.
func (r *runner) scenarioProfiles() error {
	if err := os.MkdirAll(r.cfg.profileDir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, grant := range []struct {
		name string
		call func(c *rpc.Client) error
	}{
		{"read", func(c *rpc.Client) error { return pikodCall(c, readCall) }},
		{"autonomous", func(c *rpc.Client) error { return pikodCall(c, autoCall) }},
	} {
		cpu := filepath.Join(r.cfg.profileDir, "pikod-"+grant.name+".cpu.pprof")
		mem := filepath.Join(r.cfg.profileDir, "pikod-"+grant.name+".alloc.pprof")
		r.logf("(p) profiles: pikod %s grant, concurrency %d", grant.name, profileConcurrency)
		calls := 0
		var stateDir string
		var dbBefore int64
		err := r.withFixtureDaemon(nil, func(d *daemonProc) error {
			stateDir = d.stateDir
			dbBefore = diskBytes(stateDir)
			workers := make([]func() error, 0, profileConcurrency)
			for range profileConcurrency {
				c, err := d.dial()
				if err != nil {
					return err
				}
				defer c.Close()
				workers = append(workers, func() error { return grant.call(c) })
			}
			l, err := runLoad(workers, r.cfg.duration)
			calls = l.calls
			return err
		}, "--cpuprofile", cpu, "--memprofile", mem)
		if err != nil {
			return fmt.Errorf("%s grant: %w", grant.name, err)
		}
		// The daemon has stopped: everything it queued is on disk.
		perCall := "—"
		if after := diskBytes(stateDir); calls > 0 && after >= 0 && dbBefore >= 0 {
			perCall = fmt.Sprintf("%d bytes", (after-dbBefore)/int64(calls))
			if grant.name == "read" {
				r.res.diskPerRead = (after - dbBefore) / int64(calls)
			}
		}
		fmt.Fprintf(&b, "\n### %s grant, concurrency %d (%d calls in %v; state directory growth per call, database and sources: %s)\n\n",
			grant.name, profileConcurrency, calls, r.cfg.duration, perCall)
		for _, p := range []struct{ file, index, what string }{
			{cpu, "cpu", "CPU, cumulative"},
			{mem, "alloc_space", "allocated bytes, cumulative"},
		} {
			out, err := pprofTop(p.file, p.index)
			if err != nil {
				out = "pprof failed: " + firstLine(err.Error())
			}
			fmt.Fprintf(&b, "%s (`%s`):\n\n```\n%s```\n\n", p.what, relTo(r.cfg.root, p.file), out)
		}
	}
	r.rep.section("(p) Profiles of pikod",
		"Go profiles of a daemon of its own under the load of (b) at concurrency 32, the whole run from start "+
			"to SIGINT (configuration, connection and warm-up included). Top 25 by cumulative value, "+
			"from `go tool pprof -top -cum`; the files stay for `go tool pprof -http :8080 FILE`."+b.String(), nil)
	return nil
}

// pprofTop is the top of a profile by cumulative value of sample index idx.
func pprofTop(file, idx string) (string, error) {
	// The go that runs this benchmark (make bench uses $(GO)), else PATH's.
	goBin := "go"
	if g := os.Getenv("GO"); g != "" {
		goBin = g
	} else if _, err := exec.LookPath("go"); err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-cum", "-nodecount=25", "-sample_index="+idx, file).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, clip(string(out)))
	}
	// Drop the header lines naming the temporary binary and the time.
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n"), nil
}

func relTo(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// diskBytes is the bytes of the files under dir (-1 when unreadable). bbolt
// grows its file in steps, so for a few thousand calls this is an upper
// bound of what they stored.
func diskBytes(dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			info, err := e.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return total
}
