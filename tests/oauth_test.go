package tests

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/tests/testsupport"
)

// The OAuth suites run pikod against the fixture server behind a token
// check (--require-token) and the synthetic authorization server of
// oauthas_test.go, both real HTTP servers on 127.0.0.1, so that the
// authorization server is on the MCP server's own host (allowPrivateNetwork
// covers it) and the browser step is two GETs.

// oauthSetup is one daemon, one authorization server and one fixture.
type oauthSetup struct {
	as *testAS
	fx *fixtureServer
	d  *daemon
	// out collects everything pikod answered (pikoctl's stdout and stderr,
	// RPC results and errors), for the canary checks.
	mu  sync.Mutex
	out strings.Builder
}

// newOAuthSetup starts an authorization server, a fixture behind it with
// fixtureArgs, and a daemon. configure it with settings().
func newOAuthSetup(t *testing.T, fixtureArgs ...string) *oauthSetup {
	t.Helper()
	as := newTestAS(t)
	return newOAuthSetupWith(t, as, fixtureArgs...)
}

func newOAuthSetupWith(t *testing.T, as *testAS, fixtureArgs ...string) *oauthSetup {
	t.Helper()
	args := append([]string{"--require-token", as.issuer}, fixtureArgs...)
	fx := startFixtureServer(t, "http", "127.0.0.1:0", args...)
	d := startDaemon(t, withPikodArgs("--oauth-flow-lifetime", "8s"))
	return &oauthSetup{as: as, fx: fx, d: d}
}

// serverJSON is a settings entry for the fixture: the OAuth defaults
// (discovery and registration) unless oauth is given, echo and add
// granted as reads.
func (o *oauthSetup) serverJSON(protocol, oauth string) string {
	s := fmt.Sprintf(`{"id": "o", "transport": "http", "url": %q, "allowPrivateNetwork": true, "protocol": %q, "readOnlyTools": ["echo", "add"]`,
		o.fx.url, protocol)
	if oauth != "" {
		s += `, "oauth": ` + oauth
	}
	return s + "}"
}

func (o *oauthSetup) configure(t *testing.T, protocol, oauth string) {
	t.Helper()
	configureMCP(t, o.d, `{"servers": [`+o.serverJSON(protocol, oauth)+`]}`)
}

// ctl runs pikoctl and keeps what it printed.
func (o *oauthSetup) ctl(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	stdout, stderr, code := runCtl(t, o.d, stdin, args...)
	o.mu.Lock()
	o.out.WriteString(stdout + "\n" + stderr + "\n")
	o.mu.Unlock()
	return stdout, stderr, code
}

// rpc calls a method and keeps the answer (result or error).
func (o *oauthSetup) rpc(t *testing.T, method string, params any) (json.RawMessage, error) {
	t.Helper()
	raw, err := o.d.tryCall(t, method, params)
	o.mu.Lock()
	o.out.Write(raw)
	if err != nil {
		b, _ := json.Marshal(contracts.ToError(err))
		o.out.Write(b)
	}
	o.mu.Unlock()
	return raw, err
}

// start runs 'pikoctl mcp auth o --no-wait --json' and returns the result.
func (o *oauthSetup) start(t *testing.T) contracts.AuthResult {
	t.Helper()
	stdout, stderr, code := o.ctl(t, "", "--json", "mcp", "auth", "o", "--no-wait")
	if code != 0 {
		t.Fatalf("pikoctl mcp auth --no-wait: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var res contracts.AuthResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("decoding the auth result %q: %v", stdout, err)
	}
	return res
}

// startErr runs auth and expects it to fail with reason; it returns the
// error.
func (o *oauthSetup) startErr(t *testing.T, reason string) *contracts.Error {
	t.Helper()
	_, err := o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o"})
	if err == nil {
		t.Fatalf("auth succeeded, want reason %s", reason)
	}
	ce := contracts.ToError(err)
	if ce.Reason() != reason {
		t.Fatalf("auth failed with reason %q (%s), want %s", ce.Reason(), ce.Message, reason)
	}
	return ce
}

// wait runs 'pikoctl mcp auth o --wait'.
func (o *oauthSetup) wait(t *testing.T) (string, string, int) {
	t.Helper()
	return o.ctl(t, "", "mcp", "auth", "o", "--wait")
}

// signIn does the whole browser sign-in and returns the pending result.
func (o *oauthSetup) signIn(t *testing.T) contracts.AuthResult {
	t.Helper()
	res := o.start(t)
	if res.Status != contracts.AuthPending {
		t.Fatalf("auth answered %+v, want a pending flow", res)
	}
	loc := authorizeInBrowser(t, res.AuthorizationURL)
	if status, body := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d %q", status, body)
	}
	stdout, stderr, code := o.wait(t)
	if code != 0 || !strings.Contains(stdout, "signed in to o") {
		t.Fatalf("auth --wait: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	return res
}

// echo calls the granted tool echo and returns the CallResult, or the
// error (an RPC error, or the error of a failed or uncertain result).
func (o *oauthSetup) echo(t *testing.T, text string) (contracts.CallResult, error) {
	t.Helper()
	return o.callTool(t, "echo", map[string]any{"text": text})
}

func (o *oauthSetup) callTool(t *testing.T, tool string, args map[string]any) (contracts.CallResult, error) {
	t.Helper()
	raw, err := o.rpc(t, contracts.MethodMCPCall, map[string]any{"server": "o", "tool": tool, "arguments": args})
	var res contracts.CallResult
	if err == nil {
		if uerr := json.Unmarshal(raw, &res); uerr != nil {
			t.Fatalf("decoding the call result: %v", uerr)
		}
		if res.Error != nil {
			err = res.Error
		}
	}
	return res, err
}

func (o *oauthSetup) mustEcho(t *testing.T, text string) {
	t.Helper()
	res, err := o.echo(t, text)
	if err != nil {
		t.Fatalf("calling echo: %v", err)
	}
	if res.Status != contracts.CallCompleted || !strings.Contains(string(res.Content), text) {
		t.Fatalf("echo answered %+v", res)
	}
}

func (o *oauthSetup) status(t *testing.T) contracts.ServerStatus {
	t.Helper()
	st := serverStatus(t, o.d, "o")
	b, _ := json.Marshal(st)
	o.mu.Lock()
	o.out.Write(b)
	o.mu.Unlock()
	return st
}

// checkCanaries fails when a token or client secret the authorization
// server issued appears in pikod's log, stderr, database or any answer.
func (o *oauthSetup) checkCanaries(t *testing.T) {
	t.Helper()
	o.as.mu.Lock()
	var secrets []string
	secrets = append(secrets, o.as.issued...)
	for rt := range o.as.refreshes {
		secrets = append(secrets, rt)
	}
	for _, c := range o.as.clients {
		if c.secret != "" {
			secrets = append(secrets, c.secret)
		}
	}
	bearer := o.as.bearerSeen
	o.as.mu.Unlock()
	if bearer != 0 {
		t.Errorf("%d requests to the authorization server carried a Bearer token", bearer)
	}
	if len(secrets) == 0 {
		t.Fatal("the authorization server issued nothing: the canary check would prove nothing")
	}
	for where, text := range o.places(t) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds an OAuth secret the authorization server issued (%s...)", where, s[:12])
			}
		}
	}
}

