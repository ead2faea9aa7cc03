package tests

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
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

// TestOAuthServerMovesOneSignIn: when the server refuses the grant a
// sign-in is proving and now names another authorization server, the
// same sign-in continues there: 'pikoctl mcp auth' (still waiting) prints
// the new link, the client is registered anew at as2 with nothing of
// as1's client sent there, the previous grant stays until the new one is
// proven, and one run ends signed in at as2.
func TestOAuthServerMovesOneSignIn(t *testing.T) {
	o, as2, oldClient, oldSecret := moveDuringSignIn(t)
	as1 := o.as
	w := o.ctlAsync(t, "--json", "mcp", "auth", "o", "--wait")
	var next contracts.AuthResult
	l := w.line(t)
	if json.Unmarshal([]byte(l), &next) != nil {
		t.Fatalf("pikoctl printed %q, not an auth result", l)
	}
	if next.Status != contracts.AuthPending || next.PreviousIssuer != as1.issuer || next.Issuer != as2.issuer ||
		!strings.HasPrefix(next.AuthorizationURL, as2.issuer+"/authorize?") {
		t.Fatalf("the interrupted sign-in answered %s, want it to continue at as2\nstderr: %s", l, w.stderr.String())
	}
	if st := o.status(t); st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.Issuer != as1.issuer ||
		st.OAuth.Pending == nil || st.OAuth.Pending.FlowID != next.FlowID {
		t.Errorf("while the sign-in continues: oauth %+v, want the previous grant (as1) kept and the new flow pending", st.OAuth)
	}
	loc := authorizeInBrowser(t, next.AuthorizationURL)
	if status, body := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d %q", status, body)
	}
	var done contracts.AuthResult
	if l := w.line(t); json.Unmarshal([]byte(l), &done) != nil {
		t.Fatalf("pikoctl printed %q, not an auth result", l)
	}
	if code, stderr := w.wait(t); code != 0 || done.Status != contracts.AuthAuthorized || done.Issuer != as2.issuer {
		t.Fatalf("pikoctl mcp auth --wait: exit %d, result %+v\nstderr: %s", code, done, stderr)
	}
	o.as = as2
	o.mustEcho(t, "at as2, one sign-in")
	if st := o.status(t); st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.Issuer != as2.issuer {
		t.Errorf("after the sign-in: oauth %+v, want the grant of as2", st.OAuth)
	}
	if _, _, regs, _ := as2.counts(); regs != 1 {
		t.Errorf("as2 saw %d registrations, want 1", regs)
	}
	for _, tr := range as2.tokenRequests() {
		if tr.client == oldClient || strings.Contains(tr.form.Encode(), oldClient) || strings.Contains(tr.form.Encode(), oldSecret) {
			t.Errorf("as1's client reached as2's token endpoint: %v", tr.form)
		}
	}
	as2.mu.Lock()
	for _, q := range as2.authReqs {
		if q.Get("client_id") == oldClient {
			t.Error("as1's client id was sent to as2")
		}
	}
	for _, r := range as2.regs {
		if b, _ := json.Marshal(r); strings.Contains(string(b), oldClient) || strings.Contains(string(b), oldSecret) {
			t.Errorf("the registration at as2 carries as1's client: %s", b)
		}
	}
	as2.mu.Unlock()
	o.d.waitLog(t, "the sign-in continues there", as2.issuer)
	o.checkCanaries(t)
	o.as = as1
	o.checkCanaries(t)
}

// asyncCtl is a pikoctl run the test reads line by line while it runs.
type asyncCtl struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr testsupport.Buffer
	done   chan struct{}
}

// ctlAsync starts pikoctl on o's daemon; what it prints also goes to the
// canary checks.
func (o *oauthSetup) ctlAsync(t *testing.T, args ...string) *asyncCtl {
	t.Helper()
	a := &asyncCtl{lines: make(chan string, 16), done: make(chan struct{})}
	a.cmd = exec.Command(pikoctlBin, append([]string{"--socket", o.d.socket}, args...)...)
	a.cmd.Env = minimalEnv(t.TempDir())
	detach(a.cmd)
	a.cmd.Stderr = &a.stderr
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("starting pikoctl %v: %v", args, err)
	}
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			o.mu.Lock()
			o.out.WriteString(sc.Text() + "\n")
			o.mu.Unlock()
			a.lines <- sc.Text()
		}
	}()
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		<-a.done
	})
	return a
}

// line returns the next line pikoctl printed.
func (a *asyncCtl) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-a.lines:
		if !ok {
			t.Fatalf("pikoctl ended without printing; stderr:\n%s", a.stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("pikoctl printed nothing within 30s; stderr:\n%s", a.stderr.String())
	}
	return ""
}

// wait waits for pikoctl to exit and returns its exit code and stderr.
func (a *asyncCtl) wait(t *testing.T) (int, string) {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("pikoctl did not exit within 30s")
	}
	if strings.Contains(a.stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("race detected in pikoctl:\n%s", a.stderr.String())
	}
	return a.cmd.ProcessState.ExitCode(), a.stderr.String()
}
