package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workloadAssertion mints an ES256 JWT as a platform would for a workload.
func workloadAssertion(t *testing.T, key *ecdsa.PrivateKey, aud string, exp time.Time) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "ES256", "typ": "JWT"}) + "." +
		enc(map[string]any{"iss": "https://platform.example", "sub": "workload-" + randomHex(t, 4), "aud": aud,
			"exp": exp.Unix(), "iat": time.Now().Unix(), "jti": randomHex(t, 8)})
	h := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestOAuthJWTBearer: workload identity. The stored assertion goes to the
// token endpoint exactly as given (grant_type jwt-bearer, client_id,
// resource), with no identity provider first; a refused one (wrong aud)
// ends the sign-in and is never sent again until the owner signs in; an
// expired one is refused before anything is sent; an assertionFile is
// read again on each use.
func TestOAuthJWTBearer(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o := newOAuthSetup(t, "--protocol", "legacy")
	o.as.addClient("workload", "", "none", nil)
	o.as.with(func(as *testAS) { as.workloadKey = &key.PublicKey; as.expiresIn = 2 })
	o.configure(t, "legacy", fmt.Sprintf(`{"grantType": "jwt_bearer", "clientId": "workload", "issuer": %q}`, o.as.issuer))

	good := workloadAssertion(t, key, o.as.issuer, time.Now().Add(10*time.Minute))
	o.secret(t, map[string]any{"oauthAssertion": good})
	o.mustEcho(t, "workload")
	reqs := o.as.tokenRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d token requests, want 1 (no exchange first): %+v", len(reqs), reqs)
	}
	f := reqs[0].form
	if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || f.Get("assertion") != good ||
		f.Get("client_id") != "workload" || f.Get("resource") != o.fx.url || reqs[0].method != "none" {
		t.Errorf("the jwt-bearer request: method %s, form %v", reqs[0].method, redactForm(f))
	}

	t.Run("a refused assertion is not sent again", func(t *testing.T) {
		wrongAud := workloadAssertion(t, key, "https://other.example", time.Now().Add(10*time.Minute))
		o.secret(t, map[string]any{"oauthAssertion": wrongAud})
		// Without its token, the next call needs a new one.
		if _, stderr, code := o.ctl(t, "", "mcp", "logout", "o"); code != 0 {
			t.Fatalf("logout: %s", stderr)
		}
		_, err := o.echo(t, "refused")
		if err == nil || !strings.Contains(err.Error(), "invalid_grant") {
			t.Fatalf("a call with a refused assertion: %v, want the authorization server's invalid_grant", err)
		}
		for i := range 3 {
			if _, err := o.echo(t, fmt.Sprintf("again %d", i)); err == nil || reasonOf(err) != "needs_auth" {
				t.Errorf("call %d after the refusal: %v, want needs_auth", i, err)
			}
		}
		o.as.with(func(as *testAS) {
			if as.afterRefusal != 0 {
				t.Errorf("%d jwt-bearer requests after invalid_grant, want none until the owner signs in", as.afterRefusal)
			}
			as.workloadRefused = false
		})
		o.secret(t, map[string]any{"oauthAssertion": good})
		if stdout, stderr, code := o.ctl(t, "", "mcp", "auth", "o"); code != 0 || !strings.Contains(stdout, "signed in to o") {
			t.Fatalf("the owner's sign-in with a good assertion: exit %d\n%s\n%s", code, stdout, stderr)
		}
		o.mustEcho(t, "after sign-in")
	})

	t.Run("an expired assertion is refused before it is sent", func(t *testing.T) {
		n := len(o.as.tokenRequests())
		o.secret(t, map[string]any{"oauthAssertion": workloadAssertion(t, key, o.as.issuer, time.Now().Add(-time.Minute))})
		_, stderr, code := o.ctl(t, "", "mcp", "auth", "o")
		if code == 0 {
			t.Fatal("auth with an expired assertion succeeded")
		}
		if !strings.Contains(stderr, "expired at") || !strings.Contains(stderr, "pikoctl mcp secret o") {
			t.Errorf("auth with an expired assertion said:\n%s", stderr)
		}
		if m := len(o.as.tokenRequests()); m != n {
			t.Errorf("%d token requests for an expired assertion, want none", m-n)
		}
	})

	t.Run("an assertion file is read on each use", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		first := workloadAssertion(t, key, o.as.issuer, time.Now().Add(10*time.Minute))
		if err := os.WriteFile(file, []byte(first+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		o.configure(t, "legacy", fmt.Sprintf(`{"grantType": "jwt_bearer", "clientId": "workload", "issuer": %q, "assertionFile": %q}`, o.as.issuer, file))
		o.secret(t, map[string]any{})
		o.mustEcho(t, "from the file")
		rotated := workloadAssertion(t, key, o.as.issuer, time.Now().Add(10*time.Minute))
		if err := os.WriteFile(file, []byte(rotated), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // the access token (expires_in 2) expires
		o.mustEcho(t, "after the rotation")
		reqs := o.as.tokenRequests()
		if last := reqs[len(reqs)-1].form.Get("assertion"); last != rotated {
			t.Errorf("the renewal sent the old assertion, not the rotated file's")
		}
	})
	o.checkCanaries(t)
	o.mu.Lock()
	leaked := strings.Contains(o.out.String(), good)
	o.mu.Unlock()
	if leaked {
		t.Error("an answer holds the workload assertion")
	}
}

// redactForm shows a token request's form without its secrets.
func redactForm(f map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range f {
		if k == "assertion" || k == "client_secret" {
			v = []string{"…"}
		}
		out[k] = v
	}
	return out
}
