package rpc

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

type benchParams struct {
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

type benchResult struct {
	Status string `json:"status"`
}

// BenchmarkRequest is the server's intake and reply of one request of a
// call's shape, over the real socket, written and read as raw lines: what
// allocs/op counts is the server's (framing, checks, dispatch, params
// decoded into typed params, the reply), with little of the client's.
func BenchmarkRequest(b *testing.B) {
	s := NewServer(Options{Log: zerolog.Nop()})
	s.Handle("extensions.mcp.call", Handle(func(_ context.Context, _ *Request, p *benchParams) (benchResult, error) {
		return benchResult{Status: "completed"}, nil
	}))
	dir, err := os.MkdirTemp("", "pkrb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s", "b.sock")
	ln, err := Listen(path, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done })
	nc, err := net.Dial("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"extensions.mcp.call","params":{"server":"fx","tool":"echo","arguments":{"text":"hello"}}}` + "\n")
	r := bufio.NewReader(nc)
	round := func() {
		if _, err := nc.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		round()
	}
}
