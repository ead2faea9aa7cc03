package mcpclient

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/netguard"
	"github.com/pikod/pikod/mcpclient/oauth"
)

// dpopServer answers each request with the next of answers (the last one
// repeats) and records the Authorization and the proof's claims.
type dpopServer struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	auths   []string
	claims  []map[string]any
}

func (d *dpopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.auths = append(d.auths, r.Header.Get("Authorization"))
	var c map[string]any
	if parts := strings.Split(r.Header.Get("DPoP"), "."); len(parts) == 3 {
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		_ = json.Unmarshal(b, &c)
	}
	d.claims = append(d.claims, c)
	answer := d.answers[0]
	if len(d.answers) > 1 {
		d.answers = d.answers[1:]
	}
	d.mu.Unlock()
	answer(w)
}

func nonceAnswer(n string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="nonce needed"`)
		w.Header().Set("DPoP-Nonce", n)
		w.WriteHeader(http.StatusUnauthorized)
	}
}

// TestAuthTransportDPoP: a DPoP grant's token goes as "Authorization:
// DPoP" with a fresh proof (htm, htu without query, ath); a 401
// use_dpop_nonce with a DPoP-Nonce is answered by sending the request
// once more with the nonce, and never twice; any other answer is never
// sent again; the nonce of any answer is used from then on.
func TestAuthTransportDPoP(t *testing.T) {
	key, err := newStoredDPoPKey("ES256")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, answers ...func(w http.ResponseWriter)) (*dpopServer, *authTransport, string) {
		srv := &dpopServer{answers: answers}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		u, _ := url.Parse(hs.URL + "/mcp?tenant=a")
		cfg := &contracts.ServerSettings{ID: "d", Transport: contracts.TransportHTTP, URL: u.String()}
		at := &authTransport{base: http.DefaultTransport, origin: netguard.OriginOf(u), cfg: cfg, auth: &authState{id: "d"}}
		at.staged.Store(&stagedGrant{grant: &StoredGrant{AccessToken: "tok-1", DPoP: key}})
		return srv, at, u.String()
	}
	post := func(t *testing.T, at *authTransport, target string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		resp, err := at.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	ok := func(nonce string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if nonce != "" {
				w.Header().Set("DPoP-Nonce", nonce)
			}
			w.WriteHeader(http.StatusOK)
		}
	}

	t.Run("nonce once, then followed", func(t *testing.T) {
		srv, at, target := run(t, nonceAnswer("n-1"), ok("n-2"), ok(""))
		if _, err := post(t, at, target); err != nil {
			t.Fatalf("the request after the nonce challenge: %v", err)
		}
		if _, err := post(t, at, target); err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.claims) != 3 {
			t.Fatalf("%d requests, want 3", len(srv.claims))
		}
		sum := sha256.Sum256([]byte("tok-1"))
		for i, c := range srv.claims {
			if srv.auths[i] != "DPoP tok-1" || c["htm"] != "POST" || c["htu"] != strings.Split(target, "?")[0] ||
				c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
				t.Errorf("request %d: Authorization %q, claims %v", i, srv.auths[i], c)
			}
		}
		if _, has := srv.claims[0]["nonce"]; has || srv.claims[1]["nonce"] != "n-1" || srv.claims[2]["nonce"] != "n-2" {
			t.Errorf("nonces %v, %v, %v; want none, n-1, then the latest, n-2", srv.claims[0]["nonce"], srv.claims[1]["nonce"], srv.claims[2]["nonce"])
		}
		if srv.claims[0]["jti"] == srv.claims[1]["jti"] {
			t.Error("the resent request reused the proof's jti")
		}
	})
	t.Run("nonce twice", func(t *testing.T) {
		srv, at, target := run(t, nonceAnswer("n-1"), nonceAnswer("n-2"), ok(""))
		_, err := post(t, at, target)
		ar, isAuth := asAuthRequired(err)
		if !isAuth || !strings.Contains(ar.why, "use_dpop_nonce") {
			t.Errorf("two nonce challenges: %v", err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.claims) != 2 {
			t.Errorf("%d requests for two nonce challenges, want 2", len(srv.claims))
		}
	})
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"server error", func(w http.ResponseWriter) { w.Header().Set("DPoP-Nonce", "n"); w.WriteHeader(500) }},
		{"invalid token with a nonce", func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `DPoP error="invalid_token"`)
			w.Header().Set("DPoP-Nonce", "n")
			w.WriteHeader(401)
		}},
		{"nonce error without a nonce", func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.WriteHeader(401)
		}},
		{"a Bearer challenge", func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Bearer error="use_dpop_nonce"`)
			w.Header().Set("DPoP-Nonce", "n")
			w.WriteHeader(401)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, at, target := run(t, c.answer, ok(""))
			_, _ = post(t, at, target)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.claims) != 1 {
				t.Errorf("%d requests, want 1: only a nonce challenge is answered by sending again", len(srv.claims))
			}
		})
	}
	t.Run("other origin", func(t *testing.T) {
		srv, at, _ := run(t, ok(""))
		other := httptest.NewServer(srv)
		defer other.Close()
		req, _ := http.NewRequest(http.MethodGet, other.URL+"/elsewhere", nil)
		req.Header.Set("DPoP", "stale")
		resp, err := at.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.auths[0] != "" || srv.claims[0] != nil {
			t.Errorf("another origin got Authorization %q and a proof %v", srv.auths[0], srv.claims[0])
		}
	})
}