// places is every text pikod has shown or kept, by where it is: the
// answers the setup received, pikod's stderr, pikod.log and pikod.db, and
// each file in extra (by its base name).
func (o *oauthSetup) places(t *testing.T, extra ...string) map[string]string {
	t.Helper()
	places := map[string]string{}
	o.mu.Lock()
	places["answers"] = o.out.String()
	o.mu.Unlock()
	if p := o.d.current(); p != nil {
		places["stderr"] = p.stderr.String()
	}
	for _, p := range append([]string{filepath.Join(o.d.stateDir, "pikod.log"), filepath.Join(o.d.stateDir, "pikod.db")}, extra...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		places[filepath.Base(p)] = string(b)
	}
	return places
}

// TestOAuthAuthorizationCode signs in with the browser flow (discovery
// from the 401 challenge, dynamic registration, PKCE S256, state, RFC 8707
// resource) on both protocol eras, calls a tool with the token, and finds
// no token or client secret in anything pikod wrote.
func TestOAuthAuthorizationCode(t *testing.T) {
	for _, era := range []struct{ fixture, setting, want, prefix string }{
		{"legacy", "auto", "2025-11-25", ""},
		{"modern", "auto", "2026-07-28", ""},
		{"legacy", "legacy", "2025-11-25", ""},
		// An issuer with a path: metadata by RFC 8414 path insertion.
		{"modern", "auto", "2026-07-28", "/tenant1"},
	} {
		t.Run(era.fixture+"-"+era.setting+era.prefix, func(t *testing.T) {
			as := newTestAS(t)
			as.setPrefix(era.prefix)
			o := newOAuthSetupWith(t, as, "--protocol", era.fixture, "--token-scope", "mcp:basic")
			o.as.with(func(as *testAS) { as.dcrMethod = "client_secret_basic"; as.refresh = true; as.expiresIn = 3600 })
			o.configure(t, era.setting, "")

			// Tokenless first request: 401, needs_auth, the challenge kept.
			_, err := o.rpc(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "o"})
			if ce := contracts.ToError(err); ce == nil || ce.Reason() != "needs_auth" {
				t.Fatalf("connect without a grant answered %v, want needs_auth", err)
			}
			st := o.status(t)
			if st.State != contracts.StateNeedsAuth || st.OAuth == nil || st.OAuth.Grant != "none" || st.OAuth.RequiredScope != "mcp:basic" {
				t.Fatalf("status before sign-in: %+v (oauth %+v)", st, st.OAuth)
			}

			res := o.signIn(t)
			u, err := url.Parse(res.AuthorizationURL)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || len(q.Get("state")) < 32 {
				t.Errorf("authorization request without PKCE S256 or a strong state: %v", q)
			}
			if q.Get("resource") != o.fx.url || q.Get("scope") != "mcp:basic" {
				t.Errorf("authorization request resource %q scope %q, want %q and mcp:basic", q.Get("resource"), q.Get("scope"), o.fx.url)
			}
			if !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") {
				t.Errorf("redirect_uri %q is not on 127.0.0.1", q.Get("redirect_uri"))
			}
			for _, tr := range o.as.tokenRequests() {
				if tr.form.Get("grant_type") == "authorization_code" {
					if tr.method != "client_secret_basic" || tr.form.Get("resource") != o.fx.url {
						t.Errorf("code exchange used %s with resource %q", tr.method, tr.form.Get("resource"))
					}
				}
			}
			o.mustEcho(t, "hello-"+era.fixture)
			st = o.status(t)
			if st.State != contracts.StateConnected || st.ProtocolVersion != era.want {
				t.Errorf("after sign-in: state %s protocol %s, want connected %s", st.State, st.ProtocolVersion, era.want)
			}
			if st.OAuth == nil || st.OAuth.Grant != "stored" || st.OAuth.Info == nil || st.OAuth.Info.Scope != "mcp:basic" ||
				st.OAuth.Info.ExpiresAt == "" || !st.OAuth.Info.Refreshable || st.OAuth.Info.Registration != "dynamic" {
				t.Errorf("status oauth after sign-in: %+v", st.OAuth)
			}
			stdout, _, _ := o.ctl(t, "", "mcp", "status", "o")
			if !strings.Contains(stdout, "grant stored") || !strings.Contains(stdout, "scope:      mcp:basic") {
				t.Errorf("pikoctl mcp status shows no grant:\n%s", stdout)
			}
			o.checkCanaries(t)
		})
	}
}

