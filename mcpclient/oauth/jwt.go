package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
)

// AssertionLifetime is how long a client assertion is valid.
const AssertionLifetime = 5 * time.Minute

// ParsePrivateKey reads a PEM private key (PKCS#8, SEC 1 "EC PRIVATE KEY"
// or PKCS#1 "RSA PRIVATE KEY") and returns it with the JWS algorithm it
// signs with: ES256 (P-256), ES384 (P-384), ES512 (P-521) or RS256 (RSA of
// at least 2048 bits). Errors never quote the key.
func ParsePrivateKey(pemText string) (crypto.Signer, string, error) {
	block, rest := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", fmt.Errorf("not a PEM block (-----BEGIN PRIVATE KEY----- ...)")
	}
	if more, _ := pem.Decode(rest); more != nil {
		return nil, "", fmt.Errorf("holds more than one PEM block: give the private key alone")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		return nil, "", fmt.Errorf("is encrypted: store the key without a passphrase (the vault protects it)")
	default:
		return nil, "", fmt.Errorf("is a %q PEM block, not a private key", clip(block.Type, 40))
	}
	if err != nil {
		return nil, "", fmt.Errorf("is not a readable %s", block.Type)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return k, "ES256", nil
		case elliptic.P384():
			return k, "ES384", nil
		case elliptic.P521():
			return k, "ES512", nil
		}
		return nil, "", fmt.Errorf("uses an elliptic curve JWS has no algorithm for")
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, "", fmt.Errorf("is an RSA key shorter than 2048 bits")
		}
		return k, "RS256", nil
	}
	return nil, "", fmt.Errorf("is a key type pikod cannot sign client assertions with (use EC P-256 or RSA)")
}

// ClientAssertion signs the RFC 7523 client assertion of private_key_jwt:
// iss and sub the client id, aud the authorization server's issuer, a
// unique jti, iat now and exp AssertionLifetime later.
func ClientAssertion(key crypto.Signer, alg, clientID, audience string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := map[string]any{
		"iss": clientID,
		"sub": clientID,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(AssertionLifetime).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	}
	return signJWT(key, alg, claims)
}

func signJWT(key crypto.Signer, alg string, claims map[string]any) (string, error) {
	return signJWS(key, alg, map[string]any{"alg": alg, "typ": "JWT"}, claims)
}

// signInput signs a JWS signing input with key for alg: ECDSA signatures
// as JWS wants them (r and s as fixed-size big-endian integers, not DER),
// RSA as PKCS #1 v1.5.
func signInput(key any, alg, input string) ([]byte, error) {
	var (
		hash crypto.Hash
		size int
	)
	switch alg {
	case "ES256", "RS256":
		hash, size = crypto.SHA256, 32
	case "ES384":
		hash, size = crypto.SHA384, 48
	case "ES512":
		hash, size = crypto.SHA512, 66
	default:
		return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAlg, "cannot sign with %q", clip(alg, 20))
	}
	digest := hashOf(hash, []byte(input))
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		return append(fixed(r, size), fixed(s, size)...), nil
	case *rsa.PrivateKey:
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, hash, digest)
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		return sig, nil
	}
	return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthUnsupportedAlg, "cannot sign with this key type")
}

func hashOf(h crypto.Hash, b []byte) []byte {
	switch h {
	case crypto.SHA384:
		s := sha512.Sum384(b)
		return s[:]
	case crypto.SHA512:
		s := sha512.Sum512(b)
		return s[:]
	}
	s := sha256.Sum256(b)
	return s[:]
}

func fixed(n *big.Int, size int) []byte {
	out := make([]byte, size)
	return n.FillBytes(out)
}

// JWTExpiry reads the exp claim of a compact JWT without checking its
// signature (pikod only holds the token; the authorization server checks
// it): ok is false when token is not a JWT with a numeric exp.
func JWTExpiry(token string) (exp time.Time, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if dec.Decode(&claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	f, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}
