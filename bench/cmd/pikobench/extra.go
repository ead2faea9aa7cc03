package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// bigResultBytes is the text of the 20 MB result: with its JSON-RPC
// envelope the message stays under the 20,000,000-byte maxBytes cap.
const bigResultBytes = 19_999_000

// bigRuns is how many 20 MB calls each path makes after one warm-up.
const bigRuns = 5

// secretCount is how many secrets the redaction row stores in the vault.
const secretCount = 20

// extraResults are the figures of (f) the targets are judged on.
type extraResults struct {
	bigDirect, bigPikod      time.Duration
	bigRSSGrowth             int64
	httpDirect, httpPikod    summary
	redactNone, redactSecret summary
	have                     map[string]bool
}

// scenarioExtra is (f): a 20 MB result, a read call over Streamable HTTP,
// and read calls with 20 secrets in the vault.
func (r *runner) scenarioExtra() error {
	r.res.extra.have = map[string]bool{}
	t := &table{header: []string{"row", "path", "calls", "p50", "p90", "mean", "p50 over direct (or over no secrets)", "note"}}
	var errs []error
	if err := r.extraBig(t); err != nil {
		errs = append(errs, fmt.Errorf("20 MB result: %w", err))
	}
	if err := r.extraHTTP(t); err != nil {
		errs = append(errs, fmt.Errorf("streamable HTTP: %w", err))
	}
	if err := r.extraRedaction(t); err != nil {
		errs = append(errs, fmt.Errorf("redaction: %w", err))
	}
	r.rep.section("(f) A 20 MB result, Streamable HTTP, 20 secrets",
		fmt.Sprintf("20 MB: the fixture's big tool returns %s bytes of text (%d calls after one warm-up, each on its own); direct is "+
			"the in-process mcp-go client over os.Pipe, pikod a read-grant call (the answer is a bounded preview; the whole "+
			"result is retained). pikod's memory growth is its VmHWM after the calls minus its VmRSS before them. "+
			"HTTP: the fixture serving Streamable HTTP on 127.0.0.1; direct is an in-process mcp-go Streamable HTTP client, "+
			"pikod a read-grant call of the same echo over its own HTTP connection, %d calls after %d warm-up. "+
			"Redaction: two daemons with the vault's file backend, one with no secret and one with %d secrets (random "+
			"24-character values) stored for the server, %d read calls each after %d warm-up; the difference of the p50s "+
			"is what redaction costs per call.",
			groupThousands(bigResultBytes), bigRuns, r.cfg.calls, r.cfg.warmup, secretCount, r.cfg.calls, r.cfg.warmup), t)
	return errors.Join(errs...)
}

func (r *runner) extraBig(t *table) error {
	bigArgs := map[string]any{"bytes": bigResultBytes}
	r.logf("(f) 20 MB result: direct")
	dc, err := startDirect(r.bin.fixture)
	if err != nil {
		return err
	}
	direct, err := series(1, bigRuns, func() error { return dc.call("big", bigArgs) })
	dc.close()
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	r.logf("(f) 20 MB result: pikod")
	conf := fixtureConf(r.bin.fixture)
	conf.ID, conf.MaxBytes = "bx", contracts.MaxMaxBytes
	conf.Tools, conf.ReadOnlyTools, conf.AutonomousTools = []string{"big"}, []string{"big"}, nil
	params := contracts.CallParams{Server: "bx", Tool: "big", Arguments: json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, bigResultBytes))}
	var through []time.Duration
	var growth int64 = -1
	err = r.withDaemon([]server{conf}, func(d *daemonProc) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		before, rerr := procStatusBytes(d.pid(), "VmRSS")
		through, err = series(1, bigRuns, func() error { return pikodCall(c, params) })
		if err != nil {
			return err
		}
		if hwm, herr := procStatusBytes(d.pid(), "VmHWM"); rerr == nil && herr == nil {
			growth = hwm - before
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pikod: %w", err)
	}
	ds, ps := summarize(direct), summarize(through)
	r.res.extra.bigDirect, r.res.extra.bigPikod, r.res.extra.bigRSSGrowth = ds.p50, ps.p50, growth
	r.res.extra.have["big"] = true
	t.add("20 MB result", "direct: mcp-go client in-process", fmt.Sprint(bigRuns), fmtDur(ds.p50), fmtDur(ds.p90), fmtDur(ds.mean), "—", "")
	note := "peak RSS growth not measured"
	if growth >= 0 {
		note = fmt.Sprintf("pikod peak RSS growth %s (×%.1f the payload)", fmtMB(growth), float64(growth)/bigResultBytes)
	}
	t.add("20 MB result", "pikod, read grant", fmt.Sprint(bigRuns), fmtDur(ps.p50), fmtDur(ps.p90), fmtDur(ps.mean),
		fmt.Sprintf("%s (%s)", fmtDur(ps.p50-ds.p50), fmtRatio(ps.p50, ds.p50)), note)
	return nil
}

