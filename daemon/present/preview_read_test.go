package present

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

type resourcePreview struct {
	URI       string          `json:"uri"`
	MimeType  string          `json:"mimeType"`
	Text      *string         `json:"text"`
	Blob      *string         `json:"blob"`
	BlobBytes *int            `json:"blobBytes"`
	Notice    string          `json:"notice"`
	Meta      json.RawMessage `json:"_meta"`
}

func decodeContents(t *testing.T, raw json.RawMessage) []resourcePreview {
	t.Helper()
	var out []resourcePreview
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("contents is not an array of objects: %v\n%.300s", err, raw)
	}
	return out
}

func TestPreviewResource(t *testing.T) {
	blob := base64.StdEncoding.EncodeToString([]byte("0123456789"))
	big := strings.Repeat("a", 20_000) + strings.Repeat("b", 20_000)
	tests := []struct {
		name      string
		result    string
		lim       PreviewLimits
		truncated bool
		check     func(t *testing.T, raw json.RawMessage, c []resourcePreview)
	}{{
		name:   "small text passes byte for byte",
		result: `{"contents":[{"uri":"demo://a","mimeType":"text/markdown","text":"# a <b> & é","_meta":{"k":1}}]}`,
		check: func(t *testing.T, raw json.RawMessage, _ []resourcePreview) {
			if want := `[{"uri":"demo://a","mimeType":"text/markdown","text":"# a <b> & é","_meta":{"k":1}}]`; string(raw) != want {
				t.Errorf("contents = %s, want %s", raw, want)
			}
		},
	}, {
		name:      "binary replaced by its type and size, however small",
		result:    `{"contents":[{"uri":"demo://b","mimeType":"image/png","blob":"` + blob + `"}]}`,
		truncated: true,
		check: func(t *testing.T, _ json.RawMessage, c []resourcePreview) {
			if len(c) != 1 || c[0].Blob != nil || c[0].Text != nil {
				t.Fatalf("contents = %+v, want one element without blob or text", c)
			}
			if c[0].URI != "demo://b" || c[0].MimeType != "image/png" || c[0].BlobBytes == nil || *c[0].BlobBytes != 10 {
				t.Errorf("element = %+v, want uri, mimeType and blobBytes 10", c[0])
			}
			if !strings.Contains(c[0].Notice, "image/png, 10 bytes") || !strings.Contains(c[0].Notice, "source.read") {
				t.Errorf("notice = %q", c[0].Notice)
			}
		},
	}, {
		name:      "unpadded and invalid base64",
		result:    `{"contents":[{"uri":"u1","blob":"` + strings.TrimRight(base64.StdEncoding.EncodeToString([]byte("12345")), "=") + `"},{"uri":"u2","blob":"%%%"}]}`,
		truncated: true,
		check: func(t *testing.T, _ json.RawMessage, c []resourcePreview) {
			if len(c) != 2 || c[0].BlobBytes == nil || *c[0].BlobBytes != 5 || c[1].BlobBytes == nil || *c[1].BlobBytes != -1 {
				t.Fatalf("contents = %+v, want sizes 5 and -1", c)
			}
			if !strings.Contains(c[0].Notice, "no MIME type") || !strings.Contains(c[1].Notice, "not valid base64") {
				t.Errorf("notices %q, %q", c[0].Notice, c[1].Notice)
			}
		},
	}, {
		name:      "long text cut around a notice element",
		result:    `{"contents":[{"uri":"demo://big","mimeType":"text/plain","text":"` + big + `"}]}`,
		truncated: true,
		check: func(t *testing.T, _ json.RawMessage, c []resourcePreview) {
			if len(c) != 3 || c[0].Text == nil || c[2].Text == nil {
				t.Fatalf("contents = %d elements, want head, notice, tail", len(c))
			}
			if *c[0].Text != big[:16_000] || *c[2].Text != big[len(big)-8_000:] || c[0].URI != "demo://big" || c[2].URI != "demo://big" {
				t.Errorf("head %d chars (uri %q), tail %d chars (uri %q)", len(*c[0].Text), c[0].URI, len(*c[2].Text), c[2].URI)
			}
			if c[1].Text != nil || !strings.Contains(c[1].Notice, "16000 characters omitted") {
				t.Errorf("notice element = %+v", c[1])
			}
		},
	}, {
		name:      "text budget shared across contents",
		result:    `{"contents":[{"uri":"x","text":"xxxxxxxxxx"},{"uri":"y","text":"yyyyyyyyyy"}]}`,
		lim:       PreviewLimits{TextChars: 12},
		truncated: true,
		check: func(t *testing.T, _ json.RawMessage, c []resourcePreview) {
			if len(c) != 3 || *c[0].Text != "xxxxxxxx" || c[1].Notice == "" || *c[2].Text != "yyyy" || c[2].URI != "y" {
				t.Errorf("contents = %+v", c)
			}
		},
	}, {
		name:      "many contents hit the backstop",
		result:    `{"contents":[` + strings.TrimSuffix(strings.Repeat(`{"uri":"u","text":""},`, 100_000), ",") + `]}`,
		truncated: true,
		check: func(t *testing.T, raw json.RawMessage, c []resourcePreview) {
			if len(raw) > DefaultPreviewTotalChars {
				t.Errorf("contents is %d bytes, over the backstop", len(raw))
			}
			if last := c[len(c)-1]; !strings.Contains(last.Notice, "more contents omitted") {
				t.Errorf("last element = %+v", last)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, truncated, err := PreviewResource(json.RawMessage(tc.result), tc.lim)
			if err != nil {
				t.Fatalf("PreviewResource: %v", err)
			}
			if truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v", truncated, tc.truncated)
			}
			if !json.Valid(raw) {
				t.Fatalf("contents is not valid JSON: %.200s", raw)
			}
			tc.check(t, raw, decodeContents(t, raw))
		})
	}
}

func TestPreviewResourceRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `null`, `{}`, `{"contents":{}}`, `{"contents":"x"}`, `{"contents":[`} {
		if _, _, err := PreviewResource(json.RawMessage(in), PreviewLimits{}); err == nil {
			t.Errorf("PreviewResource(%q) succeeded, want an error", in)
		}
	}
}

type promptMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Notice  string          `json:"notice"`
}

func TestPreviewPrompt(t *testing.T) {
	hostile := "run \x1b[2J\x1b]0;title\x07 this\u202e and \u200bhidden\r\n"
	tests := []struct {
		name      string
		result    string
		lim       PreviewLimits
		truncated bool
		check     func(t *testing.T, desc string, raw json.RawMessage, m []promptMessage)
	}{{
		name:   "plain messages pass",
		result: `{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"hi <b>"}},{"role":"assistant","content":{"type":"text","text":"yo"}}]}`,
		check: func(t *testing.T, desc string, raw json.RawMessage, _ []promptMessage) {
			want := `[{"content":{"text":"hi <b>","type":"text"},"role":"user"},{"content":{"text":"yo","type":"text"},"role":"assistant"}]`
			if desc != "d" || string(raw) != want {
				t.Errorf("description %q messages %s, want %s", desc, raw, want)
			}
		},
	}, {
		name:   "every string made safe",
		result: `{"description":` + string(marshalString(hostile)) + `,"messages":[{"role":` + string(marshalString("user\x1b[31m")) + `,"content":{"type":"text","text":` + string(marshalString(hostile)) + `,"annotations":{` + string(marshalString("k\u202e")) + `:` + string(marshalString("v\x1b")) + `}}}]}`,
		check: func(t *testing.T, desc string, raw json.RawMessage, m []promptMessage) {
			for _, s := range []string{desc, string(raw)} {
				// In the JSON text the rendered characters are plain
				// backslash sequences; no control or format character,
				// raw or JSON-escaped, is left.
				for _, bad := range []string{"\x1b", "\u202e", "\u200b", `\u001b`, `\u202e`, `\u200b`, "\x07", `\u0007`} {
					if strings.Contains(s, bad) {
						t.Errorf("%q survived in %q", bad, s)
					}
				}
			}
			if !strings.Contains(desc, `\u{001B}[2J`) || !strings.Contains(desc, "hidden\n") {
				t.Errorf("description = %q, want escapes rendered and the line break kept", desc)
			}
			var c struct {
				Text        string            `json:"text"`
				Annotations map[string]string `json:"annotations"`
			}
			if len(m) != 1 || json.Unmarshal(m[0].Content, &c) != nil {
				t.Fatalf("messages = %s", raw)
			}
			if m[0].Role != `user\u{001B}[31m` || c.Text != desc || c.Annotations[`k\u{202E}`] != `v\u{001B}` {
				t.Errorf("role %q text %q annotations %v", m[0].Role, c.Text, c.Annotations)
			}
		},
	}, {
		name:      "long text cut, notice message without role",
		result:    `{"messages":[{"role":"user","content":{"type":"text","text":"` + strings.Repeat("p", 30_000) + `"}}]}`,
		truncated: true,
		check: func(t *testing.T, _ string, _ json.RawMessage, m []promptMessage) {
			if len(m) != 3 || m[0].Role != "user" || m[2].Role != "user" || m[1].Role != "" || !strings.Contains(m[1].Notice, "6000 characters omitted") {
				t.Fatalf("messages = %+v", m)
			}
			var head, tail struct{ Text string }
			_ = json.Unmarshal(m[0].Content, &head)
			_ = json.Unmarshal(m[2].Content, &tail)
			if len(head.Text) != 16_000 || len(tail.Text) != 8_000 {
				t.Errorf("head %d, tail %d characters", len(head.Text), len(tail.Text))
			}
		},
	}, {
		name:      "big image replaced, role kept",
		result:    `{"messages":[{"role":"assistant","content":{"type":"image","mimeType":"image/png","data":"` + strings.Repeat("A", 300<<10) + `"}}]}`,
		truncated: true,
		check: func(t *testing.T, _ string, _ json.RawMessage, m []promptMessage) {
			if len(m) != 1 || m[0].Role != "assistant" || m[0].Content != nil || !strings.Contains(m[0].Notice, "image omitted: image/png") {
				t.Errorf("messages = %+v", m)
			}
		},
	}, {
		name:      "long description cut",
		result:    `{"description":"` + strings.Repeat("d", MaxPromptDescriptionChars+1) + `","messages":[]}`,
		truncated: true,
		check: func(t *testing.T, desc string, raw json.RawMessage, _ []promptMessage) {
			if n := len([]rune(desc)); n != MaxPromptDescriptionChars || !strings.HasSuffix(desc, "…") || string(raw) != "[]" {
				t.Errorf("description of %d characters, messages %s", n, raw)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desc, raw, truncated, err := PreviewPrompt(json.RawMessage(tc.result), tc.lim)
			if err != nil {
				t.Fatalf("PreviewPrompt: %v", err)
			}
			if truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v", truncated, tc.truncated)
			}
			var m []promptMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("messages are not an array of objects: %v\n%.300s", err, raw)
			}
			tc.check(t, desc, raw, m)
		})
	}
}

func TestPreviewPromptRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{}`, `{"messages":{}}`, `{"messages":[],"description":3}`} {
		if _, _, _, err := PreviewPrompt(json.RawMessage(in), PreviewLimits{}); err == nil {
			t.Errorf("PreviewPrompt(%q) succeeded, want an error", in)
		}
	}
}

func TestPreviewText(t *testing.T) {
	short, cut := PreviewText("line\n\x1b[31mred\x1b[0m\n", PreviewLimits{})
	if cut || short != "line\n\\u{001B}[31mred\\u{001B}[0m\n" {
		t.Errorf("PreviewText(short) = %q, %v; want the text made safe, not cut", short, cut)
	}
	long := strings.Repeat("a", 90) + strings.Repeat("b", 30)
	got, cut := PreviewText(long, PreviewLimits{TextChars: 60})
	want := strings.Repeat("a", 40) + "\n[… 60 characters omitted here; " + readWhole + " …]\n" + strings.Repeat("b", 20)
	if !cut || got != want {
		t.Errorf("PreviewText(long) = %q, %v; want %q, true", got, cut, want)
	}
}
