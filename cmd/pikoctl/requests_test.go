package main

import (
	"encoding/json"
	"testing"
)

// TestFieldCheck: each answer is checked against its field's schema as
// parse made it: choices, lengths, bounds, counts.
func TestFieldCheck(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"age":{"type":"integer","minimum":18,"maximum":130},
		"ratio":{"type":"number","maximum":1.5},
		"color":{"type":"string","enum":["red","green"]},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
		"name":{"type":"string","minLength":2,"maxLength":4},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":1,"maxItems":2},
		"free":{"type":"string"}}}`)
	fields, _, err := formFields(schema)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]field{}
	for _, f := range fields {
		byName[f.name] = f
	}
	for _, tt := range []struct {
		field, typed string
		ok           bool
	}{
		{"age", "18", true}, {"age", "130", true}, {"age", "17", false}, {"age", "131", false}, {"age", "x", false},
		{"ratio", "1.5", true}, {"ratio", "1.6", false},
		{"color", "red", true}, {"color", "blue", false},
		{"size", "s", true}, {"size", "Small", false},
		{"name", "Ada", true}, {"name", "A", false}, {"name", "Grace", false}, {"name", "Ébé", true},
		{"tags", "a", true}, {"tags", "a, b", true}, {"tags", "a,b,c", false}, {"tags", "d", false},
		{"free", "anything", true},
	} {
		f := byName[tt.field]
		val, err := f.parse(tt.typed)
		if err == nil {
			err = f.check(val)
		}
		if (err == nil) != tt.ok {
			t.Errorf("field %s, typed %q: error %v, want ok=%v", tt.field, tt.typed, err, tt.ok)
		}
	}
	if got, want := byName["age"].describe(), "age (integer; 18 to 130)"; got != want {
		t.Errorf("describe() = %q, want %q", got, want)
	}
}
