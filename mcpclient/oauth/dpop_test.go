package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkProof verifies a DPoP proof the way RFC 9449 section 4.3 says a
// server does and returns its claims and the thumbprint of its key.
func checkProof(t *testing.T, proof, method, htu string) (map[string]any, string) {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a compact JWS", proof)
	}
	var header struct {
		Typ, Alg string
		JWK      map[string]string
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	var rawHeader map[string]any
	if json.Unmarshal(hb, &header) != nil || json.Unmarshal(hb, &rawHeader) != nil {
		t.Fatalf("unreadable proof header %s", hb)
	}
	var claims map[string]any
	if err := json.Unmarshal(cb, &claims); err != nil {
		t.Fatalf("unreadable proof claims %s", cb)
	}
	if header.Typ != "dpop+jwt" {
		t.Errorf("typ %q, want dpop+jwt", header.Typ)
	}
	if len(rawHeader) != 3 {
		t.Errorf("header %s has other members than typ, alg and jwk", hb)
	}
	for k := range header.JWK {
		if k != "kty" && k != "crv" && k != "x" && k != "y" {
			t.Errorf("the jwk has member %q: a public EC key has kty, crv, x, y only", k)
		}
	}
	curves := map[string]struct {
		c    elliptic.Curve
		size int
		alg  string
	}{"P-256": {elliptic.P256(), 32, "ES256"}, "P-384": {elliptic.P384(), 48, "ES384"}, "P-521": {elliptic.P521(), 66, "ES512"}}
	cv, ok := curves[header.JWK["crv"]]
	if !ok || header.JWK["kty"] != "EC" || header.Alg != cv.alg {
		t.Fatalf("jwk %v with alg %s", header.JWK, header.Alg)
	}
	x, _ := base64.RawURLEncoding.DecodeString(header.JWK["x"])
	y, _ := base64.RawURLEncoding.DecodeString(header.JWK["y"])
	pub, err := ecdsa.ParseUncompressedPublicKey(cv.c, append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatalf("the jwk is no %s point: %v", header.JWK["crv"], err)
	}
	input := []byte(parts[0] + "." + parts[1])
	var digest []byte
	switch cv.alg {
	case "ES256":
		s := sha256.Sum256(input)
		digest = s[:]
	case "ES384":
		s := sha512.Sum384(input)
		digest = s[:]
	default:
		s := sha512.Sum512(input)
		digest = s[:]
	}
	if len(sig) != 2*cv.size || !ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:cv.size]), new(big.Int).SetBytes(sig[cv.size:])) {
		t.Error("the proof's signature does not verify with its jwk")
	}
	if claims["htm"] != method || claims["htu"] != htu {
		t.Errorf("htm %v htu %v, want %s %s", claims["htm"], claims["htu"], method, htu)
	}
	if jti, _ := claims["jti"].(string); len(jti) < 16 {
		t.Errorf("jti %q is too short", jti)
	}
	if iat, _ := claims["iat"].(float64); iat < float64(time.Now().Add(-time.Minute).Unix()) || iat > float64(time.Now().Add(time.Minute).Unix()) {
		t.Errorf("iat %v is not now", claims["iat"])
	}
	canon := fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, header.JWK["crv"], header.JWK["x"], header.JWK["y"])
	sum := sha256.Sum256([]byte(canon))
	return claims, base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestDPoPProof(t *testing.T) {
	for _, alg := range DPoPAlgs {
		k, err := NewDPoPKey(alg)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse("https://mcp.example:8443/mcp/v1?session=abc#frag")
		p1, err := k.Proof("POST", u, "n-1", "the-token", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		claims, jkt := checkProof(t, p1, "POST", "https://mcp.example:8443/mcp/v1")
		if jkt != k.Thumbprint() {
			t.Errorf("%s: thumbprint %s, the proof's key has %s", alg, k.Thumbprint(), jkt)
		}
		sum := sha256.Sum256([]byte("the-token"))
		if claims["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) || claims["nonce"] != "n-1" {
			t.Errorf("%s: ath %v nonce %v", alg, claims["ath"], claims["nonce"])
		}
		p2, _ := k.Proof("GET", u, "", "", time.Now())
		c2, _ := checkProof(t, p2, "GET", "https://mcp.example:8443/mcp/v1")
		if c2["jti"] == claims["jti"] {
			t.Errorf("%s: two proofs share jti %v", alg, c2["jti"])
		}
		if _, ok := c2["ath"]; ok {
			t.Errorf("%s: a proof without a token has ath", alg)
		}
		if _, ok := c2["nonce"]; ok {
			t.Errorf("%s: a proof without a nonce has one", alg)
		}
	}
	if _, err := NewDPoPKey("RS256"); reasonOf(err) != "oauth_unsupported_alg" {
		t.Errorf("NewDPoPKey(RS256) = %v", err)
	}
}

func TestDPoPKeyStored(t *testing.T) {
	k, err := NewDPoPKey("ES256")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := k.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDPoPKey("ES256", enc)
	if err != nil || back.Thumbprint() != k.Thumbprint() {
		t.Fatalf("ParseDPoPKey = %v, %v; want thumbprint %s", back, err, k.Thumbprint())
	}
	d, _ := k.key.Bytes()
	secrets := DPoPSecretValues("ES256", enc)
	if len(secrets) != 2 || secrets[0] != enc || secrets[1] != base64.RawURLEncoding.EncodeToString(d) {
		t.Errorf("DPoPSecretValues = %d values, want the encoding and d", len(secrets))
	}
	for _, shown := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k)} {
		for _, s := range secrets {
			if strings.Contains(shown, s) {
				t.Errorf("formatting the key shows a secret: %q", shown)
			}
		}
		if !strings.Contains(shown, k.Thumbprint()) {
			t.Errorf("formatting the key does not name its thumbprint: %q", shown)
		}
	}
	for _, c := range []struct{ alg, enc, why string }{
		{"ES384", enc, "another curve"},
		{"ES256", "%%%", "not base64url"},
		{"ES256", base64.RawURLEncoding.EncodeToString([]byte("junk")), "not PKCS#8"},
		{"HS256", enc, "unknown alg"},
	} {
		_, err := ParseDPoPKey(c.alg, c.enc)
		if reasonOf(err) != "oauth_bad_dpop_key" || strings.Contains(err.Error(), enc) {
			t.Errorf("%s: ParseDPoPKey = %v", c.why, err)
		}
	}
}

