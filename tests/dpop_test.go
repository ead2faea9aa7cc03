package tests

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pikod/pikod/contracts"
)

// The DPoP suites (RFC 9449): the test authorization server issues
// DPoP-bound tokens (dpopAlgs), the fixture takes only those
// (--require-dpop), both ask for their nonce (dpopNonce, --dpop-nonce),
// and both check every proof claim; pikod's key pair is read back out of
// the vault to prove it never shows anywhere else.

// proofInfo is what checkProof read from a DPoP proof.
type proofInfo struct {
	alg, jti, htm, htu, nonce, ath, jkt string
	iat                                 int64
	header, claims                      map[string]any
}

// anyToken, as checkProof's token, asks for an ath of whatever token.
const anyToken = "\x00any"

// checkProof verifies a DPoP proof as RFC 9449 section 4.3 asks a server
// to, for a request with method to htu: a compact JWS, typ dpop+jwt, an
// ES algorithm, a public EC jwk (no "d") whose signature verifies, a jti,
// htm and htu of the request, iat within a minute of now, and ath the
// hash of token (none when token is empty, any with anyToken). It
// returns why not, or "".
func checkProof(proof, method, htu, token string) (proofInfo, string) {
	var p proofInfo
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return p, "the proof is not a compact JWS"
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &p.header) != nil || json.Unmarshal(cb, &p.claims) != nil {
		return p, "the proof is not base64url JSON"
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	p.alg = str(p.header, "alg")
	p.jti, p.htm, p.htu, p.nonce, p.ath = str(p.claims, "jti"), str(p.claims, "htm"), str(p.claims, "htu"), str(p.claims, "nonce"), str(p.claims, "ath")
	iat, iatOK := p.claims["iat"].(float64)
	p.iat = int64(iat)
	jwk, _ := p.header["jwk"].(map[string]any)
	curves := map[string]struct {
		c         elliptic.Curve
		size      int
		crv       string
		digestLen int
	}{"ES256": {elliptic.P256(), 32, "P-256", 32}, "ES384": {elliptic.P384(), 48, "P-384", 48}, "ES512": {elliptic.P521(), 66, "P-521", 64}}
	cv, known := curves[p.alg]
	switch {
	case str(p.header, "typ") != "dpop+jwt":
		return p, fmt.Sprintf("typ %q is not dpop+jwt", str(p.header, "typ"))
	case !known:
		return p, fmt.Sprintf("alg %q is not an ES algorithm", p.alg)
	case jwk == nil:
		return p, "no jwk"
	case jwk["d"] != nil:
		return p, "the jwk holds a private key"
	case str(jwk, "kty") != "EC" || str(jwk, "crv") != cv.crv:
		return p, "the jwk is not an EC key of the alg's curve"
	}
	x, _ := base64.RawURLEncoding.DecodeString(str(jwk, "x"))
	y, _ := base64.RawURLEncoding.DecodeString(str(jwk, "y"))
	pub, err := ecdsa.ParseUncompressedPublicKey(cv.c, append(append([]byte{4}, x...), y...))
	if err != nil {
		return p, "the jwk is not a point of its curve"
	}
	input := []byte(parts[0] + "." + parts[1])
	var digest []byte
	switch cv.size {
	case 32:
		s := sha256.Sum256(input)
		digest = s[:]
	case 48:
		s := sha512.Sum384(input)
		digest = s[:]
	default:
		s := sha512.Sum512(input)
		digest = s[:]
	}
	if len(sig) != 2*cv.size || !ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:cv.size]), new(big.Int).SetBytes(sig[cv.size:])) {
		return p, "the signature does not verify with the jwk"
	}
	canon := fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, cv.crv, str(jwk, "x"), str(jwk, "y"))
	sum := sha256.Sum256([]byte(canon))
	p.jkt = base64.RawURLEncoding.EncodeToString(sum[:])
	now := time.Now()
	wantAth := ""
	if token == anyToken {
		wantAth = p.ath
		if wantAth == "" {
			return p, "no ath"
		}
	} else if token != "" {
		h := sha256.Sum256([]byte(token))
		wantAth = base64.RawURLEncoding.EncodeToString(h[:])
	}
	switch {
	case p.jti == "":
		return p, "no jti"
	case p.htm != method:
		return p, fmt.Sprintf("htm %q is not %s", p.htm, method)
	case p.htu != htu:
		return p, fmt.Sprintf("htu %q is not %s", p.htu, htu)
	case !iatOK || time.Unix(p.iat, 0).Before(now.Add(-time.Minute)) || time.Unix(p.iat, 0).After(now.Add(time.Minute)):
		return p, "iat is not within a minute of now"
	case p.ath != wantAth:
		return p, "ath is not the hash of the access token sent with it"
	}
	return p, ""
}

