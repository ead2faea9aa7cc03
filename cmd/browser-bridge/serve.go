package main

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pikod/pikod/contracts"
)

// Bounds of serve.
const (
	startTimeout = 60 * time.Second
	closeTimeout = 5 * time.Second
	stopWait     = 5 * time.Second
	maxBody      = 8 << 20
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", defaultDir(), "the config directory")
	cdp := fs.String("cdp-endpoint", "", "your Chrome's remote debugging URL on loopback, instead of the one recorded at init")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := load(*dir)
	if err != nil {
		return err
	}
	if *cdp != "" {
		if err := checkCDPEndpoint(*cdp); err != nil {
			return err
		}
		st.cfg.CDPEndpoint = *cdp
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ln, err := net.Listen("tcp", st.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", st.cfg.Listen, err)
	}
	defer ln.Close()

	child, err := startChild(ctx, &st.cfg, stderr)
	if err != nil {
		return err
	}
	defer child.stop(log)

	mcpSrv := server.NewMCPServer("pikod-browser-bridge", version, server.WithToolCapabilities(false))
	listed, err := child.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("listing the browser server's tools: %w", err)
	}
	var exposed, withheld []string
	for _, tl := range listed.Tools {
		if !st.cfg.exposed(tl.Name) {
			withheld = append(withheld, tl.Name)
			continue
		}
		exposed = append(exposed, tl.Name)
		name := tl.Name
		mcpSrv.AddTool(tl, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			log.Info("tool call", "tool", name)
			return child.client.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}})
		})
	}
	log.Info("tools", "exposed", len(exposed), "withheld", strings.Join(withheld, ","))

	h := &gate{cfg: &st.cfg, token: []byte("Bearer " + st.token), next: server.NewStreamableHTTPServer(mcpSrv,
		server.WithStreamableHTTPLogger(log), server.WithEndpointPath("/mcp")), log: log}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{st.cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	fmt.Fprintf(stdout, "serving %s (key fingerprint %s)\n", st.cfg.url(), st.pin)

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-child.exited:
		log.Error("the browser server exited")
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-served
	return nil
}

// gate checks every request before the MCP handler sees it: the Host is a
// loopback name (no DNS rebinding), the Origin is absent or allowed (no
// web page), and the token is the bridge's (no one else).
type gate struct {
	cfg   *config
	token []byte
	next  http.Handler
	log   *slog.Logger
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackName(r.Host) {
		g.log.Warn("refused: host", "host", contracts.SafeText(r.Host, contracts.OneLine, 80))
		http.Error(w, "forbidden: the bridge answers only loopback host names", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(g.cfg.AllowedOrigins, o) {
		g.log.Warn("refused: origin", "origin", contracts.SafeText(o, contracts.OneLine, 80))
		http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), g.token) != 1 {
		// Never the header's value: it may be a mistyped token.
		g.log.Warn("refused: token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="browser-bridge"`)
		http.Error(w, "unauthorized: pair again with 'browser-bridge pair'", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	g.next.ServeHTTP(w, r)
}

// loopbackName reports whether a Host header names this machine's
// loopback: localhost, 127.0.0.0/8 or ::1, with any port (a tunnel's near
// end may use another port).
func loopbackName(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// child is the browser MCP server: a stdio process in a session (and
// process group) of its own, and the mcp-go client over its pipes.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	client *client.Client
	cfg    *config
	tmp    string
	exited chan struct{}
	// waitErr is set before exited is closed.
	waitErr error
	once    sync.Once
}

func startChild(ctx context.Context, cfg *config, stderr io.Writer) (*child, error) {
	args := slices.Clone(cfg.Args)
	if cfg.CDPEndpoint != "" {
		switch cfg.Preset {
		case contracts.BrowserPlaywright:
			args = append(args, "--cdp-endpoint", cfg.CDPEndpoint)
		case contracts.BrowserChromeDevTools:
			args = append(args, "--browserUrl", cfg.CDPEndpoint)
		}
	}
	// Chromium's lock socket must fit the socket path limit: a short
	// private temporary directory.
	tmp, err := os.MkdirTemp("/tmp", "pbb-")
	if err != nil {
		return nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp, "LANG=C.UTF-8"}
	if !cfg.Headless {
		for _, k := range []string{"DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR"} {
			if v := os.Getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
	}
	for _, k := range []string{"npm_config_cache", "XDG_CACHE_HOME"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	cmd := exec.Command(cfg.Command, args...)
	cmd.Env = env
	cmd.Dir = tmp
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	// A session of its own: its own process group (stopped as a whole,
	// browsers included) and no controlling terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	c := &child{cmd: cmd, stdin: inW, cfg: cfg, tmp: tmp, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		outR.Close()
		close(c.exited)
	}()
	//lint:ignore SA1019 the browser servers the bridge runs (playwright-mcp, chrome-devtools-mcp) speak the legacy era only.
	c.client = client.NewClient(transport.NewIO(outR, inW, nil), client.WithLegacyProtocolOnly())
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.client.Start(context.Background()); err != nil {
		c.stop(nil)
		return nil, fmt.Errorf("starting the client of %s: %w", cfg.Command, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "pikod-browser-bridge", Version: version}
	if _, err := c.client.Initialize(sctx, init); err != nil {
		c.stop(nil)
		return nil, fmt.Errorf("initializing %s: %w", cfg.Command, err)
	}
	return c, nil
}

// stop closes the browser of a dedicated profile (so its cookies are
// saved; the owner's own Chrome is left alone), closes stdin, waits, then
// SIGTERMs and SIGKILLs the process group, and removes the temporary
// directory.
func (c *child) stop(log *slog.Logger) {
	c.once.Do(func() {
		if p, ok := contracts.FindBrowserPreset(c.cfg.Preset); ok && p.CloseTool != "" && c.cfg.CDPEndpoint == "" {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			_, err := c.client.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: p.CloseTool, Arguments: map[string]any{}}})
			cancel()
			if log != nil {
				log.Info("browser closed before stop", "error", err)
			}
		}
		c.stdin.Close()
		pgid := c.cmd.Process.Pid
		select {
		case <-c.exited:
		case <-time.After(stopWait):
		}
		// The group outlives the leader when a browser is still running.
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		deadline := time.Now().Add(stopWait)
		for time.Now().Before(deadline) && groupAlive(pgid) {
			time.Sleep(50 * time.Millisecond)
		}
		if groupAlive(pgid) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		<-c.exited
		for i := 0; i < 100 && groupAlive(pgid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.client.Close()
		os.RemoveAll(c.tmp)
	})
}

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
