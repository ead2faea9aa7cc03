package main

import (
	"context"
	"fmt"

	"github.com/pikod/pikod/contracts"
)

// bridgeTools is how many tools the large server of (g) lists.
const bridgeTools = 1000

// scenarioBridge is (g): the same read call on pikod's socket and through
// pikoctl mcp serve (an mcp-go client on its stdio), and tools/list of
// 1,000 exposed tools through the bridge.
func (r *runner) scenarioBridge() error {
	r.logf("(g) bridge: pikoctl mcp serve")
	many := server{ID: "many", Transport: "stdio", Command: r.bin.fixture, Args: []string{"--tools", fmt.Sprint(bridgeTools)}}
	return r.withFixtureDaemon([]server{many}, func(d *daemonProc) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		var cat contracts.CatalogResult
		if err := d.call(contracts.MethodMCPCatalog, contracts.CatalogParams{Server: "fx"}, &cat); err != nil {
			return err
		}
		echo := ""
		for _, t := range cat.Tools {
			if t.OriginalName == "echo" {
				echo = t.Name
			}
		}
		socket, err := series(r.cfg.warmup, r.cfg.calls, func() error { return pikodCall(c, readCall) })
		if err != nil {
			return fmt.Errorf("socket calls: %w", err)
		}
		bc, err := startDirect(r.bin.pikoctl, "--socket", d.socket, "mcp", "serve", "--tools", "all")
		if err != nil {
			return fmt.Errorf("starting the bridge: %w", err)
		}
		defer bc.close()
		bridge, err := series(r.cfg.warmup, r.cfg.calls, func() error { return bc.call(echo, echoArgs) })
		if err != nil {
			return fmt.Errorf("bridge calls: %w", err)
		}
		list, err := series(2, 20, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			n, err := bc.listTools(ctx)
			if err != nil {
				return err
			}
			if n < bridgeTools {
				return fmt.Errorf("tools/list gave %d tools, want at least %d", n, bridgeTools)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("bridge tools/list: %w", err)
		}
		// The same lists straight from a fixture of as many tools: what
		// the client's own decoding costs.
		dc, err := startDirect(r.bin.fixture, "--tools", fmt.Sprint(bridgeTools+3))
		if err != nil {
			return err
		}
		direct, err := series(2, 20, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			_, err := dc.listTools(ctx)
			return err
		})
		dc.close()
		if err != nil {
			return fmt.Errorf("direct tools/list: %w", err)
		}
		s, b, l, dl := summarize(socket), summarize(bridge), summarize(list), summarize(direct)
		t := &table{header: []string{"path", "p50", "p90", "p99", "p50 over the socket", "target"}}
		t.add("read call, pikod's socket (rpc.Client)", fmtDur(s.p50), fmtDur(s.p90), fmtDur(s.p99), "—", "—")
		t.add("read call through pikoctl mcp serve (mcp-go client on stdio)", fmtDur(b.p50), fmtDur(b.p90), fmtDur(b.p99), fmtDur(b.p50-s.p50), "≤ 150µs")
		t.add(fmt.Sprintf("tools/list of %d+ tools through the bridge, every page", bridgeTools), fmtDur(l.p50), fmtDur(l.p90), fmtDur(l.p99), "—", "≤ 50ms")
		t.add(fmt.Sprintf("tools/list of %d tools straight from the fixture (same client)", bridgeTools+3), fmtDur(dl.p50), fmtDur(dl.p90), fmtDur(dl.p99), "—", "—")
		r.rep.section("(g) The bridge (pikoctl mcp serve)",
			fmt.Sprintf("%d sequential read calls of echo after %d warm-up calls, first on one socket connection, then "+
				"through one pikoctl mcp serve process driven by an mcp-go stdio client (legacy protocol); then 20 "+
				"tools/list rounds (every page) of the fixture's tools plus a server of %d tools, with --tools all.",
				r.cfg.calls, r.cfg.warmup, bridgeTools), t)
		return nil
	})
}
