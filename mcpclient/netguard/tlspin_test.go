package netguard

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// TestGuardTLSPin checks the pin of a server's TLS peer: the certificate's
// or the key's SHA-256 is trusted without any CA, anything else is refused
// during the handshake (nothing sent, the configured headers with it),
// with an error naming the expected and the presented fingerprints; other
// origins keep the ordinary verification.
func TestGuardTLSPin(t *testing.T) {
	srv := newOriginServer(t, "", true)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	origin := fmt.Sprintf("https://127.0.0.1:%d/mcp", port)
	leaf := srv.Certificate()
	certPin := contracts.FormatTLSPin(sha256.Sum256(leaf.Raw))
	keyPin := contracts.FormatTLSPin(sha256.Sum256(leaf.RawSubjectPublicKeyInfo))
	if got, gotKey := contracts.TLSPinsOf(leaf.Raw, leaf.RawSubjectPublicKeyInfo); got != certPin || gotKey != keyPin {
		t.Fatalf("TLSPinsOf = %s, %s; want %s, %s", got, gotKey, certPin, keyPin)
	}
	const header = "Bearer pin-test-token-4e1f"

	for _, tt := range []struct {
		name, pin string
	}{
		{"certificate", certPin},
		{"public key", keyPin},
		{"key in upper case", "sha256:" + strings.ToUpper(strings.TrimPrefix(keyPin, "sha256:"))},
	} {
		pin := tt.pin
		c := newGuardTestClient(t, Config{URL: origin, AllowPrivateNetwork: true, TLSPin: pin,
			Headers: map[string]string{"Authorization": header}})
		resp, err := guardGet(c, origin, nil)
		if err != nil {
			t.Fatalf("pinned by the %s (%s): %v", tt.name, pin, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := srv.last().Get("Authorization"); got != header {
			t.Errorf("pinned by the %s: the server got Authorization %q", tt.name, got)
		}
	}

	// Without a pin the self-signed certificate is not trusted at all: the
	// pin is what made the requests above work.
	plain := newGuardTestClient(t, Config{URL: origin, AllowPrivateNetwork: true})
	var unknown x509.UnknownAuthorityError
	if _, err := guardGet(plain, origin, nil); !errors.As(err, &unknown) {
		t.Errorf("no pin, no CA: err = %v, want an unknown authority", err)
	}

	wrong := contracts.FormatTLSPin(sha256.Sum256([]byte("another bridge")))
	seen := len(srv.seen)
	c := newGuardTestClient(t, Config{URL: origin, AllowPrivateNetwork: true, TLSPin: wrong,
		Headers: map[string]string{"Authorization": header}})
	_, err := guardGet(c, origin+"?x=1", nil)
	var pe *PinMismatchError
	switch {
	case !errors.As(err, &pe):
		t.Fatalf("wrong pin: err = %v, want a *PinMismatchError", err)
	case !errors.Is(err, ErrPinMismatch) || !errors.Is(err, contracts.ErrPermissionDenied):
		t.Errorf("wrong pin: %v is not ErrPinMismatch and permission denied", err)
	case pe.Expected != wrong || pe.Certificate != certPin || pe.Key != keyPin:
		t.Errorf("wrong pin: %+v, want expected %s, certificate %s, key %s", pe, wrong, certPin, keyPin)
	}
	for _, want := range []string{wrong, certPin, keyPin, fmt.Sprintf("https://127.0.0.1:%d", port), "tlsPin", "pair again"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("wrong pin: message %q lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), header) {
		t.Errorf("the mismatch message carries the header: %q", err)
	}
	var ue *UnsentError
	if !errors.As(err, &ue) {
		t.Errorf("wrong pin: %v is not marked as not sent", err)
	}
	srv.mu.Lock()
	if len(srv.seen) != seen {
		t.Errorf("the server saw %d requests through a refused pin", len(srv.seen)-seen)
	}
	srv.mu.Unlock()

	// The pin belongs to the origin: another port of the same host (an
	// OAuth fetch under SameHostAnyPort) is verified as usual, here by a
	// CA pool that holds the same certificate.
	other := newOriginServer(t, "", true)
	otherURL := fmt.Sprintf("https://127.0.0.1:%d/mcp", other.Listener.Addr().(*net.TCPAddr).Port)
	pool := x509.NewCertPool()
	pool.AddCert(other.Certificate())
	both := newGuardTestClient(t, Config{URL: origin, AllowPrivateNetwork: true, SameHostAnyPort: true, TLSPin: wrong,
		TLSConfig: &tls.Config{RootCAs: pool}})
	if resp, err := guardGet(both, otherURL, nil); err != nil {
		t.Errorf("another origin under a pin: %v, want the ordinary verification", err)
	} else {
		resp.Body.Close()
	}
	if _, err := guardGet(both, origin, nil); !errors.Is(err, ErrPinMismatch) {
		t.Errorf("the pinned origin with a CA that trusts it: err = %v, want the pin to decide", err)
	}
}

func TestGuardTLSPinConfig(t *testing.T) {
	good := "sha256:" + strings.Repeat("0a", 32)
	for _, tt := range []struct {
		url, pin string
		want     string
	}{
		{"http://127.0.0.1:9/mcp", good, "only to an https url"},
		{"https://127.0.0.1:9/mcp", "sha1:" + strings.Repeat("0a", 20), `"sha256:" followed by`},
		{"https://127.0.0.1:9/mcp", "sha256:" + strings.Repeat("0g", 32), "hex digits"},
	} {
		_, err := NewClient(Config{URL: tt.url, AllowPrivateNetwork: true, TLSPin: tt.pin})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, contracts.ErrInvalidArgument) {
			t.Errorf("NewClient(%s, %s) = %v, want an invalid argument saying %q", tt.url, tt.pin, err, tt.want)
		}
	}
}
