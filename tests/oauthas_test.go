package tests

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testAS is the synthetic authorization server of the OAuth suites: a real
// HTTP server on 127.0.0.1 that speaks RFC 8414 metadata, dynamic
// registration, the authorization endpoint (answering 302 to the redirect
// URI as a browser would be sent), the token endpoint (authorization_code
// with PKCE, refresh_token with rotation, client_credentials,
// urn:ietf:params:oauth:grant-type:jwt-bearer), token introspection for
// the fixture server (--require-token), and an identity provider's token
// exchange at /idp/token. Everything it does is counted, and every token it
// issues starts with a canary prefix the suites look for in pikod's output.
type testAS struct {
	t      testing.TB
	ln     net.Listener
	srv    *http.Server
	base   string
	issuer string

	// mu guards everything below.
	mu sync.Mutex
	// Knobs, set by the test before the flow they shape.
	prefix       string   // issuer path, e.g. "/tenant1"
	noS256       bool     // no code_challenge_methods_supported
	issSupported bool     // advertise authorization_response_iss_parameter_supported
	issMode      string   // "" (send none), "right", "wrong"
	mdIssuer     string   // the metadata's issuer, when not the real one
	authEndpoint string   // the metadata's authorization_endpoint, when not /authorize
	dcr          bool     // offer dynamic registration
	dcrMethod    string   // token_endpoint_auth_method a registration gets ("none" default)
	refresh      bool     // issue refresh tokens
	rotate       bool     // refresh tokens are single-use
	refuseRT     bool     // every refresh gets invalid_grant
	expiresIn    int      // expires_in of access tokens (0: none given)
	authMethods  []string // token_endpoint_auth_methods_supported
	scopes       []string // scopes_supported
	neverGrant   []string // scopes left out of every grant
	holdToken    chan struct{}
	tokenSeen    chan struct{}
	idpAssertion string // the identity assertion /idp/token accepts
	// workloadKey verifies workload assertions (jwt-bearer grants that
	// are not ID-JAGs): ES256, aud the issuer, exp in the future.
	workloadKey *ecdsa.PublicKey
	// workloadRefused is set by the first refused workload assertion;
	// afterRefusal counts the jwt-bearer requests that came after it.
	workloadRefused bool
	afterRefusal    int

	// DPoP (RFC 9449). dpopAlgs is the metadata's
	// dpop_signing_alg_values_supported: a token request with a proof
	// that section 4.3 accepts (checkASProof) gets a token bound to the
	// proof's key (token_type DPoP, cnf.jkt at introspection), a request
	// with a bad one 400 invalid_dpop_proof. With dpopNonce the token
	// endpoint wants its latest nonce (or the one before) in the proof,
	// else 400 use_dpop_nonce with DPoP-Nonce (section 8), and every token
	// answer brings a new nonce. dpopBearer answers Bearer tokens to
	// proofs all the same (an authorization server that ignores them).
	dpopAlgs      []string
	dpopNonce     bool
	dpopBearer    bool
	nonce         string
	prevNonce     string
	nonceRefusals int
	proofRefusals []string
	dpopJTIs      map[string]bool
	// proofKeys are the thumbprints of the keys of the accepted proofs,
	// one per token request.
	proofKeys []string
	// wire is every request and its answer, for the transcript.
	wire []wireRec

	clients   map[string]*asClient
	codes     map[string]*asCode
	access    map[string]*asGrant
	refreshes map[string]*asGrant
	jags      map[string]*asGrant
	// Logs.
	authReqs  []url.Values
	tokenReqs []asTokenReq
	// expiredSeen counts introspections of tokens past their expiry.
	expiredSeen int
	// bearerSeen counts requests to the authorization server that carried
	// a Bearer or DPoP token (pikod's tokens go to the MCP server only).
	bearerSeen   int
	regs         []map[string]any
	refreshCount int
	issued       []string
	introspected []string
}

type asClient struct {
	secret      string
	method      string
	key         *ecdsa.PublicKey
	redirectURI string
}

