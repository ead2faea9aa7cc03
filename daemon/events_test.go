package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/rs/zerolog"
)

func TestEventQueue(t *testing.T) {
	ev := func(seq uint64, data string) contracts.EventParams {
		return contracts.EventParams{Seq: seq, Kind: contracts.EventLog, Data: json.RawMessage(data)}
	}
	t.Run("count bound: oldest dropped, the next delivered counts them", func(t *testing.T) {
		q := eventQueue{limit: 3, maxBytes: 1 << 20}
		for i := uint64(1); i <= 8; i++ {
			q.push(ev(i, `1`))
		}
		var got []string
		for {
			e, ok := q.pop()
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%d/%d", e.Seq, e.Dropped))
		}
		if strings.Join(got, " ") != "6/5 7/0 8/0" || q.dropped != 5 {
			t.Errorf("delivered %q (seq/dropped), %d dropped in all; want 6/5 7/0 8/0 and 5", got, q.dropped)
		}
		// Drops after a pop count from there.
		q.push(ev(9, `1`))
		for i := uint64(10); i <= 13; i++ {
			q.push(ev(i, `1`))
		}
		first, _ := q.pop()
		if first.Seq != 11 || first.Dropped != 2 {
			t.Errorf("after more drops: first %d/%d, want 11/2", first.Seq, first.Dropped)
		}
	})
	t.Run("byte bound", func(t *testing.T) {
		big := `"` + strings.Repeat("x", 1000) + `"`
		q := eventQueue{limit: 1000, maxBytes: 3000}
		for i := uint64(1); i <= 10; i++ {
			q.push(ev(i, big))
		}
		if len(q.items) > 3 || q.bytes > 3000 || q.items[0].Dropped != uint64(10-len(q.items)) {
			t.Errorf("%d items, %d bytes, first dropped %d; want within 3000 bytes and the drops counted", len(q.items), q.bytes, q.items[0].Dropped)
		}
	})
	t.Run("the newest stays", func(t *testing.T) {
		q := eventQueue{limit: 1, maxBytes: 10}
		q.push(ev(1, `"`+strings.Repeat("y", 100)+`"`))
		q.push(ev(2, `"`+strings.Repeat("y", 100)+`"`))
		e, ok := q.pop()
		if !ok || e.Seq != 2 || e.Dropped != 1 {
			t.Errorf("got %+v %v, want event 2 with one dropped", e, ok)
		}
	})
}

// hubServer serves extensions.mcp.watch (with events' filters) on a real
// socket: "watch" params are {kinds, servers, queue, stop}.
func hubServer(t *testing.T) (*events, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pkev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.sock")
	ln, err := rpc.Listen(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents(zerolog.Nop())
	srv := rpc.NewServer(rpc.Options{WriteTimeout: 5 * time.Second})
	srv.Register(contracts.MethodMCPWatch, func(_ context.Context, req *rpc.Request) (any, error) {
		var p contracts.WatchParams
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		if p.Stop {
			ev.unwatch(req.Conn())
			return contracts.WatchResult{}, nil
		}
		if p.Queue == 0 {
			p.Queue = contracts.DefaultWatchQueue
		}
		return ev.watch(req.Conn(), p.Kinds, p.Servers, p.Queue)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ev.close()
		ev.mu.Lock()
		n := len(ev.watchers)
		ev.mu.Unlock()
		if n != 0 {
			t.Errorf("%d watchers left after close", n)
		}
	})
	return ev, path
}

func TestEventsDelivery(t *testing.T) {
	ev, path := hubServer(t)
	c, err := rpc.Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan contracts.EventParams, 100)
	c.OnNotification(func(m string, p json.RawMessage) {
		var e contracts.EventParams
		if m != contracts.NotifyMCPEvent || json.Unmarshal(p, &e) != nil {
			t.Errorf("notification %s %s", m, p)
		}
		got <- e
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res contracts.WatchResult
	if err := c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{Kinds: []string{contracts.EventState}, Servers: []string{"a"}}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Watching || res.Queue != contracts.DefaultWatchQueue || strings.Join(res.Kinds, ",") != "state" {
		t.Errorf("watch result %+v", res)
	}
	ev.publish(contracts.EventParams{Kind: contracts.EventState, Server: "b"})
	ev.publish(contracts.EventParams{Kind: contracts.EventLog, Server: "a"})
	ev.publish(contracts.EventParams{Kind: contracts.EventState, Server: "a", Data: json.RawMessage(`{"state":"connected"}`)})
	var e contracts.EventParams
	select {
	case e = <-got:
	case <-ctx.Done():
		t.Fatal("no event delivered")
	}
	if e.Seq != res.Seq+3 || e.Server != "a" || e.Kind != contracts.EventState || string(e.Data) != `{"state":"connected"}` || e.Dropped != 0 {
		t.Errorf("event %+v, want the third published (seq %d), the only one matching", e, res.Seq+3)
	}
	if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil {
		t.Errorf("time %q: %v", e.Time, err)
	}

	// Stop: nothing more arrives.
	if err := c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{Stop: true}, nil); err != nil {
		t.Fatal(err)
	}
	ev.publish(contracts.EventParams{Kind: contracts.EventState, Server: "a"})
	// A call answered after the publish proves the writer had its chance.
	if err := c.Call(ctx, contracts.MethodMCPWatch, contracts.WatchParams{Kinds: []string{contracts.EventLog}}, nil); err != nil {
		t.Fatal(err)
	}
	ev.publish(contracts.EventParams{Kind: contracts.EventLog, Server: "z"})
	select {
	case e = <-got:
	case <-ctx.Done():
		t.Fatal("no event after watching again")
	}
	if e.Kind != contracts.EventLog || e.Server != "z" {
		t.Errorf("after stop and a new watch: got %+v first, want the log event (the state event published while stopped never comes)", e)
	}
}

// TestEventsSlowWatcher: a watcher that does not read never slows
// publish; once it reads, it sees every event it kept in order, with the
// dropped ones counted.
func TestEventsSlowWatcher(t *testing.T) {
	ev, path := hubServer(t)
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := fmt.Fprintf(nc, `{"jsonrpc":"2.0","id":1,"method":%q,"params":{"queue":16}}`+"\n", contracts.MethodMCPWatch); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(nc, 1<<20)
	if line, err := r.ReadBytes('\n'); err != nil || !strings.Contains(string(line), `"watching":true`) {
		t.Fatalf("watch answer %s %v", line, err)
	}
	// Far more than the socket buffer and the queue hold; publish returns
	// at once for each.
	const n = 3000
	data := json.RawMessage(`"` + strings.Repeat("d", 2000) + `"`)
	for range n {
		ev.publish(contracts.EventParams{Kind: contracts.EventLog, Server: "s", Data: data})
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var last, seen, dropped uint64
	for last < n {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading events after %d (last seq %d): %v", seen, last, err)
		}
		var msg struct {
			Params contracts.EventParams `json:"params"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatal(err)
		}
		e := msg.Params
		if e.Seq != last+1+e.Dropped {
			t.Fatalf("event seq %d after %d with %d dropped: a gap that dropped does not explain", e.Seq, last, e.Dropped)
		}
		last, seen, dropped = e.Seq, seen+1, dropped+e.Dropped
	}
	if dropped == 0 || seen+dropped != n {
		t.Errorf("saw %d, %d dropped; want some dropped and every event accounted for", seen, dropped)
	}
	t.Logf("slow watcher: %d delivered, %d dropped", seen, dropped)
}
