package present

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pikod/pikod/contracts"
	"maps"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Default preview limits.
const (
	DefaultPreviewTextChars       = 24_000
	DefaultPreviewImageBytes      = 256 << 10
	DefaultPreviewImages          = 4
	DefaultPreviewStructuredBytes = 32 << 10
	DefaultPreviewBlockBytes      = 32 << 10
	DefaultPreviewTotalChars      = 1536 << 10
)

// PreviewLimits bounds what a caller receives of a tool result. A zero
// field takes its default.
type PreviewLimits struct {
	// TextChars is the number of characters (code points) kept of all
	// text blocks together; beyond it the first two thirds and the last
	// third are kept around a notice. Default 24,000.
	TextChars int
	// ImageBytes is the largest base64 data of one image or audio block
	// kept. Default 256 KiB.
	ImageBytes int
	// Images is how many image and audio blocks are kept. Default 4.
	Images int
	// StructuredBytes is the largest structuredContent kept, in bytes of
	// its JSON. Default 32 KiB.
	StructuredBytes int
	// BlockBytes is the largest other block (resource, resource_link,
	// unknown types) kept, in bytes of its JSON. Default 32 KiB.
	BlockBytes int
	// TotalChars backstops the whole preview (content and
	// structuredContent JSON, counted in bytes, which are never fewer
	// than characters) against results made of very many small blocks.
	// Default 1.5 MiB.
	TotalChars int
}

func (l PreviewLimits) withDefaults() PreviewLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.TextChars, DefaultPreviewTextChars)
	def(&l.ImageBytes, DefaultPreviewImageBytes)
	def(&l.Images, DefaultPreviewImages)
	def(&l.StructuredBytes, DefaultPreviewStructuredBytes)
	def(&l.BlockBytes, DefaultPreviewBlockBytes)
	def(&l.TotalChars, DefaultPreviewTotalChars)
	return l
}

// readWhole is the end of every omission notice: where the rest is.
const readWhole = "read the complete original result with source.read at originalResultSourceId"

// Preview returns a bounded copy of an MCP CallToolResult
// ({"content": [...], "structuredContent": ..., "isError": ...}).
//
// Text blocks share one budget of lim.TextChars characters. When their
// text is longer, the preview keeps the first two thirds of the budget
// and the last third, drops what lies between (whole blocks, or the part
// of a block), and puts a text block saying how many characters were
// omitted where the cut is. Cuts fall between characters, never inside a
// UTF-8 sequence or a surrogate pair. Image and audio blocks over
// lim.ImageBytes, or beyond the first lim.Images, become a text block
// naming their type, MIME type and size; other blocks over lim.BlockBytes
// become a text block naming their type (and URI, if any) and size.
// structuredContent over lim.StructuredBytes becomes
// {"_omitted": "N bytes; read the complete original result ..."}.
// Blocks and fields within the limits are passed through byte for byte.
//
// result must already be redacted (the daemon redacts before it calls
// Preview): the cuts here would otherwise leave pieces of a secret that
// redaction can no longer recognise.
//
// truncated reports that anything was cut or replaced. A result that is
// not a JSON object, or whose content is not an array or whose isError is
// not a boolean, is an error.
func Preview(result json.RawMessage, lim PreviewLimits) (content, structured json.RawMessage, isError bool, truncated bool, err error) {
	lim = lim.withDefaults()
	trimmed := bytes.TrimSpace(result)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return nil, nil, false, false, errors.New("reading tool result: not valid JSON")
		}
		return nil, nil, false, false, errors.New("reading tool result: not a JSON object")
	}
	// One decoding pass over what may be megabytes; the blocks stay raw,
	// as slices of result (not copies of it).
	var top struct {
		Content           []contracts.JSONSpan `json:"content"`
		StructuredContent contracts.JSONSpan   `json:"structuredContent"`
		IsError           bool                 `json:"isError"`
	}
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, nil, false, false, fmt.Errorf("reading tool result: %w", err)
	}
	isError = top.IsError
	if raw := json.RawMessage(top.StructuredContent); raw != nil && !isNull(raw) {
		structured = raw
		if len(raw) > lim.StructuredBytes {
			structured = omittedObject(fmt.Sprintf("%d bytes; %s", len(raw), readWhole))
			truncated = true
		}
	}
	if top.Content == nil {
		return nil, structured, isError, truncated, nil
	}
	blocks := make([]json.RawMessage, len(top.Content))
	for i, b := range top.Content {
		blocks[i] = json.RawMessage(b)
	}
	out, cut := previewBlocks(blocks, lim, lim.TotalChars-len(structured))
	// Joined by hand: json.Marshal would re-escape the blocks it passes
	// through.
	content = append(json.RawMessage{'['}, bytes.Join(out, []byte{','})...)
	content = append(content, ']')
	return content, structured, isError, truncated || cut, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// itemKind says which limit applies to one element of a previewed list.
