package present

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func textResult(texts ...string) string {
	var blocks []string
	for _, t := range texts {
		blocks = append(blocks, `{"type":"text","text":`+string(marshalString(t))+`}`)
	}
	return `{"content":[` + strings.Join(blocks, ",") + `]}`
}

type previewBlock struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Data        string          `json:"data"`
	Annotations json.RawMessage `json:"annotations"`
}

func decodePreview(t *testing.T, content json.RawMessage) []previewBlock {
	t.Helper()
	var out []previewBlock
	if err := json.Unmarshal(content, &out); err != nil {
		t.Fatalf("preview content is not a block array: %v\n%s", err, content)
	}
	return out
}

func TestPreview(t *testing.T) {
	img := func(n int) string {
		return `{"type":"image","mimeType":"image/png","data":"` + strings.Repeat("A", n) + `"}`
	}
	big := strings.Repeat("a", 20_000) + strings.Repeat("b", 20_000) + strings.Repeat("c", 20_000)
	tests := []struct {
		name      string
		result    string
		lim       PreviewLimits
		truncated bool
		isError   bool
		check     func(t *testing.T, content, structured json.RawMessage)
	}{{
		name:   "small result unchanged",
		result: `{"content":[{"type":"text","text":"a <b> & \"c\"","annotations":{"priority":1}},` + img(8) + `],"structuredContent":{"x":[1, 2]}}`,
		check: func(t *testing.T, content, structured json.RawMessage) {
			want := `[{"type":"text","text":"a <b> & \"c\"","annotations":{"priority":1}},` + img(8) + `]`
			if string(content) != want {
				t.Errorf("content = %s, want %s", content, want)
			}
			if string(structured) != `{"x":[1, 2]}` {
				t.Errorf("structured = %s, want it unchanged", structured)
			}
		},
	}, {
		name:      "isError passed through",
		result:    `{"content":[{"type":"text","text":"boom"}],"isError":true}`,
		isError:   true,
		truncated: false,
	}, {
		name:   "no content",
		result: `{"structuredContent":null,"isError":false}`,
		check: func(t *testing.T, content, structured json.RawMessage) {
			if content != nil || structured != nil {
				t.Errorf("content %s structured %s, want both absent", content, structured)
			}
		},
	}, {
		name:      "big text cut into head and tail",
		result:    textResult(big),
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			if len(b) != 3 {
				t.Fatalf("%d blocks, want head, notice, tail", len(b))
			}
			if b[0].Text != big[:16_000] || b[2].Text != big[len(big)-8_000:] {
				t.Errorf("head %d chars, tail %d chars; want the first 16000 and last 8000", len(b[0].Text), len(b[2].Text))
			}
			if !strings.Contains(b[1].Text, "36000 characters omitted") || !strings.Contains(b[1].Text, "originalResultSourceId") {
				t.Errorf("notice = %q", b[1].Text)
			}
		},
	}, {
		name:      "cut across blocks keeps their other fields",
		result:    `{"content":[{"type":"text","text":"` + strings.Repeat("x", 10) + `"},{"type":"text","text":"` + strings.Repeat("y", 10) + `","annotations":{"audience":["user"]}},{"type":"text","text":"` + strings.Repeat("z", 10) + `"}]}`,
		lim:       PreviewLimits{TextChars: 18},
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			got := []string{}
			for _, x := range b {
				got = append(got, x.Text)
			}
			if len(b) != 4 || b[0].Text != strings.Repeat("x", 10) || b[1].Text != "yy" ||
				!strings.Contains(b[2].Text, "12 characters omitted") || b[3].Text != "zzzzzz" {
				t.Fatalf("blocks = %q", got)
			}
			if string(b[1].Annotations) != `{"audience":["user"]}` {
				t.Errorf("cut block annotations = %s", b[1].Annotations)
			}
		},
	}, {
		name:      "cuts fall between characters",
		result:    textResult(strings.Repeat("é😀", 100)),
		lim:       PreviewLimits{TextChars: 31},
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			if len(b) != 3 || b[0].Text != strings.Repeat("é😀", 10) || b[2].Text != "😀"+strings.Repeat("é😀", 5) {
				t.Errorf("blocks = %q", []string{b[0].Text, b[len(b)-1].Text})
			}
			for _, x := range b {
				if !utf8.ValidString(x.Text) {
					t.Errorf("invalid UTF-8 in %q", x.Text)
				}
			}
		},
	}, {
		name:      "big image replaced",
		result:    `{"content":[` + img(300<<10) + `]}`,
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			if len(b) != 1 || b[0].Type != "text" || !strings.Contains(b[0].Text, "image/png") ||
				!strings.Contains(b[0].Text, fmt.Sprint(300<<10)) {
				t.Errorf("blocks = %+v", b)
			}
		},
	}, {
		name:      "fifth image replaced",
		result:    `{"content":[` + strings.Repeat(img(4)+",", 4) + img(4) + `]}`,
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			if len(b) != 5 || b[3].Type != "image" || b[4].Type != "text" {
				t.Errorf("blocks = %+v", b)
			}
		},
	}, {
		name:      "big resource replaced with its uri",
		result:    `{"content":[{"type":"resource","resource":{"uri":"file:///big.txt","text":"` + strings.Repeat("r", 40<<10) + `"}},{"type":"resource_link","uri":"file:///small","name":"s"}]}`,
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			b := decodePreview(t, content)
			if len(b) != 2 || b[0].Type != "text" || !strings.Contains(b[0].Text, "file:///big.txt") || b[1].Type != "resource_link" {
				t.Errorf("blocks = %+v", b)
			}
		},
	}, {
		name:      "big structuredContent replaced",
		result:    `{"content":[],"structuredContent":{"rows":"` + strings.Repeat("s", 40<<10) + `"}}`,
		truncated: true,
		check: func(t *testing.T, content, structured json.RawMessage) {
			var m map[string]string
			if err := json.Unmarshal(structured, &m); err != nil || len(m) != 1 ||
				!strings.HasPrefix(m["_omitted"], fmt.Sprint(40<<10+11)+" bytes") {
				t.Errorf("structured = %s (%v)", structured, err)
			}
			if string(content) != `[]` {
				t.Errorf("content = %s", content)
			}
		},
	}, {
		name:      "many small blocks hit the total backstop",
		result:    `{"content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"resource_link","uri":"u","name":"n"},`, 100_000), ",") + `]}`,
		truncated: true,
		check: func(t *testing.T, content, _ json.RawMessage) {
			if len(content) > DefaultPreviewTotalChars {
				t.Errorf("content is %d bytes, over the %d backstop", len(content), DefaultPreviewTotalChars)
			}
			b := decodePreview(t, content)
			if last := b[len(b)-1]; !strings.Contains(last.Text, "more content blocks omitted") {
				t.Errorf("last block = %+v", last)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, structured, isError, truncated, err := Preview(json.RawMessage(tc.result), tc.lim)
			if err != nil {
				t.Fatalf("Preview: %v", err)
			}
			if truncated != tc.truncated || isError != tc.isError {
				t.Errorf("truncated, isError = %v, %v; want %v, %v", truncated, isError, tc.truncated, tc.isError)
			}
			if content != nil && !json.Valid(content) {
				t.Fatalf("content is not valid JSON: %.200s", content)
			}
			if tc.check != nil {
				tc.check(t, content, structured)
			}
		})
	}
}

