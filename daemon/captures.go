package daemon

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pikod/pikod/contracts"
)

// captureDelims end a path inside a server's text: playwright-mcp writes
// markdown links ("[Snapshot](/dir/page.yml)") and fragments
// ("/dir/console.log#L1").
const captureDelims = " \t\n\r\"'`)]},;<>#|"

// captures imports the files a completed call of a browser server
// reported inside its artifactDirectory: each path of the artifact
// directory named in text (the retained result) becomes a retained source
// labelled with the receipt, with the checks of extensions.mcp.import but
// the receipt's (text is that receipt's result). A file already imported
// unchanged (same size and modification time) is not copied again.
func (d *daemon) captures(server, receiptID string, text []byte) []contracts.Capture {
	cfg, ok := d.serverSettings(server)
	if !ok || cfg.Browser == nil || cfg.ArtifactDirectory == "" {
		return nil
	}
	dir := cfg.ArtifactDirectory
	paths := reportedPaths(text, dir)
	if len(paths) == 0 {
		return nil
	}
	if err := checkArtifactDir(dir); err != nil {
		return []contracts.Capture{{Path: dir, Error: d.red.Text(contracts.ToError(err).Message)}}
	}
	out := make([]contracts.Capture, 0, len(paths))
	for _, abs := range paths {
		rel, err := filepath.Rel(dir, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "../") || !namesFile(text, abs) {
			continue
		}
		c := contracts.Capture{Path: abs}
		f, err := openInDir(server, dir, rel, abs, abs)
		if err != nil {
			if contracts.ToError(err).Reason() == contracts.ReasonArtifactMissing {
				// Text that merely looks like a path of the directory.
				continue
			}
			c.Error = d.red.Text(contracts.ToError(err).Message)
			out = append(out, c)
			continue
		}
		fi, err := f.Stat()
		key := ""
		if err == nil {
			key = server + "\x00" + abs + "\x00" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + "\x00" + strconv.FormatInt(fi.Size(), 10)
			if prev, ok := d.capturesSeen.get(key, fi.Size()); ok {
				f.Close()
				out = append(out, prev)
				continue
			}
		}
		res, err := d.importOpened(server, receiptID, f, abs, "capture:"+receiptID+":"+filepath.Base(abs))
		f.Close()
		if err != nil {
			c.Error = d.red.Text(contracts.ToError(err).Message)
			out = append(out, c)
			continue
		}
		c.SourceID, c.Size, c.SHA256, c.Encoding, c.Chars = res.SourceID, res.Size, res.SHA256, res.Encoding, res.Chars
		if key != "" {
			d.capturesSeen.put(key, fi.Size(), c)
		}
		d.log.Info().Str("server", server).Str("receipt", receiptID).Str("source", c.SourceID).Int64("bytes", c.Size).Msg("capture imported")
		out = append(out, c)
	}
	return out
}

// reportedPaths lists, in order and once each, the absolute paths inside
// dir that the strings of the JSON text name (plain or as file:// URIs),
// at most contracts.MaxCaptures.
func reportedPaths(text []byte, dir string) []string {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil
	}
	prefix := dir + "/"
	var out []string
	eachString(v, func(x string) {
		for s := x; len(out) < contracts.MaxCaptures; {
			i := strings.Index(s, prefix)
			if i < 0 {
				break
			}
			s = s[i:]
			end := strings.IndexAny(s, captureDelims)
			if end < 0 {
				end = len(s)
			}
			p := strings.TrimRight(s[:end], ".:")
			s = s[end:]
			if p = filepath.Clean(p); strings.HasPrefix(p, prefix) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	})
	return out
}

// captureCache remembers the captures imported lately, so a file that
// every later result names again (a console log, an earlier snapshot) is
// copied once while it stays unchanged.
type captureCache struct {
	// mu guards the fields that follow.
	mu   sync.Mutex
	seen map[string]contracts.Capture
}

// maxCaptureCache bounds captureCache: past it, it starts over.
const maxCaptureCache = 1024

func (c *captureCache) get(key string, size int64) (contracts.Capture, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.seen[key]
	return v, ok && v.Size == size
}

func (c *captureCache) put(key string, _ int64, v contracts.Capture) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) >= maxCaptureCache {
		c.seen = make(map[string]contracts.Capture)
	}
	c.seen[key] = v
}
