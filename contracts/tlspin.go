package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// TLSPinPrefix starts every TLS pin (ServerSettings.TLSPin).
const TLSPinPrefix = "sha256:"

// ParseTLSPin reads a pin, "sha256:" and 64 hex digits (either case), and
// returns the digest. The error says what a pin looks like; it never
// repeats the value.
func ParseTLSPin(pin string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	hexPart, ok := strings.CutPrefix(pin, TLSPinPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return d, fmt.Errorf("must be %q followed by the 64 hex digits of a SHA-256 (of the certificate or of its public key)", TLSPinPrefix)
	}
	b, err := hex.DecodeString(hexPart)
	if err != nil {
		return d, fmt.Errorf("must be %q followed by 64 hex digits (0-9, a-f)", TLSPinPrefix)
	}
	copy(d[:], b)
	return d, nil
}

// FormatTLSPin returns the pin of a digest: "sha256:" and lowercase hex.
func FormatTLSPin(d [sha256.Size]byte) string {
	return TLSPinPrefix + hex.EncodeToString(d[:])
}

// TLSPinsOf returns the two pins a certificate matches: the SHA-256 of
// its DER bytes and of its SubjectPublicKeyInfo (DER). A peer matches a
// pin when either is it.
func TLSPinsOf(certDER, spkiDER []byte) (cert, key string) {
	return FormatTLSPin(sha256.Sum256(certDER)), FormatTLSPin(sha256.Sum256(spkiDER))
}