func TestPreviewRejects(t *testing.T) {
	for _, in := range []string{``, `nope`, `[]`, `null`, `"x"`, `{"content":{}}`, `{"content":[],"isError":"yes"}`, `{"content":[`} {
		if _, _, _, _, err := Preview(json.RawMessage(in), PreviewLimits{}); err == nil {
			t.Errorf("Preview(%q) succeeded, want an error", in)
		}
	}
}

// A long text block is counted and cut without being decoded whole: the
// characters, the head and the tail are exactly those of the decoded text,
// whatever escapes, surrogate pairs or invalid bytes it is sent with.
func TestPreviewLongTextUndecoded(t *testing.T) {
	pieces := []string{`a`, `é`, `😀`, `\n`, `\"`, `\\`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\ude00`, `\u0041`, "\xff", `\/`, `日本`, ` `}
	for seed := range 40 {
		var sb strings.Builder
		sb.WriteByte('"')
		for i := range 3000 + seed*50 {
			sb.WriteString(pieces[(i*7+seed*13+i/11)%len(pieces)])
		}
		sb.WriteByte('"')
		raw := []byte(sb.String())
		var decoded string
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatalf("seed %d: the test's string is not JSON: %v", seed, err)
		}
		b := block{kind: itemText, textJSON: raw}
		b.chars = b.textChars()
		if want := utf8.RuneCountInString(decoded); b.chars != want {
			t.Fatalf("seed %d: %d characters counted, %d decoded", seed, b.chars, want)
		}
		for _, n := range []int{0, 1, 2, 7, 100, b.chars / 2, b.chars - 1, b.chars} {
			if got, want := b.prefix(n), runePrefix(decoded, n); got != want {
				t.Fatalf("seed %d: prefix(%d) = %q…, want %q…", seed, n, clip(got, 20), clip(want, 20))
			}
			if got, want := b.suffix(n), runeSuffix(decoded, n); got != want {
				t.Fatalf("seed %d: suffix(%d) = …%q, want …%q", seed, n, got[max(0, len(got)-40):], want[max(0, len(want)-40):])
			}
		}
	}
	// And through Preview: a 200,000-character text is cut to the same
	// preview as one under the decoding limit would be.
	long := strings.Repeat("0123456789\u00e9\n", 200_000/12)
	res, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": long}}})
	if err != nil {
		t.Fatal(err)
	}
	content, _, _, truncated, err := Preview(res, PreviewLimits{})
	if err != nil || !truncated {
		t.Fatalf("Preview: truncated %v, %v", truncated, err)
	}
	var blocks []struct{ Text string }
	if err := json.Unmarshal(content, &blocks); err != nil || len(blocks) != 3 {
		t.Fatalf("preview content %d blocks, %v; want head, notice, tail", len(blocks), err)
	}
	lim := PreviewLimits{}.withDefaults()
	head := lim.TextChars * 2 / 3
	if blocks[0].Text != runePrefix(long, head) || blocks[2].Text != runeSuffix(long, lim.TextChars-head) {
		t.Errorf("head or tail of the long text differ from the decoded text's")
	}
}
