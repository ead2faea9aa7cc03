package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
)

// Files of the config directory, each 0600 in a 0700 directory.
const (
	configFile = "config.json"
	keyFile    = "key.pem"
	certFile   = "cert.pem"
	tokenFile  = "token"
)

// config is what init records (config.json): no secret is in it (the
// token and the key are files of their own).
type config struct {
	// Listen is the loopback address served (127.0.0.1:PORT).
	Listen string `json:"listen"`
	// Command and Args run the browser MCP server (its own flags for the
	// browser, profile or CDP endpoint included).
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Preset is playwright, chrome-devtools or generic.
	Preset string `json:"preset"`
	// AllowTools are tools exposed beyond the preset's list.
	AllowTools []string `json:"allowTools,omitempty"`
	// CDPEndpoint is the owner's Chrome (remote debugging on loopback);
	// "" for a dedicated profile (Profile).
	CDPEndpoint string `json:"cdpEndpoint,omitempty"`
	Profile     string `json:"profile,omitempty"`
	// Headless drops DISPLAY and friends from the child's environment.
	Headless bool `json:"headless,omitempty"`
	// AllowedOrigins are the Origin values accepted besides none.
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
}

// tools returns the tools the bridge exposes: the preset's list and the
// ones allowed at init, sorted.
func (c *config) tools() []string {
	var out []string
	if p, ok := contracts.FindBrowserPreset(c.Preset); ok {
		out = append(out, p.Tools...)
	}
	out = append(out, c.AllowTools...)
	slices.Sort(out)
	return slices.Compact(out)
}

func (c *config) url() string { return "https://" + c.Listen + "/mcp" }

// defaultDir is $XDG_CONFIG_HOME/pikod-browser-bridge (~/.config/...).
func defaultDir() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "pikod-browser-bridge")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "pikod-browser-bridge")
}

// checkLoopbackListen refuses an address that is not a loopback IP with a
// port: the bridge is reached on this machine, or through a tunnel the
// owner sets up.
func checkLoopbackListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return fmt.Errorf("--listen %s: give a loopback address and a fixed port, such as 127.0.0.1:8765", addr)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %s: the bridge listens on loopback only (127.0.0.1 or [::1]); reach it from elsewhere through a tunnel such as ssh -L", addr)
	}
	return nil
}

// checkCDPEndpoint accepts http, https, ws or wss on a loopback host: the
// owner's Chrome started with --remote-debugging-port on this machine.
func checkCDPEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--cdp-endpoint %s: give the URL of a Chrome started with --remote-debugging-port, such as http://127.0.0.1:9222", raw)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("--cdp-endpoint %s: the scheme must be http, https, ws or wss", raw)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); !strings.EqualFold(host, "localhost") && (err != nil || !ip.IsLoopback()) {
		return fmt.Errorf("--cdp-endpoint %s: the browser's debugging port must be on loopback (anyone who reaches it controls the browser)", raw)
	}
	return nil
}

// writePrivate writes b to dir/name with mode 0600, refusing to replace
// a file unless replace.
func writePrivate(dir, name string, b []byte, replace bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !replace {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(filepath.Join(dir, name), flags, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s already exists in %s: pass --force to make a new key and token (pair again afterwards)", name, dir)
		}
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return f.Close()
}

// newIdentity makes a self-signed ECDSA P-256 certificate for the
// loopback names, and its key, as PEM.
func newIdentity() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("making a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("making a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "pikod browser bridge"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(5, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("making the certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// state is a loaded config directory.
type state struct {
	dir   string
	cfg   config
	cert  tls.Certificate
	token string
	// pin is the SHA-256 of the certificate's public key (it stays when
	// only the certificate is renewed).
	pin string
}

// readPrivate reads dir/name, refusing a file others can read.
func readPrivate(dir, name string) ([]byte, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w (run 'browser-bridge init' first)", name, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v): chmod 600 %s, or run 'browser-bridge init --force' for a new key and token", p, fi.Mode().Perm(), p)
	}
	return os.ReadFile(p)
}

func load(dir string) (*state, error) {
	s := &state{dir: dir}
	b, err := readPrivate(dir, configFile)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s.cfg); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, configFile), err)
	}
	if err := checkLoopbackListen(s.cfg.Listen); err != nil {
		return nil, err
	}
	certPEM, err := readPrivate(dir, certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPrivate(dir, keyFile)
	if err != nil {
		return nil, err
	}
	if s.cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		// The error of X509KeyPair names no key material.
		return nil, fmt.Errorf("loading the key and certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(s.cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	s.pin = contracts.FormatTLSPin(sha256.Sum256(leaf.RawSubjectPublicKeyInfo))
	tok, err := readPrivate(dir, tokenFile)
	if err != nil {
		return nil, err
	}
	s.token = strings.TrimSpace(string(tok))
	if len(s.token) < contracts.MinPairingToken {
		return nil, fmt.Errorf("the token in %s is too short: run 'browser-bridge init --force'", filepath.Join(dir, tokenFile))
	}
	return s, nil
}