// TestOAuthRefreshRotation revokes the access token under 20 concurrent
// calls: each call's 401 asks for a renewal, and exactly one refresh
// reaches the authorization server (whose refresh tokens are single-use:
// a second refresh with the old one would fail); every call then goes
// through with the rotated token, read back from the vault.
func TestOAuthRefreshRotation(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.as.with(func(as *testAS) { as.refresh = true; as.rotate = true; as.expiresIn = 3600 })
	o.configure(t, "legacy", "")
	o.signIn(t)
	o.mustEcho(t, "before")
	o.as.revokeAccess()

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := o.echo(t, fmt.Sprintf("call-%d", i))
			if err == nil && res.Status != contracts.CallCompleted {
				err = fmt.Errorf("call %d: %+v", i, res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if _, _, _, refreshes := o.as.counts(); refreshes != 1 {
		t.Errorf("the authorization server saw %d refreshes, want exactly 1", refreshes)
	}
	// The rotated token survives a restart: it was read back from the vault.
	o.d.restart()
	o.mustEcho(t, "after restart")
	if _, _, _, refreshes := o.as.counts(); refreshes != 1 {
		t.Errorf("after the restart the authorization server saw %d refreshes, want still 1", refreshes)
	}
	o.checkCanaries(t)
}

// TestOAuthInvalidGrant has the authorization server refuse the refresh
// token: the call that needed it fails without running, the server is
// needs_auth with the grant dropped, and nothing asks the authorization
// server again until the owner signs in.
func TestOAuthInvalidGrant(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.as.with(func(as *testAS) { as.refresh = true })
	o.configure(t, "legacy", "")
	o.signIn(t)
	o.mustEcho(t, "before")
	o.as.revokeAccess()
	o.as.with(func(as *testAS) { as.refuseRT = true })
	refreshes := func() int {
		n := 0
		for _, tr := range o.as.tokenRequests() {
			if tr.form.Get("grant_type") == "refresh_token" {
				n++
			}
		}
		return n
	}
	res, err := o.echo(t, "refused")
	if reasonOf(err) != "needs_auth" || res.Status == contracts.CallUncertain {
		t.Fatalf("a call whose refresh was refused answered %+v %v, want failed with needs_auth", res, err)
	}
	st := o.status(t)
	if st.State != contracts.StateNeedsAuth || st.OAuth.Grant != "none" {
		t.Errorf("after invalid_grant: state %s oauth %+v", st.State, st.OAuth)
	}
	for range 3 {
		if _, err := o.echo(t, "again"); reasonOf(err) != "needs_auth" {
			t.Errorf("a later call answered %v, want needs_auth", err)
		}
	}
	if n := refreshes(); n != 1 {
		t.Errorf("%d refresh requests reached the authorization server, want exactly 1", n)
	}
	o.as.with(func(as *testAS) { as.refuseRT = false })
	o.signIn(t)
	o.mustEcho(t, "signed in again")
	o.checkCanaries(t)
}

// TestOAuthExpiredTokenRenewed lets the access token reach its expiry:
// the next calls renew it before sending (single-flight, with rotation),
// so the server never sees an expired token.
func TestOAuthExpiredTokenRenewed(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "modern")
	o.as.with(func(as *testAS) { as.refresh, as.rotate, as.expiresIn = true, true, 4 })
	o.configure(t, "auto", "")
	o.signIn(t)
	o.mustEcho(t, "fresh")
	// pikod counts a 4 s token expired 1 s early.
	time.Sleep(3500 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := o.echo(t, fmt.Sprintf("renewed-%d", i)); err != nil || res.Status != contracts.CallCompleted {
				t.Errorf("call %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	_, _, _, refreshes := o.as.counts()
	var expired int
	o.as.with(func(as *testAS) { expired = as.expiredSeen })
	if refreshes < 1 || expired != 0 {
		t.Errorf("%d refreshes, %d expired tokens presented to the server; want at least 1 and none", refreshes, expired)
	}
	o.checkCanaries(t)
}

// TestOAuthRefusals checks what pikod refuses before any authorization
// request: a metadata issuer that is not the authorization server named,
// no PKCE S256, a protected resource that is not this server, an
// authorization endpoint that is not an http(s) link; and, after the
// browser step, an iss that is wrong, or missing although the metadata
// says it is always sent (then no code is exchanged).
func TestOAuthRefusals(t *testing.T) {
	cases := []struct {
		name    string
		fixture []string
		setup   func(as *testAS)
		reason  string
	}{
		{"issuer mismatch", nil, func(as *testAS) { as.mdIssuer = "https://honest.example" }, "issuer_mismatch"},
		{"missing S256", nil, func(as *testAS) { as.noS256 = true }, "oauth_pkce_unsupported"},
		{"resource mismatch", []string{"--prm-resource", "https://evil.example.com/mcp"}, nil, "resource_mismatch"},
		{"javascript authorization endpoint", nil, func(as *testAS) { as.authEndpoint = "javascript:alert(1)" }, "oauth_bad_document"},
		{"file authorization endpoint", nil, func(as *testAS) { as.authEndpoint = "file:///etc/passwd" }, "oauth_bad_document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := newOAuthSetup(t, append([]string{"--protocol", "legacy"}, c.fixture...)...)
			if c.setup != nil {
				o.as.with(c.setup)
			}
			o.configure(t, "legacy", "")
			o.startErr(t, c.reason)
			if auth, _, regs, _ := o.as.counts(); auth != 0 || regs != 0 {
				t.Errorf("%d authorization requests and %d registrations reached the authorization server, want none", auth, regs)
			}
			if st := o.status(t); st.OAuth == nil || st.OAuth.Grant != "none" || st.OAuth.Pending != nil {
				t.Errorf("status after the refusal: %+v", st.OAuth)
			}
		})
	}
	for _, c := range []struct {
		name, mode string
		supported  bool
		reason     string
	}{
		{"iss wrong", "wrong", false, "issuer_mismatch"},
		{"iss wrong when advertised", "wrong", true, "issuer_mismatch"},
		{"iss missing when advertised", "", true, "issuer_missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newOAuthSetup(t, "--protocol", "legacy")
			o.as.with(func(as *testAS) { as.issMode, as.issSupported = c.mode, c.supported })
			o.configure(t, "legacy", "")
			res := o.start(t)
			loc := authorizeInBrowser(t, res.AuthorizationURL)
			if status, _ := getCallback(t, loc, ""); status != 200 {
				t.Fatalf("the callback answered %d", status)
			}
			_, err := o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpWait})
			if ce := contracts.ToError(err); ce == nil || ce.Reason() != c.reason {
				t.Fatalf("the sign-in ended with %v, want %s", err, c.reason)
			}
			for _, tr := range o.as.tokenRequests() {
				if tr.form.Get("grant_type") == "authorization_code" {
					t.Errorf("the code was exchanged although iss was refused")
				}
			}
		})
	}
	t.Run("iss right when advertised", func(t *testing.T) {
		o := newOAuthSetup(t, "--protocol", "legacy")
		o.as.with(func(as *testAS) { as.issMode, as.issSupported = "right", true })
		o.configure(t, "legacy", "")
		o.signIn(t)
		o.mustEcho(t, "iss ok")
	})
}