// TestDPoPRecordValues: the stored key is among the record's secret
// values (the redaction set) in its stored form and as a JWK "d".
func TestDPoPRecordValues(t *testing.T) {
	key, err := newStoredDPoPKey("ES256")
	if err != nil {
		t.Fatal(err)
	}
	rec := &OAuthRecord{Grant: &StoredGrant{AccessToken: "at", DPoP: key}}
	vals := rec.Values()
	if len(vals) != 3 || vals[1] != key.PrivateKey {
		t.Errorf("Values() = %d values, want the token, the key and its d", len(vals))
	}
	for _, v := range vals {
		if strings.Contains(key.Thumbprint, v) {
			t.Error("the thumbprint is redacted: it is the key's public name")
		}
	}
	b := rec.clone()
	b.Grant.DPoP.Thumbprint = "changed"
	if rec.Grant.DPoP.Thumbprint == "changed" {
		t.Error("clone shares the DPoP key")
	}
	if !sameRecord(rec, rec.clone()) || sameRecord(rec, b) {
		t.Error("sameRecord does not compare the DPoP key")
	}
	if g := rec.Grant.info(); g.TokenType != "DPoP" || g.DPoPKey != key.Thumbprint {
		t.Errorf("info() = %+v", g)
	}
	for _, shown := range []string{fmt.Sprintf("%v %+v %#v %s", key, key, key, key), fmt.Sprintf("%v %+v", *key, rec.Grant)} {
		for _, v := range vals[1:] {
			if strings.Contains(shown, v) {
				t.Errorf("formatting the key or its grant shows the private key: %s", shown)
			}
		}
	}
}

// TestGrantKey: oauth.dpop and the two servers' metadata decide whether
// a new grant is DPoP-bound and with which algorithm.
func TestGrantKey(t *testing.T) {
	s := &Supervisor{}
	for _, c := range []struct {
		name     string
		mode     contracts.DPoPMode
		as, rs   []string
		required bool
		alg      string
		reason   string
	}{
		{"auto without metadata", "", nil, nil, false, "", ""},
		{"auto with ES256", "", []string{"ES256"}, nil, false, "ES256", ""},
		{"auto prefers ES256", contracts.DPoPAuto, []string{"PS256", "ES512", "ES256"}, nil, false, "ES256", ""},
		{"auto with the resource's list", "", []string{"ES256", "ES384"}, []string{"ES384"}, false, "ES384", ""},
		{"auto with no common algorithm", "", []string{"PS256"}, nil, false, "", ""},
		{"auto, no common algorithm, required", "", []string{"PS256"}, nil, true, "", "oauth_unsupported_alg"},
		{"auto, required, no metadata", "", nil, nil, true, "", "oauth_dpop_unsupported"},
		{"true without metadata", contracts.DPoPOn, nil, nil, false, "", "oauth_dpop_unsupported"},
		{"true with no common algorithm", contracts.DPoPOn, []string{"PS256"}, nil, false, "", "oauth_unsupported_alg"},
		{"true", contracts.DPoPOn, []string{"ES512"}, nil, false, "ES512", ""},
		{"false", contracts.DPoPOff, []string{"ES256"}, nil, false, "", ""},
		{"false, required", contracts.DPoPOff, []string{"ES256"}, nil, true, "", "oauth_dpop_required"},
	} {
		cfg := &contracts.ServerSettings{ID: "d", OAuth: &contracts.OAuthSettings{DPoP: c.mode}}
		d := &oauth.Discovery{Metadata: oauth.ServerMetadata{Issuer: "https://as.example", DPoPSigningAlgValuesSupported: c.as},
			Protected: &oauth.ResourceMetadata{DPoPSigningAlgValuesSupported: c.rs, DPoPBoundAccessTokensRequired: c.required}}
		k, err := s.grantKey(&oauthEnv{cfg: cfg}, d)
		var ce interface{ Reason() string }
		switch {
		case c.reason != "":
			if !errors.As(err, &ce) || ce.Reason() != c.reason {
				t.Errorf("%s: grantKey = %v, %v; want reason %s", c.name, k, err, c.reason)
			}
		case err != nil:
			t.Errorf("%s: grantKey: %v", c.name, err)
		case c.alg == "" && k != nil:
			t.Errorf("%s: a %s key, want Bearer tokens", c.name, k.Alg)
		case c.alg != "" && (k == nil || k.Alg != c.alg):
			t.Errorf("%s: key %v, want %s", c.name, k, c.alg)
		}
	}
}
