package vault

import (
	"os"
	"strings"
	"testing"

	"a.pikod.internal/busenv"
)

func TestBusenvDecide(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		sockets []string
		set     string // "" means left alone
		why     string
	}{
		{"set address kept", map[string]string{busenv.Variable: "unix:path=/x/bus"}, []string{"/run/user/1000/bus"}, "", ""},
		{"disabled kept", map[string]string{busenv.Variable: "disabled:"}, nil, "", ""},
		{"runtime dir bus", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000/"}, []string{"/run/user/1000/bus"}, "unix:path=/run/user/1000/bus", "was unset; using the session bus at /run/user/1000/bus"},
		{"autolaunch replaced", map[string]string{busenv.Variable: "autolaunch:", "XDG_RUNTIME_DIR": "/tmp/rt"}, []string{"/tmp/rt/bus"}, "unix:path=/tmp/rt/bus", "was autolaunch:;"},
		{"uid bus without runtime dir", nil, []string{"/run/user/1000/bus"}, "unix:path=/run/user/1000/bus", "/run/user/1000/bus"},
		{"runtime dir first", map[string]string{"XDG_RUNTIME_DIR": "/tmp/rt"}, []string{"/tmp/rt/bus", "/run/user/1000/bus"}, "unix:path=/tmp/rt/bus", "/tmp/rt/bus"},
		{"relative runtime dir ignored", map[string]string{"XDG_RUNTIME_DIR": "rt"}, []string{"rt/bus"}, busenv.Disabled, "no bus socket at /run/user/1000/bus"},
		{"no bus", map[string]string{"XDG_RUNTIME_DIR": "/tmp/rt"}, nil, busenv.Disabled, "no session bus: DBUS_SESSION_BUS_ADDRESS was unset and there is no bus socket at /tmp/rt/bus or /run/user/1000/bus (pikod never starts a bus)"},
		{"escaped path", map[string]string{"XDG_RUNTIME_DIR": "/tmp/a b;c"}, []string{"/tmp/a b;c/bus"}, "unix:path=/tmp/a%20b%3bc/bus", ""},
	}
	for _, tt := range tests {
		getenv := func(k string) string { return tt.env[k] }
		isSocket := func(p string) bool {
			for _, s := range tt.sockets {
				if s == p {
					return true
				}
			}
			return false
		}
		got := busenv.Decide(getenv, 1000, isSocket)
		if got.Set != tt.set || !strings.Contains(got.Why, tt.why) || got.Given != tt.env[busenv.Variable] {
			t.Errorf("%s: Decide = %+v; want Set %q, Why containing %q", tt.name, got, tt.set, tt.why)
		}
	}
}

// TestBusenvRanInThisBinary checks that the variable the keyring library
// saw is the one busenv settled: never empty, never autolaunch:.
func TestBusenvRanInThisBinary(t *testing.T) {
	r := busenv.Result()
	v := os.Getenv(busenv.Variable)
	if v == "" || v == "autolaunch:" {
		t.Errorf("%s = %q after init; busenv result %+v", busenv.Variable, v, r)
	}
	if r.Set != "" && v != r.Set {
		t.Errorf("%s = %q, but busenv set %q", busenv.Variable, v, r.Set)
	}
}
