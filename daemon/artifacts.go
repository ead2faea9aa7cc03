package daemon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
)

// artifact serves extensions.mcp.artifact: a bounded window of a file a
// completed receipt reported, read only inside the server's
// artifactDirectory and never through a symlink or ".." that leaves it.
func (d *daemon) artifact(_ context.Context, req *rpc.Request, p *contracts.ArtifactParams) (any, error) {
	if p.Offset < 0 || p.Length < 0 {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidWindow, `"offset" and "length" must not be negative`)
	}
	length := p.Length
	switch {
	case length == 0:
		length = contracts.DefaultArtifactWindow
	case length > contracts.MaxArtifactWindow:
		length = contracts.MaxArtifactWindow
	}
	f, abs, err := d.openArtifact(p.Server, p.ReceiptID, p.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading artifact %q: %w", abs, err)
	}
	res := contracts.ArtifactResult{Server: p.Server, ReceiptID: p.ReceiptID, Path: abs, Size: fi.Size(),
		ModifiedAt: fi.ModTime().UTC().Format(time.RFC3339), Offset: p.Offset}
	if p.Offset >= fi.Size() {
		res.EOF = true
		return res, nil
	}
	// The window is read with the bytes around it, so that a secret
	// across either edge is seen and removed (RedactWindow).
	ctxBytes := int64(d.red.Longest())
	start := max(0, p.Offset-ctxBytes)
	want := min(length, fi.Size()-p.Offset)
	ext := make([]byte, min(p.Offset-start+want+ctxBytes, fi.Size()-start))
	n, err := f.ReadAt(ext, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading artifact %q: %w", abs, err)
	}
	ext = ext[:n]
	from := int(p.Offset - start)
	to := min(from+int(want), len(ext))
	if to < from {
		to = from
	}
	res.Length = int64(to - from)
	res.EOF = p.Offset+res.Length >= fi.Size()
	buf, redacted := d.red.RedactWindow(ext, from, to)
	res.Redacted = redacted
	if utf8.Valid(buf) {
		res.Text = string(buf)
	} else {
		// Redacted as bytes before it is encoded.
		res.Base64 = base64.StdEncoding.EncodeToString(buf)
	}
	d.log.Info().Str("server", p.Server).Str("receipt", p.ReceiptID).Int64("offset", p.Offset).Int("bytes", n).Msg("artifact read")
	return res, nil
}

// importArtifact serves extensions.mcp.import: the whole reported file,
// copied into the retained sources and linked to the receipt's server.
func (d *daemon) importArtifact(_ context.Context, req *rpc.Request, p *contracts.ImportParams) (any, error) {
	f, abs, err := d.openArtifact(p.Server, p.ReceiptID, p.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := d.importOpened(p.Server, p.ReceiptID, f, abs, "artifact:"+filepath.Base(abs))
	if err != nil {
		return nil, err
	}
	d.log.Info().Str("server", p.Server).Str("receipt", p.ReceiptID).Str("source", res.SourceID).Int64("bytes", res.Size).Msg("artifact imported")
	return res, nil
}

// importOpened copies the whole of f (at most MaxArtifactImport bytes),
// redacted, into a retained source labelled label.
func (d *daemon) importOpened(server, receiptID string, f *os.File, abs, label string) (contracts.ImportResult, error) {
	data, err := io.ReadAll(io.LimitReader(f, contracts.MaxArtifactImport+1))
	if err != nil {
		return contracts.ImportResult{}, fmt.Errorf("reading artifact %q: %w", abs, err)
	}
	if len(data) > contracts.MaxArtifactImport {
		return contracts.ImportResult{}, contracts.WithHint(contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonArtifactTooLarge,
			"artifact %q is larger than %d bytes: it cannot be imported", abs, contracts.MaxArtifactImport),
			"read it in windows with extensions.mcp.artifact instead")
	}
	res := contracts.ImportResult{Server: server, ReceiptID: receiptID, Path: abs, Size: int64(len(data)),
		Encoding: "text", SHA256: contracts.SHA256Hex(data)}
	// Redacted as bytes, whatever the encoding, before it is encoded.
	text, redacted := d.red.RedactWindow(data, 0, len(data))
	res.Redacted = redacted
	if !utf8.Valid(text) {
		res.Encoding = "base64"
		text = []byte(base64.StdEncoding.EncodeToString(text))
	}
	meta, err := d.sources.Put(server, label, text)
	if err != nil {
		return contracts.ImportResult{}, err
	}
	res.SourceID = meta.ID
	res.Chars = meta.Chars
	return res, nil
}

// openArtifact checks everything an artifact read needs and opens the file:
// the server's artifactDirectory (set, a directory, the owner's, not
// writable by group or others), the receipt (this server's, completed, its
// retained result naming the file), and the path (inside the directory,
// not escaping it by ".." or a symlink, a regular file).
func (d *daemon) openArtifact(server, receiptID, path string) (*os.File, string, error) {
	cfg, ok := d.serverSettings(server)
	if !ok {
		return nil, "", unknownServer(server)
	}
	dir := cfg.ArtifactDirectory
	if dir == "" {
		return nil, "", contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonNoArtifactDirectory,
			"server %q has no artifactDirectory: its files cannot be read", server),
			`set "artifactDirectory" in the server's settings to the private directory it writes its output to`)
	}
	if err := checkArtifactDir(dir); err != nil {
		return nil, "", err
	}
	if receiptID == "" || path == "" {
		return nil, "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonMissingArtifact,
			`name the file with "path" and the completed call that reported it with "receiptId"`)
	}
	if u, err := url.Parse(path); err == nil && u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return nil, "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidPath, "artifact URI %q names another host", path)
		}
		path = u.Path
	}
	if strings.ContainsRune(path, 0) {
		return nil, "", contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidPath, "the artifact path contains a NUL character")
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	abs = filepath.Clean(abs)
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, "", contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonOutsideArtifactDirectory,
			"%q is not inside the artifactDirectory %q of server %q", path, dir, server),
			"only files inside the server's artifactDirectory can be read")
	}
	if err := d.checkReported(server, receiptID, abs); err != nil {
		return nil, "", err
	}
	f, err := openInDir(server, dir, rel, path, abs)
	return f, abs, err
}

