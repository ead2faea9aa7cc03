package mcpclient

import (
	"strings"
	"testing"
)

func TestSkillFrontmatterParse(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"scalars", "---\nname: git-workflow\ndescription: Follow the team's Git conventions\n---\n# body\n",
			`{"name":"git-workflow","description":"Follow the team's Git conventions"}`},
		{"crlf and comments", "---\r\n# a comment\r\nname: a  # trailing\r\n\r\ndescription: 'it''s'\r\n---\r\n",
			`{"name":"a","description":"it's"}`},
		{"double quoted escapes", "---\nname: x\ndescription: \"tab\\there \\\"q\\\" \\u00e9 # not a comment\"\n---\n",
			`{"name":"x","description":"tab\there \"q\" é # not a comment"}`},
		{"types of plain scalars", "---\nname: x\ndescription: d\nv: 1.0\nn: 12\nb: true\nnull1: ~\nempty:\ns: \"1.0\"\nhex: 0x1F\n---\n",
			`{"name":"x","description":"d","v":1.0,"n":12,"b":true,"null1":null,"empty":null,"s":"1.0","hex":31}`},
		{"plain scalars match their text as strings", "---\nname: x\ndescription: d\nversion: 1.0\nflag: yes\ndate: 2024-01-02\n---\n",
			`{"name":"x","description":"d","version":"1.0","flag":"yes","date":"2024-01-02"}`},
		{"nested map and lists", "---\nname: refunds\ndescription: d\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n  owner: acme\n  tags: [a, \"b c\"]\nallowed-tools:\n  - Bash\n  - Read\ncompact:\n- one\n- two\nlast: z\n---\n",
			`{"name":"refunds","description":"d","license":"Apache-2.0","metadata":{"version":"2.1.0","owner":"acme","tags":["a","b c"]},"allowed-tools":["Bash","Read"],"compact":["one","two"],"last":"z"}`},
		{"list of maps", "---\nname: x\ndescription: d\nsteps:\n  - id: one\n    run: a b\n  - id: two\n---\n",
			`{"name":"x","description":"d","steps":[{"id":"one","run":"a b"},{"id":"two"}]}`},
		{"flow map", "---\nname: x\ndescription: d\nm: {a: 1, 'b': \"two\"}\ne: []\n---\n",
			`{"name":"x","description":"d","m":{"a":1,"b":"two"},"e":[]}`},
		{"folded block", "---\nname: x\ndescription: >\n  Extract, fill and\n  assemble PDFs.\n\n  Second paragraph.\nnext: y\n---\n",
			`{"name":"x","description":"Extract, fill and assemble PDFs.\nSecond paragraph.\n","next":"y"}`},
		{"folded block with more indented lines", "---\nname: x\ndescription: >-\n  a\n  b\n    * one\n    * two\n  c\n---\n",
			`{"name":"x","description":"a b\n  * one\n  * two\nc"}`},
		{"literal block keep", "---\nname: x\ndescription: |+\n  line 1\n    line 2\n\n---\n",
			`{"name":"x","description":"line 1\n  line 2\n\n"}`},
		{"literal block strip", "---\nname: x\ndescription: |-\n  line 1\n  line 2\n\nother: o\n---\n",
			`{"name":"x","description":"line 1\nline 2","other":"o"}`},
		{"multi-line plain", "---\nname: x\ndescription: a long\n  description that\n\n  goes on\n---\n",
			`{"name":"x","description":"a long description that\ngoes on"}`},
		{"value on the next line", "---\nname: x\ndescription:\n  on its own line\n---\n",
			`{"name":"x","description":"on its own line"}`},
		{"urls and colons without spaces", "---\nname: x\ndescription: see https://example.com/a:b\n---\n",
			`{"name":"x","description":"see https://example.com/a:b"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := parseFrontmatter([]byte(tc.doc))
			if err != nil {
				t.Fatalf("parseFrontmatter: %v", err)
			}
			if d := frontmatterDiff(n, []byte(tc.want), 10); len(d) > 0 {
				t.Errorf("frontmatterDiff(%q) = %q, want none", tc.doc, d)
			}
		})
	}
}

func TestSkillFrontmatterRefused(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"no frontmatter", "# just markdown\n", `does not begin with a "---" line`},
		{"unclosed", "---\nname: x\n", `no closing "---"`},
		{"anchor", "---\nname: &a x\ndescription: d\n---\n", "anchors, aliases, tags"},
		{"alias", "---\nname: x\ndescription: *a\n---\n", "anchors, aliases, tags"},
		{"tag", "---\nname: !!str x\n---\n", "anchors, aliases, tags"},
		{"tab indentation", "---\nmetadata:\n\tv: 1\n---\n", "tab in the indentation"},
		{"duplicate", "---\nname: x\nname: y\n---\n", `the field "name" is given twice`},
		{"colon in plain value", "---\nname: x\ndescription: use it: now\n---\n", `": " inside an unquoted value`},
		{"multi-line quoted", "---\nname: \"x\n  y\"\n---\n", "multi-line quoted"},
		{"explicit indentation", "---\ndescription: |2\n  x\n---\n", "explicit indentation"},
		{"nested flow", "---\nm: [a, [b]]\n---\n", "nested flow"},
		{"bad indentation", "---\nname: x\n  description: d\n---\n", `": " inside an unquoted value`},
		{"stray indentation", "---\nmetadata:\n    a: 1\n  b: 2\n---\n", "unexpected indentation"},
		{"not a mapping", "---\n- a\n- b\n---\n", "not a mapping"},
		{"complex key", "---\n? a\n: b\n---\n", "not a mapping"},
		{"document end", "---\nname: x\n...\n", `"..." document end marker`},
		{"not utf-8", "---\nname: \xff\n---\n", "not valid UTF-8"},
		{"unknown escape", "---\nname: \"\\q\"\n---\n", `unknown escape \q`},
		{"empty", "---\n---\n", "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFrontmatter([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseFrontmatter(%q) = %v, want an error with %q", tc.doc, err, tc.want)
			}
		})
	}
}

func TestSkillFrontmatterDiff(t *testing.T) {
	doc := "---\nname: x\ndescription: \"1\"\nv: 2\nlist: [a, b]\nm:\n  k: v\n---\n"
	n, err := parseFrontmatter([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		entry string
		want  []string
	}{
		{`{"name":"x","description":"1","v":2,"list":["a","b"],"m":{"k":"v"}}`, nil},
		{`{"name":"x","description":1,"v":2,"list":["a","b"],"m":{"k":"v"}}`,
			[]string{`field "description" differs: SKILL.md has "1", the entry has 1`}},
		{`{"name":"y","description":"1","v":2.0,"list":["a","b"],"m":{"k":"v"},"extra":true}`,
			[]string{`field "extra" is in the entry but not in SKILL.md`, `field "name" differs: SKILL.md has "x", the entry has "y"`}},
		{`{"name":"x","description":"1","v":2,"list":["a"],"m":{"k":"w"}}`,
			[]string{`field "list" has 2 items in SKILL.md and 1 in the entry`, `field "m.k" differs: SKILL.md has "v", the entry has "w"`}},
		{`{"name":"x","description":"1","v":2,"list":["a","b"]}`, []string{`field "m" is in SKILL.md but not in the entry`}},
	}
	for _, tc := range tests {
		got := frontmatterDiff(n, []byte(tc.entry), 10)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("frontmatterDiff(%s) = %q, want %q", tc.entry, got, tc.want)
		}
	}
}

func FuzzSkillFrontmatter(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: >\n  a\n  b\nm: {a: 1}\nl:\n- a\n---\n"))
	f.Add([]byte("---\nname: \"\\u00e9\"\nx: |+\n\n  y\n\n---\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		n, err := parseFrontmatter(doc)
		if err == nil && n.kind != fmMap {
			t.Fatalf("parseFrontmatter(%q) gave a %v, not a mapping", doc, n.kind)
		}
	})
}
