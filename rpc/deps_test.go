package rpc

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports enforces doc.go: rpc imports only the standard library,
// contracts, jsonrpc2, zerolog and x/sys.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	cmd := exec.Command(goTool, "list", "-f", `{{join .Imports "\n"}}`, ".")
	cmd.Env = append(cmd.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{
		"github.com/pikod/pikod/contracts",
		"github.com/sourcegraph/jsonrpc2",
		"github.com/rs/zerolog",
		"golang.org/x/sys/",
	}
	for _, imp := range strings.Fields(string(out)) {
		first := strings.SplitN(imp, "/", 2)[0]
		if !strings.Contains(first, ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			if imp == a || strings.HasPrefix(imp, strings.TrimSuffix(a, "/")+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("rpc imports %s; doc.go allows only contracts, jsonrpc2, zerolog and x/sys", imp)
		}
	}
}
