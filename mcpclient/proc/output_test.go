//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
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
	got := p.StderrTail()
	want := strings.Repeat("a", 1024-len(stderrPayload)) + stderrPayload
	if got != want {
		t.Errorf("StderrTail = %q, want %q", got, want)
	}
}

func TestStderrTailLines(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "secret-value-18chr", "[REDACTED]") }
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"one line", 16, []string{"abc\n"}, "abc\n"},
		{"the ring keeps the end", 8, []string{"abcdef\n", "ghij\n"}, "ef\nghij\n"},
		{"a line in pieces", 64, []string{"ab", "c\nde", "f\n"}, "abc\ndef\n"},
		// A line still being written is held: it may end in the start of
		// a secret ("secret-value" of 18 characters, 12 written so far).
		{"a line still being written is held", 64, []string{"done\nhalf"}, "done\n"},
		{"a secret being written is held", 64, []string{"done\nkey=secret-value"}, "done\n"},
		{"the held line ends", 64, []string{"done\nkey=secret-value", "-18chr\n"}, "done\nkey=[REDACTED]\n"},
		// A secret split across writes is redacted as one line, and the
		// ring's cap then cuts only redacted text.
		{"secret across writes", 64, []string{"key=secret-val", "ue-18chr end\n"}, "key=[REDACTED] end\n"},
		{"secret at the cap", 20, []string{"xxxxxxxxxx secret-value-18chr\n"}, "xxxxxxxx [REDACTED]\n"},
		{"pending secret", 64, []string{"a secret-value-18chr"}, ""},
	}
	for _, tt := range tests {
		tail := newStderrTail(tt.size, redact)
		for _, w := range tt.writes {
			if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write(%q) = %d, %v", tt.name, w, n, err)
			}
		}
		if got := tail.String(); got != tt.want {
			t.Errorf("%s: tail = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestStderrTailOverlongLine: a line far longer than the tail loses its
// beginning, and with it every piece of a secret that straddled the cut,
// even when redacting what follows shrinks the line a lot.
func TestStderrTailOverlongLine(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 400; i++ {
		fmt.Fprintf(&sb, "%x-", i*7919)
	}
	secret := sb.String()
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	for _, after := range []int{0, 1, 40} {
		tail := newStderrTail(1024, redact)
		window := 1024 + stderrCutMargin
		// Written in chunks of 100 bytes, the line is trimmed when it
		// first passes 2*window bytes, to its last window bytes: put a
		// secret across that cut, then after more copies of it (which
		// redaction shrinks), the end.
		const chunk = 100
		cutAt := (2*window/chunk+1)*chunk - window
		line := strings.Repeat("h", cutAt-10) + strings.Repeat(secret, 1+after) + " end\n"
		for i := 0; i < len(line); i += chunk {
			_, _ = tail.Write([]byte(line[i:min(i+chunk, len(line))]))
		}
		got := tail.String()
		for i := 0; i+6 <= len(secret); i++ {
			if strings.Contains(got, secret[i:i+6]) {
				t.Fatalf("%d copies after: the tail %q holds %q, a piece of the secret", after, got, secret[i:i+6])
			}
		}
		if !strings.HasSuffix(got, " end\n") || len(got) > 1024 {
			t.Errorf("%d copies after: tail of %d bytes ends %q", after, len(got), got[max(0, len(got)-20):])
		}
	}
}
