package mcpclient

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
)

// BenchmarkReadCallPath is what the daemon does for a read call, from the
// caller's arguments to the result: Prepare (lookup, canonical arguments,
// validation, selection) and Send. The fixture is a process of its own,
// so allocs/op are the supervisor's and mcp-go's client side.
func BenchmarkReadCallPath(b *testing.B) {
	sup := NewSupervisor(Options{Log: zerolog.Nop(), RunDir: b.TempDir(), Records: newMemRecords(), ClientVersion: "bench"})
	b.Cleanup(sup.Close)
	read := []string{"echo"}
	sup.Apply([]contracts.ServerSettings{{ID: "fx", Transport: contracts.TransportStdio, Command: fixtureBinary(b),
		TimeoutMs: 10_000, ReadOnlyTools: read}})
	ctx := context.Background()
	args := []byte(`{"text":"hello"}`)
	call := func() {
		p, err := sup.Prepare(ctx, CallSpec{Server: "fx", Tool: "echo", Arguments: args})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Send(ctx, SendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for range 50 {
		call()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
}
