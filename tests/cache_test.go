package tests

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// npmRegistry is a real npm registry on loopback that serves one package
// and counts every request, so a test can tell whether npx went to the
// network.
type npmRegistry struct {
	url string
	// mu guards the fields that follow.
	mu       sync.Mutex
	requests []string
}

func (r *npmRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

func (r *npmRegistry) seen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.requests, ", ")
}

// startNPMRegistry serves package name@version whose bin runs the fixture
// server (a shell script: the test is about npm's cache, not about node).
func startNPMRegistry(t *testing.T, name, version string) *npmRegistry {
	t.Helper()
	manifest, _ := json.Marshal(map[string]any{
		"name": name, "version": version, "bin": map[string]string{name: "bin.sh"},
	})
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		mode int64
		body string
	}{
		{"package/package.json", 0o644, string(manifest)},
		{"package/bin.sh", 0o755, "#!/bin/sh\nexec '" + fixtureBin + "' \"$@\"\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum512 := sha512.Sum512(tgz.Bytes())
	sum1 := sha1.Sum(tgz.Bytes())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := &npmRegistry{url: "http://" + ln.Addr().String() + "/"}
	tarPath := "/" + name + "/-/" + name + "-" + version + ".tgz"
	packument, _ := json.Marshal(map[string]any{
		"name":      name,
		"dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "bin": map[string]string{name: "bin.sh"},
			"dist": map[string]string{
				"tarball":   strings.TrimSuffix(reg.url, "/") + tarPath,
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
				"shasum":    hex.EncodeToString(sum1[:]),
			},
		}},
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reg.mu.Lock()
		reg.requests = append(reg.requests, req.Method+" "+req.URL.Path)
		reg.mu.Unlock()
		switch req.URL.Path {
		case "/" + name:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(packument)
		case tarPath:
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(tgz.Bytes())
		default:
			http.NotFound(w, req)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return reg
}

// TestNPXStartsFromPersistentCache checks that an npx server's second
// connect needs nothing from the registry: npm's cache lives in the
// server's persistent cache dir (STATE/cache/ID), not in its disposable
// HOME. The second connect runs with npm_config_offline=true and the
// registry must see no request; a server without that cache, offline,
// cannot start (so offline mode really keeps npm off the network).
func TestNPXStartsFromPersistentCache(t *testing.T) {
	t.Parallel()
	if os.Getenv(interopSkipEnv) == "1" {
		t.Skipf("%s=1: the npx cache test needs node and npm", interopSkipEnv)
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatalf("npx is not on PATH (%v): install node and npm (Debian: apt-get install nodejs npm); or set %s=1 to skip", err, interopSkipEnv)
	}
	const pkg = "pikod-cache-probe"
	reg := startNPMRegistry(t, pkg, "1.0.0")
	d := startDaemon(t)

	npmEnv := map[string]string{
		"npm_config_registry":        reg.url,
		"npm_config_update_notifier": "false",
		"npm_config_audit":           "false",
		"npm_config_fund":            "false",
	}
	server := func(id string, offline bool) srv {
		env := map[string]string{}
		for k, v := range npmEnv {
			env[k] = v
		}
		if offline {
			env["npm_config_offline"] = "true"
		}
		return srv{"id": id, "transport": "stdio", "command": npx, "args": []string{"--yes", pkg + "@1.0.0"}, "env": env, "timeoutMs": 120000}
	}

	configureMCP(t, d, mcpSettings(t, server("cached", false)))
	first := connectServer(t, d, "cached")
	if first.ToolCount == 0 {
		t.Fatalf("first connect through npx listed no tools: %+v", first)
	}
	if reg.count() == 0 {
		t.Fatalf("the first connect made no registry request: npx did not use the test registry, so this test proves nothing")
	}
	if _, err := os.Stat(filepath.Join(d.stateDir, "cache", "cached", "npm")); err != nil {
		t.Fatalf("npm's cache is not in STATE/cache/cached/npm: %v", err)
	}
	d.call(t, "extensions.mcp.disconnect", map[string]string{"server": "cached"})

	// Saving new settings disconnects the server; the next connect gets a
	// fresh disposable HOME and only the persistent cache.
	configureMCP(t, d, mcpSettings(t, server("cached", true), server("uncached", true)))
	before := reg.count()
	second := connectServer(t, d, "cached")
	if second.ToolCount != first.ToolCount {
		t.Errorf("second connect lists %d tools, want %d", second.ToolCount, first.ToolCount)
	}
	if n := reg.count() - before; n != 0 {
		t.Errorf("second connect made %d registry requests, want 0 (all requests: %s)", n, reg.seen())
	}
	if e := connectFails(t, d, "uncached"); e == nil {
		t.Errorf("an offline npx server without a cache connected; offline mode does not block the registry")
	}
	if n := reg.count() - before; n != 0 {
		t.Errorf("offline connects made %d registry requests, want 0 (all requests: %s)", n, reg.seen())
	}
}
