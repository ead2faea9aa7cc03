package contracts

import (
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
