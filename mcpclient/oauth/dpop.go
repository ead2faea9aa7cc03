package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pikod/pikod/contracts"
)

// DPoP (RFC 9449) binds a grant's tokens to a key pair the client holds:
// every token request and every request with the access token carries a
// proof, a JWT signed with the private key whose header holds the public
// key. pikod makes one key pair per grant; its private half is kept with
// the grant in the vault and in pikod's memory, and is named everywhere
// else by the RFC 7638 thumbprint of its public half.

// DPoPAlgs are the proof algorithms pikod signs with, in its order of
// preference.
var DPoPAlgs = []string{"ES256", "ES384", "ES512"}

// ChooseDPoPAlg returns the first algorithm of DPoPAlgs that the
// authorization server lists (as) and, when the protected resource lists
// any (rs), the resource lists too; "" when there is none.
func ChooseDPoPAlg(as, rs []string) string {
	for _, alg := range DPoPAlgs {
		if contains(as, alg) && (len(rs) == 0 || contains(rs, alg)) {
			return alg
		}
	}
	return ""
}

func dpopCurve(alg string) (elliptic.Curve, int, bool) {
	switch alg {
	case "ES256":
		return elliptic.P256(), 32, true
	case "ES384":
		return elliptic.P384(), 48, true
	case "ES512":
		return elliptic.P521(), 66, true
	}
	return nil, 0, false
}

// DPoPKey is a proof-of-possession key pair. Its String and GoString name
// the thumbprint only, so a key formatted by mistake shows nothing secret.
type DPoPKey struct {
	alg        string
	key        *ecdsa.PrivateKey
	jwk        map[string]string
	thumbprint string
}

// NewDPoPKey makes a fresh key pair for alg (ES256, ES384 or ES512).
func NewDPoPKey(alg string) (*DPoPKey, error) {
	curve, _, ok := dpopCurve(alg)
	if !ok {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAlg,
			"pikod cannot sign DPoP proofs with %q (it signs with %s)", clip(alg, 20), strings.Join(DPoPAlgs, ", "))
	}
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making a DPoP key: %w", err)
	}
	return newDPoPKey(alg, k)
}

// ParseDPoPKey reads a key EncodePrivate wrote. Errors never quote it.
func ParseDPoPKey(alg, encoded string) (*DPoPKey, error) {
	curve, _, ok := dpopCurve(alg)
	if !ok {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey, "the stored DPoP key has the unknown algorithm %q", clip(alg, 20))
	}
	der, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey, "the stored DPoP key is not base64url")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey, "the stored DPoP key is not a PKCS#8 private key")
	}
	k, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || k.Curve != curve {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey, "the stored DPoP key is not an %s key", alg)
	}
	return newDPoPKey(alg, k)
}

func newDPoPKey(alg string, k *ecdsa.PrivateKey) (*DPoPKey, error) {
	_, size, _ := dpopCurve(alg)
	pub, err := k.PublicKey.Bytes()
	if err != nil || len(pub) != 1+2*size {
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey, "the DPoP key's public half cannot be encoded")
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := map[string]string{"kty": "EC", "crv": k.Curve.Params().Name, "x": b64(pub[1 : 1+size]), "y": b64(pub[1+size:])}
	// RFC 7638 section 3.2: the required members in lexicographic order,
	// no whitespace.
	canon := `{"crv":"` + jwk["crv"] + `","kty":"EC","x":"` + jwk["x"] + `","y":"` + jwk["y"] + `"}`
	sum := sha256.Sum256([]byte(canon))
	return &DPoPKey{alg: alg, key: k, jwk: jwk, thumbprint: b64(sum[:])}, nil
}

// Alg is the JWS algorithm the key signs with.
func (k *DPoPKey) Alg() string { return k.alg }

// Thumbprint is the RFC 7638 SHA-256 thumbprint of the public key,
// base64url: the key's name in logs, errors and status, and the dpop_jkt
// of an authorization request.
func (k *DPoPKey) Thumbprint() string { return k.thumbprint }

func (k *DPoPKey) String() string { return "DPoP key " + k.thumbprint }

// GoString keeps %#v from printing the private key.
func (k *DPoPKey) GoString() string { return k.String() }

