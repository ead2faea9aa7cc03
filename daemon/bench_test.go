package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// The benchmarks below run a whole daemon in this process against the
// stdio fixture (a process of its own, not counted) and call it over the
// real socket with rpc.Client, so allocs/op and B/op are the daemon's and
// the client's together: compare them before and after a change, never
// with another benchmark's. Timings on a shared machine mean nothing.

// benchDaemon starts a daemon with one fixture server "fx" (echo in
// readOnlyTools, add in autonomousTools), connected, and returns a
// client. The daemon stops when the benchmark ends.
func benchDaemon(b *testing.B) *rpc.Client {
	b.Helper()
	dir, err := os.MkdirTemp("", "pkbd")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	fixture := filepath.Join(dir, "mcpfixture")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		b.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", fixture, "./tests/fixtures/mcpfixture")
	build.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the fixture: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Instance: "bench", SocketPath: socket, StateDir: filepath.Join(dir, "state"),
			Version: "bench", Log: zerolog.Nop(), Vault: "file"})
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
	})
	var c *rpc.Client
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err = rpc.Dial(context.Background(), socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the daemon did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Cleanup(func() { c.Close() })
	settings := fmt.Sprintf(`{"servers":[{"id":"fx","transport":"stdio","command":%q,`+
		`"tools":["echo","add"],"readOnlyTools":["echo"],"autonomousTools":["add"]}]}`, fixture)
	var res json.RawMessage
	if err := c.Call(context.Background(), contracts.MethodConfigure,
		contracts.ConfigureParams{Extension: "mcp", Settings: json.RawMessage(settings)}, &res); err != nil {
		b.Fatal(err)
	}
	if err := c.Call(context.Background(), contracts.MethodMCPConnect, contracts.ServerParams{Server: "fx"}, &res); err != nil {
		b.Fatal(err)
	}
	return c
}

func benchCall(b *testing.B, tool, args string) {
	c := benchDaemon(b)
	params := contracts.CallParams{Server: "fx", Tool: tool, Arguments: json.RawMessage(args)}
	call := func() {
		var res contracts.CallResult
		if err := c.Call(context.Background(), contracts.MethodMCPCall, params, &res); err != nil {
			b.Fatal(err)
		}
		if res.Status != contracts.CallCompleted {
			b.Fatalf("status %q: %+v", res.Status, res)
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

// BenchmarkReadCall: extensions.mcp.call of a read-granted tool.
func BenchmarkReadCall(b *testing.B) { benchCall(b, "echo", `{"text":"hello"}`) }

// BenchmarkAutonomousCall: extensions.mcp.call of an autonomous tool
// (two durable commits per call).
func BenchmarkAutonomousCall(b *testing.B) { benchCall(b, "add", `{"a":1,"b":2}`) }

// BenchmarkHello: system.hello, the floor of a request.
func BenchmarkHello(b *testing.B) {
	c := benchDaemon(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var res contracts.HelloResult
		if err := c.Call(context.Background(), contracts.MethodHello, contracts.HelloParams{}, &res); err != nil {
			b.Fatal(err)
		}
	}
}
