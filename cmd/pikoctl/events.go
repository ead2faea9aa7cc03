package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pikod/pikod/cmd/pikoctl/render"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/spf13/cobra"
)

func (a *app) newEventCmds() []*cobra.Command {
	return []*cobra.Command{a.newLogsCmd(), a.newWatchCmd()}
}

func (a *app) newLogsCmd() *cobra.Command {
	var (
		level  string
		follow bool
		limit  int
		since  string
	)
	cmd := &cobra.Command{
		Use:   "logs SERVER [--level L] [-f]",
		Short: "Show a server's recent log messages; set its log level; follow new ones",
		Long: `logs prints the log messages (notifications/message) pikod kept for SERVER,
oldest first: the newest --limit (default 100) of them.

--level L first sets the server's log level to L (debug, info, notice,
warning, error, critical, alert, emergency; connecting it if needed), then
shows only messages at L or above. -f keeps printing new messages as they
arrive, until Ctrl-C.

With --json, each result (the setLevel one, then the read one) is printed
as the daemon sent it, one per line, and with -f every later log event
(extensions.mcp.event) follows, one JSON object per line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := args[0]
			read := contracts.LoggingParams{Server: server, Op: contracts.LoggingRead, Level: level, Limit: limit, Follow: follow}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &usageError{err: err}
				}
				read.Since = t.UTC().Format(time.RFC3339Nano)
			}
			return a.runLogs(cmd.Context(), read)
		},
	}
	cmd.Flags().StringVar(&level, "level", "", "set the server's log level to L, and show messages at L or above")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new messages until Ctrl-C")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most the newest N kept messages (default 100, at most 1000)")
	cmd.Flags().StringVar(&since, "since", "", "only messages received after T (RFC 3339, or a duration ago: 90m, 24h, 7d)")
	return cmd
}

// runLogs sets the level (when asked), reads the kept entries and, with
// follow, prints the log events of the server until ctx ends.
func (a *app) runLogs(ctx context.Context, read contracts.LoggingParams) error {
	c, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	events := a.eventFeed(c)
	if read.Level != "" {
		var raw json.RawMessage
		set := contracts.LoggingParams{Server: read.Server, Op: contracts.LoggingSetLevel, Level: read.Level}
		if err := c.Call(ctx, contracts.MethodMCPLogging, set, &raw); err != nil {
			return err
		}
		if a.jsonOut {
			if err := printRaw(a.stdout, raw); err != nil {
				return err
			}
		} else {
			var res contracts.LoggingResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("decoding the extensions.mcp.logging result: %w", err)
			}
			how := "with logging/setLevel"
			if res.Applied == "requestMeta" {
				how = "on every request (protocol " + clean(res.ProtocolVersion) + " has no logging/setLevel)"
			}
			fmt.Fprintf(a.stderr, "%s: log level set to %s, %s\n", clean(res.Server), clean(res.Level), how)
		}
	}
	var raw json.RawMessage
	if err := c.Call(ctx, contracts.MethodMCPLogging, read, &raw); err != nil {
		return err
	}
	var res contracts.LoggingResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("decoding the extensions.mcp.logging result: %w", err)
	}
	w := &errWriter{w: a.stdout}
	if a.jsonOut {
		_ = printRaw(w, raw)
	} else {
		if len(res.Entries) == 0 {
			fmt.Fprintf(a.stderr, "%s: no log messages kept%s\n", clean(res.Server), levelNote(res.Level))
		} else if res.Evicted > 0 {
			fmt.Fprintf(a.stderr, "%s: %d older messages are no longer kept (pikod keeps the newest %d)\n", clean(res.Server), res.Evicted, res.Kept)
		}
		for _, e := range res.Entries {
			writeLogEntry(w, "", e)
		}
	}
	if w.err != nil || !read.Follow {
		return w.err
	}
	fmt.Fprintf(a.stderr, "following %s (Ctrl-C to stop)\n", clean(res.Server))
	last, minRank := res.LastID, max(contracts.LogLevelRank(read.Level), 0)
	return a.followEvents(ctx, c, events, func(ev contracts.EventParams, raw json.RawMessage) error {
		if ev.Kind != contracts.EventLog || ev.Server != read.Server {
			return nil
		}
		var e contracts.LogEntry
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return fmt.Errorf("decoding a log event: %w", err)
		}
		// The read and the subscription overlap by design: skip what was
		// printed, and what the level leaves out.
		if e.ID <= last || max(contracts.LogLevelRank(e.Level), 0) < minRank {
			return nil
		}
		last = e.ID
		if ev.Dropped > 0 && !a.jsonOut {
			fmt.Fprintf(a.stderr, "(%d events dropped: pikoctl did not keep up)\n", ev.Dropped)
		}
		if a.jsonOut {
			return printRaw(a.stdout, raw)
		}
		writeLogEntry(w, "", e)
		return w.err
	})
}

func levelNote(level string) string {
	if level == "" {
		return " (no log level set: the server sends what it sends by default)"
	}
	return " (log level " + clean(level) + ")"
}

// writeLogEntry prints one log entry on one line: time, level, logger,
// data (a string as text, anything else as JSON), each made safe.
func writeLogEntry(w io.Writer, prefix string, e contracts.LogEntry) {
	fmt.Fprintf(w, "%s%s %s\n", prefix, clean(e.Time), render.LogEntry(e))
}

func (a *app) newWatchCmd() *cobra.Command {
	var kinds, servers []string
	cmd := &cobra.Command{
		Use:   "watch [--kind K]... [--server S]...",
		Short: "Print pikod's events as they happen, one line each, until Ctrl-C",
		Long: `watch subscribes to extensions.mcp.event notifications and prints one line
per event: time, sequence number, server, kind and what happened. Kinds are
state, catalog, resource, log and request; without --kind every kind is
shown, without --server every server. With --json each event's params
object is printed as the daemon sent it, one per line.

pikod holds at most 1024 events for a watcher that does not keep up and
drops the oldest: a line says how many.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.connect(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			events := a.eventFeed(c)
			var res contracts.WatchResult
			if err := c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{Kinds: kinds, Servers: servers}, &res); err != nil {
				return err
			}
			// On stderr, with --json too: stdout holds only events.
			fmt.Fprintf(a.stderr, "watching %s events of %s (Ctrl-C to stop)\n",
				strings.Join(res.Kinds, ", "), orAll(res.Servers, "every server"))
			w := &errWriter{w: a.stdout}
			return a.followEvents(ctx, c, events, func(ev contracts.EventParams, raw json.RawMessage) error {
				if a.jsonOut {
					return printRaw(a.stdout, raw)
				}
				if ev.Dropped > 0 {
					fmt.Fprintf(w, "(%d events dropped: pikoctl did not keep up)\n", ev.Dropped)
				}
				writeEvent(w, ev)
				return w.err
			})
		},
	}
	cmd.Flags().StringArrayVar(&kinds, "kind", nil, "only events of this kind (repeatable): state, catalog, resource, log, request")
	cmd.Flags().StringArrayVar(&servers, "server", nil, "only events of this server (repeatable)")
	return cmd
}