func TestChooseDPoPAlg(t *testing.T) {
	for _, c := range []struct {
		as, rs []string
		want   string
	}{
		{[]string{"RS256", "ES256"}, nil, "ES256"},
		{[]string{"ES512", "ES384"}, nil, "ES384"},
		{[]string{"ES256", "ES384"}, []string{"ES384"}, "ES384"},
		{[]string{"RS256", "PS256"}, nil, ""},
		{[]string{"ES256"}, []string{"ES512"}, ""},
		{nil, nil, ""},
	} {
		if got := ChooseDPoPAlg(c.as, c.rs); got != c.want {
			t.Errorf("ChooseDPoPAlg(%v, %v) = %q, want %q", c.as, c.rs, got, c.want)
		}
	}
}

func TestNonceFrom(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   string
		ok     bool
	}{
		{[]string{"eyJ7S_zG.eyJH0-Z.HX4w-7v"}, "eyJ7S_zG.eyJH0-Z.HX4w-7v", true},
		{nil, "", false},
		{[]string{""}, "", false},
		{[]string{"a", "b"}, "", false},
		{[]string{"with space"}, "", false},
		{[]string{`quo"te`}, "", false},
		{[]string{strings.Repeat("n", MaxNonceBytes+1)}, "", false},
	} {
		h := http.Header{}
		for _, v := range c.values {
			h.Add("DPoP-Nonce", v)
		}
		if got, ok := NonceFrom(h); got != c.want || ok != c.ok {
			t.Errorf("NonceFrom(%q) = %q, %v; want %q, %v", c.values, got, ok, c.want, c.ok)
		}
	}
	h := http.Header{"Www-Authenticate": {`DPoP error="use_dpop_nonce", error_description="nonce needed"`}, "Dpop-Nonce": {"n"}}
	if !NonceChallenge(401, h) {
		t.Error("NonceChallenge misses a use_dpop_nonce challenge")
	}
	if NonceChallenge(400, h) || NonceChallenge(401, http.Header{"Www-Authenticate": h["Www-Authenticate"]}) ||
		NonceChallenge(401, http.Header{"Www-Authenticate": {`Bearer error="use_dpop_nonce"`}, "Dpop-Nonce": {"n"}}) ||
		NonceChallenge(401, http.Header{"Www-Authenticate": {`DPoP error="invalid_token"`}, "Dpop-Nonce": {"n"}}) {
		t.Error("NonceChallenge takes another answer for a nonce challenge")
	}
}