// openInDir opens rel inside dir through an os.Root, refusing a ".." or
// symlink that leaves it and anything but a regular file.
func openInDir(server, dir, rel, path, abs string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the artifactDirectory of %q: %w: %w", server, err, contracts.ErrFailedPrecondition)
	}
	defer root.Close()
	// os.Root refuses a ".." or a symlink that leaves the directory, at
	// every component, without a race against the server renaming things.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case err != nil && strings.Contains(err.Error(), "escapes"):
		return nil, contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonArtifactEscapes,
			"%q leaves the artifactDirectory %q of server %q through a symlink: refused", path, dir, server)
	case errors.Is(err, os.ErrNotExist):
		return nil, contracts.Errorf(contracts.ErrNotFound, contracts.ReasonArtifactMissing, "artifact %q does not exist (any more)", abs)
	case err != nil:
		return nil, fmt.Errorf("opening artifact %q: %w", abs, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonNotAFile, "artifact %q is not a regular file", abs)
	}
	return f, nil
}

// checkArtifactDir refuses a directory another user could have written to.
func checkArtifactDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return contracts.WithHint(fmt.Errorf("artifactDirectory %q: %w: %w", dir, err, contracts.ErrFailedPrecondition),
			"create it (mkdir -m 700) or fix the setting")
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsafeArtifactDirectory,
			"artifactDirectory %q is a symlink", dir), "set the directory it points to instead")
	case !fi.IsDir():
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsafeArtifactDirectory, "artifactDirectory %q is not a directory", dir)
	case st == nil || int(st.Uid) != os.Getuid():
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsafeArtifactDirectory,
			"artifactDirectory %q is not owned by you", dir), "use a directory of your own")
	case fi.Mode().Perm()&0o022 != 0:
		return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonUnsafeArtifactDirectory,
			"artifactDirectory %q is writable by group or others (mode %04o)", dir, fi.Mode().Perm()),
			"chmod go-w it: files others can plant there cannot be trusted")
	}
	return nil
}

// maxReportScan bounds how much of a retained result is searched for the
// file's name.
const maxReportScan = 32 << 20

// checkReported requires a completed receipt of server whose retained
// result names abs (its path or file:// URI in one of its strings).
func (d *daemon) checkReported(server, receiptID, abs string) error {
	r, err := d.ledger.Receipt(receiptID)
	if err != nil {
		return err
	}
	if r.Server != server {
		return contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonReceiptOfAnotherServer, "receipt %s is of server %q, not %q", receiptID, r.Server, server)
	}
	if r.Status != contracts.CallCompleted || r.SourceID == "" {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonReceiptNotCompleted,
			"receipt %s is %s without a retained result: only a completed call reports artifacts", receiptID, r.Status)
	}
	text, err := d.wholeSource(r)
	if err != nil {
		return err
	}
	if !namesFile(text, abs) {
		return contracts.WithHint(contracts.Errorf(contracts.ErrPermissionDenied, contracts.ReasonArtifactNotReported,
			"the result of receipt %s does not name %q", receiptID, abs),
			"read only files the call reported; 'pikoctl mcp receipts --id RECEIPT' shows its result")
	}
	return nil
}

func (d *daemon) wholeSource(r approvals.Receipt) ([]byte, error) {
	var out []byte
	for off := int64(0); ; {
		w, err := d.sources.Read(r.SourceID, off, approvals.MaxSourceReadChars)
		if err != nil {
			return nil, err
		}
		out = append(out, w.Text...)
		off += int64(utf8.RuneCountInString(w.Text))
		if w.EOF || w.Text == "" {
			return out, nil
		}
		if len(out) > maxReportScan {
			return nil, contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonResultTooLarge,
				"the result of receipt %s is larger than %d bytes; artifacts are looked up only in smaller results", r.ID, maxReportScan)
		}
	}
}

// namesFile reports whether a string of the JSON text contains abs or its
// file:// URI (plain or percent-encoded).
func namesFile(text []byte, abs string) bool {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return strings.Contains(string(text), abs)
	}
	uri := (&url.URL{Scheme: "file", Path: abs}).String()
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return containsPath(x, abs) || containsPath(x, uri)
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// containsPath reports abs inside s as a whole path: not followed by more
// of a longer file name ("/out/a" does not report "/out/a.png").
func containsPath(s, abs string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], abs)
		if j < 0 {
			return false
		}
		end := i + j + len(abs)
		if end == len(s) || strings.ContainsRune(" \t\n\r\"'`)]},;:<>#", rune(s[end])) || (s[end] == '.' && (end+1 == len(s) || s[end+1] == ' ' || s[end+1] == '\n')) {
			return true
		}
		i = i + j + 1
	}
}
