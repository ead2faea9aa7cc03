package tests

import (
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// moveDuringSignIn signs in at as1, then starts a second sign-in at as1
// and, while the owner is at the browser, restarts the fixture on the same
// address naming as2; the owner then finishes at as1. It returns the
// setup, as2, and as1's dynamically registered client (id and secret).
func moveDuringSignIn(t *testing.T) (o *oauthSetup, as2 *testAS, oldClient, oldSecret string) {
	t.Helper()
	as1 := newTestAS(t)
	as1.with(func(as *testAS) { as.dcrMethod = "client_secret_post" })
	o = newOAuthSetupWith(t, as1, "--protocol", "legacy")
	o.configure(t, "legacy", "")
	o.signIn(t)
	o.mustEcho(t, "at as1")
	as1.with(func(as *testAS) {
		for id, c := range as.clients {
			oldClient, oldSecret = id, c.secret
		}
	})

	res := o.start(t)
	if res.Status != contracts.AuthPending || res.Issuer != as1.issuer {
		t.Fatalf("the second sign-in answered %+v, want a pending flow at as1", res)
	}
	host := o.fx.hostPort
	o.fx.kill9(t)
	as2 = newTestAS(t)
	as2.with(func(as *testAS) { as.dcrMethod = "client_secret_post" })
	o.fx = startFixtureServer(t, "http", host, "--require-token", as2.issuer, "--protocol", "legacy")

	loc := authorizeInBrowser(t, res.AuthorizationURL)
	if status, body := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d %q", status, body)
	}
	return o, as2, oldClient, oldSecret
}

// TestOAuthServerMovesTwoRuns shows what a move to another authorization
// server costs today: the sign-in that was under way when the server moved
// fails when the server refuses its grant, and only a second 'pikoctl mcp
// auth' discovers the new authorization server.
func TestOAuthServerMovesTwoRuns(t *testing.T) {
	o, as2, _, _ := moveDuringSignIn(t)
	stdout, stderr, code := o.wait(t)
	if code == 0 || !strings.Contains(stdout+stderr, "was not stored") {
		t.Fatalf("the sign-in the move interrupted: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if st := o.status(t); st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.Issuer != o.as.issuer {
		t.Errorf("the previous grant was not kept: %+v", st.OAuth)
	}
	o.as = as2
	o.signIn(t)
	o.mustEcho(t, "at as2, after a second run")
	o.checkCanaries(t)
}
