package contracts

import (
	"path"
	"slices"
	"strings"
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