type itemKind int

const (
	// itemText shares the text budget (lim.TextChars) with the other
	// text elements.
	itemText itemKind = iota
	// itemMedia (image, audio) is kept up to lim.ImageBytes, the first
	// lim.Images of them.
	itemMedia
	// itemBlob (binary resource contents) is never kept: a notice gives its
	// MIME type and size.
	itemBlob
	// itemOther is kept up to lim.BlockBytes of JSON.
	itemOther
)

// block is one decoded element of a previewed list; raw is kept to pass it
// through unchanged.
type block struct {
	raw  json.RawMessage
	kind itemKind
	typ  string // the content type ("text", "image", ...), if any
	text string // itemText
	// textJSON, when set, is an itemText's text as the JSON string it was
	// sent as (quotes included), left undecoded because it is long; text
	// is then empty. chars is the text's length in characters.
	textJSON contracts.JSONSpan
	chars    int
	mime     string // itemMedia, itemBlob
	data     int    // itemMedia: characters of base64 data
	// size is the decoded bytes of an itemBlob; -1 when its blob is not
	// valid base64.
	size int
	uri  string
	// inner is the content block inside a prompt message (raw is the
	// message), role the message's role.
	inner json.RawMessage
	role  string
}

// shape adapts the preview to one kind of list: tool result content
// blocks, resource contents, prompt messages.
type shape struct {
	// noun names the list's elements in the backstop notice.
	noun   string
	decode func(raw json.RawMessage) block
	// cut returns b with its text replaced.
	cut func(b block, text string) json.RawMessage
	// notice returns the element pikod puts where b was left out, or, for
	// a nil b, where text or elements were omitted.
	notice func(b *block, msg string) json.RawMessage
}

// toolShape previews a CallToolResult's content blocks: notices are text
// blocks.
var toolShape = shape{
	noun:   "content blocks",
	decode: decodeBlock,
	cut:    func(b block, text string) json.RawMessage { return withField(b.raw, "text", marshalString(text)) },
	notice: func(_ *block, msg string) json.RawMessage { return textBlock(msg) },
}

// decodeBlock reads a content block's type and text. A block that is not an
// object with a string type, or a text block without a string text, is
// passed on as an unknown block.
func decodeBlock(raw json.RawMessage) block {
	var f struct {
		Type     string             `json:"type"`
		Text     contracts.JSONSpan `json:"text"`
		Data     contracts.JSONSpan `json:"data"`
		MimeType string             `json:"mimeType"`
		URI      string             `json:"uri"`
		Resource struct {
			URI string `json:"uri"`
		} `json:"resource"`
	}
	err := json.Unmarshal(raw, &f)
	for _, v := range []contracts.JSONSpan{f.Text, f.Data} {
		if err == nil && len(v) > 0 && v[0] != '"' && string(v) != "null" {
			// As decoding it into a string would have said.
			err = errors.New("not a string")
		}
	}
	b := block{raw: raw, typ: f.Type, kind: itemOther, uri: f.URI}
	if f.Type == "resource" {
		b.uri = f.Resource.URI
	}
	switch {
	case err == nil && f.Type == "text" && len(f.Text) > 0 && f.Text[0] == '"':
		b.kind = itemText
		if len(f.Text) > decodeTextMax {
			// Counted and cut where it lies; only the kept ends are
			// decoded.
			b.textJSON = f.Text
		} else if err := json.Unmarshal(f.Text, &b.text); err != nil {
			b.kind = itemOther
		}
	case f.Type == "image" || f.Type == "audio":
		b.kind, b.mime, b.data = itemMedia, f.MimeType, stringChars(f.Data)
	}
	return b
}

