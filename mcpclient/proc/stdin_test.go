//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pikod/pikod/contracts"
)

func TestStdinWriteTimeout(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "noread")
	spec.WriteTimeout = 200 * time.Millisecond
	p := startTest(t, quickKill(spec), newMemRecords())
	if got := readLine(t, bufio.NewReader(p.Stdout())); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	n, err := p.Stdin().Write(make([]byte, 1<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, contracts.ErrDeadlineExceeded) {
		t.Fatalf("Write of 1 MiB to a child that never reads: n %d err %v, want a deadline error", n, err)
	}
	if n >= 1<<20 {
		t.Errorf("Write reported %d bytes written", n)
	}
	// The pipe took part of the frame before the deadline: it was sent in
	// part, so it is not "not sent".
	if n == 0 || NothingWritten(err) {
		t.Errorf("partial write: n %d, not-sent record %v; want n > 0 and no record", n, NothingWritten(err))
	}
	if got := p.StdinWritten(); got != uint64(n) {
		t.Errorf("StdinWritten = %d, want the %d bytes that went", got, n)
	}
	n2, err2 := p.Stdin().Write([]byte("x\n"))
	if !errors.Is(err2, contracts.ErrDeadlineExceeded) {
		t.Errorf("Write after a timeout = %v, want the same sticky error", err2)
	}
	// Nothing of the next frame went.
	if n2 != 0 || !NothingWritten(err2) || p.StdinWritten() != uint64(n) {
		t.Errorf("Write after a timeout: n %d, not-sent record %v, written %d; want 0, a record, %d", n2, NothingWritten(err2), p.StdinWritten(), n)
	}
	if !errors.Is(p.CloseReason(), contracts.ErrDeadlineExceeded) {
		t.Errorf("CloseReason = %v", p.CloseReason())
	}
	stopTest(t, p)
}

// TestStdinWriteClosedPipe writes to a child that closed its stdin, and to
// a stdin pikod closed: nothing of the frame went, and the error says so.
func TestStdinWriteClosedPipe(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := startTest(t, quickKill(baseSpec(t, "closestdin")), newMemRecords())
	if got := readLine(t, bufio.NewReader(p.Stdout())); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	frame := []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call"}` + "\n")
	n, err := p.Stdin().Write(frame)
	if err == nil || n != 0 || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a closed pipe: n %d, err %v; want 0 bytes and EPIPE", n, err)
	}
	if !NothingWritten(err) {
		t.Errorf("Write to a closed pipe: %v carries no not-sent record", err)
	}
	// mcp-go wraps the write error with %w: the record survives.
	if !NothingWritten(fmt.Errorf("failed to write request: %w", err)) {
		t.Errorf("the not-sent record does not survive wrapping")
	}
	if p.StdinWritten() != 0 {
		t.Errorf("StdinWritten = %d after a failed write, want 0", p.StdinWritten())
	}
	stopTest(t, p)
	// Stop closed our end: a later write fails before writing anything.
	if n, err := p.Stdin().Write(frame); err == nil || n != 0 || !NothingWritten(err) {
		t.Errorf("Write after Stop: n %d, err %v; want 0 bytes and a not-sent record", n, err)
	}
}
