package contracts

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDigestsFrozen: every digest pikod stores keeps its value for the
// same input, byte for byte. These values were computed by the code as it
// was before the digests came here; a change of encoding would unpin
// every trusted tool and void every pending approval, so it fails here
// first.
func TestDigestsFrozen(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number","minimum":1.50}},"x":"<&>"}`)
	out := json.RawMessage(`{"type":"object"}`)
	ann := json.RawMessage(`{"readOnlyHint":true}`)
	fp := Fingerprints{Settings: "set1", CredentialGeneration: 3, ConnectionGeneration: 7, Tool: "tool1"}
	args := []byte(`{"path":"/tmp/x"}`)
	tool := ToolDigest("write", "Write", "writes a file", in, out, ann)
	for _, c := range []struct{ what, got, want string }{
		{"ToolDigest", tool, "c451046e3b9b36b92bbbc6687733dfbaee46b9110e21603784a39b0e59718e10"},
		{"ToolDigest of a bare tool", ToolDigest("t", "", "", nil, nil, nil), "2823bc3d586fe3c0820acf87fe5f0a33935a77072e26bee203eaab991b64ddbe"},
		{"ToolExecutionDigest", ToolExecutionDigest(tool, json.RawMessage(`{"taskSupport":"optional"}`)), "29717ae226a5e14291831d0bbf518b0d89f1971dc8d6860e362047bd236020cf"},
		{"ToolExecutionDigest without execution", ToolExecutionDigest(tool, nil), tool},
		{"CanonicalJSON", string(CanonicalJSON(in)), `{"properties":{"a":{"minimum":1.50,"type":"number"},"b":{"type":"string"}},"type":"object","x":"\u003c\u0026\u003e"}`},
		{"ActionDigest", ActionDigest("files", "write", args, fp), "a09be28cd5ff96b8f49a77bb649135fca03417ecdc9c793ba0795a77e558a601"},
		{"KindDigest of a task creation", KindDigest(ReceiptTaskCreate, "files", "write", args, fp), "73ed6440d55834b8ad021d1e97f1d0cc71bcff4bd4b49ecdb9074d4f0f9d7994"},
		{"KindDigest of a task cancellation", KindDigest(ReceiptTaskCancel, "s", "tasks/cancel", []byte(`{"taskId":"t1"}`), Fingerprints{}), "6e4a1fe9916e4a693b3fbdddf81f0d78917cb4a03ecd1eac76bf1b9cbb6e8d81"},
		{"KindDigest of a plain call", KindDigest(ReceiptApproved, "files", "write", args, fp), "a09be28cd5ff96b8f49a77bb649135fca03417ecdc9c793ba0795a77e558a601"},
		{"SkillSetDigest", SkillSetDigest([]SkillFile{{URI: "skill://b/SKILL.md", Digest: "d2"}, {URI: "skill://a/x.md", Digest: "d1"}}), "9390155e53de81ad01644d4fe336804bd41ebe6b985c5dc64a68b16b006f8900"},
		{"ProposalDigest", ProposalDigest("hello"), "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
		{"SHA256Hex", SHA256Hex([]byte("hello")), strings.TrimPrefix("sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "sha256:")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
		}
	}
}

func TestToolDigest(t *testing.T) {
	type def struct {
		name, title, desc   string
		in, out, annotation string
	}
	base := def{"echo", "Echo", "Returns its text.",
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		`{"type":"object","properties":{"text":{"type":"string"}}}`,
		`{"readOnlyHint":true,"title":"Echo"}`}
	digest := func(d def) string {
		raw := func(s string) json.RawMessage {
			if s == "" {
				return nil
			}
			return json.RawMessage(s)
		}
		return ToolDigest(d.name, d.title, d.desc, raw(d.in), raw(d.out), raw(d.annotation))
	}
	want := digest(base)
	if len(want) != 64 {
		t.Fatalf("digest %q is not hex SHA-256", want)
	}

	same := map[string]def{
		"key order and whitespace": {"echo", "Echo", "Returns its text.",
			"{\n  \"required\": [\"text\"],\n  \"properties\": {\"text\": {\"type\": \"string\"}},\n  \"type\": \"object\"\n}",
			` { "properties" : { "text" : { "type" : "string" } } , "type" : "object" } `,
			`{"title":"Echo",   "readOnlyHint": true}`},
	}
	for name, d := range same {
		if got := digest(d); got != want {
			t.Errorf("%s: digest changed: %s, want %s", name, got, want)
		}
	}

	changed := map[string]func(*def){
		"name":                 func(d *def) { d.name = "echo2" },
		"title":                func(d *def) { d.title = "Echo!" },
		"description":          func(d *def) { d.desc = "Returns its text, loudly." },
		"input schema":         func(d *def) { d.in = `{"type":"object","properties":{"text":{"type":"number"}},"required":["text"]}` },
		"input schema removed": func(d *def) { d.in = "" },
		"output schema":        func(d *def) { d.out = `{"type":"object"}` },
		"output schema added key": func(d *def) {
			d.out = `{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false}`
		},
		"annotations":              func(d *def) { d.annotation = `{"readOnlyHint":false,"title":"Echo"}` },
		"annotations removed":      func(d *def) { d.annotation = "" },
		"annotations null":         func(d *def) { d.annotation = "null" },
		"text moved between title": func(d *def) { d.title, d.desc = "Echo"+"Returns", " its text." },
		"number spelling":          func(d *def) { d.in = strings.Replace(d.in, `"required"`, `"minProperties":1.0,"required"`, 1) },
	}
	seen := map[string]string{want: "base"}
	for name, mutate := range changed {
		d := base
		mutate(&d)
		got := digest(d)
		if got == want {
			t.Errorf("changing the %s did not change the digest", name)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("changing the %s gives the same digest as %s", name, prev)
		}
		seen[got] = name
		if again := digest(d); again != got {
			t.Errorf("%s: digest not stable: %s then %s", name, got, again)
		}
	}
}
