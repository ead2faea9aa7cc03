// Package busenv settles DBUS_SESSION_BUS_ADDRESS before any package that
// could dial the D-Bus session bus is initialized, so that no pikod program
// ever starts a bus.
//
// Why it is a module of its own, with this odd path: importing
// github.com/99designs/keyring (v1.2.2) runs dbus.SessionBus() in two init
// functions (secretservice.go, kwallet.go). With the variable unset or
// "autolaunch:", godbus (2019-07-26) tries /run/user/UID/bus and
// /run/user/UID/dbus-session and then execs dbus-launch, whose dbus-daemon
// outlives the program; all of it before main runs. Since Go 1.21 the
// order of package initialization is specified: packages are sorted by
// import path and, repeatedly, the first one whose imports are all
// initialized is initialized next. "a.pikod.internal/busenv" sorts before
// every "github.com/..." path and imports only standard packages that
// keyring's own imports include, so its init runs before keyring's (the
// tests check the order with GODEBUG=inittrace=1). A path inside pikod's
// module (github.com/pikod/...) sorts after github.com/99designs and would
// run too late; the main module requires this one with a replace directive
// pointing here. ".internal" is a top-level domain reserved for private
// use: the path can never be fetched from anywhere.
//
// The rule: a set address other than "autolaunch:" is left alone. Else
// the user's bus socket is used when one exists ($XDG_RUNTIME_DIR/bus,
// then /run/user/UID/bus); else the variable is set to "disabled:", which
// godbus cannot dial, so the Secret Service is simply unavailable.
// Result says what was found and done, for logs and the vault's status.
//
// busenv imports only the standard library (os, strconv, strings), and
// nothing of pikod.
package busenv

import (
	"os"
	"strconv"
	"strings"
)

// Variable is the environment variable busenv settles.
const Variable = "DBUS_SESSION_BUS_ADDRESS"

// Disabled is the address busenv sets when there is no bus to use.
const Disabled = "disabled:"

// Outcome is what busenv found and did.
type Outcome struct {
	// Given is the variable as the program found it ("" when unset).
	Given string
	// Set is what busenv set the variable to; "" when it left it alone.
	Set string
	// Why explains Set in a sentence; "" when the variable was left alone.
	Why string
}

var outcome Outcome

func init() {
	outcome = Decide(os.Getenv, os.Getuid(), isSocket)
	if outcome.Set != "" {
		_ = os.Setenv(Variable, outcome.Set)
	}
}

// Result returns what init found and did.
func Result() Outcome { return outcome }

// Decide applies busenv's rule to an environment (getenv), a uid and a
// test for bus sockets. It has no side effects.
func Decide(getenv func(string) string, uid int, isSocket func(path string) bool) Outcome {
	given := getenv(Variable)
	if given != "" && given != "autolaunch:" {
		return Outcome{Given: given}
	}
	var tried []string
	if dir := getenv("XDG_RUNTIME_DIR"); strings.HasPrefix(dir, "/") {
		tried = append(tried, strings.TrimRight(dir, "/")+"/bus")
	}
	if uid >= 0 {
		if p := "/run/user/" + strconv.Itoa(uid) + "/bus"; len(tried) == 0 || tried[0] != p {
			tried = append(tried, p)
		}
	}
	state := "unset"
	if given != "" {
		state = "autolaunch:"
	}
	for _, p := range tried {
		if isSocket(p) {
			return Outcome{Given: given, Set: "unix:path=" + escapeValue(p),
				Why: Variable + " was " + state + "; using the session bus at " + p}
		}
	}
	where := "no bus socket"
	if len(tried) > 0 {
		where = "no bus socket at " + strings.Join(tried, " or ")
	}
	return Outcome{Given: given, Set: Disabled,
		Why: "no session bus: " + Variable + " was " + state + " and there is " + where + " (pikod never starts a bus)"}
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// escapeValue escapes a D-Bus address value: bytes outside
// [-0-9A-Za-z_/.\*] become %XX.
func escapeValue(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z',
			c == '-', c == '_', c == '/', c == '.', c == '\\', c == '*':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