// TestOAuthCallbackChecks sends the callback what a hostile page or a
// confused browser might: another Host, another path or method, another
// state (all refused, the sign-in keeps waiting), then the right one, and
// then the same one again (refused: one callback per sign-in).
func TestOAuthCallbackChecks(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.configure(t, "legacy", "")
	res := o.start(t)
	loc := authorizeInBrowser(t, res.AuthorizationURL)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if status, _ := getCallback(t, loc, "localhost:"+port); status != 400 {
		t.Errorf("a callback with Host localhost:%s answered %d, want 400", port, status)
	}
	if status, _ := getCallback(t, loc, "evil.example:"+port); status != 400 {
		t.Errorf("a callback with Host evil.example answered %d, want 400", status)
	}
	other := *u
	q := other.Query()
	q.Set("state", strings.Repeat("A", 43))
	other.RawQuery = q.Encode()
	if status, _ := getCallback(t, other.String(), ""); status != 400 {
		t.Errorf("a callback with another state answered %d, want 400", status)
	}
	wrongPath := *u
	wrongPath.Path = "/elsewhere"
	if status, _ := getCallback(t, wrongPath.String(), ""); status != 404 {
		t.Errorf("a callback on another path answered %d, want 404", status)
	}
	resp, err := browser.Post(loc, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST to the callback: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("POST to the callback answered %d, want 405", resp.StatusCode)
	}
	if st := o.status(t); st.OAuth == nil || st.OAuth.Pending == nil {
		t.Fatalf("the sign-in is no longer pending after refused callbacks: %+v", st.OAuth)
	}
	if status, body := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the right callback answered %d %q", status, body)
	}
	if _, stderr, code := o.wait(t); code != 0 {
		t.Fatalf("auth --wait: exit %d: %s", code, stderr)
	}
	_, tokens, _, _ := o.as.counts()
	// State replay: the same redirect again.
	if status, _ := getCallback(t, loc, ""); status == 200 {
		t.Errorf("a replayed callback was accepted")
	}
	if _, now, _, _ := o.as.counts(); now != tokens {
		t.Errorf("the replayed callback led to %d more token requests", now-tokens)
	}
	// Pasting it is refused too.
	_, err = o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpComplete, RedirectURL: loc})
	if err == nil {
		t.Errorf("pasting a used redirect was accepted")
	}
	o.mustEcho(t, "after checks")
	o.checkCanaries(t)
}