// previewBlocks applies the limits to a tool result's content blocks.
func previewBlocks(raws []json.RawMessage, lim PreviewLimits, budget int) ([][]byte, bool) {
	return previewItems(raws, lim, budget, toolShape)
}

// previewItems applies the limits to the elements of a list in order;
// budget backstops the encoded size of the whole array.
func previewItems(raws []json.RawMessage, lim PreviewLimits, budget int, sh shape) ([][]byte, bool) {
	blocks := make([]block, len(raws))
	total := 0
	for i, raw := range raws {
		blocks[i] = sh.decode(raw)
		if blocks[i].kind == itemText {
			blocks[i].chars = blocks[i].textChars()
			total += blocks[i].chars
		}
	}
	cut := false
	// Text outside [head, tail) of the concatenated text is kept.
	head, tail := total, total
	if total > lim.TextChars {
		head = lim.TextChars * 2 / 3
		tail = total - (lim.TextChars - head)
		cut = true
	}
	out := make([][]byte, 0, len(blocks)+1)
	pos, media, noticed := 0, 0, false
	for _, b := range blocks {
		switch b.kind {
		case itemText:
			n := b.chars
			start, end := pos, pos+n
			pos = end
			if end <= head || start >= tail {
				out = append(out, b.raw)
				continue
			}
			// The block reaches into the omitted middle.
			if start < head {
				out = append(out, sh.cut(b, b.prefix(head-start)))
			}
			if !noticed {
				out = append(out, sh.notice(nil, fmt.Sprintf("[… %d characters omitted here; %s …]", tail-head, readWhole)))
				noticed = true
			}
			if end > tail {
				out = append(out, sh.cut(b, b.suffix(end-tail)))
			}
		case itemMedia:
			if b.data <= lim.ImageBytes && media < lim.Images {
				media++
				out = append(out, b.raw)
				continue
			}
			cut = true
			out = append(out, sh.notice(&b, fmt.Sprintf("[%s omitted: %s, %d bytes of base64 (about %d bytes); %s]",
				b.typ, clip(b.mime, 100), b.data, b.data/4*3, readWhole)))
		case itemBlob:
			cut = true
			size := fmt.Sprintf("%d bytes", b.size)
			if b.size < 0 {
				size = "not valid base64"
			}
			mime := b.mime
			if mime == "" {
				mime = "no MIME type"
			}
			out = append(out, sh.notice(&b, fmt.Sprintf("[binary contents omitted: %s, %s; %s]", clip(mime, 100), size, readWhole)))
		default:
			if len(b.raw) <= lim.BlockBytes {
				out = append(out, b.raw)
				continue
			}
			cut = true
			out = append(out, sh.notice(&b, fmt.Sprintf("[%s omitted%s: %d bytes of JSON; %s]",
				describeType(b.typ), describeURI(b), len(b.raw), readWhole)))
		}
	}
	// Backstop: stop before the array outgrows its budget and say so.
	size := 2
	for i, raw := range out {
		if size+len(raw)+1 > budget-256 {
			cut = true
			rest := len(out) - i
			out = append(out[:i], sh.notice(nil, fmt.Sprintf("[%d more %s omitted; %s]", rest, sh.noun, readWhole)))
			break
		}
		size += len(raw) + 1
	}
	return out, cut
}

func describeType(t string) string {
	if t == "" {
		return "content block"
	}
	return clip(t, 40) + " block"
}

func describeURI(b block) string {
	if b.uri == "" {
		return ""
	}
	return " (" + clip(b.uri, 200) + ")"
}

// clip shortens s to at most n characters.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return runePrefix(s, n) + "…"
}

