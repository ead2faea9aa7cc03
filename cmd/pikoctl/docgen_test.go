package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIReferenceUpToDate fails when docs/reference/cli.md or
// exit-codes.md differ from the commands: run 'go generate ./cmd/pikoctl'
// and commit the result.
func TestCLIReferenceUpToDate(t *testing.T) {
	a := newTestApp(t, "", false)
	for name, want := range referenceFiles(a.newRootCmd()) {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", name))
		if err != nil {
			t.Errorf("%v: run 'go generate ./cmd/pikoctl'", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/reference/%s is out of date: run 'go generate ./cmd/pikoctl' and commit it", name)
		}
	}
}

// TestManPages: a page per command, with its flags, inherited flags, exit
// status and links; roff requests in help text are escaped.
func TestManPages(t *testing.T) {
	a := newTestApp(t, "", false)
	pages := manPages(a.newRootCmd())
	grant, ok := pages["pikoctl-mcp-grant.1"]
	if !ok {
		t.Fatalf("no pikoctl-mcp-grant.1 among %d pages", len(pages))
	}
	for _, want := range []string{`.TH "PIKOCTL-MCP-GRANT" 1`, `.SH NAME` + "\npikoctl\\-mcp\\-grant \\- ", `.B \-\-all\-read\-only`,
		"OPTIONS INHERITED FROM PARENT COMMANDS", `.B \-\-socket string`, ".SH EXIT STATUS", ".BR pikoctl\\-mcp (1)"} {
		if !strings.Contains(string(grant), want) {
			t.Errorf("pikoctl-mcp-grant.1 lacks %q:\n%s", want, grant)
		}
	}
	if _, hidden := pages["pikoctl-__docs.1"]; hidden {
		t.Errorf("the hidden __docs command got a man page")
	}
	for name, p := range pages {
		for _, line := range strings.Split(string(p), "\n") {
			if strings.HasPrefix(line, ".") && !strings.HasPrefix(line, ".TH ") && !strings.HasPrefix(line, ".SH ") &&
				!strings.HasPrefix(line, ".TP") && !strings.HasPrefix(line, ".B ") && !strings.HasPrefix(line, ".BR ") &&
				line != ".nf" && line != ".fi" {
				t.Errorf("%s: a line of text reads as a roff request: %q", name, line)
			}
		}
	}
}
