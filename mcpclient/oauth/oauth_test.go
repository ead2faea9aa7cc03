package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

func TestBearerChallenge(t *testing.T) {
	cases := []struct {
		name   string
		header []string
		want   *Challenge
	}{
		{"resource metadata and scope", []string{`Bearer resource_metadata="https://m.example/.well-known/oauth-protected-resource", scope="files:read files:write"`},
			&Challenge{ResourceMetadata: "https://m.example/.well-known/oauth-protected-resource", Scope: "files:read files:write"}},
		{"insufficient scope", []string{`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://m/x", error_description="need b"`},
			&Challenge{ResourceMetadata: "https://m/x", Scope: "a b", Error: "insufficient_scope", Description: "need b"}},
		{"scheme case and token values", []string{`bearer Error=invalid_token, Scope=read`}, &Challenge{Error: "invalid_token", Scope: "read"}},
		{"after another scheme with token68", []string{`Basic YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer scope="x"`}, &Challenge{Scope: "x"}},
		{"after another scheme with params", []string{`Digest realm="a", nonce="b", Bearer scope="y", resource_metadata="https://r/m"`},
			&Challenge{Scope: "y", ResourceMetadata: "https://r/m"}},
		{"second header", []string{`Basic realm="x"`, `Bearer scope="z"`}, &Challenge{Scope: "z"}},
		{"escaped quote", []string{`Bearer error_description="say \"hi\", then go", scope="s"`}, &Challenge{Description: `say "hi", then go`, Scope: "s"}},
		{"first of a repeated name", []string{`Bearer scope="one", scope="two"`}, &Challenge{Scope: "one"}},
		{"bare", []string{`Bearer`}, &Challenge{}},
		{"none", []string{`Basic realm="x"`}, nil},
		{"unterminated", []string{`Bearer scope="open`}, &Challenge{Scope: "open"}},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, v := range c.header {
			h.Add("WWW-Authenticate", v)
		}
		got, ok := BearerChallenge(h)
		if c.want == nil {
			if ok {
				t.Errorf("%s: BearerChallenge = %+v, want none", c.name, got)
			}
			continue
		}
		c.want.Scheme = "Bearer"
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: BearerChallenge(%q) = %+v, %v; want %+v", c.name, c.header, got, ok, c.want)
		}
	}
}