// testKey is a DPoP key of the test's own, for proofs pikod would never
// make.
type testKey struct {
	key *ecdsa.PrivateKey
	jwk map[string]any
}

func newTestKey(t *testing.T) *testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := k.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	return &testKey{key: k, jwk: map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pub[1:33]), "y": b64(pub[33:])}}
}

// sign makes a proof from header and claims as given (the test breaks
// them on purpose).
func (k *testKey) sign(t *testing.T, header, claims map[string]any) string {
	t.Helper()
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	h := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k.key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// proof is a good proof for method and htu, with ath for token and nonce
// when given; edit changes the header and claims before signing.
func (k *testKey) proof(t *testing.T, method, htu, token, nonce string, edit func(h, c map[string]any)) string {
	t.Helper()
	h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": k.jwk}
	c := map[string]any{"jti": randomHex(t, 16), "htm": method, "htu": htu, "iat": time.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	if edit != nil {
		edit(h, c)
	}
	return k.sign(t, h, c)
}

// rsRecord is one line of the fixture's --dpop-log.
type rsRecord struct {
	At        string `json:"at"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	RPC       string `json:"rpc"`
	Scheme    string `json:"scheme"`
	Proof     string `json:"proof"`
	Status    int    `json:"status"`
	Verdict   string `json:"verdict"`
	Nonce     string `json:"nonce"`
	Challenge string `json:"challenge"`
}

func readRSLog(t *testing.T, path string) []rsRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("reading the fixture's DPoP log: %v", err)
	}
	defer f.Close()
	var out []rsRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r rsRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("the fixture's DPoP log has a bad line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// vaultItem decrypts the item name of d's file vault and returns its
// value: keyring's file backend keeps each item as a JWE
// (PBES2-HS256+A128KW with the key in STATE/vault.key, A256GCM) of a
// JSON item whose Data is the value. The test reads the vault itself, as
// pikod would, to see what pikod stored; nil when the item is not there.
func vaultItem(t *testing.T, d *daemon, name string) []byte {
	t.Helper()
	keyFile, err := os.ReadFile(filepath.Join(d.stateDir, "vault.key"))
	if err != nil {
		t.Fatalf("reading the vault key: %v", err)
	}
	jwe, err := os.ReadFile(filepath.Join(d.stateDir, "vault", vaultItemKey("default", name)))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the vault item: %v", err)
	}
	parts := strings.Split(strings.TrimSpace(string(jwe)), ".")
	if len(parts) != 5 {
		t.Fatalf("the vault item is not a compact JWE")
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("the vault item is not base64url: %v", err)
		}
		return b
	}
	var h struct {
		Alg, Enc string
		P2S      string `json:"p2s"`
		P2C      int    `json:"p2c"`
	}
	if err := json.Unmarshal(dec(parts[0]), &h); err != nil || h.Alg != "PBES2-HS256+A128KW" || h.Enc != "A256GCM" {
		t.Fatalf("the vault item's JWE header is %+v (%v)", h, err)
	}
	// RFC 7518 section 4.8.1.1: salt is alg, a zero byte and p2s.
	salt := append(append([]byte(h.Alg), 0), dec(h.P2S)...)
	kek, err := pbkdf2.Key(sha256.New, strings.TrimSpace(string(keyFile)), salt, h.P2C, 16)
	if err != nil {
		t.Fatal(err)
	}
	cek := aesUnwrap(t, kek, dec(parts[1]))
	block, err := aes.NewCipher(cek)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gcm.Open(nil, dec(parts[2]), append(dec(parts[3]), dec(parts[4])...), []byte(parts[0]))
	if err != nil {
		t.Fatalf("decrypting the vault item: %v", err)
	}
	var item struct{ Data []byte }
	if err := json.Unmarshal(plain, &item); err != nil {
		t.Fatalf("the vault item is not a keyring item: %v", err)
	}
	return item.Data
}

// aesUnwrap is the AES key unwrap of RFC 3394 section 2.2.2.
func aesUnwrap(t *testing.T, kek, wrapped []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(kek)
	if err != nil || len(wrapped)%8 != 0 || len(wrapped) < 24 {
		t.Fatalf("unwrapping the vault item's key: %v", err)
	}
	n := len(wrapped)/8 - 1
	a := binary.BigEndian.Uint64(wrapped[:8])
	r := make([][]byte, n)
	for i := range r {
		r[i] = slices.Clone(wrapped[8*(i+1) : 8*(i+2)])
	}
	buf := make([]byte, 16)
	for j := 5; j >= 0; j-- {
		for i := n; i >= 1; i-- {
			binary.BigEndian.PutUint64(buf[:8], a^uint64(n*j+i))
			copy(buf[8:], r[i-1])
			block.Decrypt(buf, buf)
			a = binary.BigEndian.Uint64(buf[:8])
			copy(r[i-1], buf[8:])
		}
	}
	if a != 0xA6A6A6A6A6A6A6A6 {
		t.Fatal("the vault item's key does not unwrap (integrity check failed)")
	}
	return slices.Concat(r...)
}

// storedDPoPKey reads the DPoP key pikod stored with server o's grant
// and returns its thumbprint and every encoding of its private part a
// leak could take: the stored form, the JWK "d", hex and standard base64
// of the scalar, and the PKCS#8 PEM body.
func storedDPoPKey(t *testing.T, d *daemon) (jkt string, secrets []string) {
	t.Helper()
	raw := vaultItem(t, d, "oauth/o")
	if raw == nil {
		t.Fatal("the vault holds no OAuth record for o")
	}
	var rec struct {
		Grant *struct {
			DPoP *struct {
				Alg        string `json:"alg"`
				PrivateKey string `json:"privateKey"`
				JKT        string `json:"jkt"`
			} `json:"dpop"`
		} `json:"grant"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("the vault's OAuth record: %v", err)
	}
	if rec.Grant == nil || rec.Grant.DPoP == nil || rec.Grant.DPoP.PrivateKey == "" {
		t.Fatal("the vault's grant holds no DPoP key")
	}
	k := rec.Grant.DPoP
	der, err := base64.RawURLEncoding.DecodeString(k.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		t.Fatalf("the stored DPoP key is not PKCS#8: %v", err)
	}
	ec, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() || k.Alg != "ES256" {
		t.Fatalf("the stored DPoP key is %T %s, want an ES256 key", parsed, k.Alg)
	}
	dBytes, _ := ec.Bytes()
	pub, _ := ec.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	canon := fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":%q,"y":%q}`, b64(pub[1:33]), b64(pub[33:]))
	sum := sha256.Sum256([]byte(canon))
	if got := b64(sum[:]); got != k.JKT {
		t.Fatalf("the stored key's thumbprint is %s, the grant says %s", got, k.JKT)
	}
	pemBody := base64.StdEncoding.EncodeToString(der)
	return k.JKT, []string{k.PrivateKey, b64(dBytes), hex.EncodeToString(dBytes), base64.StdEncoding.EncodeToString(dBytes),
		pemBody[len(pemBody)/2:]}
}

// checkKeyNeverShown fails when any form of the private key is in an
// answer, pikod's stderr, log or database, or a fixture's log.
func (o *oauthSetup) checkKeyNeverShown(t *testing.T, secrets []string, extra ...string) {
	t.Helper()
	for where, text := range o.places(t, extra...) {
		for i, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the DPoP private key (form %d)", where, i)
			}
		}
	}
}

