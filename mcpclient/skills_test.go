package mcpclient

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestSkillEntry(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	file := func(uri string) string { return fmt.Sprintf(`{"uri":%q,"digest":%q,"size":10}`, uri, d) }
	entry := func(uri, name string, files ...string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"uri":%q,"frontmatter":{"name":%q,"description":"d"},"resources":[%s]}`, uri, name, strings.Join(files, ",")))
	}
	const u = "skill://acme/refunds/SKILL.md"
	tests := []struct {
		name    string
		raw     json.RawMessage
		problem string
	}{
		{"valid", entry(u, "refunds", file(u), file("skill://acme/refunds/examples/a.md")), ""},
		{"name is not the last segment", entry(u, "other", file(u)), "is not its name"},
		{"no SKILL.md in resources", entry(u, "refunds", file("skill://acme/refunds/a.md")), "do not list its SKILL.md"},
		{"file outside the skill", entry(u, "refunds", file(u), file("skill://acme/other/a.md")), "not a file of the skill's directory"},
		{"dot-dot", entry(u, "refunds", file(u), file("skill://acme/refunds/../x.md")), "not a file of the skill's directory"},
		{"listed twice", entry(u, "refunds", file(u), file(u)), "listed twice"},
		{"bad digest", json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":[{"uri":"skill://a/SKILL.md","digest":"sha256:ABC","size":1}]}`), "digest"},
		{"negative size", json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":[{"uri":"skill://a/SKILL.md","digest":"` + d + `","size":-1}]}`), "size"},
		{"no resources", json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"}}`), "neither a list of files"},
		{"dynamic", json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":"dynamic"}`), `"dynamic"`},
		{"no description", json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a"},"resources":[]}`), `no string "description"`},
		{"not SKILL.md", entry("skill://a/README.md", "a", file("skill://a/README.md")), "does not end in /SKILL.md"},
	}
	for _, tc := range tests {
		e := parseSkillEntry(tc.raw)
		if (tc.problem == "") != (e.Problem == "") || !strings.Contains(e.Problem, tc.problem) {
			t.Errorf("%s: parseSkillEntry problem %q, want %q", tc.name, e.Problem, tc.problem)
		}
		if tc.problem == "" && (len(e.Files) != 2 || e.Bytes != 20 || e.Digest == "" || e.Files[1].Path != "examples/a.md") {
			t.Errorf("%s: parseSkillEntry = %+v", tc.name, e)
		}
	}
	many := []string{file(u)}
	for i := range 512 {
		many = append(many, file(fmt.Sprintf("skill://acme/refunds/f%d", i)))
	}
	if e := parseSkillEntry(entry(u, "refunds", many...)); !e.tooLarge {
		t.Errorf("an entry of 513 files: %+v, want too large", e.Problem)
	}
}

func TestSkillSetDigest(t *testing.T) {
	a := parseSkillEntry(json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":[` +
		`{"uri":"skill://a/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":1},{"uri":"skill://a/b","digest":"sha256:` + strings.Repeat("1", 64) + `","size":1}]}`))
	b := parseSkillEntry(json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"other"},"resources":[` +
		`{"uri":"skill://a/b","digest":"sha256:` + strings.Repeat("1", 64) + `","size":1},{"uri":"skill://a/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":1}]}`))
	c := parseSkillEntry(json.RawMessage(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":[` +
		`{"uri":"skill://a/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":1},{"uri":"skill://a/b","digest":"sha256:` + strings.Repeat("2", 64) + `","size":1}]}`))
	if a.Digest == "" || a.Digest != b.Digest || a.Digest == c.Digest {
		t.Errorf("set digests %q %q %q: want the order not to matter and a rotated file to", a.Digest, b.Digest, c.Digest)
	}
}
