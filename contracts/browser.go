package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"
)

// Browser presets (BrowserSettings.Preset).
const (
	// BrowserPlaywright is Microsoft's @playwright/mcp.
	BrowserPlaywright = "playwright"
	// BrowserChromeDevTools is Google's chrome-devtools-mcp.
	BrowserChromeDevTools = "chrome-devtools"
	// BrowserGeneric is any other browser MCP server: pikod knows none of
	// its tools, so nothing is delegated and no browser is closed for it.
	BrowserGeneric = "generic"
)

// BrowserSettings marks a stdio server as a browser that pikod runs with
// the browser preset (pikoctl mcp browser). pikod then
//   - gives the server a short private temporary directory of its own
//     (TMPDIR, removed at disconnect), because Chromium's lock socket
//     under the disposable home's long path exceeds the Unix socket
//     path limit;
//   - before stopping the server, asks it to close the browser (the
//     preset's CloseTool, when it has one), so the profile is saved;
//   - imports every file a completed call reports inside the server's
//     artifactDirectory as a retained source linked to the call's receipt
//     (CallResult.Captures).
type BrowserSettings struct {
	// Preset is playwright, chrome-devtools or generic. Required.
	Preset string `json:"preset"`
}

// BrowserPreset is what pikod knows of one browser MCP server: how to
// recognise its entry point, its tools (as of the version named) and the
// narrow set it delegates.
type BrowserPreset struct {
	// Name is the BrowserSettings.Preset value.
	Name string
	// Package is the npm package; Binaries the executables it installs.
	Package  string
	Binaries []string
	// Version is the package version the tool lists were read from.
	Version string
	// Tools are every tool the server has (selected; the ones outside
	// Autonomous need approval).
	Tools []string
	// Autonomous are the tools delegated as autonomousTools: reading and
	// moving around pages, never running code, uploading files, filling
	// forms or writing files outside the artifact directory.
	Autonomous []string
	// CloseTool closes the browser gracefully (the profile is written);
	// "" when the server has none.
	CloseTool string
	// CloseArgs is CloseTool's arguments (JSON), "{}" when empty.
	CloseArgs string
}

// BrowserPresets lists the presets pikod knows, in the order they are
// matched.
var BrowserPresets = []BrowserPreset{
	{
		Name:     BrowserPlaywright,
		Package:  "@playwright/mcp",
		Binaries: []string{"playwright-mcp", "mcp-server-playwright"},
		Version:  "0.0.83",
		Tools: []string{
			"browser_click", "browser_close", "browser_console_messages", "browser_drag", "browser_drop",
			"browser_emulate_media", "browser_evaluate", "browser_file_upload", "browser_fill_form", "browser_find",
			"browser_handle_dialog", "browser_hover", "browser_navigate", "browser_navigate_back",
			"browser_network_request", "browser_network_requests", "browser_press_key", "browser_resize",
			"browser_run_code_unsafe", "browser_select_option", "browser_snapshot", "browser_tabs",
			"browser_take_screenshot", "browser_type", "browser_wait_for",
		},
		Autonomous: []string{
			"browser_navigate", "browser_navigate_back", "browser_snapshot", "browser_find", "browser_click",
			"browser_hover", "browser_type", "browser_press_key", "browser_select_option",
			"browser_take_screenshot", "browser_wait_for", "browser_tabs", "browser_resize",
			"browser_console_messages", "browser_close",
		},
		CloseTool: "browser_close",
		CloseArgs: "{}",
	},
	{
		Name:     BrowserChromeDevTools,
		Package:  "chrome-devtools-mcp",
		Binaries: []string{"chrome-devtools-mcp"},
		Version:  "1.11.0",
		Tools: []string{
			"click", "close_page", "drag", "emulate", "evaluate_script", "fill", "fill_form",
			"get_console_message", "get_css_styles", "get_network_request", "handle_dialog", "hover",
			"lighthouse_audit", "list_console_messages", "list_network_requests", "list_pages",
			"navigate_page", "new_page", "performance_analyze_insight", "performance_start_trace",
			"performance_stop_trace", "press_key", "resize_page", "screencast_start", "screencast_stop",
			"select_page", "take_heapsnapshot", "take_screenshot", "take_snapshot", "type_text",
			"upload_file", "wait_for",
		},
		Autonomous: []string{
			"navigate_page", "new_page", "list_pages", "select_page", "close_page", "take_snapshot",
			"take_screenshot", "click", "hover", "type_text", "press_key", "wait_for",
			"list_console_messages", "get_console_message", "list_network_requests", "resize_page",
		},
	},
}