// startHTTPFixture starts the fixture serving Streamable HTTP on loopback
// and returns it with its URL.
func startHTTPFixture(fixture string) (*exec.Cmd, string, error) {
	cmd := exec.Command(fixture, "--transport", "http", "--listen", "127.0.0.1:0")
	cmd.Env = baseEnv("/")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				lines <- url
			}
		}
	}()
	select {
	case url := <-lines:
		return cmd, url, nil
	case <-time.After(readyTimeout):
		stopProcess(cmd)
		return nil, "", fmt.Errorf("the HTTP fixture did not say LISTENING within %v", readyTimeout)
	}
}

// stopProcess ends a process the benchmark started, by its pid.
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (r *runner) extraHTTP(t *table) error {
	fx, url, err := startHTTPFixture(r.bin.fixture)
	if err != nil {
		return err
	}
	defer stopProcess(fx)
	r.logf("(f) Streamable HTTP: direct")
	hc, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		return err
	}
	if _, err := hc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "pikobench", Version: "0"},
	}}); err != nil {
		hc.Close()
		return fmt.Errorf("direct handshake: %w", err)
	}
	direct, err := series(r.cfg.warmup, r.cfg.calls, func() error {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = "echo", echoArgs
		res, err := hc.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = fmt.Errorf("echo reported an error")
		}
		return err
	})
	hc.Close()
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	r.logf("(f) Streamable HTTP: pikod")
	conf := server{ID: "hx", Transport: "http", URL: url, AllowPrivateNetwork: true,
		Tools: []string{"echo"}, ReadOnlyTools: []string{"echo"}}
	params := contracts.CallParams{Server: "hx", Tool: "echo", Arguments: readCall.Arguments}
	var through []time.Duration
	err = r.withDaemon([]server{conf}, func(d *daemonProc) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		through, err = series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, params) })
		return err
	})
	if err != nil {
		return fmt.Errorf("pikod: %w", err)
	}
	ds, ps := summarize(direct), summarize(through)
	r.res.extra.httpDirect, r.res.extra.httpPikod = ds, ps
	r.res.extra.have["http"] = true
	t.add("Streamable HTTP echo", "direct: mcp-go Streamable HTTP client", fmt.Sprint(r.cfg.calls), fmtDur(ds.p50), fmtDur(ds.p90), fmtDur(ds.mean), "—", "")
	t.add("Streamable HTTP echo", "pikod, read grant", fmt.Sprint(r.cfg.calls), fmtDur(ps.p50), fmtDur(ps.p90), fmtDur(ps.mean),
		fmt.Sprintf("%s (%s)", fmtDur(ps.p50-ds.p50), fmtRatio(ps.p50, ds.p50)), "")
	return nil
}

func (r *runner) extraRedaction(t *table) error {
	var none, with summary
	for _, n := range []int{0, secretCount} {
		r.logf("(f) redaction: %d secrets", n)
		err := r.withDaemon([]server{fixtureConf(r.bin.fixture)}, func(d *daemonProc) error {
			c, err := d.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			if n > 0 {
				env := map[string]string{}
				for i := range n {
					env[fmt.Sprintf("BENCH_SECRET_%02d", i)] = randomValue()
				}
				var res contracts.SecretResult
				if err := callOn(c, contracts.MethodSecret, contracts.SecretParams{Extension: "mcp", Server: "fx",
					Credentials: map[string]any{"env": env}}, &res); err != nil {
					return fmt.Errorf("storing the secrets: %w", err)
				}
				// They reach the server on its next connection.
				if err := reconnect(c, "fx"); err != nil {
					return err
				}
			}
			lat, err := series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, readCall) })
			if n == 0 {
				none = summarize(lat)
			} else {
				with = summarize(lat)
			}
			return err
		}, "--vault", "file")
		if err != nil {
			return err
		}
	}
	r.res.extra.redactNone, r.res.extra.redactSecret = none, with
	r.res.extra.have["redaction"] = true
	t.add("redaction", "pikod, read grant, no secret", fmt.Sprint(r.cfg.calls), fmtDur(none.p50), fmtDur(none.p90), fmtDur(none.mean), "—", "")
	t.add("redaction", fmt.Sprintf("pikod, read grant, %d secrets", secretCount), fmt.Sprint(r.cfg.calls), fmtDur(with.p50), fmtDur(with.p90), fmtDur(with.mean),
		fmtDur(with.p50-none.p50), "")
	return nil
}

func reconnect(c *rpc.Client, id string) error {
	if err := callOn(c, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: id}, nil); err != nil {
		return fmt.Errorf("disconnecting %s: %w", id, err)
	}
	if err := callOn(c, contracts.MethodMCPConnect, contracts.ServerParams{Server: id}, nil); err != nil {
		return fmt.Errorf("connecting %s: %w", id, err)
	}
	return nil
}

// randomValue is a 24-character secret the benchmark invents.
func randomValue() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