func FuzzBearerChallenge(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://m/x", scope="a b"`)
	f.Add(`Basic abc==, Bearer error="insufficient_scope"`)
	f.Add(`Bearer ,,,="",a="\`)
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Www-Authenticate": {v}}
		BearerChallenge(h) // must not panic or loop
	})
}

func TestServerMetadataURLs(t *testing.T) {
	cases := map[string][]string{
		"https://auth.example.com": {
			"https://auth.example.com/.well-known/oauth-authorization-server",
			"https://auth.example.com/.well-known/openid-configuration"},
		"https://auth.example.com/": {
			"https://auth.example.com/.well-known/oauth-authorization-server",
			"https://auth.example.com/.well-known/openid-configuration"},
		"https://auth.example.com/tenant1": {
			"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
			"https://auth.example.com/.well-known/openid-configuration/tenant1",
			"https://auth.example.com/tenant1/.well-known/openid-configuration"},
	}
	for issuer, want := range cases {
		got, err := ServerMetadataURLs(issuer)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ServerMetadataURLs(%q) = %q, %v; want %q", issuer, got, err, want)
		}
	}
	for _, bad := range []string{"auth.example.com", "ftp://a/b", "https://a/?x=1"} {
		if _, err := ServerMetadataURLs(bad); err == nil {
			t.Errorf("ServerMetadataURLs(%q) accepted it", bad)
		}
	}
}

func TestCheckResource(t *testing.T) {
	server, _ := url.Parse("https://mcp.example.com/public/mcp")
	for resource, ok := range map[string]bool{
		"https://mcp.example.com/public/mcp":  true,
		"https://mcp.example.com/public/mcp/": true,
		"https://MCP.example.com:443/public":  true,
		"https://mcp.example.com":             true,
		"https://mcp.example.com/":            true,
		"https://mcp.example.com/pub":         false,
		"https://mcp.example.com/other":       false,
		"https://evil.example.com/public/mcp": false,
		"http://mcp.example.com/public/mcp":   false,
		"https://mcp.example.com:8443/public": false,
		"https://mcp.example.com/public#x":    false,
		"":                                    false,
		"mcp.example.com/public/mcp":          false,
	} {
		err := checkResource(resource, server)
		if (err == nil) != ok {
			t.Errorf("checkResource(%q) = %v, want ok=%v", resource, err, ok)
		}
		if err != nil && reasonOf(err) != "resource_mismatch" {
			t.Errorf("checkResource(%q) reason %q", resource, reasonOf(err))
		}
	}
}

// fakeServers serves documents at paths and records every GET, on one
// httptest server (the MCP server's origin and the authorization server
// share it, as in the 2025-03-26 scenarios).
type fakeServers struct {
	srv  *httptest.Server
	mu   sync.Mutex
	docs map[string]string
	hits []string
}

func newFake(t *testing.T) *fakeServers {
	f := &fakeServers{docs: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits = append(f.hits, r.URL.Path)
		doc, ok := f.docs[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, strings.ReplaceAll(doc, "BASE", f.srv.URL))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServers) client() *Client { return &Client{HTTP: f.srv.Client()} }

func (f *fakeServers) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hits...)
}

const asDoc = `{"issuer":"BASE%s","authorization_endpoint":"BASE%s/authorize","token_endpoint":"BASE%s/token",
	"code_challenge_methods_supported":["S256"],"registration_endpoint":"BASE%s/register"}`

func metadataFor(prefix string) string { return fmt.Sprintf(asDoc, prefix, prefix, prefix, prefix) }

// TestDiscoverOrder walks the discovery orders of the MCP authorization
// spec and checks which URLs were asked for, in order.
func TestDiscoverOrder(t *testing.T) {
	cases := []struct {
		name      string
		docs      map[string]string
		challenge *Challenge
		issuer    string
		want      []string
		fallback  string
		resource  string
	}{
		{
			name: "metadata from the challenge, no root probe",
			docs: map[string]string{
				"/custom/prm.json":                        `{"resource":"BASE/mcp","authorization_servers":["BASE"]}`,
				"/.well-known/oauth-authorization-server": metadataFor(""),
			},
			challenge: &Challenge{ResourceMetadata: "BASE/custom/prm.json", Scope: "s"},
			want:      []string{"/custom/prm.json", "/.well-known/oauth-authorization-server"},
			resource:  "BASE/mcp",
		},
		{
			name: "path-based then root; OpenID Connect with path insertion",
			docs: map[string]string{
				"/.well-known/oauth-protected-resource":          `{"resource":"BASE","authorization_servers":["BASE/tenant1"]}`,
				"/.well-known/openid-configuration/tenant1":      metadataFor("/tenant1"),
				"/.well-known/oauth-authorization-server":        `{"issuer":"trap"}`,
				"/tenant1/.well-known/openid-configuration":      metadataFor("/tenant1"),
				"/.well-known/oauth-authorization-server/tenant": metadataFor("/tenant"),
			},
			want: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
				"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"},
			resource: "BASE",
		},
		{
			name: "path appending last",
			docs: map[string]string{
				"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":["BASE/tenant1"]}`,
				"/tenant1/.well-known/openid-configuration": metadataFor("/tenant1"),
			},
			want: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server/tenant1",
				"/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"},
			resource: "BASE/mcp",
		},
		{
			name: "2025-03-26 root metadata with another issuer",
			docs: map[string]string{
				"/.well-known/oauth-authorization-server": metadataFor("/oauth"),
			},
			want: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
				"/.well-known/oauth-authorization-server"},
			fallback: contracts.FallbackRootMetadata,
			resource: "BASE/mcp",
		},
		{
			name: "2025-03-26 default endpoints",
			docs: map[string]string{},
			want: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
				"/.well-known/oauth-authorization-server"},
			fallback: contracts.FallbackDefaultEndpoints,
			resource: "BASE/mcp",
		},
		{
			name:   "no resource metadata, pinned issuer",
			docs:   map[string]string{"/.well-known/oauth-authorization-server/as": metadataFor("/as")},
			issuer: "BASE/as",
			want: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
				"/.well-known/oauth-authorization-server/as"},
			resource: "BASE/mcp",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.docs = c.docs
			if c.challenge != nil {
				c.challenge.ResourceMetadata = strings.ReplaceAll(c.challenge.ResourceMetadata, "BASE", f.srv.URL)
			}
			d, err := f.client().Discover(context.Background(), DiscoverOptions{ServerURL: f.srv.URL + "/mcp", Challenge: c.challenge,
				Issuer: strings.ReplaceAll(c.issuer, "BASE", f.srv.URL)})
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			if got := f.got(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("asked for %q, want %q", got, c.want)
			}
			if d.Fallback != c.fallback || d.Resource != strings.ReplaceAll(c.resource, "BASE", f.srv.URL) {
				t.Errorf("fallback %q resource %q, want %q %q", d.Fallback, d.Resource, c.fallback, c.resource)
			}
			if d.Metadata.TokenEndpoint == "" || d.Metadata.Issuer == "" {
				t.Errorf("no metadata: %+v", d.Metadata)
			}
			if c.fallback == contracts.FallbackDefaultEndpoints && d.Metadata.AuthorizationEndpoint != f.srv.URL+"/authorize" {
				t.Errorf("default authorization endpoint %q", d.Metadata.AuthorizationEndpoint)
			}
		})
	}
}

