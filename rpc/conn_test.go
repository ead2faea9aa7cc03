package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConnOutlivesTheRequest: a handler keeps the connection of its request
// and notifies it after answering; the notifications pass the filter, every
// request of the connection sees the same Conn, and once the client closes,
// Done is closed and Notify fails with ErrConnClosed.
func TestConnOutlivesTheRequest(t *testing.T) {
	kept := make(chan *Conn, 2)
	s := NewServer(Options{Filter: func(b []byte, _ Outgoing) []byte {
		return bytes.ReplaceAll(b, []byte("secret-value"), []byte("[REDACTED]"))
	}})
	s.Register("keep", func(_ context.Context, req *Request) (any, error) {
		kept <- req.Conn()
		return "kept", nil
	})
	path := startServer(t, s)
	c := dial(t, path)
	notes := make(chan string, 4)
	c.OnNotification(func(m string, p json.RawMessage) { notes <- m + " " + string(p) })
	for range 2 {
		if err := c.Call(callCtx(t), "keep", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	conn := waitFor(t, kept, "the first request's connection")
	if again := waitFor(t, kept, "the second request's connection"); again != conn {
		t.Errorf("two requests on one connection got different Conns")
	}
	if err := conn.Notify("test.later", map[string]string{"v": "secret-value"}); err != nil {
		t.Fatalf("Notify after the request returned: %v", err)
	}
	if got := waitFor(t, notes, "the notification"); got != `test.later {"v":"[REDACTED]"}` {
		t.Errorf("notification = %s, want it filtered", got)
	}
	select {
	case <-conn.Done():
		t.Fatal("Done closed while the client is connected")
	default:
	}

	c.Close()
	select {
	case <-conn.Done():
	case <-time.After(waitLimit):
		t.Fatal("Done not closed after the client closed the connection")
	}
	if err := conn.Notify("test.late", nil); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Notify on a closed connection = %v, want ErrConnClosed", err)
	}
}

// TestConnNotifyToStuckReaderTimesOut: a client that never reads cannot
// hold a Notify for longer than the write timeout; the connection is
// closed then.
func TestConnNotifyToStuckReaderTimesOut(t *testing.T) {
	kept := make(chan *Conn, 1)
	s := NewServer(Options{WriteTimeout: 100 * time.Millisecond})
	s.Register("keep", func(_ context.Context, req *Request) (any, error) {
		kept <- req.Conn()
		return nil, nil
	})
	path := startServer(t, s)
	stuck := dialRaw(t, path)
	stuck.send(`{"jsonrpc":"2.0","id":1,"method":"keep"}`)
	conn := waitFor(t, kept, "the connection")
	chunk := strings.Repeat("z", 64<<10)
	done := make(chan error, 1)
	go func() {
		for {
			if err := conn.Notify("test.flood", chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	if err := waitFor(t, done, "Notify to fail"); err == nil {
		t.Fatal("unreachable")
	}
	select {
	case <-conn.Done():
	case <-time.After(waitLimit):
		t.Fatal("the connection was not closed after a write timed out")
	}
}