// dpopSetup is an authorization server issuing DPoP-bound tokens and
// asking for its nonce, and a fixture that takes DPoP-bound tokens only
// and asks for its own nonce, logging every request it judges.
func dpopSetup(t *testing.T, fixtureArgs ...string) (*oauthSetup, string) {
	t.Helper()
	as := newTestAS(t)
	as.with(func(as *testAS) { as.dpopAlgs = []string{"RS256", "ES256", "ES384"}; as.dpopNonce = true })
	rsLog := filepath.Join(t.TempDir(), "dpop.log")
	args := append([]string{"--require-dpop", "--dpop-nonce", "--dpop-log", rsLog}, fixtureArgs...)
	return newOAuthSetupWith(t, as, args...), rsLog
}

// TestDPoPSignInAndCall signs in with the browser flow against an
// authorization server and a resource server that both take DPoP-bound
// tokens only and both ask for their nonce: one key pair (ES256, chosen
// from the server's list), its thumbprint as dpop_jkt in the
// authorization request, a proof on the code exchange and on the refresh
// (the same key; the authorization server's 400 use_dpop_nonce answered
// once), "Authorization: DPoP" with a fresh proof on every MCP request
// (the resource server's 401 use_dpop_nonce answered once, its later
// nonces followed), the key in the vault with the grant and nowhere
// else, its thumbprint in the log. It logs a redacted wire transcript.
func TestDPoPSignInAndCall(t *testing.T) {
	o, rsLog := dpopSetup(t, "--protocol", "legacy", "--token-scope", "mcp:basic")
	o.as.with(func(as *testAS) {
		as.dcrMethod = "client_secret_basic"
		as.refresh = true
		as.rotate = true
		as.expiresIn = 3600
	})
	o.configure(t, "legacy", "")
	if _, err := o.rpc(t, contracts.MethodMCPConnect, contracts.ServerParams{Server: "o"}); reasonOf(err) != "needs_auth" {
		t.Fatalf("connect without a grant answered %v, want needs_auth", err)
	}
	res := o.signIn(t)
	o.mustEcho(t, "dpop one")
	o.mustEcho(t, "dpop two")
	// A refused token: the refresh carries a proof of the same key.
	o.as.revokeAccess()
	o.mustEcho(t, "after a refresh")
	for i := range 4 {
		o.mustEcho(t, fmt.Sprintf("more %d", i))
	}

	jkt, secrets := storedDPoPKey(t, o.d)
	u, _ := url.Parse(res.AuthorizationURL)
	if got := u.Query().Get("dpop_jkt"); got != jkt {
		t.Errorf("the authorization request's dpop_jkt is %q, want the key's thumbprint %s", got, jkt)
	}

	// The authorization server: every token request with a good proof of
	// the one key; its nonce asked for once, then followed.
	var grants []string
	o.as.mu.Lock()
	for _, tr := range o.as.tokenReqs {
		grants = append(grants, tr.form.Get("grant_type"))
	}
	keys, nonceRefusals, bad := slices.Clone(o.as.proofKeys), o.as.nonceRefusals, slices.Clone(o.as.proofRefusals)
	var unproven int
	for _, w := range o.as.wire {
		if w.path == "/token" && w.header.Get("DPoP") == "" {
			unproven++
		}
	}
	o.as.mu.Unlock()
	if len(bad) != 0 || unproven != 0 {
		t.Errorf("token requests with a bad proof: %v; without one: %d", bad, unproven)
	}
	if nonceRefusals != 1 {
		t.Errorf("the authorization server asked for its nonce %d times, want once (then its later nonces followed)", nonceRefusals)
	}
	if !slices.Contains(grants, "authorization_code") || !slices.Contains(grants, "refresh_token") || len(keys) != 2 {
		t.Errorf("token requests %v with %d accepted proofs, want a code exchange and a refresh", grants, len(keys))
	}
	for _, k := range keys {
		if k != jkt {
			t.Errorf("a token request was proven with key %s, not the grant's key %s", k, jkt)
		}
	}

	// The resource server: every request judged ok but one nonce refusal
	// (and the tokenless first request).
	recs := readRSLog(t, rsLog)
	var ok, nonceAsked, revoked int
	nonces := map[string]bool{}
	for _, r := range recs {
		switch {
		case r.Verdict == "ok":
			ok++
			p, why := checkProof(r.Proof, r.Method, o.fx.url, anyToken)
			if r.Scheme != "DPoP" || p.jkt != jkt || why != "" {
				t.Errorf("an accepted request: scheme %s, key %s, %s", r.Scheme, p.jkt, why)
			}
			nonces[p.nonce] = true
		case strings.Contains(r.Challenge, "use_dpop_nonce"):
			nonceAsked++
		case r.Verdict == "the token is not active":
			revoked++
		case r.Scheme == "":
		default:
			t.Errorf("the resource server refused a request of pikod: %+v", r)
		}
	}
	if revoked == 0 {
		t.Error("the revoked token never reached the resource server: the refresh was not tested")
	}
	if ok < 8 || nonceAsked != 1 || len(nonces) < 2 || nonces[""] {
		t.Errorf("the resource server accepted %d requests with %d nonces (%v), asked for its nonce %d times; want the nonce asked once, then every new one followed",
			ok, len(nonces), nonces, nonceAsked)
	}

	st := o.status(t)
	if st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.TokenType != "DPoP" || st.OAuth.Info.DPoPKey != jkt {
		t.Errorf("status oauth %+v, want a DPoP grant of key %s", st.OAuth, jkt)
	}
	if stdout, _, _ := o.ctl(t, "", "mcp", "status", "o"); !strings.Contains(stdout, "DPoP-bound to key "+jkt) {
		t.Errorf("pikoctl mcp status does not name the DPoP key:\n%s", stdout)
	}
	if lines := o.d.logLines(t, "oauth grant committed", jkt); len(lines) == 0 {
		t.Error("the log does not name the committed grant's DPoP key by its thumbprint")
	}
	o.checkCanaries(t)
	o.checkKeyNeverShown(t, secrets, rsLog)

	// The resource server's checks can fail: a proof it accepted, sent
	// again, is a replay.
	var last rsRecord
	for _, r := range recs {
		if r.Verdict == "ok" && r.Method == http.MethodPost {
			last = r
		}
	}
	issued := o.as.issuedTokens()
	status, verdict := sendToFixture(t, o.fx.url, http.MethodPost, "DPoP "+issued[len(issued)-1], last.Proof, `{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	if status != http.StatusUnauthorized || !strings.Contains(verdict, "jti was used before") {
		t.Errorf("a replayed proof got %d %q, want 401 for the reused jti", status, verdict)
	}

	// The transcript: the sign-in and the first call (the refresh and the
	// later calls were checked above).
	var upto []rsRecord
	for _, r := range recs {
		upto = append(upto, r)
		if r.RPC == "tools/call" && r.Verdict == "ok" {
			break
		}
	}
	t.Logf("wire transcript of one DPoP sign-in and call (tokens, codes, secrets and signatures redacted):\n%s",
		dpopTranscript(t, o, upto))
}

// sendToFixture sends one request to the fixture's endpoint with the
// given Authorization and DPoP headers and returns the status and the
// error_description of a refusal.
func sendToFixture(t *testing.T, endpoint, method, authz, proof, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Description string `json:"error_description"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Description
}

// tokenWithProof asks the test authorization server for a
// client_credentials token with proof, as client probe.
func tokenWithProof(t *testing.T, as *testAS, secret, proof string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, as.issuer+"/token", strings.NewReader(url.Values{
		"grant_type": {"client_credentials"}, "resource": {"http://unused.example/mcp"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("probe", secret)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

// TestDPoPChecksRefuse proves the two servers' checks can fail: each
// broken proof claim (typ, alg, a private jwk, htm, htu, iat, jti reuse,
// ath, the key) is refused by the authorization server and the resource
// server, so the suite's passes mean pikod's proofs are right.
func TestDPoPChecksRefuse(t *testing.T) {
	as := newTestAS(t)
	as.with(func(as *testAS) { as.dpopAlgs = []string{"ES256"}; as.dpopNonce = true })
	secret := randToken(canaryCS)
	as.addClient("probe", secret, "client_secret_basic", nil)
	fx := startFixtureServer(t, "http", "127.0.0.1:0", "--require-token", as.issuer, "--require-dpop", "--dpop-nonce", "--protocol", "legacy")
	k := newTestKey(t)
	tokenURL := as.issuer + "/token"
	breaks := []struct {
		name string
		edit func(h, c map[string]any)
	}{
		{"typ", func(h, c map[string]any) { h["typ"] = "JWT" }},
		{"alg", func(h, c map[string]any) { h["alg"] = "ES384" }},
		{"private jwk", func(h, c map[string]any) {
			jwk := map[string]any{}
			for key, v := range k.jwk {
				jwk[key] = v
			}
			d, _ := k.key.Bytes()
			jwk["d"] = base64.RawURLEncoding.EncodeToString(d)
			h["jwk"] = jwk
		}},
		{"htm", func(h, c map[string]any) { c["htm"] = "GET" }},
		{"htu", func(h, c map[string]any) { c["htu"] = c["htu"].(string) + "?x=1" }},
		{"iat", func(h, c map[string]any) { c["iat"] = time.Now().Add(-10 * time.Minute).Unix() }},
		{"no jti", func(h, c map[string]any) { delete(c, "jti") }},
	}

	// The authorization server: its nonce first, then each break.
	code, _, h := tokenWithProof(t, as, secret, k.proof(t, "POST", tokenURL, "", "", nil))
	nonce := h.Get("DPoP-Nonce")
	if code != 400 || nonce == "" {
		t.Fatalf("a proof without the nonce got %d (nonce %q), want 400 use_dpop_nonce", code, nonce)
	}
	for _, b := range breaks {
		if code, out, _ := tokenWithProof(t, as, secret, k.proof(t, "POST", tokenURL, "", nonce, b.edit)); code != 400 || out["error"] != "invalid_dpop_proof" {
			t.Errorf("authorization server, broken %s: %d %v, want 400 invalid_dpop_proof", b.name, code, out)
		}
	}
	if code, out, _ := tokenWithProof(t, as, secret, k.proof(t, "POST", tokenURL, "a-token", nonce, nil)); code != 400 || out["error"] != "invalid_dpop_proof" {
		t.Errorf("authorization server, a proof with ath: %d %v", code, out)
	}
	good := k.proof(t, "POST", tokenURL, "", nonce, nil)
	code, out, _ := tokenWithProof(t, as, secret, good)
	if code != 200 || out["token_type"] != "DPoP" {
		t.Fatalf("a good proof got %d %v, want a DPoP token", code, out)
	}
	if code, out, _ := tokenWithProof(t, as, secret, good); code != 400 || out["error"] != "invalid_dpop_proof" {
		t.Errorf("authorization server, a replayed proof: %d %v", code, out)
	}
	tok := out["access_token"].(string)
	// The token is for another resource: the fixture refuses it before
	// the proof; bind one to the fixture.
	as.with(func(as *testAS) { as.access[tok].resource = fx.url })

	// The resource server: its nonce first, then each break.
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	rsNonce := func() string {
		req, _ := http.NewRequest(http.MethodPost, fx.url, strings.NewReader(ping))
		req.Header.Set("Authorization", "DPoP "+tok)
		req.Header.Set("DPoP", k.proof(t, "POST", fx.url, tok, "", nil))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="use_dpop_nonce"`) {
			t.Fatalf("a proof without the resource server's nonce got %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		return resp.Header.Get("DPoP-Nonce")
	}
	n := rsNonce()
	for _, b := range append(breaks, struct {
		name string
		edit func(h, c map[string]any)
	}{"ath", func(h, c map[string]any) { c["ath"] = "AAAA" }}) {
		if code, why := sendToFixture(t, fx.url, "POST", "DPoP "+tok, k.proof(t, "POST", fx.url, tok, n, b.edit), ping); code != 401 || why == "" {
			t.Errorf("resource server, broken %s: %d %q, want 401", b.name, code, why)
		}
	}
	other := newTestKey(t)
	if code, why := sendToFixture(t, fx.url, "POST", "DPoP "+tok, other.proof(t, "POST", fx.url, tok, n, nil), ping); code != 401 || !strings.Contains(why, "not the key") {
		t.Errorf("resource server, another key: %d %q", code, why)
	}
	if code, why := sendToFixture(t, fx.url, "POST", "Bearer "+tok, "", ping); code != 401 || why == "" {
		t.Errorf("resource server, the DPoP token as Bearer: %d %q", code, why)
	}
	goodRS := k.proof(t, "POST", fx.url, tok, n, nil)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	if code, why := sendToFixture(t, fx.url, "POST", "DPoP "+tok, goodRS, initialize); code != 200 {
		t.Fatalf("resource server, a good proof: %d %q", code, why)
	}
	if code, why := sendToFixture(t, fx.url, "POST", "DPoP "+tok, goodRS, ping); code != 401 || !strings.Contains(why, "jti") {
		t.Errorf("resource server, a replayed proof: %d %q", code, why)
	}
}

// TestDPoPModes: oauth.dpop auto with an authorization server that lists
// no DPoP algorithm signs in with Bearer tokens and sends no proof; true
// with such a server is refused with a clear error before anything is
// asked; false with a resource that takes DPoP-bound tokens only is
// refused too; and a Bearer token answered to a proof is not used.
func TestDPoPModes(t *testing.T) {
	t.Run("auto-bearer", func(t *testing.T) {
		o := newOAuthSetup(t, "--protocol", "legacy")
		o.configure(t, "legacy", "")
		o.signIn(t)
		o.mustEcho(t, "bearer")
		st := o.status(t)
		if st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.TokenType != "Bearer" || st.OAuth.Info.DPoPKey != "" {
			t.Errorf("status oauth %+v, want a Bearer grant", st.OAuth)
		}
		o.as.mu.Lock()
		for _, w := range o.as.wire {
			if w.header.Get("DPoP") != "" {
				t.Errorf("%s %s carried a DPoP proof to an authorization server without DPoP", w.method, w.path)
			}
		}
		if len(o.as.authReqs) == 0 || o.as.authReqs[0].Has("dpop_jkt") {
			t.Error("the authorization request carries dpop_jkt without DPoP")
		}
		o.as.mu.Unlock()
	})
	t.Run("true-unsupported", func(t *testing.T) {
		o := newOAuthSetup(t, "--protocol", "legacy")
		o.configure(t, "legacy", `{"dpop": true}`)
		ce := o.startErr(t, "oauth_dpop_unsupported")
		if !strings.Contains(ce.Message, "dpop_signing_alg_values_supported") || (ce.Data == nil || !strings.Contains(ce.Data.Hint, `"auto"`)) {
			t.Errorf("the refusal says %q (data %+v)", ce.Message, ce.Data)
		}
		if auth, _, regs, _ := o.as.counts(); auth != 0 || regs != 0 {
			t.Errorf("%d authorization requests and %d registrations before the refusal", auth, regs)
		}
	})
	t.Run("false-required", func(t *testing.T) {
		o, _ := dpopSetup(t, "--protocol", "legacy")
		o.configure(t, "legacy", `{"dpop": false}`)
		ce := o.startErr(t, "oauth_dpop_required")
		if !strings.Contains(ce.Message, "dpop_bound_access_tokens_required") {
			t.Errorf("the refusal says %q", ce.Message)
		}
	})
	t.Run("rs-bearer-only", func(t *testing.T) {
		// The authorization server offers DPoP; the MCP server takes
		// Bearer tokens only: auto's grant is refused when proven, and
		// oauth.dpop false signs in.
		as := newTestAS(t)
		as.with(func(as *testAS) { as.dpopAlgs = []string{"ES256"} })
		o := newOAuthSetupWith(t, as, "--protocol", "legacy")
		o.configure(t, "legacy", "")
		res := o.start(t)
		loc := authorizeInBrowser(t, res.AuthorizationURL)
		if status, body := getCallback(t, loc, ""); status != 200 {
			t.Fatalf("the callback answered %d %q", status, body)
		}
		stdout, stderr, code := o.wait(t)
		if code == 0 || !strings.Contains(stdout+stderr, "set oauth.dpop to false") {
			t.Errorf("a DPoP grant the server refuses: exit %d\n%s%s", code, stdout, stderr)
		}
		o.configure(t, "legacy", `{"dpop": false}`)
		o.signIn(t)
		o.mustEcho(t, "bearer after all")
		if st := o.status(t); st.OAuth == nil || st.OAuth.Info == nil || st.OAuth.Info.TokenType != "Bearer" {
			t.Errorf("status oauth %+v, want a Bearer grant", st.OAuth)
		}
	})
	t.Run("bearer-answer", func(t *testing.T) {
		o, _ := dpopSetup(t, "--protocol", "legacy")
		o.as.with(func(as *testAS) { as.dpopBearer = true })
		o.configure(t, "legacy", "")
		res := o.start(t)
		loc := authorizeInBrowser(t, res.AuthorizationURL)
		if status, body := getCallback(t, loc, ""); status != 200 {
			t.Fatalf("the callback answered %d %q", status, body)
		}
		stdout, stderr, code := o.wait(t)
		if code == 0 || !strings.Contains(stdout+stderr, "not DPoP") || !strings.Contains(stdout+stderr, "oauth.dpop to false") {
			t.Errorf("a Bearer token for a proof: exit %d\n%s%s", code, stdout, stderr)
		}
		if st := o.status(t); st.OAuth == nil || st.OAuth.Grant != "none" {
			t.Errorf("status oauth %+v, want no grant", st.OAuth)
		}
	})
}

// TestDPoPWithoutBrowser: client_credentials, jwt_bearer and the
// authorization server's step of cross_app_access carry a proof and get a
// DPoP-bound token (the identity provider's exchange carries none), and
// the resource server takes it.
func TestDPoPWithoutBrowser(t *testing.T) {
	wk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, grant := range []string{"client_credentials", "jwt_bearer", "cross_app_access"} {
		t.Run(grant, func(t *testing.T) {
			o, rsLog := dpopSetup(t, "--protocol", "legacy")
			secret := randToken(canaryCS)
			oauth := fmt.Sprintf(`{"grantType": %q, "clientId": "svc", "issuer": %q}`, grant, o.as.issuer)
			creds := map[string]any{"oauthClientSecret": secret}
			switch grant {
			case "client_credentials":
				o.as.addClient("svc", secret, "client_secret_basic", nil)
			case "jwt_bearer":
				o.as.addClient("svc", "", "none", nil)
				o.as.with(func(as *testAS) { as.workloadKey = &wk.PublicKey })
				creds = map[string]any{"oauthAssertion": workloadAssertion(t, wk, o.as.issuer, time.Now().Add(10*time.Minute))}
			case "cross_app_access":
				o.as.addClient("xaa-client", secret, "client_secret_basic", nil)
				assertion := randToken("CANARYIDT")
				o.as.with(func(as *testAS) { as.idpAssertion = assertion })
				oauth = fmt.Sprintf(`{"grantType": %q, "clientId": "xaa-client", "issuer": %q, "idpTokenEndpoint": %q}`, grant, o.as.issuer, o.as.base+"/idp/token")
				creds["oauthIdentityAssertion"] = assertion
			}
			o.configure(t, "legacy", oauth)
			o.secret(t, creds)
			o.mustEcho(t, "dpop "+grant)
			jkt, secrets := storedDPoPKey(t, o.d)
			o.as.mu.Lock()
			keys, bad := slices.Clone(o.as.proofKeys), slices.Clone(o.as.proofRefusals)
			for _, w := range o.as.wire {
				if w.path == "/idp/token" && w.header.Get("DPoP") != "" {
					t.Error("the identity provider's exchange carried a DPoP proof")
				}
			}
			o.as.mu.Unlock()
			if len(keys) != 1 || keys[0] != jkt || len(bad) != 0 {
				t.Errorf("accepted proofs of keys %v (refused %v), want one of %s", keys, bad, jkt)
			}
			var ok int
			for _, r := range readRSLog(t, rsLog) {
				if r.Verdict == "ok" {
					ok++
				}
			}
			if ok == 0 {
				t.Error("the resource server accepted no request")
			}
			o.checkCanaries(t)
			o.checkKeyNeverShown(t, secrets, rsLog)
		})
	}
}

// dpopTranscript renders the authorization server's and the resource
// server's records in time order: every request with its DPoP proof
// decoded (the signature cut), every answer with its status, nonce and
// challenge; tokens, codes, client secrets, state and verifiers redacted.
func dpopTranscript(t *testing.T, o *oauthSetup, rs []rsRecord) string {
	t.Helper()
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	proof := func(p string) string {
		parts := strings.Split(p, ".")
		if len(parts) != 3 {
			return "(none)"
		}
		h, _ := base64.RawURLEncoding.DecodeString(parts[0])
		c, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var hm map[string]any
		_ = json.Unmarshal(h, &hm)
		if jwk, ok := hm["jwk"].(map[string]any); ok {
			for _, k := range []string{"x", "y"} {
				if s, _ := jwk[k].(string); len(s) > 10 {
					jwk[k] = s[:10] + "…"
				}
			}
		}
		hb, _ := json.Marshal(hm)
		return string(hb) + "." + string(c) + ".<signature>"
	}
	redactForm := func(v url.Values) string {
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			val := v.Get(k)
			switch k {
			case "code", "code_verifier", "refresh_token", "client_secret", "assertion", "client_assertion", "subject_token", "state",
				"code_challenge", "token":
				val = "<redacted>"
			}
			parts = append(parts, k+"="+val)
		}
		return strings.Join(parts, "&")
	}
	o.as.mu.Lock()
	for _, w := range o.as.wire {
		if w.path == "/introspect" {
			// The fixture asking about a token: the test rig, not pikod.
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "AS  %s %s", w.method, w.path)
		if len(w.query) > 0 {
			fmt.Fprintf(&b, "?%s", redactForm(w.query))
		}
		b.WriteString("\n")
		if a := w.header.Get("Authorization"); a != "" {
			scheme, _, _ := strings.Cut(a, " ")
			fmt.Fprintf(&b, "      Authorization: %s <redacted>\n", scheme)
		}
		if p := w.header.Get("DPoP"); p != "" {
			fmt.Fprintf(&b, "      DPoP: %s\n", proof(p))
		}
		switch ct := w.header.Get("Content-Type"); {
		case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
			form, _ := url.ParseQuery(string(w.body))
			fmt.Fprintf(&b, "      body: %s\n", redactForm(form))
		case strings.HasPrefix(ct, "application/json"):
			fmt.Fprintf(&b, "      body: %s\n", w.body)
		}
		fmt.Fprintf(&b, "   -> %d", w.status)
		if loc := w.rheader.Get("Location"); loc != "" {
			lu, _ := url.Parse(loc)
			fmt.Fprintf(&b, " Location: %s://%s%s?<code and state redacted>", lu.Scheme, lu.Host, lu.Path)
		}
		if n := w.rheader.Get("DPoP-Nonce"); n != "" {
			fmt.Fprintf(&b, " DPoP-Nonce: %s", n)
		}
		var ans map[string]any
		if json.Unmarshal(w.rbody, &ans) == nil {
			for _, k := range []string{"token_type", "error", "error_description", "scope", "expires_in", "client_id"} {
				if v, ok := ans[k]; ok {
					fmt.Fprintf(&b, " %s=%v", k, v)
				}
			}
			for _, k := range []string{"access_token", "refresh_token", "client_secret"} {
				if _, ok := ans[k]; ok {
					fmt.Fprintf(&b, " %s=<redacted>", k)
				}
			}
		}
		lines = append(lines, line{w.at, b.String()})
	}
	o.as.mu.Unlock()
	for _, r := range rs {
		at, err := time.Parse(time.RFC3339Nano, r.At)
		if err != nil {
			t.Fatalf("the fixture's DPoP log has a bad time %q", r.At)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "RS  %s %s", r.Method, r.Path)
		if r.RPC != "" {
			fmt.Fprintf(&b, " (%s)", r.RPC)
		}
		b.WriteString("\n")
		if r.Scheme != "" {
			fmt.Fprintf(&b, "      Authorization: %s <redacted>\n", r.Scheme)
		}
		if r.Proof != "" {
			fmt.Fprintf(&b, "      DPoP: %s\n", proof(r.Proof))
		}
		fmt.Fprintf(&b, "   -> %d (%s)", r.Status, r.Verdict)
		if r.Challenge != "" {
			fmt.Fprintf(&b, " WWW-Authenticate: %s", r.Challenge)
		}
		if r.Nonce != "" {
			fmt.Fprintf(&b, " DPoP-Nonce: %s", r.Nonce)
		}
		lines = append(lines, line{at, b.String()})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	if len(rs) > 0 {
		// Nothing after the last record of the resource server given.
		end, _ := time.Parse(time.RFC3339Nano, rs[len(rs)-1].At)
		for len(lines) > 0 && lines[len(lines)-1].at.After(end) {
			lines = lines[:len(lines)-1]
		}
	}
	var out strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&out, "%s %s\n", l.at.UTC().Format("15:04:05.000"), l.text)
	}
	text := out.String()
	// Belt and braces: nothing the servers issued survives.
	o.as.mu.Lock()
	for _, s := range o.as.issued {
		text = strings.ReplaceAll(text, s, "<redacted>")
	}
	for rt := range o.as.refreshes {
		text = strings.ReplaceAll(text, rt, "<redacted>")
	}
	o.as.mu.Unlock()
	return text
}