// FindBrowserPreset returns the preset named name.
func FindBrowserPreset(name string) (BrowserPreset, bool) {
	i := slices.IndexFunc(BrowserPresets, func(p BrowserPreset) bool { return p.Name == name })
	if i < 0 {
		return BrowserPreset{}, false
	}
	return BrowserPresets[i], true
}

// MatchBrowserPreset recognises an entry point: an npm package spec
// (@playwright/mcp@0.0.83, chrome-devtools-mcp@latest) or an executable
// path whose file name, or a directory on the way to it, is a preset's
// binary or package (node_modules/@playwright/mcp/cli.js). It returns
// false for anything else: an unknown server gets no delegated tools.
func MatchBrowserPreset(entry string) (BrowserPreset, bool) {
	name := NPMPackageName(entry)
	base := path.Base(entry)
	for _, p := range BrowserPresets {
		if name == p.Package || slices.Contains(p.Binaries, base) ||
			strings.Contains(entry, "/node_modules/"+p.Package+"/") {
			return p, true
		}
	}
	return BrowserPreset{}, false
}

// NPMPackageName returns the package name of an npm spec (a leading
// scope kept, a version or tag cut: "@playwright/mcp@0.0.83" is
// "@playwright/mcp"), or "" when spec does not look like one (a path).
func NPMPackageName(spec string) string {
	if spec == "" || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, ".") || strings.ContainsAny(spec, " \t\\:") {
		return ""
	}
	if strings.HasPrefix(spec, "@") {
		scope, rest, ok := strings.Cut(spec, "/")
		if !ok || len(scope) < 2 || rest == "" {
			return ""
		}
		name, _, _ := strings.Cut(rest, "@")
		if name == "" || strings.Contains(name, "/") {
			return ""
		}
		return scope + "/" + name
	}
	name, _, _ := strings.Cut(spec, "@")
	if name == "" || strings.Contains(name, "/") {
		return ""
	}
	return name
}

// Capture is one file a completed call of a browser server reported
// inside its artifactDirectory, imported by pikod as a retained source
// linked to the call's receipt (extensions.mcp.import, done for the
// caller).
type Capture struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	// SourceID is the retained copy, read with source.read; empty when
	// the import failed (Error says why).
	SourceID string `json:"sourceId,omitempty"`
	// Size is the file's size in bytes; SHA256 the digest of its bytes.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Encoding is text or base64 (the source's form).
	Encoding string `json:"encoding,omitempty"`
	// Chars is the length of the source in characters (source.read's
	// total).
	Chars int64 `json:"chars,omitempty"`
	// Error says why the file was not imported.
	Error string `json:"error,omitempty"`
}

// MaxCaptures bounds the files imported from one call result.
const MaxCaptures = 16

// BrowserPairingVersion is the BrowserPairing.Version this build writes
// and reads.
const BrowserPairingVersion = 1

// BrowserRemoteID is the server id 'pikoctl mcp browser-remote' configures
// by default.
const BrowserRemoteID = "browser-remote"