// TestOAuthPaste completes a sign-in the way an owner whose browser runs
// on another machine does: the callback page cannot load there, so
// 'pikoctl mcp auth --paste' reads the address the browser was sent to.
func TestOAuthPaste(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.configure(t, "legacy", "")
	cmd := exec.Command(pikoctlBin, "--socket", o.d.socket, "mcp", "auth", "o", "--paste")
	cmd.Env = minimalEnv(t.TempDir())
	detach(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb testsupport.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var rest strings.Builder
	links := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			rest.WriteString(line + "\n")
			if strings.HasPrefix(line, "http://") && strings.Contains(line, "/authorize?") {
				links <- line
			}
		}
		done <- cmd.Wait()
	}()
	var link string
	select {
	case link = <-links:
	case <-time.After(callTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("pikoctl printed no link; stderr: %s", errb.String())
	}
	// The browser is sent to the callback, which it cannot reach: the owner
	// copies the address instead.
	loc := authorizeInBrowser(t, link)
	if _, err := io.WriteString(stdin, loc+"\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pikoctl mcp auth --paste: %v\nstdout: %s\nstderr: %s", err, rest.String(), errb.String())
		}
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("pikoctl mcp auth --paste did not finish; stderr: %s", errb.String())
	}
	if !strings.Contains(rest.String(), "signed in to o") {
		t.Errorf("pikoctl mcp auth --paste printed:\n%s", rest.String())
	}
	o.mustEcho(t, "pasted")
	// The callback page itself no longer accepts that address.
	if status, _ := getCallback(t, loc, ""); status == 200 {
		t.Errorf("the callback accepted an address already pasted")
	}
}

// holdTokens makes the authorization server's token endpoint wait until
// the returned release is called; seen receives once per token request
// that arrived.
func (o *oauthSetup) holdTokens() (seen <-chan struct{}, release func()) {
	hold := make(chan struct{})
	ch := make(chan struct{}, 4)
	o.as.with(func(as *testAS) { as.holdToken, as.tokenSeen = hold, ch })
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			o.as.with(func(as *testAS) { as.holdToken, as.tokenSeen = nil, nil })
			close(hold)
		})
	}
}

// TestOAuthCancelBeforeCommit cancels a second sign-in after its callback,
// while its code exchange is still out: the new grant is never stored, the
// first one stays and keeps working, and the token the authorization
// server issued meanwhile never reaches the server.
func TestOAuthCancelBeforeCommit(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.configure(t, "legacy", "")
	o.signIn(t)
	o.mustEcho(t, "first grant")
	before := o.status(t).OAuth.Info
	first := o.as.issuedTokens()

	res := o.start(t)
	loc := authorizeInBrowser(t, res.AuthorizationURL)
	seen, release := o.holdTokens()
	defer release()
	if status, _ := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d", status)
	}
	select {
	case <-seen:
	case <-time.After(waitTimeout):
		t.Fatal("the code exchange never reached the authorization server")
	}
	stdout, stderr, code := o.ctl(t, "", "--json", "mcp", "cancel", "o")
	var cr contracts.AuthCancelResult
	if code != 0 || json.Unmarshal([]byte(stdout), &cr) != nil || !cr.Cancelled {
		t.Fatalf("pikoctl mcp cancel: exit %d %s %s", code, stdout, stderr)
	}
	release()
	_, err := o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpWait})
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "oauth_flow_cancelled" {
		t.Fatalf("the cancelled sign-in ended with %v", err)
	}
	after := o.status(t).OAuth
	if after.Pending != nil || after.Info == nil || after.Info.ObtainedAt != before.ObtainedAt {
		t.Errorf("the grant changed after a cancelled sign-in: before %+v, after %+v", before, after.Info)
	}
	o.mustEcho(t, "first grant still")
	issued := o.as.issuedTokens()
	for _, tok := range o.as.introspections() {
		if tok != first[0] {
			t.Errorf("the server saw a token other than the first grant's (%d tokens issued)", len(issued))
		}
	}
	// Nothing left to cancel.
	stdout, _, _ = o.ctl(t, "", "--json", "mcp", "cancel", "o")
	if json.Unmarshal([]byte(stdout), &cr) != nil || cr.Cancelled {
		t.Errorf("a second cancel answered %s", stdout)
	}
	o.checkCanaries(t)
}

