package tests

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// privateDir makes a 0700 directory outside the shared temporary
// directories (artifactDirectory refuses those): under the module root,
// else under HOME. It is removed at the end of the test.
func privateDir(t *testing.T) string {
	t.Helper()
	var bases []string
	if root, err := moduleRoot(); err == nil {
		bases = append(bases, filepath.Join(root, "tests"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		bases = append(bases, home)
	}
	for _, b := range bases {
		if b == "/tmp" || strings.HasPrefix(b, "/tmp/") || strings.HasPrefix(b, "/var/tmp/") || strings.HasPrefix(b, "/dev/shm/") {
			continue
		}
		dir, err := os.MkdirTemp(b, ".artifacts-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	t.Fatalf("no private directory outside /tmp for an artifactDirectory (tried %v)", bases)
	return ""
}

// TestArtifactWindows reads files a completed receipt reports inside the
// server's artifactDirectory, and refuses every way out of it.
func TestArtifactWindows(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	outside := t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	canary := "outside-" + randomHex(t, 8)
	write(filepath.Join(outside, "secret.txt"), canary)
	write(filepath.Join(dir, "report.txt"), "hello artifact world\n")
	write(filepath.Join(dir, "bin.dat"), "\x00\xff\xfe binary")
	for link, target := range map[string]string{
		"inlink": "report.txt", // relative, inside: followed
		"esc":    filepath.Join(outside, "secret.txt"),
		"escdir": outside,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	d := startDaemon(t)
	fx := stdioFixture("fx").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"}, "artifactDirectory", dir)
	other := stdioFixture("other").with("tools", []string{"echo"}, "readOnlyTools", []string{"echo"})
	configureMCP(t, d, mcpSettings(t, fx, other))
	connectServer(t, d, "fx")

	// report makes a completed call whose result names text.
	report := func(server, text string) string {
		t.Helper()
		res := callTool(t, d, server, "echo", `{"text":`+strconvQuote(text)+`}`)
		if res.Status != contracts.CallCompleted || res.ReceiptID == "" {
			t.Fatalf("echo on %s: %+v, want completed with a receipt", server, res)
		}
		return res.ReceiptID
	}
	read := func(p contracts.ArtifactParams) contracts.ArtifactResult {
		t.Helper()
		var res contracts.ArtifactResult
		d.callInto(t, contracts.MethodMCPArtifact, p, &res)
		return res
	}
	refused := func(p contracts.ArtifactParams, reason string) {
		t.Helper()
		e := d.callErr(t, contracts.MethodMCPArtifact, p)
		if e.Reason() != reason {
			t.Errorf("artifact %+v: %v (reason %q), want reason %s", p, e, e.Reason(), reason)
		}
		if strings.Contains(e.Error(), canary) {
			t.Errorf("the refusal shows the outside file's content: %v", e)
		}
	}

	rcpt := report("fx", "saved "+filepath.Join(dir, "report.txt")+" and "+filepath.Join(dir, "inlink")+" and file://"+filepath.Join(dir, "bin.dat"))
	got := read(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: "report.txt"})
	if got.Text != "hello artifact world\n" || !got.EOF || got.Size != 21 || got.Path != filepath.Join(dir, "report.txt") {
		t.Errorf("whole window: %+v", got)
	}
	got = read(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: filepath.Join(dir, "report.txt"), Offset: 6, Length: 8})
	if got.Text != "artifact" || got.EOF || got.Length != 8 {
		t.Errorf("window 6+8: %+v, want \"artifact\", not eof", got)
	}
	if got = read(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: "report.txt", Offset: 100}); !got.EOF || got.Text != "" {
		t.Errorf("window past the end: %+v, want empty and eof", got)
	}
	// A symlink that stays inside is followed.
	if got = read(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: "inlink"}); got.Text != "hello artifact world\n" {
		t.Errorf("symlink inside the directory: %+v", got)
	}
	// Bytes that are not UTF-8 come back exactly, as base64.
	got = read(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: "file://" + filepath.Join(dir, "bin.dat")})
	if b, _ := base64.StdEncoding.DecodeString(got.Base64); string(b) != "\x00\xff\xfe binary" || got.Text != "" {
		t.Errorf("binary window: %+v", got)
	}

	// import keeps a copy readable with source.read.
	var imp contracts.ImportResult
	d.callInto(t, contracts.MethodMCPImport, contracts.ImportParams{Server: "fx", ReceiptID: rcpt, Path: "report.txt"}, &imp)
	if imp.SourceID == "" || imp.Encoding != "text" || imp.Size != 21 || len(imp.SHA256) != 64 {
		t.Fatalf("import: %+v", imp)
	}
	write(filepath.Join(dir, "report.txt"), "changed by the server\n")
	var src contracts.SourceReadResult
	d.callInto(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: imp.SourceID}, &src)
	if src.Text != "hello artifact world\n" {
		t.Errorf("source.read of the imported artifact: %q, want the file as it was imported", src.Text)
	}
	d.callInto(t, contracts.MethodMCPImport, contracts.ImportParams{Server: "fx", ReceiptID: rcpt, Path: "bin.dat"}, &imp)
	d.callInto(t, contracts.MethodSourceRead, contracts.SourceReadParams{SourceID: imp.SourceID}, &src)
	if b, _ := base64.StdEncoding.DecodeString(src.Text); imp.Encoding != "base64" || string(b) != "\x00\xff\xfe binary" {
		t.Errorf("imported binary: %+v, source text %q", imp, src.Text)
	}
	write(filepath.Join(dir, "report.txt"), "hello artifact world\n")

	t.Run("refused", func(t *testing.T) {
		escRcpt := report("fx", strings.Join([]string{
			filepath.Join(dir, "esc"), filepath.Join(dir, "escdir", "secret.txt"),
			dir + "/../" + filepath.Base(outside) + "/secret.txt", filepath.Join(outside, "secret.txt"),
		}, "\n"))
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: "esc"}, "artifact_escapes")
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: "escdir/secret.txt"}, "artifact_escapes")
		if e := d.callErr(t, contracts.MethodMCPImport, contracts.ImportParams{Server: "fx", ReceiptID: escRcpt, Path: "esc"}); e.Reason() != "artifact_escapes" {
			t.Errorf("import through an escaping symlink: %v, want artifact_escapes", e)
		}
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: "../" + filepath.Base(outside) + "/secret.txt"}, "outside_artifact_directory")
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: filepath.Join(outside, "secret.txt")}, "outside_artifact_directory")
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: "sub/../../x"}, "outside_artifact_directory")
		// A file the receipt does not name.
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: escRcpt, Path: "report.txt"}, "artifact_not_reported")
		// "/dir/report" does not report "/dir/report.txt".
		prefix := report("fx", filepath.Join(dir, "report"))
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: prefix, Path: "report.txt"}, "artifact_not_reported")
		// Another server's receipt, and a server without a directory.
		connectServer(t, d, "other")
		otherRcpt := report("other", filepath.Join(dir, "report.txt"))
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: otherRcpt, Path: "report.txt"}, "receipt_of_another_server")
		refused(contracts.ArtifactParams{Server: "other", ReceiptID: otherRcpt, Path: "report.txt"}, "no_artifact_directory")
		// A directory others may write to.
		if err := os.Chmod(dir, 0o770); err != nil {
			t.Fatal(err)
		}
		refused(contracts.ArtifactParams{Server: "fx", ReceiptID: rcpt, Path: "report.txt"}, "unsafe_artifact_directory")
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		// Settings refuse a shared temporary directory.
		var res json.RawMessage
		_, err := d.tryCall(t, contracts.MethodConfigure, contracts.ConfigureParams{Extension: contracts.ExtensionMCP,
			Settings: json.RawMessage(mcpSettings(t, fx.with("artifactDirectory", "/tmp")))})
		if err == nil || !strings.Contains(err.Error(), "shared temporary") {
			t.Errorf("configure with artifactDirectory /tmp: %v (%s), want refused", err, res)
		}
	})

	// pikoctl reads the same window.
	out, stderr, code := runCtl(t, d, "", "mcp", "artifact", "fx", rcpt, "report.txt", "--offset", "6", "--length", "8")
	if code != 0 || out != "artifact" {
		t.Errorf("pikoctl mcp artifact: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