func TestDiscoverRefusals(t *testing.T) {
	cases := []struct {
		name      string
		docs      map[string]string
		challenge *Challenge
		issuer    string
		reason    string
	}{
		{"issuer mismatch", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":["BASE"]}`,
			"/.well-known/oauth-authorization-server":   `{"issuer":"https://honest.example","token_endpoint":"BASE/token"}`,
		}, nil, "", "issuer_mismatch"},
		{"resource of another origin", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"https://evil.example.com/mcp","authorization_servers":["BASE"]}`,
		}, nil, "", "resource_mismatch"},
		{"advertised metadata missing", map[string]string{}, &Challenge{ResourceMetadata: "BASE/nothing"}, "", "oauth_discovery_failed"},
		{"advertised metadata not http", map[string]string{}, &Challenge{ResourceMetadata: "file:///etc/passwd"}, "", "oauth_discovery_failed"},
		{"pinned issuer not listed", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":["BASE/other"]}`,
		}, nil, "BASE/mine", "issuer_mismatch"},
		{"javascript authorization endpoint", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":["BASE"]}`,
			"/.well-known/oauth-authorization-server":   `{"issuer":"BASE","authorization_endpoint":"javascript:alert(1)","token_endpoint":"BASE/token"}`,
		}, nil, "", "oauth_bad_document"},
		{"no authorization server", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":[]}`,
		}, nil, "", "oauth_discovery_failed"},
		{"no metadata at the authorization server", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"BASE/mcp","authorization_servers":["BASE/x"]}`,
		}, nil, "", "oauth_discovery_failed"},
		{"not JSON", map[string]string{"/.well-known/oauth-protected-resource/mcp": `<html>`}, nil, "", "oauth_bad_document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.docs = c.docs
			if c.challenge != nil {
				c.challenge.ResourceMetadata = strings.ReplaceAll(c.challenge.ResourceMetadata, "BASE", f.srv.URL)
			}
			_, err := f.client().Discover(context.Background(), DiscoverOptions{ServerURL: f.srv.URL + "/mcp", Challenge: c.challenge,
				Issuer: strings.ReplaceAll(c.issuer, "BASE", f.srv.URL)})
			if got := reasonOf(err); err == nil || got != c.reason {
				t.Fatalf("Discover = %v (reason %q), want reason %s", err, got, c.reason)
			}
		})
	}
}

func TestAuthorizationURL(t *testing.T) {
	r := AuthorizationRequest{Endpoint: "https://as.example/authorize?tenant=a", ClientID: "c 1", RedirectURI: "http://127.0.0.1:5/callback",
		Scope: "a b", Resource: "https://mcp.example/mcp", State: "st", Verifier: "v"}
	raw, err := r.URL()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	sum := sha256.Sum256([]byte("v"))
	want := map[string]string{"tenant": "a", "response_type": "code", "client_id": "c 1", "redirect_uri": "http://127.0.0.1:5/callback",
		"scope": "a b", "resource": "https://mcp.example/mcp", "state": "st", "code_challenge_method": "S256",
		"code_challenge": base64.RawURLEncoding.EncodeToString(sum[:])}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	r.Scope = ""
	raw, _ = r.URL()
	if u, _ := url.Parse(raw); u.Query().Has("scope") {
		t.Errorf("an empty scope was sent: %s", raw)
	}
	for _, bad := range []string{"javascript:alert(1)", "file:///x", "custom-app://auth", "//as.example/authorize"} {
		r.Endpoint = bad
		if _, err := r.URL(); err == nil {
			t.Errorf("URL() accepted the authorization endpoint %q", bad)
		}
	}
}

func TestCheckIssuer(t *testing.T) {
	const rec = "https://as.example"
	cases := []struct {
		res      CallbackResult
		required bool
		reason   string
	}{
		{CallbackResult{}, false, ""},
		{CallbackResult{Iss: rec, HasIss: true}, false, ""},
		{CallbackResult{Iss: rec, HasIss: true}, true, ""},
		{CallbackResult{}, true, "issuer_missing"},
		{CallbackResult{Iss: rec + "/", HasIss: true}, false, "issuer_mismatch"},
		{CallbackResult{Iss: "https://AS.example", HasIss: true}, true, "issuer_mismatch"},
		{CallbackResult{Iss: "", HasIss: true}, false, "issuer_mismatch"},
	}
	for _, c := range cases {
		err := CheckIssuer(c.res, rec, c.required)
		if got := reasonOf(err); (err == nil) != (c.reason == "") || (err != nil && got != c.reason) {
			t.Errorf("CheckIssuer(%+v, required %v) = %v, want %q", c.res, c.required, err, c.reason)
		}
	}
}

func TestChooseAuthMethod(t *testing.T) {
	cases := []struct {
		explicit    string
		secret, key bool
		supported   []string
		want        string
		name        string
	}{
		{"", false, false, nil, "none", "nothing"},
		{"", true, false, nil, "client_secret_basic", "secret, default list"},
		{"", true, false, []string{"client_secret_post"}, "client_secret_post", "post only"},
		{"", true, false, []string{"client_secret_post", "client_secret_basic"}, "client_secret_basic", "both"},
		{"", true, true, []string{"private_key_jwt", "client_secret_basic"}, "private_key_jwt", "key wins"},
		{"", true, true, []string{"client_secret_basic"}, "client_secret_basic", "key not supported"},
		{"client_secret_post", true, false, []string{"client_secret_basic"}, "client_secret_post", "explicit"},
	}
	for _, c := range cases {
		if got := ChooseAuthMethod(c.explicit, c.secret, c.key, c.supported); got != c.want {
			t.Errorf("%s: ChooseAuthMethod = %q, want %q", c.name, got, c.want)
		}
	}
}

// tokenEndpoint answers like a token endpoint and records the request.
func tokenEndpoint(t *testing.T, answer string, status int) (*httptest.Server, *http.Request, *url.Values) {
	var got http.Request
	var form url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got, form = *r, r.PostForm
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &form
}

func TestTokenClientAuthentication(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, method := range []string{"client_secret_basic", "client_secret_post", "none", "private_key_jwt"} {
		srv, req, form := tokenEndpoint(t, `{"access_token":"at","token_type":"bearer","expires_in":"60","refresh_token":"rt","scope":"a"}`, 200)
		c := &Client{HTTP: srv.Client()}
		auth := ClientAuth{ClientID: "id:1", Method: method, Secret: "s&cret", Key: key, Alg: "ES256", Audience: "https://as.example"}
		resp, err := c.Token(context.Background(), srv.URL, url.Values{"grant_type": {"client_credentials"}}, auth, TokenOptions{TokenType: TokenTypeBearer})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if resp.AccessToken != "at" || resp.RefreshToken != "rt" || resp.ExpiresIn != time.Minute || resp.Scope != "a" {
			t.Errorf("%s: response %+v", method, resp)
		}
		user, pass, basic := req.BasicAuth()
		switch method {
		case "client_secret_basic":
			if !basic || user != url.QueryEscape("id:1") || pass != url.QueryEscape("s&cret") || form.Get("client_secret") != "" {
				t.Errorf("basic: user %q pass %q form %v", user, pass, form)
			}
		case "client_secret_post":
			if basic || form.Get("client_id") != "id:1" || form.Get("client_secret") != "s&cret" {
				t.Errorf("post: %v", form)
			}
		case "none":
			if basic || form.Get("client_id") != "id:1" || form.Has("client_secret") {
				t.Errorf("none: %v", form)
			}
		case "private_key_jwt":
			if basic || form.Get("client_assertion_type") != ClientAssertionJWT {
				t.Errorf("private_key_jwt: %v", form)
			}
			verifyAssertion(t, form.Get("client_assertion"), &key.PublicKey, "id:1", "https://as.example")
		}
	}
}

func verifyAssertion(t *testing.T, jwt string, pub *ecdsa.PublicKey, client, aud string) {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q is not a JWS", jwt)
	}
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	now := float64(time.Now().Unix())
	if claims["iss"] != client || claims["sub"] != client || claims["aud"] != aud || claims["jti"] == "" ||
		claims["exp"].(float64) <= now || claims["exp"].(float64) > now+AssertionLifetime.Seconds()+5 {
		t.Errorf("claims %v", claims)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Error("the assertion's signature does not verify")
	}
}

func TestTokenErrors(t *testing.T) {
	cases := []struct {
		answer string
		status int
		reason string
	}{
		{`{"error":"invalid_grant","error_description":"spent"}`, 400, "invalid_grant"},
		{`{"error":"invalid_client"}`, 401, "oauth_token_refused"},
		{`oops`, 500, "oauth_token_refused"},
		{`{"token_type":"Bearer"}`, 200, "oauth_bad_token_response"},
		{`{"access_token":"a","token_type":"mac"}`, 200, "oauth_bad_token_response"},
		{`{"access_token":"a","token_type":"Bearer","expires_in":-5}`, 200, "oauth_bad_token_response"},
		{`{"access_token":"a\nb","token_type":"Bearer"}`, 200, "oauth_bad_token_response"},
	}
	for _, c := range cases {
		srv, _, _ := tokenEndpoint(t, c.answer, c.status)
		_, err := (&Client{HTTP: srv.Client()}).Token(context.Background(), srv.URL, url.Values{}, ClientAuth{Method: "none"}, TokenOptions{TokenType: TokenTypeBearer})
		if got := reasonOf(err); err == nil || got != c.reason {
			t.Errorf("answer %s %q: err %v reason %q, want %s", fmt.Sprint(c.status), c.answer, err, got, c.reason)
		}
	}
	if !InvalidGrant(fmt.Errorf("wrapped: %w", &TokenError{Code: "invalid_grant"})) {
		t.Error("InvalidGrant misses a wrapped invalid_grant")
	}
}

func TestParsePrivateKey(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	pkcs1 := x509.MarshalPKCS1PrivateKey(rsaKey)
	for _, c := range []struct {
		pem, alg string
	}{
		{string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})), "ES256"},
		{string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})), "ES256"},
		{string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: pkcs1})), "RS256"},
	} {
		if _, alg, err := ParsePrivateKey(c.pem); err != nil || alg != c.alg {
			t.Errorf("ParsePrivateKey: %s %v, want %s", alg, err, c.alg)
		}
	}
	secret := "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRET"
	for _, bad := range []string{secret, "-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n",
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte(secret)}))} {
		_, _, err := ParsePrivateKey(bad)
		if err == nil {
			t.Errorf("ParsePrivateKey accepted %q", bad)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func TestCallback(t *testing.T) {
	cb, err := ListenCallback(0, "the-state")
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	u, _ := url.Parse(cb.RedirectURI())
	if u.Hostname() != "127.0.0.1" || u.Path != CallbackPath {
		t.Fatalf("redirect URI %s", cb.RedirectURI())
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, path, host, query string) int {
		req, _ := http.NewRequest(method, "http://"+u.Host+path+"?"+query, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		if resp.Header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("%s %s: headers %v", method, path, resp.Header)
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, host, query string
		want                      int
	}{
		{"GET", "/other", "", "state=the-state&code=c", 404},
		{"POST", CallbackPath, "", "state=the-state&code=c", 405},
		{"GET", CallbackPath, "localhost:" + u.Port(), "state=the-state&code=c", 400},
		{"GET", CallbackPath, "", "state=the-stat&code=c", 400},
		{"GET", CallbackPath, "", "code=c", 400},
	} {
		if got := get(c.method, c.path, c.host, c.query); got != c.want {
			t.Errorf("%s %s host %q query %q: %d, want %d", c.method, c.path, c.host, c.query, got, c.want)
		}
	}
	select {
	case r := <-cb.Results():
		t.Fatalf("a refused callback was delivered: %+v", r)
	default:
	}
	if got := get("GET", CallbackPath, "", "state=the-state&code=c&iss=https%3A%2F%2Fas"); got != 200 {
		t.Fatalf("the right callback: %d", got)
	}
	r := <-cb.Results()
	if r.Code != "c" || !r.HasIss || r.Iss != "https://as" {
		t.Errorf("delivered %+v", r)
	}
	if got := get("GET", CallbackPath, "", "state=the-state&code=c"); got != 400 {
		t.Errorf("a replayed callback: %d, want 400", got)
	}
	if err := cb.Offer(CallbackResult{State: "the-state", Code: "d"}); err == nil {
		t.Error("a pasted callback after the first was accepted")
	}
}

func TestParseRedirect(t *testing.T) {
	const redirect = "http://127.0.0.1:4000/callback"
	if q, err := ParseRedirect("  "+redirect+"?code=a&state=b\n", redirect); err != nil || q.Get("code") != "a" {
		t.Errorf("ParseRedirect: %v %v", q, err)
	}
	for _, bad := range []string{"http://127.0.0.1:4001/callback?code=a", "http://localhost:4000/callback?code=a",
		"https://127.0.0.1:4000/callback?code=a", "http://127.0.0.1:4000/other?code=a", "::"} {
		if _, err := ParseRedirect(bad, redirect); err == nil {
			t.Errorf("ParseRedirect accepted %q", bad)
		}
	}
}

// reasonOf is err's wire reason, "" for nil.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return contracts.ToError(err).Reason()
}
