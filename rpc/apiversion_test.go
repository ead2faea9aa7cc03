package rpc

import (
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestAPIAdvice(t *testing.T) {
	older, newer := "0", "99"
	for _, tt := range []struct {
		api, want string
	}{
		{contracts.APIVersion, ""},
		{older, "upgrade pikod"},
		{newer, "upgrade pikoctl"},
		{"two", "of the same release"},
	} {
		got := APIAdvice(contracts.HelloResult{APIVersion: tt.api, DaemonVersion: "1.2.3"})
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("APIAdvice(api %q) = %q, want %q", tt.api, got, tt.want)
		}
		if tt.want != "" && !strings.Contains(got, "pikod 1.2.3 speaks API "+tt.api) {
			t.Errorf("APIAdvice(api %q) = %q: does not name pikod's version and API", tt.api, got)
		}
	}
}
