package contracts

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNPMPackageName(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"@playwright/mcp@0.0.83", "@playwright/mcp"},
		{"@playwright/mcp", "@playwright/mcp"},
		{"chrome-devtools-mcp@latest", "chrome-devtools-mcp"},
		{"chrome-devtools-mcp", "chrome-devtools-mcp"},
		{"/usr/bin/playwright-mcp", ""},
		{"./cli.js", ""},
		{"@scope", ""},
		{"a/b", ""},
		{"", ""},
	} {
		if got := NPMPackageName(tc.spec); got != tc.want {
			t.Errorf("NPMPackageName(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestMatchBrowserPreset(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"@playwright/mcp@0.0.83", BrowserPlaywright},
		{"/srv/node_modules/.bin/playwright-mcp", BrowserPlaywright},
		{"/srv/node_modules/@playwright/mcp/cli.js", BrowserPlaywright},
		{"chrome-devtools-mcp@1.11.0", BrowserChromeDevTools},
		{"/usr/local/bin/chrome-devtools-mcp", BrowserChromeDevTools},
		{"@playwright/mcp-fork@1.0.0", ""},
		{"/usr/bin/browser-mcp", ""},
		{"puppeteer-mcp", ""},
	} {
		p, ok := MatchBrowserPreset(tc.entry)
		if got := map[bool]string{true: p.Name}[ok]; got != tc.want {
			t.Errorf("MatchBrowserPreset(%q) = %q, want %q", tc.entry, got, tc.want)
		}
	}
}

// TestBrowserPresetsNarrow checks every preset's delegation: a subset of
// its tools, and never a tool that runs code, uploads or fills forms.
func TestBrowserPresetsNarrow(t *testing.T) {
	for _, p := range BrowserPresets {
		tools := map[string]bool{}
		for _, n := range p.Tools {
			tools[n] = true
		}
		for _, n := range p.Autonomous {
			if !tools[n] {
				t.Errorf("preset %s delegates %q, which is not among its tools", p.Name, n)
			}
			for _, bad := range []string{"evaluate", "run_code", "upload", "fill", "drop", "drag"} {
				if strings.Contains(n, bad) {
					t.Errorf("preset %s delegates %q", p.Name, n)
				}
			}
		}
		if p.CloseTool != "" && !tools[p.CloseTool] {
			t.Errorf("preset %s closes with %q, not among its tools", p.Name, p.CloseTool)
		}
	}
}

func TestBrowserSettingsValidate(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`{"id":"b","transport":"stdio","command":"x","browser":{"preset":"playwright"}}`, ""},
		{`{"id":"b","transport":"stdio","command":"x","browser":{"preset":"generic"}}`, ""},
		{`{"id":"b","transport":"stdio","command":"x","browser":{"preset":"firefox"}}`, "browser.preset: must be"},
		{`{"id":"b","transport":"stdio","command":"x","browser":{}}`, "browser.preset: required"},
		{`{"id":"b","transport":"stdio","command":"x","browser":{"preset":"playwright","x":1}}`, "browser.x"},
		{`{"id":"b","transport":"http","url":"https://example.com/mcp","browser":{"preset":"playwright"}}`, "browser: applies only to stdio"},
	} {
		_, err := ParseMCPSettings([]byte(`{"servers":[` + tc.server + `]}`))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseMCPSettings(%s) = %v, want valid", tc.server, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseMCPSettings(%s) = %v, want %q", tc.server, err, tc.want)
		}
	}
}

func TestParseBrowserPairing(t *testing.T) {
	const token = "tok_0123456789abcdefghijklmnopqrstuvwxyz"
	pin := "sha256:" + strings.Repeat("5c", 32)
	good := func(edit func(m map[string]any)) []byte {
		m := map[string]any{"version": 1, "url": "https://127.0.0.1:8765/mcp", "token": token, "fingerprint": pin,
			"preset": "playwright", "tools": []string{"browser_navigate", "browser_snapshot", "browser_evaluate", "my_extra"}}
		if edit != nil {
			edit(m)
		}
		b, _ := json.Marshal(m)
		return b
	}
	p, err := ParseBrowserPairing(good(nil))
	if err != nil {
		t.Fatalf("ParseBrowserPairing(good) = %v", err)
	}
	if got := p.Delegated(); !slices.Equal(got, []string{"browser_navigate", "browser_snapshot"}) {
		t.Errorf("Delegated() = %v, want the preset's autonomous tools the bridge exposes (not browser_evaluate, not my_extra)", got)
	}
	for _, tt := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"version", good(func(m map[string]any) { m["version"] = 2 }), "version must be 1"},
		{"http url", good(func(m map[string]any) { m["url"] = "http://127.0.0.1:8765/mcp" }), "url must be the bridge's https URL"},
		{"url credentials", good(func(m map[string]any) { m["url"] = "https://u:" + token + "@127.0.0.1/mcp" }), "url must be"},
		{"short token", good(func(m map[string]any) { m["token"] = "short" }), "token must be at least 32"},
		{"token with space", good(func(m map[string]any) { m["token"] = token + " x" }), "token must be"},
		{"fingerprint", good(func(m map[string]any) { m["fingerprint"] = "md5:" + token }), `fingerprint must be "sha256:"`},
		{"preset", good(func(m map[string]any) { m["preset"] = "selenium" }), "preset must be"},
		{"no tools", good(func(m map[string]any) { delete(m, "tools") }), "tools must list"},
		{"bad tool", good(func(m map[string]any) { m["tools"] = []string{"a b"} }), "tools must be tool names"},
		{"unknown field", good(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		{"token type", good(func(m map[string]any) { m["token"] = 7 }), `field "token" has the wrong type`},
		{"syntax", []byte(`{"token": "` + token + `" "url": 1}`), "not JSON (at byte"},
		{"two objects", append(good(nil), good(nil)...), "more than one JSON object"},
	} {
		_, err := ParseBrowserPairing(tt.raw)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want an invalid argument saying %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), token[4:]) {
			t.Errorf("%s: the error carries the token: %v", tt.name, err)
		}
	}
}
