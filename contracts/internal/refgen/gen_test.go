package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestReferenceUpToDate fails when docs/reference differs from what the
// source says now: run 'go generate ./contracts' and commit the result.
func TestReferenceUpToDate(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "docs", "reference", name))
		if err != nil {
			t.Errorf("%v: run 'go generate ./contracts'", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/reference/%s is out of date: run 'go generate ./contracts' and commit it", name)
		}
	}
}

// TestReferenceCoversTheWire: every method has a row and its documented
// types, every error code and a sample of reason words appear.
func TestReferenceCoversTheWire(t *testing.T) {
	files, err := generate(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	api, errs, settings := string(files["api.md"]), string(files["errors.md"]), string(files["settings.md"])
	for _, m := range contracts.MethodTable {
		if !strings.Contains(api, "| [`"+m.Name+"`]") {
			t.Errorf("api.md has no row for %s", m.Name)
		}
	}
	for _, want := range []string{"[`CallParams`](#callparams)", "[`CallResult`](#callresult)", "the owner at a terminal (any client when `decision` is `\"reject\"`)"} {
		if !strings.Contains(api, want) {
			t.Errorf("api.md lacks %q", want)
		}
	}
	for _, c := range contracts.ErrorCodes {
		if !strings.Contains(errs, "| "+c.Reason) && !strings.Contains(errs, "`"+c.Reason+"`") {
			t.Errorf("errors.md lacks code %d %s", c.Code, c.Reason)
		}
	}
	for _, r := range []string{"unknown_server", "revision_moved", "connection_changed", "action_stale"} {
		if !strings.Contains(errs, "| `"+r+"` |") {
			t.Errorf("errors.md lacks the reason word %s", r)
		}
	}
	for _, s := range []string{"| `readOnlyTools` |", "| `autonomousTools` |", "| `allowPrivateNetwork` |", "### OAuthSettings"} {
		if !strings.Contains(settings, s) {
			t.Errorf("settings.md lacks %q", s)
		}
	}
}