// TestTokenDPoP: a token request carries a proof for the token endpoint;
// 400 use_dpop_nonce with a nonce is answered once, with that nonce in a
// fresh proof; the nonce of any answer is kept; a token that comes back
// as Bearer is refused.
func TestTokenDPoP(t *testing.T) {
	type seen struct {
		proof string
		form  url.Values
	}
	var (
		mu    sync.Mutex
		reqs  []seen
		plans []func(w http.ResponseWriter)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		reqs = append(reqs, seen{r.Header.Get("DPoP"), r.PostForm})
		plan := plans[0]
		if len(plans) > 1 {
			plans = plans[1:]
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		plan(w)
	}))
	defer srv.Close()
	needNonce := func(n string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("DPoP-Nonce", n)
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"use_dpop_nonce","error_description":"nonce required"}`)
		}
	}
	issue := func(typ, nonce string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if nonce != "" {
				w.Header().Set("DPoP-Nonce", nonce)
			}
			fmt.Fprintf(w, `{"access_token":"at","token_type":%q}`, typ)
		}
	}
	run := func(p ...func(w http.ResponseWriter)) (*DPoP, []seen, error) {
		mu.Lock()
		reqs, plans = nil, p
		mu.Unlock()
		k, err := NewDPoPKey("ES256")
		if err != nil {
			t.Fatal(err)
		}
		dp := &DPoP{Key: k, Nonce: &DPoPNonce{}}
		c := &Client{HTTP: srv.Client()}
		_, err = c.Token(context.Background(), srv.URL+"/token?x=1", url.Values{"grant_type": {"client_credentials"}},
			ClientAuth{ClientID: "c", Method: "none"}, TokenOptions{DPoP: dp})
		mu.Lock()
		defer mu.Unlock()
		return dp, append([]seen(nil), reqs...), err
	}

	dp, got, err := run(needNonce("n-1"), issue("DPoP", "n-2"))
	if err != nil {
		t.Fatalf("the nonce dance: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	c1, _ := checkProof(t, got[0].proof, "POST", srv.URL+"/token")
	c2, jkt := checkProof(t, got[1].proof, "POST", srv.URL+"/token")
	if _, ok := c1["nonce"]; ok || c2["nonce"] != "n-1" || c1["jti"] == c2["jti"] || jkt != dp.Key.Thumbprint() {
		t.Errorf("first proof nonce %v, second %v (jti %v, %v)", c1["nonce"], c2["nonce"], c1["jti"], c2["jti"])
	}
	if _, ok := c2["ath"]; ok {
		t.Error("a token request's proof has ath")
	}
	if dp.Nonce.Get() != "n-2" {
		t.Errorf("kept nonce %q, want the latest, n-2", dp.Nonce.Get())
	}

	// Asked for a nonce twice: answered once only.
	_, got, err = run(needNonce("n-1"), needNonce("n-2"), issue("DPoP", ""))
	if len(got) != 2 || err == nil || !strings.Contains(err.Error(), "use_dpop_nonce") {
		t.Errorf("two nonce refusals: %d requests, err %v", len(got), err)
	}
	// use_dpop_nonce without a nonce: nothing to answer with.
	_, got, err = run(func(w http.ResponseWriter) {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":"use_dpop_nonce"}`)
	})
	if len(got) != 1 || err == nil {
		t.Errorf("use_dpop_nonce without DPoP-Nonce: %d requests, err %v", len(got), err)
	}
	// Another 400 carrying a nonce is not resent.
	_, got, err = run(func(w http.ResponseWriter) {
		w.Header().Set("DPoP-Nonce", "n-3")
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
	})
	if len(got) != 1 || !InvalidGrant(err) {
		t.Errorf("invalid_grant with a nonce: %d requests, err %v", len(got), err)
	}
	// A Bearer token for a DPoP request is not bound to the key.
	dp, _, err = run(issue("Bearer", ""))
	if reasonOf(err) != "oauth_dpop_not_bound" || !strings.Contains(err.Error(), dp.Key.Thumbprint()) {
		t.Errorf("a Bearer answer to a DPoP request: %v", err)
	}
	if _, _, err = run(issue("dpop", "")); err != nil {
		t.Errorf("token_type is case-insensitive: %v", err)
	}
}
