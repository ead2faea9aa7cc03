package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// Tool exposure modes (--tools).
const (
	ToolsAll    = "all"
	ToolsSearch = "search"
	ToolsAuto   = "auto"
)

// Approval modes (--approval).
const (
	ApprovalWait   = "wait"
	ApprovalReturn = "return"
)

// AutoSearchAbove is the number of exposed tools above which --tools auto
// exposes the search tools instead of every tool.
const AutoSearchAbove = 128

// Defaults.
const (
	DefaultWaitMax = 10 * time.Minute
	// progressEvery is how often a waiting call tells the host it waits.
	progressEvery = 5 * time.Second
	// verdictGrace is how long a cancelled call waits for pikod's verdict
	// (was it sent?).
	verdictGrace = 30 * time.Second
	// connectCap bounds connecting one server on the first tools/list
	// when its settings name no timeout.
	connectCap = 60 * time.Second
)

// The tools the bridge adds of its own. None of them decides anything.
const (
	ToolSearch       = "pikod_search_tools"
	ToolCall         = "pikod_call_tool"
	ToolActionStatus = "pikod_action_status"
)

// SourceURIPrefix is the URI scheme of a retained original result,
// readable with resources/read.
const SourceURIPrefix = "pikod://source/"

// Options configure a bridge.
type Options struct {
	// Socket is pikod's socket; Instance names it in advice.
	Socket, Instance string
	// StartHint says how to start pikod when it is not running.
	StartHint string
	// Servers limits the exposed servers (default: every enabled one).
	Servers []string
	// Tools is all, search or auto (default auto).
	Tools string
	// Approval is wait or return (default wait).
	Approval string
	// WaitMax bounds how long a call waits for the owner (default 10m).
	WaitMax time.Duration
	// Name, when set, is the caller name recorded instead of the host's
	// clientInfo.name.
	Name string
	// Version is pikoctl's version.
	Version string
	// Log receives the bridge's own diagnostics (stderr).
	Log io.Writer
	// Poll is how often a waiting call looks at its action (default
	// 250ms).
	Poll time.Duration
}

// Bridge is one host's MCP server backed by pikod.
type Bridge struct {
	opts Options
	srv  *server.MCPServer

	// connMu guards client and host.
	connMu sync.Mutex
	client *rpc.Client
	host   mcp.Implementation

	// catMu guards the catalog state below.
	catMu     sync.Mutex
	loaded    bool
	search    bool
	tools     map[string]exposedTool // by model-facing name
	servers   []string               // exposed and connected
	prompts   map[string]promptRef   // by exposed name
	templates map[string]string      // URI template -> server

	// events carries catalog and resource events from the socket reader
	// to the goroutine that acts on them.
	events chan contracts.EventParams
	// wg counts the bridge's goroutines; stop ends them.
	wg   sync.WaitGroup
	stop chan struct{}
}

// exposedTool is one tool the host sees.
type exposedTool struct {
	contracts.CatalogTool
}

// promptRef is the server and original name of an exposed prompt.
type promptRef struct {
	server, name string
}

