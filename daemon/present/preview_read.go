package present

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// MaxPromptDescriptionChars bounds a prompt result's description in a
// preview.
const MaxPromptDescriptionChars = 4000

// PreviewResource returns a bounded copy of the contents of an MCP
// ReadResourceResult ({"contents": [...]}), with the same limits and
// notices as Preview: text contents share lim.TextChars and a long text is
// cut to a head and a tail around a notice. Binary contents (blob) are
// never passed on: each is replaced by an element with its uri and
// mimeType, blobBytes (its decoded size; -1 when the blob is not valid
// base64) and a notice. An element carrying "notice" is pikod's: it stands
// where something was left out. Other elements over lim.BlockBytes become
// a notice with their uri.
//
// result must already be redacted. truncated reports that anything was cut
// or replaced (always, when there are binary contents). A result that is
// not a JSON object, or whose contents is not an array, is an error.
func PreviewResource(result json.RawMessage, lim PreviewLimits) (contents json.RawMessage, truncated bool, err error) {
	lim = lim.withDefaults()
	var top struct {
		Contents *[]json.RawMessage `json:"contents"`
	}
	if err := decodeObject(result, &top, "resource read result"); err != nil {
		return nil, false, err
	}
	if top.Contents == nil {
		return nil, false, errors.New(`reading resource read result: no "contents" array`)
	}
	out, cut := previewItems(*top.Contents, lim, lim.TotalChars, resourceShape)
	return joinArray(out), cut, nil
}

// PreviewPrompt returns a bounded copy of an MCP GetPromptResult
// ({"description"?, "messages": [{"role", "content"}]}), made safe to
// show: the message contents share the limits of Preview (text cut to a
// head and a tail around a notice, large images, audio and embedded
// resources replaced by notices), and then every string in the messages,
// keys included, and the description pass through contracts.SafeText, so
// that nothing in them can act on a terminal or hide text from a reader.
// A message carrying "notice" (with or without a role) is pikod's: it
// stands where something was left out. The description is cut to
// MaxPromptDescriptionChars.
//
// The messages are the server's data, shown as evidence; nothing here
// makes them instructions. result must already be redacted.
func PreviewPrompt(result json.RawMessage, lim PreviewLimits) (description string, messages json.RawMessage, truncated bool, err error) {
	lim = lim.withDefaults()
	var top struct {
		Description *string            `json:"description"`
		Messages    *[]json.RawMessage `json:"messages"`
	}
	if err := decodeObject(result, &top, "prompt result"); err != nil {
		return "", nil, false, err
	}
	if top.Messages == nil {
		return "", nil, false, errors.New(`reading prompt result: no "messages" array`)
	}
	out, cut := previewItems(*top.Messages, lim, lim.TotalChars, promptShape)
	messages, err = safeJSON(joinArray(out))
	if err != nil {
		return "", nil, false, fmt.Errorf("reading prompt result: %w", err)
	}
	if top.Description != nil {
		description = contracts.SafeText(*top.Description, contracts.Lines, MaxPromptDescriptionChars)
		if description != contracts.SafeText(*top.Description, contracts.Lines, 0) {
			cut = true
		}
	}
	return description, messages, cut, nil
}

// decodeObject decodes raw, which must be one JSON object, into v.
func decodeObject(raw json.RawMessage, v any, what string) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return fmt.Errorf("reading %s: not valid JSON", what)
		}
		return fmt.Errorf("reading %s: not a JSON object", what)
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// joinArray joins encoded elements into a JSON array by hand: json.Marshal
// would re-escape the elements it passes through.
func joinArray(items [][]byte) json.RawMessage {
	out := append(json.RawMessage{'['}, bytes.Join(items, []byte{','})...)
	return append(out, ']')
}

// resourceShape previews resource contents ({"uri", "mimeType", "text"}
// or {"uri", "mimeType", "blob"}).
var resourceShape = shape{
	noun: "contents",
	decode: func(raw json.RawMessage) block {
		var f struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		}
		b := block{raw: raw, kind: itemOther, typ: "resource contents"}
		if json.Unmarshal(raw, &f) != nil {
			return b
		}
		b.uri, b.mime = f.URI, f.MimeType
		switch {
		case f.Text != nil:
			b.kind, b.text = itemText, *f.Text
		case f.Blob != nil:
			b.kind, b.size = itemBlob, blobSize(*f.Blob)
		}
		return b
	},
	cut: func(b block, text string) json.RawMessage { return withField(b.raw, "text", marshalString(text)) },
	notice: func(b *block, msg string) json.RawMessage {
		fields := map[string]json.RawMessage{"notice": marshalString(msg)}
		if b != nil {
			if b.uri != "" {
				fields["uri"] = marshalString(b.uri)
			}
			if b.mime != "" {
				fields["mimeType"] = marshalString(clip(b.mime, 200))
			}
			if b.kind == itemBlob {
				fields["blobBytes"] = json.RawMessage(fmt.Sprint(b.size))
			}
		}
		return objectOf(fields)
	},
}

// blobSize is the decoded size of base64 data, or -1 when it is not valid
// base64 (standard alphabet, padded or not; whitespace is not allowed).
func blobSize(data string) int {
	enc := base64.StdEncoding
	if !strings.HasSuffix(data, "=") && len(data)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n, err := enc.Decode(make([]byte, enc.DecodedLen(len(data))), []byte(data))
	if err != nil {
		return -1
	}
	return n
}

// promptShape previews prompt messages ({"role", "content"}, content one
// content block).
var promptShape = shape{
	noun: "messages",
	decode: func(raw json.RawMessage) block {
		var f struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &f) != nil || len(bytes.TrimSpace(f.Content)) == 0 || bytes.TrimSpace(f.Content)[0] != '{' {
			return block{raw: raw, kind: itemOther, typ: "message"}
		}
		b := decodeBlock(f.Content)
		b.inner, b.raw, b.role = b.raw, raw, f.Role
		return b
	},
	cut: func(b block, text string) json.RawMessage {
		return withField(b.raw, "content", withField(b.inner, "text", marshalString(text)))
	},
	notice: func(b *block, msg string) json.RawMessage {
		fields := map[string]json.RawMessage{"notice": marshalString(msg)}
		if b != nil && b.role != "" {
			fields["role"] = marshalString(b.role)
		}
		return objectOf(fields)
	},
}

// safeJSON re-encodes raw with every string, and every object key, made
// safe by contracts.SafeText (keys as exact tokens); numbers keep their
// text.
func safeJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(safeValue(v)); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func safeValue(v any) any {
	switch x := v.(type) {
	case string:
		return contracts.SafeText(x, contracts.Lines, 0)
	case []any:
		for i := range x {
			x[i] = safeValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[contracts.SafeText(k, contracts.Exact, 0)] = safeValue(e)
		}
		return out
	}
	return v
}