func orAll(list []string, all string) string {
	if len(list) == 0 {
		return all
	}
	return clean(strings.Join(list, ", "))
}

// eventFeed hands the daemon's event notifications on c to a channel. The
// reader waits while the channel is full (pikoctl printing slowly): then
// the daemon's queue for this connection fills and drops the oldest, as
// for any slow watcher.
type eventFeed struct {
	ch   chan json.RawMessage
	quit chan struct{}
}

func (a *app) eventFeed(c *rpc.Client) *eventFeed {
	f := &eventFeed{ch: make(chan json.RawMessage, 64), quit: make(chan struct{})}
	c.OnNotification(func(method string, params json.RawMessage) {
		if method != contracts.NotifyMCPEvent {
			return
		}
		select {
		case f.ch <- params:
		case <-f.quit:
		}
	})
	return f
}

// followEvents passes each event to handle until ctx ends (Ctrl-C: a clean
// end, exit 0) or the daemon closes the connection.
func (a *app) followEvents(ctx context.Context, c *rpc.Client, f *eventFeed, handle func(contracts.EventParams, json.RawMessage) error) error {
	defer close(f.quit)
	for {
		select {
		case raw := <-f.ch:
			var ev contracts.EventParams
			if err := json.Unmarshal(raw, &ev); err != nil {
				return fmt.Errorf("decoding an event: %w", err)
			}
			if err := handle(ev, raw); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		case <-c.Done():
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("pikod closed the connection (it stopped, or this watcher did not read for too long): %w", rpc.ErrUnreachable)
		}
	}
}

// writeEvent prints one event on one line.
func writeEvent(w io.Writer, ev contracts.EventParams) {
	fmt.Fprintf(w, "%s #%d %s %s %s\n", clean(ev.Time), ev.Seq, cell(ev.Server), clean(ev.Kind), render.Event(ev, render.Commands))
}