// BrowserPairing is the private pairing JSON the desktop bridge prints
// (browser-bridge pair) and 'pikoctl mcp browser-remote -' reads on stdin.
// Token is a secret: it goes to the vault, never into settings, and
// nothing here ever prints it.
type BrowserPairing struct {
	// Version is BrowserPairingVersion.
	Version int `json:"version"`
	// URL is the bridge's Streamable HTTP endpoint, https on loopback
	// (or the local end of a tunnel to it).
	URL string `json:"url"`
	// Token is the bearer token the bridge requires.
	Token string `json:"token"`
	// Fingerprint pins the bridge's TLS certificate: "sha256:HEX" of its
	// public key (or of the certificate), a TLSPin.
	Fingerprint string `json:"fingerprint"`
	// Preset is the browser server's preset (playwright, chrome-devtools
	// or generic): which exposed tools pikod may delegate.
	Preset string `json:"preset"`
	// Tools are every tool the bridge exposes (the preset's list and the
	// ones its owner allowed at init), sorted.
	Tools []string `json:"tools"`
}

// MinPairingToken is the shortest token a pairing may carry (characters).
const MinPairingToken = 32

// ParseBrowserPairing decodes and checks pairing JSON strictly. Its errors
// name the field that is wrong, never a value (the token is a secret, and a
// syntax error is reported by its offset only).
func ParseBrowserPairing(b []byte) (BrowserPairing, error) {
	var p BrowserPairing
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return BrowserPairing{}, fmt.Errorf("reading the pairing: not JSON (at byte %d): %w", se.Offset, ErrInvalidArgument)
		case errors.As(err, &te):
			return BrowserPairing{}, fmt.Errorf("reading the pairing: field %q has the wrong type: %w", te.Field, ErrInvalidArgument)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return BrowserPairing{}, fmt.Errorf("reading the pairing: %s: %w", SafeText(strings.TrimPrefix(err.Error(), "json: "), OneLine, 80), ErrInvalidArgument)
		}
		return BrowserPairing{}, fmt.Errorf("reading the pairing: not one JSON object: %w", ErrInvalidArgument)
	}
	if dec.More() {
		return BrowserPairing{}, fmt.Errorf("reading the pairing: more than one JSON object: %w", ErrInvalidArgument)
	}
	var probs []string
	if p.Version != BrowserPairingVersion {
		probs = append(probs, fmt.Sprintf("version must be %d (this pikod reads version %d pairings)", BrowserPairingVersion, BrowserPairingVersion))
	}
	if u, err := url.Parse(p.URL); err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		probs = append(probs, "url must be the bridge's https URL (https://127.0.0.1:PORT/mcp), without credentials, query or fragment")
	}
	if len(p.Token) < MinPairingToken || strings.IndexFunc(p.Token, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '~')
	}) >= 0 {
		probs = append(probs, fmt.Sprintf("token must be at least %d characters of A-Z, a-z, 0-9, -, _, . and ~", MinPairingToken))
	}
	if _, err := ParseTLSPin(p.Fingerprint); err != nil {
		probs = append(probs, "fingerprint "+err.Error())
	}
	if _, ok := FindBrowserPreset(p.Preset); !ok && p.Preset != BrowserGeneric {
		probs = append(probs, fmt.Sprintf("preset must be %s, %s or %s", BrowserPlaywright, BrowserChromeDevTools, BrowserGeneric))
	}
	if len(p.Tools) == 0 {
		probs = append(probs, "tools must list the tools the bridge exposes")
	}
	for _, t := range p.Tools {
		if t == "" || len(t) > 128 || strings.ContainsFunc(t, unicode.IsControl) || strings.ContainsRune(t, ' ') {
			probs = append(probs, "tools must be tool names (no spaces or control characters, at most 128 bytes)")
			break
		}
	}
	if len(probs) > 0 {
		return BrowserPairing{}, fmt.Errorf("checking the pairing: %s: %w", strings.Join(probs, "; "), ErrInvalidArgument)
	}
	return p, nil
}

// Delegated returns the pairing's tools that pikod runs without approval:
// those of the preset's Autonomous set that the bridge exposes. A tool the
// bridge's owner allowed beyond the preset is exposed but never delegated.
func (p BrowserPairing) Delegated() []string {
	preset, ok := FindBrowserPreset(p.Preset)
	if !ok {
		return nil
	}
	var out []string
	for _, t := range preset.Autonomous {
		if slices.Contains(p.Tools, t) {
			out = append(out, t)
		}
	}
	return out
}