// New makes a bridge; Serve runs it.
func New(opts Options) (*Bridge, error) {
	if opts.Tools == "" {
		opts.Tools = ToolsAuto
	}
	if !slices.Contains([]string{ToolsAll, ToolsSearch, ToolsAuto}, opts.Tools) {
		return nil, fmt.Errorf("--tools must be all, search or auto, not %q", opts.Tools)
	}
	if opts.Approval == "" {
		opts.Approval = ApprovalWait
	}
	if !slices.Contains([]string{ApprovalWait, ApprovalReturn}, opts.Approval) {
		return nil, fmt.Errorf("--approval must be wait or return, not %q", opts.Approval)
	}
	if opts.WaitMax == 0 {
		opts.WaitMax = DefaultWaitMax
	}
	if opts.WaitMax < 0 {
		return nil, fmt.Errorf("--wait-max must be positive, not %s", opts.WaitMax)
	}
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	b := &Bridge{opts: opts, events: make(chan contracts.EventParams, 256), stop: make(chan struct{}),
		tools: map[string]exposedTool{}, prompts: map[string]promptRef{}, templates: map[string]string{}}
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(b.beforeRequest)
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		b.connMu.Lock()
		b.host = req.Params.ClientInfo
		c, hello := b.client, b.helloParams()
		b.connMu.Unlock()
		// The connection was made before the host said who it is: declare
		// it now, for the records of what this host asks.
		if c != nil {
			_ = c.Call(ctx, contracts.MethodHello, hello, nil)
		}
	})
	load := func(ctx context.Context) { b.ensureLoaded(ctx) }
	hooks.AddBeforeListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest) { load(ctx) })
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, _ *mcp.CallToolRequest) { load(ctx) })
	hooks.AddBeforeListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest) { load(ctx) })
	hooks.AddBeforeListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest) { load(ctx) })
	hooks.AddBeforeReadResource(func(ctx context.Context, _ any, _ *mcp.ReadResourceRequest) { load(ctx) })
	hooks.AddBeforeListPrompts(func(ctx context.Context, _ any, _ *mcp.ListPromptsRequest) { load(ctx) })
	hooks.AddBeforeGetPrompt(func(ctx context.Context, _ any, _ *mcp.GetPromptRequest) { load(ctx) })
	hooks.AddBeforeSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest) {
		b.subscribe(ctx, req.Params.URI, contracts.ResourceOpSubscribe)
	})
	hooks.AddBeforeUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest) {
		b.subscribe(ctx, req.Params.URI, contracts.ResourceOpUnsubscribe)
	})
	b.srv = server.NewMCPServer("pikod", opts.Version,
		server.WithInstructions("These tools reach MCP servers through pikod, which asks its owner before any call "+
			"without a grant runs. A call that needs approval waits (or returns) with the action id and the owner's "+
			"command; nothing is sent until the owner approves at a terminal. Results cut short link to "+
			SourceURIPrefix+"ID, readable with resources/read."),
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithHooks(hooks),
		server.WithPromptCompletionProvider(completer{b}),
		server.WithResourceCompletionProvider(completer{b}),
	)
	b.srv.AddResourceTemplate(mcp.NewResourceTemplate(SourceURIPrefix+"{id}", "pikod retained result",
		mcp.WithTemplateDescription("the whole original result of a call pikod cut short: read it with resources/read")),
		b.readSource)
	b.srv.AddResourceTemplate(sourceWindowTemplate(), b.readSource)
	return b, nil
}

// Server is the MCP server, for transports other than stdio.
func (b *Bridge) Server() *server.MCPServer { return b.srv }

// ServeStdio serves the host on in and out until in ends or ctx does.
// Everything the bridge started has stopped when it returns.
func (b *Bridge) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	b.Start()
	defer b.Close()
	s := server.NewStdioServer(b.srv)
	s.SetErrorLogger(log.New(b.opts.Log, "pikoctl mcp serve: ", 0))
	err := s.Listen(ctx, in, out)
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Start starts the goroutine that acts on pikod's events.
func (b *Bridge) Start() {
	b.wg.Add(1)
	go b.eventLoop()
}

// Close stops the bridge's goroutines and closes its connection to pikod.
func (b *Bridge) Close() {
	select {
	case <-b.stop:
		return
	default:
	}
	close(b.stop)
	b.connMu.Lock()
	c := b.client
	b.client = nil
	b.connMu.Unlock()
	if c != nil {
		c.Close()
	}
	b.wg.Wait()
}

// beforeRequest runs before every request of the host: pikod must be
// reachable (initialize fails with how to start it when it is not).
func (b *Bridge) beforeRequest(ctx context.Context, _ any, _ any) error {
	_, err := b.conn(ctx)
	return err
}

