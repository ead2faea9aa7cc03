//go:build linux

package proc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/pikod/pikod/contracts"
)

func TestStdoutLineCap(t *testing.T) {
	tests := []struct {
		name    string
		line    int
		tooLong bool
	}{
		{"line at the cap passes", 1 << 20, false},
		{"line over the cap fails", 2 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			spec := baseSpec(t, "bigline")
			spec.ServerID = "cap"
			spec.Env["PIKO_PROCTEST_N"] = strconv.Itoa(tt.line)
			spec.MaxLineBytes = 1 << 20
			p := startTest(t, quickKill(spec), newMemRecords())
			out := bufio.NewReader(p.Stdout())
			if got := readLine(t, out); got != "hello" {
				t.Fatalf("first line = %q, want hello", got)
			}
			line, err := out.ReadString('\n')
			if tt.tooLong {
				if !errors.Is(err, ErrMessageTooLarge) || !errors.Is(err, contracts.ErrResourceExhausted) {
					t.Fatalf("reading a %d-byte line: err %v, want ErrMessageTooLarge", tt.line, err)
				}
				if want := `server "cap" sent a message over maxBytes (1048576 bytes)`; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
				if !errors.Is(p.CloseReason(), ErrMessageTooLarge) {
					t.Errorf("CloseReason = %v, want ErrMessageTooLarge", p.CloseReason())
				}
			} else if err != nil || len(line) != tt.line+1 {
				t.Errorf("reading a %d-byte line: %d bytes, err %v", tt.line, len(line), err)
			}
			stopTest(t, p)
		})
	}
}

func TestStdoutLineCapChunks(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		tooLong bool
	}{
		{"ab\ncd\n", "ab\ncd\n", false},
		{"abc\n", "", true},
		{"ok\nTOOLONG", "ok\n", true},
		{"ok\nab", "ok\nab", false},
	}
	for _, tt := range tests {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.WriteString(tt.in)
		_ = w.Close()
		lr := &lineCapReader{p: &Process{log: zerolog.Nop()}, f: r, max: 2}
		got, err := io.ReadAll(lr)
		_ = r.Close()
		if string(got) != tt.want || errors.Is(err, ErrMessageTooLarge) != tt.tooLong {
			t.Errorf("read %q with max 2 = %q, %v; want %q, too long %v", tt.in, got, err, tt.want, tt.tooLong)
		}
	}
}

func TestStderrTail(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	spec := baseSpec(t, "stderr")
	spec.StderrRingBytes = 1024
	p := startTest(t, spec, newMemRecords())
	<-p.Done()
	stopTest(t, p) // waits for the stderr drain
	// The tail is the server's bytes, untouched: the caller sanitizes.
	got := string(p.StderrTail())
	want := strings.Repeat("a", 1024-len(stderrPayload)) + stderrPayload
	if got != want {
		t.Errorf("StderrTail = %q, want %q", got, want)
	}
}

func TestStderrRing(t *testing.T) {
	tests := []struct {
		writes []string
		want   string
	}{
		{[]string{"abc"}, "abc"},
		{[]string{"abc", "def"}, "cdef"},
		{[]string{"abcdefgh"}, "efgh"},
		{[]string{"ab", "cdefghij", "k"}, "hijk"},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "fghi"},
	}
	for _, tt := range tests {
		r := newRing(4)
		for _, w := range tt.writes {
			if n, err := r.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := string(r.bytes()); got != tt.want {
			t.Errorf("ring(4) after %q = %q, want %q", tt.writes, got, tt.want)
		}
	}
}
