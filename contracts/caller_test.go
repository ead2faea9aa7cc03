package contracts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCallerDescribe(t *testing.T) {
	bridge := Caller{PID: 4242, Executable: "/home/me/.local/bin/pikoctl",
		Client: ClientInfo{Name: "claude-code", Version: "2.1.0"}, Via: "pikoctl mcp serve"}
	for _, tt := range []struct {
		name        string
		c           Caller
		long, short string
	}{
		{"bridge", bridge,
			"claude-code 2.1.0 (declared) via pikoctl mcp serve, pid 4242 /home/me/.local/bin/pikoctl",
			"pikoctl[4242] claude-code (declared)"},
		{"plain socket client", Caller{PID: 7, Executable: "/usr/bin/python3"}, "pid 7 /usr/bin/python3", "python3[7]"},
		{"executable unreadable", Caller{PID: 7}, "pid 7 (executable unknown)", "?[7]"},
		{"declared only", Caller{Client: ClientInfo{Name: "x"}}, "x (declared)", "x (declared)"},
		{"nothing known (recorded before callers)", Caller{}, "unknown", "-"},
		{"hostile", Caller{PID: 1, Executable: "/tmp/\x1b[2Jx", Client: ClientInfo{Name: "a\x1b]0;t\x07\u202eb"}},
			`a\u{001B}]0;t\u{0007}\u{202E}b (declared), pid 1 /tmp/\u{001B}[2Jx`, `\u{001B}[2Jx[1] a\u{001B}]0;t\u{0007}… (declared)`},
	} {
		if got := tt.c.Describe(); got != tt.long {
			t.Errorf("%s: Describe() = %q, want %q", tt.name, got, tt.long)
		}
		if got := tt.c.Short(); got != tt.short {
			t.Errorf("%s: Short() = %q, want %q", tt.name, got, tt.short)
		}
	}
}

func TestCallerBounded(t *testing.T) {
	long := strings.Repeat("é", 10_000)
	c := Caller{PID: 1, Executable: long, Client: ClientInfo{Name: long, Version: long}, Via: long + "\xff"}.Bounded()
	for what, tt := range map[string]struct {
		s   string
		max int
	}{
		"executable": {c.Executable, MaxExecutableChars}, "name": {c.Client.Name, MaxClientNameChars},
		"version": {c.Client.Version, MaxClientVersionChars}, "via": {c.Via, MaxViaChars},
	} {
		if n := utf8.RuneCountInString(tt.s); n != tt.max || !strings.HasSuffix(tt.s, "…") || !utf8.ValidString(tt.s) {
			t.Errorf("bounded %s: %d characters (valid UTF-8: %v), want %d ending in …", what, n, utf8.ValidString(tt.s), tt.max)
		}
	}
	if got := (Caller{Client: ClientInfo{Version: "1"}}).Bounded(); got.Client != (ClientInfo{}) {
		t.Errorf("a client without a name is kept: %+v", got.Client)
	}
	short := Caller{PID: 2, Client: ClientInfo{Name: "ok", Version: "1"}, Via: "v"}
	if got := short.Bounded(); got != short {
		t.Errorf("Bounded changed text within its bounds: %+v", got)
	}
}