// conn returns the connection to pikod, dialling it again when the last
// one was lost (pikod restarted). A call in flight on a lost connection is
// never resent: its caller answers the host that the outcome is unknown.
func (b *Bridge) conn(ctx context.Context) (*rpc.Client, error) {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	if b.client != nil {
		select {
		case <-b.client.Done():
			b.client.Close()
			b.client = nil
			fmt.Fprintln(b.opts.Log, "pikoctl mcp serve: the connection to pikod was lost; connecting again")
		default:
			return b.client, nil
		}
	}
	c, err := rpc.Dial(ctx, b.opts.Socket)
	if err != nil {
		err = fmt.Errorf("pikod is not reachable at %s: %v; %s", b.opts.Socket, err, b.opts.StartHint)
		fmt.Fprintln(b.opts.Log, "pikoctl mcp serve:", err)
		return nil, err
	}
	c.OnNotification(b.onNotification)
	if err := c.Call(ctx, contracts.MethodHello, b.helloParams(), nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("pikod at %s did not answer system.hello: %w", b.opts.Socket, err)
	}
	watch := contracts.WatchParams{Kinds: []string{contracts.EventCatalog, contracts.EventResource, contracts.EventLog}, Servers: b.opts.Servers}
	if err := c.Call(ctx, contracts.MethodMCPWatch, watch, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("watching pikod's catalog: %w", err)
	}
	b.client = c
	if b.loaded {
		// A new daemon may have a new catalog.
		b.enqueue(contracts.EventParams{Kind: contracts.EventCatalog})
	}
	return c, nil
}

// Via is how the bridge names itself to pikod.
const Via = "pikoctl mcp serve"

// helloParams names this bridge and its host to pikod, for the records
// of what it asks (--name replaces the host's name). Called with connMu
// held.
func (b *Bridge) helloParams() contracts.HelloParams {
	client := contracts.ClientInfo{Name: b.host.Name, Version: b.host.Version}
	if b.opts.Name != "" {
		client.Name = b.opts.Name
	}
	return contracts.HelloParams{ClientVersion: b.opts.Version, Client: client, Via: Via}
}

// onNotification runs on the socket's reader: it only enqueues.
func (b *Bridge) onNotification(method string, params json.RawMessage) {
	if method != contracts.NotifyMCPEvent {
		return
	}
	var ev contracts.EventParams
	if json.Unmarshal(params, &ev) != nil {
		return
	}
	b.enqueue(ev)
}

func (b *Bridge) enqueue(ev contracts.EventParams) {
	select {
	case b.events <- ev:
	default:
		// Full: a catalog reload is due anyway.
		select {
		case b.events <- contracts.EventParams{Kind: contracts.EventCatalog}:
		default:
		}
	}
}

// eventLoop reloads the catalog when pikod's changes (coalescing bursts)
// and relays resource updates.
func (b *Bridge) eventLoop() {
	defer b.wg.Done()
	var reload <-chan time.Time
	for {
		select {
		case <-b.stop:
			return
		case ev := <-b.events:
			switch ev.Kind {
			case contracts.EventCatalog:
				if reload == nil {
					reload = time.After(100 * time.Millisecond)
				}
			case contracts.EventLog:
				b.relayLog(ev)
			case contracts.EventResource:
				var d contracts.ResourceEventData
				if json.Unmarshal(ev.Data, &d) == nil && d.URI != "" {
					b.srv.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": b.exposedURI(ev.Server, d.URI)})
				}
			}
		case <-reload:
			reload = nil
			b.catMu.Lock()
			loaded := b.loaded
			b.catMu.Unlock()
			if !loaded {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), connectCap)
			if err := b.load(ctx, false); err != nil {
				fmt.Fprintln(b.opts.Log, "pikoctl mcp serve: reloading the catalog:", err)
			}
			cancel()
		}
	}
}

// relayLog passes a server's log message (already redacted and made safe
// by pikod) to the host, its logger named after the server.
func (b *Bridge) relayLog(ev contracts.EventParams) {
	var e contracts.LogEntry
	if json.Unmarshal(ev.Data, &e) != nil {
		return
	}
	level := mcp.LoggingLevel(e.Level)
	if !slices.Contains(contracts.LogLevels, e.Level) {
		level = mcp.LoggingLevelInfo
	}
	logger := ev.Server
	if e.Logger != "" {
		logger += "/" + e.Logger
	}
	var data any = e.Data
	if len(e.Data) == 0 {
		data = ""
	}
	b.srv.SendNotificationToAllClients(string(mcp.MethodNotificationMessage), map[string]any{"level": level, "logger": logger, "data": data})
}

// logToHost sends the host a log message (notifications/message).
func (b *Bridge) logToHost(level mcp.LoggingLevel, msg string) {
	fmt.Fprintln(b.opts.Log, "pikoctl mcp serve:", msg)
	b.srv.SendNotificationToAllClients(string(mcp.MethodNotificationMessage), map[string]any{
		"level": level, "logger": "pikod", "data": msg,
	})
}