// runePrefix returns the first n characters of s.
func runePrefix(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// runeSuffix returns the last n characters of s.
func runeSuffix(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// withField returns the JSON object raw with the member key set to value
// (added when absent), the other members kept as they were (keys in
// sorted order). raw that is not an object is returned unchanged.
func withField(raw json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return raw
	}
	fields[key] = value
	return objectOf(fields)
}

// objectOf encodes fields as a JSON object with sorted keys, the values
// byte for byte.
func objectOf(fields map[string]json.RawMessage) json.RawMessage {
	keys := slices.Sorted(maps.Keys(fields))
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, marshalString(k)...)
		out = append(out, ':')
		out = append(out, fields[k]...)
	}
	return append(out, '}')
}

// NoticeContent is a content array of one text block: pikod's own words
// where a result cannot be shown.
func NoticeContent(text string) json.RawMessage {
	return json.RawMessage("[" + string(textBlock(text)) + "]")
}

func textBlock(text string) json.RawMessage {
	return json.RawMessage(`{"type":"text","text":` + string(marshalString(text)) + `}`)
}

func omittedObject(msg string) json.RawMessage {
	return json.RawMessage(`{"_omitted":` + string(marshalString(msg)) + `}`)
}

// marshalString encodes s as a JSON string without HTML escaping, so the
// preview shows text as the server sent it.
func marshalString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // A string always encodes.
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// stringChars is the length of the string that raw (a JSON value) holds,
// as decoding it would give; 0 when raw is not a string. Base64 data
// holds no escapes, so this is its length without the quotes, decoded
// only when it does hold one.
func stringChars(raw contracts.JSONSpan) int {
	if len(raw) < 2 || raw[0] != '"' {
		return 0
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return len(raw) - 2
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	return len(s)
}

// decodeTextMax is the longest text block (as JSON) the preview decodes
// whole; a longer one is counted and cut without a decoded copy.
const decodeTextMax = 1 << 16

// textChars is an itemText's length in characters.
func (b *block) textChars() int {
	if b.textJSON != nil {
		n, _ := jsonStringOffset(b.textJSON, -1)
		return n
	}
	return utf8.RuneCountInString(b.text)
}

// prefix is the first n characters of the text.
func (b *block) prefix(n int) string {
	if b.textJSON == nil {
		return runePrefix(b.text, n)
	}
	_, off := jsonStringOffset(b.textJSON, n)
	var s string
	_ = json.Unmarshal(append(b.textJSON[:off:off], '"'), &s)
	return s
}

// suffix is the last n characters of the text.
func (b *block) suffix(n int) string {
	if b.textJSON == nil {
		return runeSuffix(b.text, n)
	}
	_, off := jsonStringOffset(b.textJSON, b.chars-n)
	var s string
	_ = json.Unmarshal(append([]byte{'"'}, b.textJSON[off:]...), &s)
	return s
}

// jsonStringOffset walks raw, a valid JSON string (quotes included), one
// decoded character at a time, as encoding/json decodes it (a surrogate
// pair is one character; a lone surrogate or an invalid byte is one
// U+FFFD). It stops before character stop (stop < 0: at the end) and
// returns how many characters it passed and the offset in raw it
// stopped at (before the closing quote at the end).
func jsonStringOffset(raw []byte, stop int) (chars, off int) {
	i, end := 1, len(raw)-1
	for i < end && chars != stop {
		switch c := raw[i]; {
		case c == '\\' && i+1 < end && raw[i+1] == 'u':
			r := hex4(raw, i+2)
			i += 6
			if utf16.IsSurrogate(r) && i+6 <= end && raw[i] == '\\' && raw[i+1] == 'u' {
				if r2 := hex4(raw, i+2); utf16.DecodeRune(r, r2) != utf8.RuneError {
					i += 6
				}
			}
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			_, size := utf8.DecodeRune(raw[i:end])
			i += size
		}
		chars++
	}
	return chars, min(i, end)
}

// hex4 reads the four hex digits of a \u escape at raw[i:]; -1 when they
// are not.
func hex4(raw []byte, i int) rune {
	if i+4 > len(raw) {
		return -1
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
