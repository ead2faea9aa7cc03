package contracts

// Artifact windows: DefaultArtifactWindow bytes when a read names no
// length, at most MaxArtifactWindow.
const (
	DefaultArtifactWindow = 64 << 10
	MaxArtifactWindow     = 1 << 20
)

// ArtifactParams is the params of extensions.mcp.artifact: a window of a
// file that the completed call of ReceiptID reported, inside the server's
// artifactDirectory. Path is absolute or relative to that directory (a
// file:// URI is accepted too); the retained result of the receipt must
// name the file (one of its strings contains the absolute path or its
// file:// URI). Offset and Length count bytes; Length 0 means
// DefaultArtifactWindow, more than MaxArtifactWindow is shortened to it.
type ArtifactParams struct {
	Server    string `json:"server"`
	ReceiptID string `json:"receiptId"`
	Path      string `json:"path"`
	Offset    int64  `json:"offset,omitempty"`
	Length    int64  `json:"length,omitempty"`
}

// ArtifactResult is the result of extensions.mcp.artifact. Text holds the
// window when it is valid UTF-8 (known credential values redacted; then
// Redacted is true), Base64 otherwise (bytes exactly as in the file).
type ArtifactResult struct {
	Server    string `json:"server"`
	ReceiptID string `json:"receiptId"`
	// Path is the file's absolute path inside the artifact directory.
	Path string `json:"path"`
	// Size is the file's size in bytes; ModifiedAt its mtime (RFC 3339).
	Size       int64  `json:"size"`
	ModifiedAt string `json:"modifiedAt"`
	Offset     int64  `json:"offset"`
	// Length is how many bytes of the file the window holds.
	Length   int64  `json:"length"`
	EOF      bool   `json:"eof"`
	Text     string `json:"text,omitempty"`
	Base64   string `json:"base64,omitempty"`
	Redacted bool   `json:"redacted,omitempty"`
}

// MaxArtifactImport bounds the file extensions.mcp.import copies, in
// bytes.
const MaxArtifactImport = 20 << 20

// ImportParams is the params of extensions.mcp.import: copy a whole file
// that the completed call of ReceiptID reported, inside the server's
// artifactDirectory (the same checks as ArtifactParams), into pikod's
// retained sources, so it stays readable with source.read after the
// server changes or removes it.
type ImportParams struct {
	Server    string `json:"server"`
	ReceiptID string `json:"receiptId"`
	Path      string `json:"path"`
}

// ImportResult is the result of extensions.mcp.import. Encoding is "text"
// (the file is UTF-8; known credential values redacted) or "base64" (the
// source holds the base64 of the exact bytes). SHA256 is the hex digest of
// the file's bytes as read.
type ImportResult struct {
	Server    string `json:"server"`
	ReceiptID string `json:"receiptId"`
	Path      string `json:"path"`
	SourceID  string `json:"sourceId"`
	Size      int64  `json:"size"`
	Encoding  string `json:"encoding"`
	SHA256    string `json:"sha256"`
	Redacted  bool   `json:"redacted,omitempty"`
	// Chars is the source's length in characters (source.read's total).
	Chars int64 `json:"chars,omitempty"`
}
