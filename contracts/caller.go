package contracts

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of what a caller declares about itself in system.hello, in
// characters. Longer text is cut to the bound (ending with "…") when it
// is recorded; the connection is never refused for it.
const (
	MaxClientNameChars    = 64
	MaxClientVersionChars = 32
	MaxViaChars           = 64
	// MaxExecutableChars bounds the executable path read from the kernel
	// (PATH_MAX).
	MaxExecutableChars = 4096
)

// ClientInfo is what a client says it is: the name and version of the
// program on the other end of the socket, or of the MCP host behind a
// bridge (its clientInfo). It is the client's claim, never checked.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Caller is who asked for an action or a call. PID and Executable come
// from the kernel when the connection was accepted (peer credentials, and
// /proc/PID/exe on Linux or kern.procargs2 on macOS); either is zero when
// it could not be read. Client and Via are what the connection declared
// in system.hello before the request: untrusted text, bounded, recorded
// as declared and made safe only where it is shown (Describe). The zero
// Caller means nothing is known (omitted from JSON with omitzero). It is a
// comparable value.
type Caller struct {
	PID        int        `json:"pid,omitempty"`
	Executable string     `json:"executable,omitempty"`
	Client     ClientInfo `json:"client,omitzero"`
	// Via names the program that relayed the call for Client, such as
	// "pikoctl mcp serve".
	Via string `json:"via,omitempty"`
}

// IsZero reports whether nothing is known of the caller.
func (c Caller) IsZero() bool { return c == Caller{} }

// Bounded is c with every text field cut to its bound and a client
// without a name dropped. It does not sanitise: the text stays as
// declared (Describe makes it safe to show).
func (c Caller) Bounded() Caller {
	c.Executable = cutChars(c.Executable, MaxExecutableChars)
	c.Via = cutChars(c.Via, MaxViaChars)
	c.Client = ClientInfo{Name: cutChars(c.Client.Name, MaxClientNameChars), Version: cutChars(c.Client.Version, MaxClientVersionChars)}
	if c.Client.Name == "" {
		c.Client = ClientInfo{}
	}
	return c
}

// cutChars cuts s to at most n characters, the last one "…" when cut, on
// a character boundary; invalid UTF-8 becomes U+FFFD.
func cutChars(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}

// Describe is c for a person, on one line and safe for a terminal: the
// declared part first, marked as declared, then what the kernel said, as
// in "claude-code 2.1.0 (declared) via pikoctl mcp serve, pid 4242
// /home/me/.local/bin/pikoctl". A zero caller (an action or receipt
// recorded before pikod kept callers) is "unknown".
func (c Caller) Describe() string {
	if c.IsZero() {
		return "unknown"
	}
	var parts []string
	if c.Client.Name != "" {
		s := SafeText(c.Client.Name, OneLine, MaxClientNameChars)
		if c.Client.Version != "" {
			s += " " + SafeText(c.Client.Version, OneLine, MaxClientVersionChars)
		}
		parts = append(parts, s+" (declared)")
	}
	if c.Via != "" {
		parts = append(parts, "via "+SafeText(c.Via, OneLine, MaxViaChars))
	}
	declared := strings.Join(parts, " ")
	kernel := ""
	if c.PID > 0 {
		kernel = "pid " + strconv.Itoa(c.PID)
		if c.Executable != "" {
			kernel += " " + SafeText(c.Executable, OneLine, MaxExecutableChars)
		} else {
			kernel += " (executable unknown)"
		}
	}
	switch {
	case declared == "":
		return kernel
	case kernel == "":
		return declared
	}
	return declared + ", " + kernel
}

// Short is c for a table cell: the executable's base name and pid as the
// kernel gave them, then the declared name, as in
// "pikoctl[4242] claude-code (declared)"; "-" when nothing is known.
func (c Caller) Short() string {
	if c.IsZero() {
		return "-"
	}
	var s string
	switch {
	case c.Executable != "":
		s = SafeText(filepath.Base(c.Executable), OneLine, 24)
	case c.PID > 0:
		s = "?"
	}
	if c.PID > 0 {
		s += "[" + strconv.Itoa(c.PID) + "]"
	}
	if c.Client.Name != "" {
		if s != "" {
			s += " "
		}
		s += SafeText(c.Client.Name, OneLine, 24) + " (declared)"
	}
	if s == "" {
		s = "via " + SafeText(c.Via, OneLine, 24)
	}
	return s
}