type asCode struct {
	client, redirectURI, challenge, resource, scope string
	// dpopJKT is the authorization request's dpop_jkt (RFC 9449 section
	// 10): the code is exchanged with that key's proof only.
	dpopJKT string
}

type asGrant struct {
	client, scope, resource string
	// jkt is the thumbprint of the key the token is bound to (DPoP).
	jkt    string
	active bool
	used   bool
	// expires is when an access token stops being active (zero: never).
	expires time.Time
}

type asTokenReq struct {
	form   url.Values
	method string // the client authentication the request used
	client string
}

// canary prefixes: every token and client secret the AS hands out carries
// one, so the suites can grep pikod's output for them.
const (
	canaryAT = "CANARYAT"
	canaryRT = "CANARYRT"
	canaryCS = "CANARYCS"
)

func newTestAS(t testing.TB) *testAS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the test authorization server: %v", err)
	}
	as := &testAS{t: t, ln: ln, base: "http://" + ln.Addr().String(), dcr: true,
		authMethods: []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		clients:     map[string]*asClient{}, codes: map[string]*asCode{}, access: map[string]*asGrant{},
		refreshes: map[string]*asGrant{}, jags: map[string]*asGrant{}, dpopJTIs: map[string]bool{}}
	as.issuer = as.base
	as.srv = &http.Server{Handler: http.HandlerFunc(as.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = as.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		as.mu.Lock()
		if as.holdToken != nil {
			select {
			case <-as.holdToken:
			default:
				close(as.holdToken)
			}
		}
		as.mu.Unlock()
		_ = as.srv.Shutdown(ctx)
	})
	return as
}

// setPrefix gives the issuer a path.
func (as *testAS) setPrefix(p string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.prefix = p
	as.issuer = as.base + p
}

func (as *testAS) with(f func(as *testAS)) {
	as.mu.Lock()
	defer as.mu.Unlock()
	f(as)
}

// addClient pre-registers a client.
func (as *testAS) addClient(id, secret, method string, key *ecdsa.PublicKey) {
	as.with(func(as *testAS) { as.clients[id] = &asClient{secret: secret, method: method, key: key} })
}

func randToken(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// wireRec is one request to the authorization server and its answer.
type wireRec struct {
	at      time.Time
	method  string
	path    string
	query   url.Values
	header  http.Header
	body    []byte
	status  int
	rheader http.Header
	rbody   []byte
}

// recordingWriter keeps the status, headers and (a bounded part of) the
// body of an answer.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (rw *recordingWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recordingWriter) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	if rw.body.Len() < 64<<10 {
		rw.body.Write(b)
	}
	return rw.ResponseWriter.Write(b)
}

func (as *testAS) serve(w http.ResponseWriter, r *http.Request) {
	rec := wireRec{at: time.Now(), method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone()}
	if r.Body != nil {
		rec.body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(rec.body))
	}
	rw := &recordingWriter{ResponseWriter: w}
	defer func() {
		rec.status, rec.rheader, rec.rbody = rw.status, rw.Header().Clone(), rw.body.Bytes()
		as.mu.Lock()
		as.wire = append(as.wire, rec)
		as.mu.Unlock()
	}()
	as.route(rw, r)
}

