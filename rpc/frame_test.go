package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pikod/pikod/contracts"
)

func readAllFrames(fr *frameReader) ([]string, error) {
	var out []string
	for {
		f, err := fr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(f))
	}
}

func TestFrameReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		wantErr error
	}{
		{"lines", "a\nbb\n", 10, []string{"a", "bb"}, io.EOF},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}, io.EOF},
		{"last line without newline", "a\nbc", 10, []string{"a", "bc"}, io.EOF},
		{"empty lines kept", "\n\nx\n", 10, []string{"", "", "x"}, io.EOF},
		{"exactly max", "abcd\n", 4, []string{"abcd"}, io.EOF},
		{"over max", "ab\nabcde\nz\n", 4, []string{"ab"}, ErrFrameTooLarge},
		{"over max without newline", "abcdefgh", 4, nil, ErrFrameTooLarge},
		{"empty input", "", 4, nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader forces the ErrBufferFull and partial paths.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAllFrames(newFrameReader(r, tt.max))
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Next() error = %v, want %v", err, tt.wantErr)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") {
					t.Errorf("frames = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestFrameReaderLongLineAcrossBuffer(t *testing.T) {
	// Longer than bufio's 64 KiB buffer, so it is assembled from chunks.
	long := strings.Repeat("x", 200<<10)
	got, err := readAllFrames(newFrameReader(strings.NewReader(long+"\nend\n"), 300<<10))
	if !errors.Is(err, io.EOF) || len(got) != 2 || got[0] != long || got[1] != "end" {
		t.Fatalf("got %d frames (first %d bytes), err %v; want the long line then \"end\"", len(got), len(got[0]), err)
	}
	_, err = readAllFrames(newFrameReader(strings.NewReader(long+"\n"), 100<<10))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
}

func TestCheckMessage(t *testing.T) {
	tests := []struct {
		line   string
		code   int // 0: valid
		id     string
		substr string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`, 0, "", ""},
		{`{"jsonrpc":"2.0","id":"a","method":"m","params":{}}`, 0, "", ""},
		{`{"jsonrpc":"2.0","method":"m"}`, 0, "", ""},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, 0, "", ""},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, 0, "", ""},
		{`{bad`, contracts.CodeParseError, "", "parse error"},
		{`{"a":1}{`, contracts.CodeParseError, "", "parse error"},
		{`[1,2]`, contracts.CodeInvalidRequest, "", "batch"},
		{` [{"jsonrpc":"2.0","id":1,"method":"m"}]`, contracts.CodeInvalidRequest, "", "batch"},
		{`42`, contracts.CodeInvalidRequest, "", "JSON object"},
		{`"s"`, contracts.CodeInvalidRequest, "", "JSON object"},
		{`null`, contracts.CodeInvalidRequest, "", "JSON object"},
		{`{"id":1,"method":"m"}`, contracts.CodeInvalidRequest, "1", `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"1.0","id":"x","method":"m"}`, contracts.CodeInvalidRequest, `"x"`, `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":2}`, contracts.CodeInvalidRequest, "2", "missing method"},
		{`{"jsonrpc":"2.0","id":3,"method":5}`, contracts.CodeInvalidRequest, "3", "method must be"},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, contracts.CodeInvalidRequest, "3", "method must be"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, contracts.CodeInvalidRequest, "", "id must be"},
		{`{"jsonrpc":"2.0","id":-1,"method":"m"}`, contracts.CodeInvalidRequest, "", "id must be"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"m"}`, contracts.CodeInvalidRequest, "", "id must be"},
		{`{"jsonrpc":"2.0","id":4,"method":"m","result":1}`, contracts.CodeInvalidRequest, "4", "both"},
		{`{"jsonrpc":"2.0","result":1}`, contracts.CodeInvalidRequest, "", "needs an id"},
	}
	for _, tt := range tests {
		id, e := checkMessage([]byte(tt.line))
		switch {
		case tt.code == 0 && e != nil:
			t.Errorf("checkMessage(%s) = %v, want valid", tt.line, e.Message)
		case tt.code != 0 && e == nil:
			t.Errorf("checkMessage(%s) = valid, want code %d", tt.line, tt.code)
		case tt.code != 0:
			if int(e.Code) != tt.code || !strings.Contains(e.Message, tt.substr) || string(id) != tt.id {
				t.Errorf("checkMessage(%s) = id %s, %d %q; want id %s, %d containing %q", tt.line, id, e.Code, e.Message, tt.id, tt.code, tt.substr)
			}
		}
	}
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n{}\n"), uint16(8))
	f.Add([]byte("abc\r\n\n\ndef"), uint16(2))
	f.Add(append(bytes.Repeat([]byte("y"), 5000), '\n'), uint16(4095))
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		limit := int(max)%4096 + 1
		fr := newFrameReader(iotest.HalfReader(bytes.NewReader(data)), limit)
		var lines int
		for {
			frame, err := fr.Next()
			if err != nil {
				if errors.Is(err, ErrFrameTooLarge) {
					// Some line really was longer than the cap.
					found := false
					for _, l := range bytes.Split(data, []byte("\n")) {
						if len(l) > limit {
							found = true
						}
					}
					if !found {
						t.Fatalf("ErrFrameTooLarge with every line within %d bytes", limit)
					}
				} else if !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(frame) > limit {
				t.Fatalf("frame of %d bytes exceeds the cap %d", len(frame), limit)
			}
			lines++
			if lines > len(data)+1 {
				t.Fatalf("more frames than input bytes")
			}
		}
	})
}

func FuzzCheckMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m"}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		id, e := checkMessage(line)
		if e == nil && !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if id != nil && !validID(id) {
			t.Fatalf("answering with invalid id %s", id)
		}
	})
}