// TestOAuthLogout signs out: during a pending sign-in (its callback then
// finds nothing listening), during a code exchange (its grant is never
// stored), and with a grant (removed from the vault, the connection
// closed, the next request tokenless).
func TestOAuthLogout(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.configure(t, "legacy", "")

	res := o.start(t)
	loc := authorizeInBrowser(t, res.AuthorizationURL)
	stdout, stderr, code := o.ctl(t, "", "--json", "mcp", "logout", "o")
	var lr contracts.LogoutResult
	if code != 0 || json.Unmarshal([]byte(stdout), &lr) != nil || !lr.Removed || !lr.CancelledFlow {
		t.Fatalf("pikoctl mcp logout during a pending sign-in: exit %d %s %s", code, stdout, stderr)
	}
	if status, _ := getCallback(t, loc, ""); status == 200 {
		t.Errorf("the callback of a sign-in started before the logout was accepted")
	}
	_, err := o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpWait})
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "logged_out" {
		t.Errorf("the sign-in ended with %v, want logged_out", err)
	}

	// During the code exchange.
	res = o.start(t)
	loc = authorizeInBrowser(t, res.AuthorizationURL)
	seen, release := o.holdTokens()
	defer release()
	if status, _ := getCallback(t, loc, ""); status != 200 {
		t.Fatalf("the callback answered %d", status)
	}
	<-seen
	if _, _, code := o.ctl(t, "", "mcp", "logout", "o"); code != 0 {
		t.Fatalf("logout during the exchange: exit %d", code)
	}
	release()
	_, err = o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpWait})
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "logged_out" {
		t.Errorf("the sign-in ended with %v, want logged_out", err)
	}
	if st := o.status(t); st.OAuth.Grant != "none" {
		t.Errorf("a grant was stored by a sign-in that a logout ended: %+v", st.OAuth)
	}

	// With a grant.
	o.signIn(t)
	o.mustEcho(t, "signed in")
	stdout, _, code = o.ctl(t, "", "--json", "mcp", "logout", "o")
	if code != 0 || json.Unmarshal([]byte(stdout), &lr) != nil || !lr.Removed || !lr.WasConnected {
		t.Fatalf("logout with a grant: %s", stdout)
	}
	if st := o.status(t); st.OAuth.Grant != "none" || st.OAuth.Info != nil {
		t.Errorf("status after logout: %+v", st.OAuth)
	}
	n := len(o.as.introspections())
	_, err = o.echo(t, "after logout")
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "needs_auth" {
		t.Errorf("a call after logout answered %v, want needs_auth", err)
	}
	if got := o.as.introspections()[n:]; len(got) != 0 {
		t.Errorf("a request after logout carried a token (%d introspections)", len(got))
	}
	// The vault no longer has it: a restart finds nothing.
	o.d.restart()
	if st := o.status(t); st.OAuth.Grant != "none" {
		t.Errorf("after logout and restart: %+v", st.OAuth)
	}
	o.checkCanaries(t)
}

// TestOAuthFlowExpires lets a sign-in outlive its lifetime (2 s here, by
// pikod's flag; 10 minutes by default): waiting reports the expiry, the
// callback no longer listens, and nothing is exchanged.
func TestOAuthFlowExpires(t *testing.T) {
	as := newTestAS(t)
	fx := startFixtureServer(t, "http", "127.0.0.1:0", "--require-token", as.issuer, "--protocol", "legacy")
	d := startDaemon(t, withPikodArgs("--oauth-flow-lifetime", "2s"))
	o := &oauthSetup{as: as, fx: fx, d: d}
	o.configure(t, "legacy", "")
	res := o.start(t)
	loc := authorizeInBrowser(t, res.AuthorizationURL)
	_, err := o.rpc(t, contracts.MethodMCPAuth, contracts.AuthParams{Server: "o", Op: contracts.AuthOpWait})
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "oauth_flow_expired" {
		t.Fatalf("waiting for the sign-in answered %v, want oauth_flow_expired", err)
	}
	if status, _ := getCallback(t, loc, ""); status == 200 {
		t.Errorf("the callback of an expired sign-in was accepted")
	}
	if _, tokens, _, _ := as.counts(); tokens != 0 {
		t.Errorf("%d token requests after an expired sign-in", tokens)
	}
	if st := o.status(t); st.OAuth.Pending != nil || st.OAuth.Grant != "none" {
		t.Errorf("status after expiry: %+v", st.OAuth)
	}
}

// discoverIssuer runs 'pikoctl mcp auth o --discover' and returns what it
// found, as an owner (or the conformance adapter) does before writing a
// pre-registered client into the settings.
func (o *oauthSetup) discoverIssuer(t *testing.T) contracts.AuthDiscovery {
	t.Helper()
	stdout, stderr, code := o.ctl(t, "", "--json", "mcp", "auth", "o", "--discover")
	var res contracts.AuthResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Discovery == nil {
		t.Fatalf("pikoctl mcp auth --discover: exit %d %s %s", code, stdout, stderr)
	}
	if auth, _, regs, _ := o.as.counts(); auth != 0 || regs != 0 {
		t.Fatalf("discovery signed in: %d authorization requests, %d registrations", auth, regs)
	}
	return *res.Discovery
}

func (o *oauthSetup) secret(t *testing.T, creds map[string]any) {
	t.Helper()
	b, _ := json.Marshal(creds)
	if stdout, stderr, code := o.ctl(t, string(b), "mcp", "secret", "o"); code != 0 {
		t.Fatalf("pikoctl mcp secret: exit %d %s %s", code, stdout, stderr)
	}
}

