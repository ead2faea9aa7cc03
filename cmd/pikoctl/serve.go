package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikod/pikod/cmd/pikoctl/bridge"
)

// newServeCmd is 'pikoctl mcp serve': pikod as one MCP server on
// stdin/stdout for an MCP host (cmd/pikoctl/bridge).
func (a *app) newServeCmd() *cobra.Command {
	var (
		servers  []string
		tools    string
		approval string
		waitMax  time.Duration
		name     string
		httpAddr string
		tokFile  string
	)
	cmd := &cobra.Command{
		Use:   "serve [--servers a,b] [--tools all|search|auto] [--approval wait|return]",
		Short: "Serve pikod's MCP servers to an MCP host (Claude Code, Codex, Cursor...) on stdin/stdout",
		Long: `serve is an MCP server on stdin and stdout for one MCP host. The host sees the
selected tools of pikod's servers under pikod's model-facing names, their
resources, templates and prompts; every call goes through pikod: a call
without a grant becomes a prepared action that the owner approves at a
terminal with 'pikoctl mcp approve ID' while the host waits (--approval wait,
with progress) or gets the action id at once (--approval return, then
pikod_action_status). The host can only ask: nothing it sends approves,
answers a server request, trusts, configures or reads a secret.

--tools auto exposes every tool up to 128 of them, and above that two tools,
pikod_search_tools and pikod_call_tool. Register it with a host with
'pikoctl mcp install HOST' (docs/bridge.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			instance, socket, err := a.target()
			if err != nil {
				return err
			}
			b, err := bridge.New(bridge.Options{
				Socket: socket, Instance: instance, StartHint: a.startHint(instance, socket),
				Servers: servers, Tools: tools, Approval: approval, WaitMax: waitMax, Name: name,
				Version: version, Log: a.stderr,
			})
			if err != nil {
				return usageErrorf("%v", err)
			}
			// The host ends the bridge by closing stdin (or with a signal).
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if httpAddr == "" {
				if tokFile != "" {
					return usageErrorf("--token-file goes with --http")
				}
				return b.ServeStdio(ctx, a.stdin, a.stdout)
			}
			return a.serveHTTP(ctx, b, httpAddr, tokFile)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&servers, "servers", nil, "expose only these servers (default: every enabled one)")
	f.StringVar(&tools, "tools", bridge.ToolsAuto, "all: every selected tool; search: pikod_search_tools and pikod_call_tool; auto: search above 128 tools")
	f.StringVar(&approval, "approval", bridge.ApprovalWait, "wait: a call without a grant waits for the owner's decision; return: it returns the action id at once")
	f.DurationVar(&waitMax, "wait-max", bridge.DefaultWaitMax, "how long a call waits for the owner's decision (with --approval wait)")
	f.StringVar(&httpAddr, "http", "", "serve Streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio, for hosts that speak only HTTP")
	f.StringVar(&tokFile, "token-file", "", "with --http: keep the bearer token in this file (made 0600 when missing) instead of printing a new one")
	f.StringVar(&name, "name", "", "the caller name pikod records (default: the host's clientInfo.name)")
	return cmd
}

// serveHTTP runs the bridge's Streamable HTTP mode: loopback only, every
// request with the bearer token.
func (a *app) serveHTTP(ctx context.Context, b *bridge.Bridge, addr, tokFile string) error {
	if err := bridge.LoopbackAddr(addr); err != nil {
		return usageErrorf("%v", err)
	}
	token, created, err := bridge.Token(tokFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	url := "http://" + ln.Addr().String() + bridge.HTTPPath
	// The token goes to stdout, once, for the owner to give the host;
	// never to stderr or a log.
	switch {
	case tokFile == "":
		fmt.Fprintf(a.stdout, "pikoctl mcp serve: %s\nAuthorization: Bearer %s\n(shown once; --token-file FILE keeps a token)\n", url, token)
	case created:
		fmt.Fprintf(a.stdout, "pikoctl mcp serve: %s\nthe bearer token is new, in %s\n", url, tokFile)
	default:
		fmt.Fprintf(a.stdout, "pikoctl mcp serve: %s\nthe bearer token is in %s\n", url, tokFile)
	}
	return b.ServeHTTP(ctx, ln, token)
}
