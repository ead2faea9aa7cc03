package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

func TestCanonicalArguments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"absent", ``, `{}`},
		{"whitespace", " \n\t", `{}`},
		{"null", `null`, `{}`},
		{"empty object", ` { } `, `{}`},
		{"sorted and compact", `{ "b" : 1 , "a" : [ 1 , 2 ] }`, `{"a":[1,2],"b":1}`},
		{"nested sorted", `{"z":{"y":1,"x":{"b":true,"a":false}},"a":null}`, `{"a":null,"z":{"x":{"a":false,"b":true},"y":1}}`},
		{"arrays of objects", `{"list":[{"b":1,"a":2},{"d":[],"c":{}}]}`, `{"list":[{"a":2,"b":1},{"c":{},"d":[]}]}`},
		{"big exponent kept", `{"n":1e400}`, `{"n":1e400}`},
		{"big integer kept", `{"n":12345678901234567890}`, `{"n":12345678901234567890}`},
		{"number forms kept", `{"a":-0,"b":1.50,"c":1E+2,"d":0.1e-7}`, `{"a":-0,"b":1.50,"c":1E+2,"d":0.1e-7}`},
		{"unicode kept", `{"k":"日本語 é 🙂"}`, `{"k":"日本語 é 🙂"}`},
		{"unicode escapes decoded", `{"k":"\u00e9\ud83d\ude42"}`, `{"k":"é🙂"}`},
		// HTML-safe escapes: encoding/json in the transport would add them
		// anyway, so the canonical form carries them (see the wire test).
		{"html escaped like encoding/json", `{"h":"<a href='x'>&</a>"}`, `{"h":"\u003ca href='x'\u003e\u0026\u003c/a\u003e"}`},
		{"line separators escaped", "{\"s\":\"a\u2028b\u2029c\"}", `{"s":"a\u2028b\u2029c"}`},
		{"control escapes", `{"s":"\t\n\u0001\/"}`, `{"s":"\t\n\u0001/"}`},
		{"keys sorted by UTF-8 bytes", `{"é":1,"z":2,"Y":3,"🙂":4,"\uffff":5}`, `{"Y":3,"z":2,"é":1,"` + "\uffff" + `":5,"🙂":4}`},
		{"same key in different objects", `{"a":{"k":1},"b":{"k":2}}`, `{"a":{"k":1},"b":{"k":2}}`},
		{"case differing keys in different objects", `{"a":{"K":1},"b":{"k":2}}`, `{"a":{"K":1},"b":{"k":2}}`},
		{"non-simple fold is distinct", `{"ß":1,"ss":2}`, `{"ss":2,"ß":1}`},
	}
	for _, tt := range tests {
		got, err := CanonicalArguments(json.RawMessage(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: CanonicalArguments(%q) = %s, %v; want %s", tt.name, tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalArgumentsRefuses(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason string
		// inMsg must appear in the message; notInMsg must not (values).
		inMsg, notInMsg string
	}{
		{"duplicate", `{"a":"secret1","a":"secret2"}`, "ambiguous_keys", `"a" appears twice`, "secret"},
		{"case duplicate", `{"A":"secret1","a":"secret2"}`, "ambiguous_keys", `differ only by case`, "secret"},
		{"kelvin sign folds to k", `{"k":1,"\u212a":2}`, "ambiguous_keys", `differ only by case`, ""},
		{"greek sigma forms", `{"σ":1,"ς":2}`, "ambiguous_keys", `differ only by case`, ""},
		{"trailing NUL", `{"k":"secret","k\u0000":"secret"}`, "ambiguous_keys", `trailing NUL`, "secret"},
		{"trailing NULs", `{"k\u0000\u0000":1,"k":2}`, "ambiguous_keys", `trailing NUL`, ""},
		{"case and NUL", `{"K":1,"k\u0000":2}`, "ambiguous_keys", `case and trailing NUL`, ""},
		{"nested duplicate path", `{"outer":{"list":[{"x":1},{"x":1,"X":2}]}}`, "ambiguous_keys", `$.outer.list[1]`, ""},
		{"odd key path", `{"a b":{"q":1,"Q":2}}`, "ambiguous_keys", `$["a b"]`, ""},
		{"array", `[1,2]`, "arguments_not_object", "array", ""},
		{"string", `"x"`, "arguments_not_object", "string", ""},
		{"number", `12`, "arguments_not_object", "number", ""},
		{"lone high surrogate", `{"s":"\ud800"}`, "arguments_invalid_json", "surrogate", ""},
		{"lone low surrogate", `{"s":"\udc00x"}`, "arguments_invalid_json", "surrogate", ""},
		{"high then non-low", `{"s":"\ud800\u0041"}`, "arguments_invalid_json", "surrogate", ""},
		{"surrogate in key", `{"\ud800":1}`, "arguments_invalid_json", "surrogate", ""},
		{"invalid utf-8", "{\"s\":\"\xff\"}", "arguments_invalid_json", "UTF-8", ""},
		{"raw control", "{\"s\":\"a\x01\"}", "arguments_invalid_json", "control", ""},
		{"trailing data", `{} {}`, "arguments_invalid_json", "after", ""},
		{"trailing comma", `{"a":1,}`, "arguments_invalid_json", "", ""},
		{"leading zero", `{"a":01}`, "arguments_invalid_json", "", ""},
		{"bare dot", `{"a":1.}`, "arguments_invalid_json", "", ""},
		{"bad literal", `{"a":tru}`, "arguments_invalid_json", "", ""},
		{"unterminated", `{"a":"x`, "arguments_invalid_json", "", ""},
		{"single quotes", `{'a':1}`, "arguments_invalid_json", "", ""},
		{"too deep", `{"a":` + strings.Repeat("[", maxArgumentsDepth+1) + strings.Repeat("]", maxArgumentsDepth+1) + `}`, "arguments_too_deep", "", ""},
	}
	for _, tt := range tests {
		got, err := CanonicalArguments(json.RawMessage(tt.in))
		if !errors.Is(err, contracts.ErrInvalidArgument) || reasonOf(err) != tt.reason {
			t.Errorf("%s: CanonicalArguments(%q) = %s, %v (reason %q); want reason %q", tt.name, tt.in, got, err, reasonOf(err), tt.reason)
			continue
		}
		if !strings.Contains(err.Error(), tt.inMsg) {
			t.Errorf("%s: message %q does not contain %q", tt.name, err, tt.inMsg)
		}
		if tt.notInMsg != "" && strings.Contains(err.Error(), tt.notInMsg) {
			t.Errorf("%s: message %q echoes a value (%q)", tt.name, err, tt.notInMsg)
		}
	}
}

func TestCanonicalArgumentsSizeCap(t *testing.T) {
	// Characters, not bytes: "é" is two bytes and one character.
	fill := func(chars int, r string) []byte {
		// {"s":"…"} is 8 characters around the filler.
		return []byte(`{"s":"` + strings.Repeat(r, chars-8) + `"}`)
	}
	for _, r := range []string{"x", "é"} {
		at := fill(contracts.MaxArgumentsChars, r)
		if n := utf8.RuneCount(at); n != contracts.MaxArgumentsChars {
			t.Fatalf("test input has %d characters", n)
		}
		if _, err := CanonicalArguments(at); err != nil {
			t.Errorf("%q × limit: %v, want accepted", r, err)
		}
		over := fill(contracts.MaxArgumentsChars+1, r)
		if _, err := CanonicalArguments(over); reasonOf(err) != "arguments_too_large" {
			t.Errorf("%q × limit+1: %v, want arguments_too_large", r, err)
		}
	}
	// Whitespace counts: the limit is on the text given.
	spaced := append([]byte(`{"s":1`), bytes.Repeat([]byte(" "), contracts.MaxArgumentsChars)...)
	spaced = append(spaced, '}')
	if _, err := CanonicalArguments(spaced); reasonOf(err) != "arguments_too_large" {
		t.Errorf("padded with spaces: %v, want arguments_too_large", err)
	}
	// Escaping can grow the canonical form past the limit: refused too,
	// since the canonical form is what is sent.
	html := fill(contracts.MaxArgumentsChars/2, "<")
	if _, err := CanonicalArguments(html); reasonOf(err) != "arguments_too_large" {
		t.Errorf("escaping past the limit: %v, want arguments_too_large", err)
	}
}

func TestCanonicalArgumentsDeterministic(t *testing.T) {
	in := `{"z":[3,2,1],"é":{"b":"<>","a":1e400},"A":null,"m":{"k":{"j":[{"y":1,"x":2}]}}}`
	first, err := CanonicalArguments(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	// Whitespace and order variants of the same object agree byte for byte.
	variants := []string{
		`{"A":null,"m":{"k":{"j":[{"x":2,"y":1}]}},"é":{"a":1e400,"b":"<>"},"z":[3,2,1]}`,
		"{\n  \"m\": {\"k\": {\"j\": [ {\"y\":1, \"x\":2} ]}},\n  \"z\": [3, 2, 1],\n  \"\\u00e9\": {\"b\": \"\\u003c\\u003e\", \"a\": 1e400},\n  \"A\": null\n}",
	}
	for _, v := range variants {
		got, err := CanonicalArguments(json.RawMessage(v))
		if err != nil || !bytes.Equal(got, first) {
			t.Errorf("CanonicalArguments(%q) = %s, %v; want %s", v, got, err, first)
		}
	}
	for range 20 {
		got, _ := CanonicalArguments(json.RawMessage(in))
		if !bytes.Equal(got, first) {
			t.Fatalf("repeat gave %s, first %s", got, first)
		}
	}
}

// checkCanonicalProperties is what every accepted input must satisfy.
func checkCanonicalProperties(t *testing.T, in, out []byte) {
	t.Helper()
	if trimmed := bytes.TrimSpace(in); len(trimmed) > 0 && !json.Valid(trimmed) {
		t.Fatalf("accepted %q, which is not JSON", in)
	}
	if !json.Valid(out) {
		t.Fatalf("canonical form of %q is not valid JSON: %q", in, out)
	}
	again, err := CanonicalArguments(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("canonical(canonical(%q)) = %q, %v; want %q", in, again, err, out)
	}
	// A fixed point of encoding/json's re-encoding of embedded raw JSON,
	// which is what mcp-go's transports do to params.
	wire, err := json.Marshal(json.RawMessage(out))
	if err != nil || !bytes.Equal(wire, out) {
		t.Fatalf("encoding/json re-encodes %q as %q, %v", out, wire, err)
	}
	// The values are what encoding/json reads from the input.
	var a, b any
	da := json.NewDecoder(bytes.NewReader(in))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(out))
	db.UseNumber()
	if errA, errB := da.Decode(&a), db.Decode(&b); errA == nil && errB == nil {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) && len(bytes.TrimSpace(in)) > 0 && string(bytes.TrimSpace(in)) != "null" {
			t.Fatalf("canonical form of %q changes its value: %q vs %q", in, ja, jb)
		}
	}
}

func FuzzCanonicalArguments(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `{"a":1}`, `{"b":[1,{"d":2,"c":3}],"a":"x"}`, `{"n":1e400,"m":-0.5E-3}`,
		`{"s":"<&>\u2028"}`, `{"k":1,"K":2}`, `{"k":1,"k\u0000":2}`, `{"s":"\ud83d\ude42"}`, `{"s":"\ud800"}`,
		"{\"s\":\"\xff\"}", `[1]`, `{"a":{"b":{"c":{}}}}`, `{"é":"ß","ss":"\u00df"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalArguments(in)
		if err != nil {
			if !errors.Is(err, contracts.ErrInvalidArgument) || reasonOf(err) == "" {
				t.Fatalf("CanonicalArguments(%q): error %v without class or reason", in, err)
			}
			return
		}
		checkCanonicalProperties(t, in, out)
	})
}