// EncodePrivate returns the private key as base64url PKCS#8 DER, for the
// vault only.
func (k *DPoPKey) EncodePrivate() (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.key)
	if err != nil {
		return "", fmt.Errorf("encoding the DPoP key %s: %w", k.thumbprint, err)
	}
	return base64.RawURLEncoding.EncodeToString(der), nil
}

// DPoPSecretValues returns the forms of a stored key that must never be
// shown: the stored encoding and the private scalar as a JWK "d" (what a
// careless log of the key as a JWK would print). It returns the encoding
// alone when it cannot be read.
func DPoPSecretValues(alg, encoded string) []string {
	if encoded == "" {
		return nil
	}
	out := []string{encoded}
	if k, err := ParseDPoPKey(alg, encoded); err == nil {
		if d, err := k.key.Bytes(); err == nil {
			out = append(out, base64.RawURLEncoding.EncodeToString(d))
		}
	}
	return out
}

// HTU is a request URI as a proof's htu claim: without query and fragment
// (RFC 9449 section 4.2).
func HTU(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment, c.User = "", false, "", "", nil
	return c.String()
}

// Proof signs a DPoP proof for one request: header typ dpop+jwt, alg and
// the public jwk; claims a fresh jti, htm, htu (without query and
// fragment), iat, the server's nonce when one was given, and ath, the
// hash of the access token, when one goes with the request.
func (k *DPoPKey) Proof(method string, target *url.URL, nonce, accessToken string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := map[string]any{
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		"htm": method,
		"htu": HTU(target),
		"iat": now.Unix(),
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	header := map[string]any{"typ": "dpop+jwt", "alg": k.alg, "jwk": k.jwk}
	proof, err := signJWS(k.key, k.alg, header, claims)
	if err != nil {
		return "", fmt.Errorf("signing a DPoP proof with %s: %w", k.thumbprint, err)
	}
	return proof, nil
}

// MaxNonceBytes bounds a DPoP-Nonce pikod keeps.
const MaxNonceBytes = 1024

// NonceFrom returns the DPoP-Nonce of a response: exactly one header whose
// value is a nonce of RFC 9449 section 8.1 (1*NQCHAR), at most
// MaxNonceBytes long.
func NonceFrom(h http.Header) (string, bool) {
	vs := h.Values("DPoP-Nonce")
	if len(vs) != 1 || vs[0] == "" || len(vs[0]) > MaxNonceBytes {
		return "", false
	}
	for i := 0; i < len(vs[0]); i++ {
		c := vs[0][i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return vs[0], true
}

// DPoPNonce is the latest nonce one server (an authorization server or a
// resource server: their nonces are never mixed) gave. Nonces are not
// secret. The zero value holds none.
type DPoPNonce struct {
	// mu guards v.
	mu sync.Mutex
	v  string
}

// Get returns the latest nonce, or "".
func (n *DPoPNonce) Get() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.v
}

// Set keeps v as the latest nonce.
func (n *DPoPNonce) Set(v string) {
	n.mu.Lock()
	n.v = v
	n.mu.Unlock()
}

// NoteFrom keeps the response's nonce, if it carries one.
func (n *DPoPNonce) NoteFrom(h http.Header) {
	if v, ok := NonceFrom(h); ok {
		n.Set(v)
	}
}

// DPoP is what a token request needs to carry a proof: the grant's key
// and the authorization server's nonce.
type DPoP struct {
	Key   *DPoPKey
	Nonce *DPoPNonce
}

// NonceChallenge reports whether a resource server's 401 asks for a
// nonce (RFC 9449 section 9): a DPoP challenge with error use_dpop_nonce
// and a usable DPoP-Nonce header.
func NonceChallenge(status int, h http.Header) bool {
	if status != http.StatusUnauthorized {
		return false
	}
	if _, ok := NonceFrom(h); !ok {
		return false
	}
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range parseChallenges(v) {
			if strings.EqualFold(ch.scheme, "DPoP") && ch.params["error"] == "use_dpop_nonce" {
				return true
			}
		}
	}
	return false
}

// signJWS signs header and claims with key (ES256, ES384, ES512 or RS256)
// into a compact JWS.
func signJWS(key any, alg string, header, claims map[string]any) (string, error) {
	hb, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	pb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(pb)
	sig, err := signInput(key, alg, input)
	if err != nil {
		return "", err
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