// TestOAuthClientCredentials connects with client_credentials and each
// client authentication (Basic, form post, private_key_jwt with aud the
// issuer): no browser, the token comes at connect time.
func TestOAuthClientCredentials(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	secret := randToken(canaryCS)
	for _, c := range []struct {
		method, explicit string
		creds            map[string]any
	}{
		{"client_secret_basic", "", map[string]any{"oauthClientSecret": secret}},
		{"client_secret_post", "client_secret_post", map[string]any{"oauthClientSecret": secret}},
		{"private_key_jwt", "", map[string]any{"oauthPrivateKey": keyPEM}},
	} {
		t.Run(c.method, func(t *testing.T) {
			o := newOAuthSetup(t, "--protocol", "modern", "--token-scope", "mcp:basic")
			if c.method == "private_key_jwt" {
				o.as.addClient("svc-client", "", c.method, &key.PublicKey)
			} else {
				o.as.addClient("svc-client", secret, c.method, nil)
			}
			o.configure(t, "auto", "")
			d := o.discoverIssuer(t)
			if d.Issuer != o.as.issuer || d.Resource != o.fx.url || d.ResourceMetadataURL == "" || d.TokenEndpoint != o.as.issuer+"/token" {
				t.Fatalf("discovery found %+v", d)
			}
			oauth := fmt.Sprintf(`{"grantType": "client_credentials", "clientId": "svc-client", "issuer": %q}`, d.Issuer)
			if c.explicit != "" {
				oauth = fmt.Sprintf(`{"grantType": "client_credentials", "clientId": "svc-client", "issuer": %q, "tokenEndpointAuthMethod": %q}`, d.Issuer, c.explicit)
			}
			o.configure(t, "auto", oauth)
			o.secret(t, c.creds)
			o.mustEcho(t, "cc-"+c.method)
			var cc []asTokenReq
			for _, tr := range o.as.tokenRequests() {
				if tr.form.Get("grant_type") == "client_credentials" {
					cc = append(cc, tr)
				}
			}
			if len(cc) != 1 || cc[0].method != c.method || cc[0].client != "svc-client" || cc[0].form.Get("resource") != o.fx.url ||
				cc[0].form.Get("scope") != "mcp:basic" {
				t.Fatalf("client_credentials requests: %+v", cc)
			}
			if auth, _, regs, _ := o.as.counts(); auth != 0 || regs != 0 {
				t.Errorf("client_credentials made %d authorization requests and %d registrations", auth, regs)
			}
			st := o.status(t)
			if st.ProtocolVersion != "2026-07-28" || st.OAuth == nil || st.OAuth.GrantType != "client_credentials" ||
				st.OAuth.Info == nil || !st.OAuth.Info.Refreshable {
				t.Errorf("status: protocol %s oauth %+v", st.ProtocolVersion, st.OAuth)
			}
			// An expired (here: revoked) token is replaced by a new grant.
			o.as.revokeAccess()
			o.mustEcho(t, "cc again")
			o.checkCanaries(t)
			o.mu.Lock()
			leaked := strings.Contains(o.out.String(), secret) || strings.Contains(o.out.String(), "BEGIN PRIVATE KEY")
			o.mu.Unlock()
			if leaked {
				t.Error("an answer holds the client secret or the private key")
			}
		})
	}
}

// TestOAuthCrossAppAccess exchanges the owner's identity assertion at the
// identity provider (RFC 8693) and the resulting ID-JAG at the
// authorization server (RFC 7523), then calls a tool.
func TestOAuthCrossAppAccess(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "legacy")
	secret := randToken(canaryCS)
	assertion := randToken("CANARYIDT")
	o.as.addClient("xaa-client", secret, "client_secret_basic", nil)
	o.as.with(func(as *testAS) { as.idpAssertion = assertion })
	o.configure(t, "legacy", fmt.Sprintf(`{"grantType": "cross_app_access", "clientId": "xaa-client", "issuer": %q,
		"idpTokenEndpoint": %q, "idpClientId": "idp-client"}`, o.as.issuer, o.as.base+"/idp/token"))
	o.secret(t, map[string]any{"oauthClientSecret": secret, "oauthIdentityAssertion": assertion})
	o.mustEcho(t, "cross-app")
	reqs := o.as.tokenRequests()
	if len(reqs) != 2 {
		t.Fatalf("token requests: %+v", reqs)
	}
	idp, as := reqs[0], reqs[1]
	if idp.method != "idp" || idp.form.Get("audience") != o.as.issuer || idp.form.Get("resource") != o.fx.url || idp.form.Get("client_id") != "idp-client" {
		t.Errorf("the token exchange at the identity provider: %v", idp.form)
	}
	if as.method != "client_secret_basic" || as.form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || as.form.Get("assertion") == "" {
		t.Errorf("the JWT bearer grant at the authorization server: %s %v", as.method, as.form.Get("grant_type"))
	}
	o.checkCanaries(t)
	o.mu.Lock()
	leaked := strings.Contains(o.out.String(), assertion)
	o.mu.Unlock()
	if leaked {
		t.Error("an answer holds the identity assertion")
	}
}

