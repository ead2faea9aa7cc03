package mcpclient

import "testing"

func TestSaidOnce(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`handshake: transport error: failed to send request: failed to send request: Post "http://127.0.0.1:1/mcp": dial tcp 127.0.0.1:1: connect: connection refused`,
			`handshake: transport error: failed to send request: Post "http://127.0.0.1:1/mcp": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"a: a: a: b", "a: b"},
		{"a: b: a", "a: b: a"},
		{"plain", "plain"},
		{"", ""},
		{"x:: x", "x:: x"},
	} {
		if got := saidOnce(tt.in); got != tt.want {
			t.Errorf("saidOnce(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