func (as *testAS) route(w http.ResponseWriter, r *http.Request) {
	as.mu.Lock()
	prefix := as.prefix
	if a := strings.ToLower(r.Header.Get("Authorization")); strings.HasPrefix(a, "bearer ") || strings.HasPrefix(a, "dpop ") {
		as.bearerSeen++
	}
	as.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/oauth-authorization-server"+prefix:
		as.metadata(w)
	case r.Method == http.MethodPost && r.URL.Path == prefix+"/register":
		as.register(w, r)
	case r.Method == http.MethodGet && r.URL.Path == prefix+"/authorize":
		as.authorize(w, r)
	case r.Method == http.MethodPost && r.URL.Path == prefix+"/token":
		as.token(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/introspect":
		as.introspect(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/idp/token":
		as.idpToken(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthErr(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (as *testAS) metadata(w http.ResponseWriter) {
	as.mu.Lock()
	defer as.mu.Unlock()
	md := map[string]any{
		"issuer":                                           as.issuer,
		"authorization_endpoint":                           as.issuer + "/authorize",
		"token_endpoint":                                   as.issuer + "/token",
		"response_types_supported":                         []string{"code"},
		"grant_types_supported":                            []string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
		"token_endpoint_auth_methods_supported":            as.authMethods,
		"token_endpoint_auth_signing_alg_values_supported": []string{"ES256"},
	}
	if !as.noS256 {
		md["code_challenge_methods_supported"] = []string{"S256"}
	}
	if as.dcr {
		md["registration_endpoint"] = as.issuer + "/register"
	}
	if as.issSupported {
		md["authorization_response_iss_parameter_supported"] = true
	}
	if as.mdIssuer != "" {
		md["issuer"] = as.mdIssuer
	}
	if as.authEndpoint != "" {
		md["authorization_endpoint"] = as.authEndpoint
	}
	if len(as.scopes) > 0 {
		md["scopes_supported"] = as.scopes
	}
	if len(as.dpopAlgs) > 0 {
		md["dpop_signing_alg_values_supported"] = as.dpopAlgs
	}
	writeJSON(w, http.StatusOK, md)
}

func (as *testAS) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		oauthErr(w, http.StatusBadRequest, "invalid_client_metadata", "not JSON")
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.regs = append(as.regs, req)
	id := randToken("client-")
	c := &asClient{method: "none"}
	if as.dcrMethod != "" {
		c.method = as.dcrMethod
	}
	out := map[string]any{"client_id": id, "client_name": req["client_name"], "redirect_uris": req["redirect_uris"],
		"token_endpoint_auth_method": c.method}
	if c.method == "client_secret_basic" || c.method == "client_secret_post" {
		c.secret = randToken(canaryCS)
		out["client_secret"] = c.secret
	}
	if uris, _ := req["redirect_uris"].([]any); len(uris) == 1 {
		c.redirectURI, _ = uris[0].(string)
	}
	as.clients[id] = c
	writeJSON(w, http.StatusCreated, out)
}

func (as *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.authReqs = append(as.authReqs, q)
	redirect := q.Get("redirect_uri")
	c, ok := as.clients[q.Get("client_id")]
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case !ok:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case redirect == "" || (c.redirectURI != "" && !sameLoopbackRedirect(c.redirectURI, redirect)):
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	code := randToken("code-")
	scope := grantScope(q.Get("scope"), as.neverGrant)
	as.codes[code] = &asCode{client: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"),
		resource: q.Get("resource"), scope: scope, dpopJKT: q.Get("dpop_jkt")}
	v := url.Values{"code": {code}}
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	switch as.issMode {
	case "right":
		v.Set("iss", as.issuer)
	case "wrong":
		v.Set("iss", "https://attacker.example")
	}
	http.Redirect(w, r, redirect+"?"+v.Encode(), http.StatusFound)
}

// sameLoopbackRedirect compares redirect URIs, any port (RFC 8252 7.3).
func sameLoopbackRedirect(registered, got string) bool {
	a, err1 := url.Parse(registered)
	b, err2 := url.Parse(got)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Hostname() == b.Hostname() && a.Path == b.Path
}

func grantScope(asked string, never []string) string {
	var out []string
	for _, s := range strings.Fields(asked) {
		if !slices.Contains(never, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// authenticate checks the client authentication of a token request.
func (as *testAS) authenticate(r *http.Request, form url.Values) (string, string, error) {
	if user, pass, ok := r.BasicAuth(); ok {
		id, err1 := url.QueryUnescape(user)
		secret, err2 := url.QueryUnescape(pass)
		c := as.clients[id]
		if err1 != nil || err2 != nil || c == nil || c.secret == "" || c.secret != secret {
			return "", "", errors.New("bad basic credentials")
		}
		return id, "client_secret_basic", nil
	}
	if form.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		id, err := as.checkAssertion(form.Get("client_assertion"))
		return id, "private_key_jwt", err
	}
	id := form.Get("client_id")
	c := as.clients[id]
	if c == nil {
		return "", "", errors.New("unknown client")
	}
	if secret := form.Get("client_secret"); secret != "" {
		if secret != c.secret {
			return "", "", errors.New("bad client_secret")
		}
		return id, "client_secret_post", nil
	}
	if c.secret != "" || c.key != nil {
		return "", "", errors.New("this client must authenticate")
	}
	return id, "none", nil
}

// checkWorkload verifies a workload's jwt-bearer grant (RFC 7523 §2.1,
// §3): the assertion ES256-signed by workloadKey, iss and sub present, aud
// the issuer, exp in the future; client_id and resource in the form, and
// nothing of a token exchange.
func (as *testAS) checkWorkload(form url.Values) error {
	parts := strings.Split(form.Get("assertion"), ".")
	if len(parts) != 3 {
		return errors.New("the assertion is not a JWS")
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &header) != nil || json.Unmarshal(cb, &claims) != nil {
		return errors.New("unreadable assertion")
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch {
	case header.Alg != "ES256" || len(sig) != 64:
		return errors.New("alg must be ES256")
	case !ecdsa.Verify(as.workloadKey, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])):
		return errors.New("bad signature")
	case claims.Iss == "" || claims.Sub == "":
		return errors.New("iss and sub are required")
	case claims.Aud != as.issuer:
		return fmt.Errorf("aud %q is not this authorization server", claims.Aud)
	case claims.Exp <= time.Now().Unix():
		return errors.New("the assertion expired")
	case form.Get("client_id") == "" || form.Get("resource") == "":
		return errors.New("client_id and resource are required")
	case form.Get("subject_token") != "" || form.Get("requested_token_type") != "":
		return errors.New("a jwt-bearer grant is not a token exchange")
	}
	return nil
}

// checkAssertion verifies an ES256 private_key_jwt client assertion whose
// aud must be the issuer.
func (as *testAS) checkAssertion(jwt string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWS")
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Sub, Aud, Jti string
		Exp, Iat           int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &header) != nil || json.Unmarshal(cb, &claims) != nil {
		return "", errors.New("unreadable assertion")
	}
	c := as.clients[claims.Iss]
	switch {
	case header.Alg != "ES256":
		return "", errors.New("alg must be ES256")
	case c == nil || c.key == nil:
		return "", errors.New("unknown client or no key")
	case claims.Sub != claims.Iss:
		return "", errors.New("sub must be the client")
	case claims.Aud != as.issuer:
		return "", fmt.Errorf("aud %q is not the issuer", claims.Aud)
	case claims.Exp < time.Now().Unix() || claims.Exp > time.Now().Add(10*time.Minute).Unix() || claims.Jti == "":
		return "", errors.New("bad exp or jti")
	case len(sig) != 64:
		return "", errors.New("signature must be r||s")
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(c.key, h[:], r, s) {
		return "", errors.New("bad signature")
	}
	return claims.Iss, nil
}

func (as *testAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthErr(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	form := r.PostForm
	as.mu.Lock()
	hold, seen := as.holdToken, as.tokenSeen
	as.mu.Unlock()
	if seen != nil {
		select {
		case seen <- struct{}{}:
		default:
		}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	client, method, err := as.authenticate(r, form)
	as.tokenReqs = append(as.tokenReqs, asTokenReq{form: form, method: method, client: client})
	if err != nil {
		oauthErr(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	jkt, ok := as.dpopProof(w, r)
	if !ok {
		return
	}
	var g *asGrant
	switch form.Get("grant_type") {
	case "authorization_code":
		code := as.codes[form.Get("code")]
		delete(as.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		switch {
		case code == nil || code.client != client:
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "unknown code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge:
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "PKCE verifier does not match")
			return
		case form.Get("redirect_uri") != code.redirectURI:
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs")
			return
		case form.Get("resource") != code.resource:
			oauthErr(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request")
			return
		case code.dpopJKT != "" && code.dpopJKT != jkt:
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "the code is bound to another DPoP key (dpop_jkt)")
			return
		}
		g = &asGrant{client: client, scope: code.scope, resource: code.resource}
	case "refresh_token":
		old := as.refreshes[form.Get("refresh_token")]
		if old == nil || old.used || old.client != client || as.refuseRT {
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "refresh token unknown or spent")
			return
		}
		if res := form.Get("resource"); res != old.resource {
			oauthErr(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant")
			return
		}
		if old.jkt != "" && old.jkt != jkt {
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "the refresh token is bound to another DPoP key")
			return
		}
		as.refreshCount++
		if as.rotate {
			old.used = true
		}
		g = &asGrant{client: client, scope: old.scope, resource: old.resource}
	case "client_credentials":
		g = &asGrant{client: client, scope: grantScope(form.Get("scope"), as.neverGrant), resource: form.Get("resource")}
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		jag := as.jags[form.Get("assertion")]
		if jag == nil && as.workloadKey != nil {
			if as.workloadRefused {
				as.afterRefusal++
			}
			if err := as.checkWorkload(form); err != nil {
				as.workloadRefused = true
				oauthErr(w, http.StatusBadRequest, "invalid_grant", err.Error())
				return
			}
			g = &asGrant{client: client, scope: grantScope(form.Get("scope"), as.neverGrant), resource: form.Get("resource")}
			break
		}
		if jag == nil || jag.used || jag.client != client {
			oauthErr(w, http.StatusBadRequest, "invalid_grant", "unknown assertion")
			return
		}
		jag.used = true
		g = &asGrant{client: client, scope: jag.scope, resource: jag.resource}
	default:
		oauthErr(w, http.StatusBadRequest, "unsupported_grant_type", "no")
		return
	}
	g.active = true
	if as.expiresIn > 0 {
		g.expires = time.Now().Add(time.Duration(as.expiresIn) * time.Second)
	}
	tokenType := "Bearer"
	if jkt != "" && !as.dpopBearer {
		g.jkt, tokenType = jkt, "DPoP"
	}
	if as.dpopNonce && jkt != "" {
		// Section 8.2: a new nonce with the answer.
		as.prevNonce, as.nonce = as.nonce, randToken("asn-")
		w.Header().Set("DPoP-Nonce", as.nonce)
	}
	at := randToken(canaryAT)
	as.access[at] = g
	as.issued = append(as.issued, at)
	out := map[string]any{"access_token": at, "token_type": tokenType}
	if g.scope != "" {
		out["scope"] = g.scope
	}
	if as.expiresIn > 0 {
		out["expires_in"] = as.expiresIn
	}
	if as.refresh && form.Get("grant_type") != "client_credentials" {
		if form.Get("grant_type") == "refresh_token" && !as.rotate {
			// The same refresh token stays valid.
		} else {
			rt := randToken(canaryRT)
			rg := *g
			as.refreshes[rt] = &rg
			out["refresh_token"] = rt
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (as *testAS) introspect(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	tok := r.PostForm.Get("token")
	as.introspected = append(as.introspected, tok)
	g := as.access[tok]
	if g != nil && !g.expires.IsZero() && time.Now().After(g.expires) {
		as.expiredSeen++
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	if g == nil || !g.active {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	out := map[string]any{"active": true, "scope": g.scope, "aud": g.resource}
	if g.jkt != "" {
		out["cnf"] = map[string]string{"jkt": g.jkt}
	}
	writeJSON(w, http.StatusOK, out)
}

// dpopProof checks the DPoP proof of a token request (as.mu held). No
// proof: ok, unbound. A proof to a server without dpopAlgs is ignored,
// as a server without DPoP would. Otherwise the proof must pass
// checkProof for POST to the token endpoint, carry no ath, use an
// algorithm of dpopAlgs and (dpopNonce) the latest nonce; the answer to a
// bad one is written here and ok is false.
func (as *testAS) dpopProof(w http.ResponseWriter, r *http.Request) (jkt string, ok bool) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) == 0 || len(as.dpopAlgs) == 0 {
		return "", true
	}
	refuse := func(why string) (string, bool) {
		as.proofRefusals = append(as.proofRefusals, why)
		oauthErr(w, http.StatusBadRequest, "invalid_dpop_proof", why)
		return "", false
	}
	if len(proofs) != 1 {
		return refuse("more than one DPoP header")
	}
	p, why := checkProof(proofs[0], http.MethodPost, as.issuer+"/token", "")
	switch {
	case why != "":
		return refuse(why)
	case !slices.Contains(as.dpopAlgs, p.alg):
		return refuse("alg " + p.alg + " is not in dpop_signing_alg_values_supported")
	case as.dpopJTIs[p.jti]:
		return refuse("jti was used before (a replayed proof)")
	}
	as.dpopJTIs[p.jti] = true
	if as.dpopNonce {
		if as.nonce == "" {
			as.nonce = randToken("asn-")
		}
		if p.nonce == "" || (p.nonce != as.nonce && p.nonce != as.prevNonce) {
			as.nonceRefusals++
			w.Header().Set("DPoP-Nonce", as.nonce)
			oauthErr(w, http.StatusBadRequest, "use_dpop_nonce", "Authorization server requires nonce in DPoP proof")
			return "", false
		}
	}
	as.proofKeys = append(as.proofKeys, p.jkt)
	return p.jkt, true
}

// idpToken is the identity provider's RFC 8693 token exchange: the
// configured identity assertion becomes an ID-JAG for the audience.
func (as *testAS) idpToken(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	as.tokenReqs = append(as.tokenReqs, asTokenReq{form: f, method: "idp", client: f.Get("client_id")})
	switch {
	case f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange",
		f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag",
		f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token":
		oauthErr(w, http.StatusBadRequest, "invalid_request", "not an ID-JAG exchange")
		return
	case as.idpAssertion == "" || f.Get("subject_token") != as.idpAssertion:
		oauthErr(w, http.StatusBadRequest, "invalid_grant", "unknown identity assertion")
		return
	case f.Get("audience") != as.issuer:
		oauthErr(w, http.StatusBadRequest, "invalid_target", "audience is not the authorization server")
		return
	}
	jag := randToken("CANARYJAG")
	// The ID-JAG names the MCP client registered at the AS ("xaa-client").
	as.jags[jag] = &asGrant{client: "xaa-client", scope: f.Get("scope"), resource: f.Get("resource")}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"})
}

// revokeAccess makes every access token inactive: the next request with
// one gets 401.
func (as *testAS) revokeAccess() {
	as.with(func(as *testAS) {
		for _, g := range as.access {
			g.active = false
		}
	})
}

func (as *testAS) counts() (auth, token, regs, refreshes int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.authReqs), len(as.tokenReqs), len(as.regs), as.refreshCount
}

func (as *testAS) lastAuthRequest() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.authReqs) == 0 {
		return nil
	}
	return as.authReqs[len(as.authReqs)-1]
}

func (as *testAS) tokenRequests() []asTokenReq {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.tokenReqs)
}

func (as *testAS) issuedTokens() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.issued)
}

func (as *testAS) introspections() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.introspected)
}

// browser is what the suites use instead of a person's browser: it GETs
// the authorization URL without following the redirect, then GETs the
// Location (pikod's callback), as a browser would.
var browser = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// authorizeInBrowser GETs the authorization URL and returns the Location
// it redirects to.
func authorizeInBrowser(t testing.TB, authURL string) string {
	t.Helper()
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatalf("GET the authorization URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the authorization endpoint answered %d, want 302", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		t.Fatal("the authorization endpoint gave no Location")
	}
	return loc
}

// getCallback GETs url (pikod's callback), optionally with another Host,
// and returns the status and body; a refused connection is status 0.
func getCallback(t testing.TB, rawURL, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatalf("building the callback request: %v", err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := browser.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the callback answered Cache-Control %q, want no-store", cc)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("the callback answered Content-Type %q, want text/plain", ct)
	}
	return resp.StatusCode, b.String()
}