// TestOAuthRegistrationPersists keeps a dynamically registered client in
// the vault across restarts (a second sign-in registers nothing new),
// makes a grant stale when the settings it was made for change, and
// registers anew, sending nothing of the old client, when the server
// names another authorization server.
func TestOAuthRegistrationPersists(t *testing.T) {
	as1 := newTestAS(t)
	as1.with(func(as *testAS) { as.dcrMethod = "client_secret_post" })
	o := newOAuthSetupWith(t, as1, "--protocol", "legacy")
	o.configure(t, "legacy", "")
	o.signIn(t)
	o.mustEcho(t, "first")
	o.d.restart()
	o.mustEcho(t, "after restart, same token")
	o.signIn(t)
	if _, _, regs, _ := as1.counts(); regs != 1 {
		t.Errorf("%d registrations after a restart and a second sign-in, want 1", regs)
	}
	var oldClient, oldSecret string
	as1.with(func(as *testAS) {
		for id, c := range as.clients {
			oldClient, oldSecret = id, c.secret
		}
	})

	// Settings the grant was not made for: stale, not sent.
	o.configure(t, "legacy", `{"scope": "other"}`)
	if st := o.status(t); st.OAuth == nil || st.OAuth.Grant != "stale" {
		t.Errorf("after a scope change the grant is %+v, want stale", st.OAuth)
	}
	n := len(as1.introspections())
	if _, err := o.echo(t, "stale"); reasonOf(err) != "needs_auth" {
		t.Errorf("a call with a stale grant answered %v", err)
	}
	if len(as1.introspections()) != n {
		t.Error("a stale grant's token was sent")
	}
	o.configure(t, "legacy", "")

	// Another authorization server: the fixture restarts on the same
	// address, naming as2.
	host := o.fx.hostPort
	o.fx.kill9(t)
	as2 := newTestAS(t)
	o.fx = startFixtureServer(t, "http", host, "--require-token", as2.issuer, "--protocol", "legacy")
	if _, err := o.rpc(t, contracts.MethodMCPDisconnect, contracts.ServerParams{Server: "o"}); err != nil {
		t.Fatal(err)
	}
	_, err := o.echo(t, "as2")
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "needs_auth" {
		t.Fatalf("a call with as1's token at as2's server answered %v", err)
	}
	o.as = as2
	o.signIn(t)
	o.mustEcho(t, "as2 signed in")
	if _, _, regs, _ := as2.counts(); regs != 1 {
		t.Errorf("as2 saw %d registrations, want 1", regs)
	}
	for _, tr := range as2.tokenRequests() {
		if tr.client == oldClient || tr.form.Get("client_id") == oldClient || strings.Contains(tr.form.Encode(), oldSecret) {
			t.Errorf("as1's client reached as2: %v", tr.form)
		}
	}
	as2.mu.Lock()
	for _, q := range as2.authReqs {
		if q.Get("client_id") == oldClient {
			t.Errorf("as1's client id was sent to as2")
		}
	}
	as2.mu.Unlock()
	o.checkCanaries(t)
	o.as = as1
	o.checkCanaries(t)
}

// TestOAuthStepUp answers a 403 insufficient_scope with a second
// authorization request for the old and the new scope, and stops after
// three authorization requests for one call that never gets its scope.
func TestOAuthStepUp(t *testing.T) {
	o := newOAuthSetup(t, "--protocol", "modern", "--token-scope", "mcp:basic",
		"--tool-scope", "echo=mcp:write", "--tool-scope", "add=mcp:admin")
	o.as.with(func(as *testAS) { as.neverGrant = []string{"mcp:admin"} })
	o.configure(t, "auto", "")
	o.signIn(t)
	if got := o.as.lastAuthRequest().Get("scope"); got != "mcp:basic" {
		t.Fatalf("first authorization request scope %q, want mcp:basic", got)
	}
	_, err := o.echo(t, "needs write")
	if ce := contracts.ToError(err); ce == nil || ce.Reason() != "insufficient_scope" {
		t.Fatalf("echo without mcp:write answered %v, want insufficient_scope", err)
	}
	if st := o.status(t); st.State != contracts.StateConnected || st.OAuth.RequiredScope != "mcp:basic mcp:write" {
		t.Errorf("status after the 403: state %s oauth %+v", st.State, st.OAuth)
	}
	o.signIn(t)
	if got := o.as.lastAuthRequest().Get("scope"); got != "mcp:basic mcp:write" {
		t.Errorf("step-up authorization request scope %q, want \"mcp:basic mcp:write\"", got)
	}
	o.mustEcho(t, "has write")

	// add needs mcp:admin, which the authorization server never grants.
	call := func() error {
		res, err := o.callTool(t, "add", map[string]any{"a": 1, "b": 2})
		if err != nil && res.Status != "" && res.Status != contracts.CallFailed {
			t.Errorf("a call refused with 403 ended %s, want failed (it was not run)", res.Status)
		}
		return err
	}
	if err := call(); reasonOf(err) != "insufficient_scope" {
		t.Fatalf("add answered %v", err)
	}
	before, _, _, _ := o.as.counts()
	for range 2 {
		o.signIn(t)
		if err := call(); reasonOf(err) != "insufficient_scope" {
			t.Fatalf("add answered %v", err)
		}
	}
	o.startErr(t, "step_up_limit")
	if after, _, _, _ := o.as.counts(); after-before != 2 {
		t.Errorf("%d authorization requests for the refused call after the first, want 2", after-before)
	}
	o.checkCanaries(t)
}

// reasonOf is err's wire reason, "" for nil.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return contracts.ToError(err).Reason()
}
