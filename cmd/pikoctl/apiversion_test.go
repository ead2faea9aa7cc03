package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestAPIMismatchOnAnyConnection: a command other than version, doctor or
// service that a daemon of another release refuses says what to upgrade;
// against a daemon of the same API nothing is added.
func TestAPIMismatchOnAnyConnection(t *testing.T) {
	for _, tt := range []struct {
		api  string
		want bool
	}{{"99", true}, {contracts.APIVersion, false}} {
		d := startFakeDaemon(t, map[string]func(json.RawMessage) (json.RawMessage, *contracts.Error){
			contracts.MethodHello: canned(`{"apiVersion":"` + tt.api + `","daemonVersion":"9.9.9"}`),
		})
		ta := newTestApp(t, "", true)
		if got := ta.runArgs(t, "--socket", d.socket, "mcp", "status"); got != exitFailure {
			t.Fatalf("api %s: exit code = %d, want 1", tt.api, got)
		}
		hint := "hint: pikod 9.9.9 speaks API 99, this client API " + contracts.APIVersion + ": upgrade pikoctl to pikod's release"
		if got := strings.Contains(ta.errOut.String(), hint); got != tt.want {
			t.Errorf("api %s: stderr = %q, want the hint %v", tt.api, ta.errOut.String(), tt.want)
		}
	}
}
