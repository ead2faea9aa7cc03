package mcpclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// schemaCase is one instance checked against one schema.
type schemaCase struct {
	instance string
	ok       bool
}

func runSchemaCases(t *testing.T, c *SchemaCache, name, schema string, cases []schemaCase) {
	t.Helper()
	for _, tc := range cases {
		err := c.Validate([]byte(schema), []byte(tc.instance))
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: Validate(%s) = %v, want ok", name, tc.instance, err)
		case !tc.ok && (!errors.Is(err, contracts.ErrInvalidArgument) || reasonOf(err) != "arguments_invalid"):
			t.Errorf("%s: Validate(%s) = %v (reason %q), want arguments_invalid", name, tc.instance, err, reasonOf(err))
		}
	}
}

func TestSchemaDrafts(t *testing.T) {
	c := NewSchemaCache(0)
	tests := []struct {
		name, schema string
		cases        []schemaCase
	}{
		{"empty schema is an object schema", ``, []schemaCase{{`{}`, true}, {`{"a":1}`, true}, {`[]`, false}}},
		{"null schema is an object schema", `null`, []schemaCase{{`{}`, true}, {`"x"`, false}}},
		{"2020-12 by default: prefixItems", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}}}`,
			[]schemaCase{{`{"t":["a",1]}`, true}, {`{"t":[1,"a"]}`, false}, {`{"t":["a",1,2]}`, false}}},
		{"2020-12 by default: unevaluatedProperties", `{"type":"object","allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
			[]schemaCase{{`{"a":1}`, true}, {`{"a":1,"b":2}`, false}}},
		{"2020-12 named", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["x"]}`,
			[]schemaCase{{`{"x":1}`, true}, {`{}`, false}}},
		{"draft-07: items tuple and additionalItems", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"number"}],"additionalItems":false}}}`,
			[]schemaCase{{`{"t":["a",1]}`, true}, {`{"t":[1,"a"]}`, false}, {`{"t":["a",1,2]}`, false}}},
		{"draft-07: definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"pos":{"type":"integer","minimum":0}},"type":"object","properties":{"n":{"$ref":"#/definitions/pos"}}}`,
			[]schemaCase{{`{"n":3}`, true}, {`{"n":-1}`, false}, {`{"n":"3"}`, false}}},
		{"draft-07: $ref siblings ignored", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"v":{"$ref":"#/definitions/s","maxLength":1}}}`,
			[]schemaCase{{`{"v":"long string"}`, true}, {`{"v":1}`, false}}},
		{"2020-12: $ref siblings apply", `{"$defs":{"s":{"type":"string"}},"properties":{"v":{"$ref":"#/$defs/s","maxLength":1}}}`,
			[]schemaCase{{`{"v":"a"}`, true}, {`{"v":"long string"}`, false}}},
		{"local refs: $defs, anchors, own $id", `{"$id":"https://tools.example/s.json","$defs":{"a":{"$anchor":"num","type":"integer"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#num"},"z":{"$ref":"https://tools.example/s.json#/$defs/a"}}}`,
			[]schemaCase{{`{"x":1,"y":2,"z":3}`, true}, {`{"x":"1"}`, false}, {`{"y":"2"}`, false}, {`{"z":"3"}`, false}}},
		{"recursive local ref", `{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}},"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]schemaCase{{`{"next":{"next":{}}}`, true}, {`{"next":{"other":1}}`, false}}},
		{"unsupported pattern is not enforced", `{"properties":{"e":{"type":"string","pattern":"^(?!x).*$"}}}`,
			[]schemaCase{{`{"e":"xyz"}`, true}, {`{"e":1}`, false}}},
		{"supported pattern is enforced", `{"properties":{"e":{"type":"string","pattern":"^a+$"}}}`,
			[]schemaCase{{`{"e":"aa"}`, true}, {`{"e":"ab"}`, false}}},
		{"big numbers compare exactly", `{"properties":{"n":{"maximum":12345678901234567890}}}`,
			[]schemaCase{{`{"n":12345678901234567890}`, true}, {`{"n":12345678901234567891}`, false}}},
	}
	for _, tt := range tests {
		runSchemaCases(t, c, tt.name, tt.schema, tt.cases)
	}
}

func TestSchemaInvalid(t *testing.T) {
	c := NewSchemaCache(0)
	for _, schema := range []string{
		`{"type":12}`,
		`{"properties":[]}`,
		`{"$ref":"#/$defs/missing"}`,
		`{"type":"object"`, // not JSON
		// 2020-12 forbids the draft-07 tuple form.
		`{"properties":{"t":{"items":[{"type":"string"}]}}}`,
	} {
		err := c.Validate([]byte(schema), []byte(`{}`))
		if !errors.Is(err, contracts.ErrFailedPrecondition) || reasonOf(err) != "tool_schema_invalid" {
			t.Errorf("Validate with schema %s = %v (reason %q), want tool_schema_invalid", schema, err, reasonOf(err))
		}
		// A refused schema stays refused (the failure is cached too).
		if err2 := c.Validate([]byte(schema), []byte(`{}`)); reasonOf(err2) != "tool_schema_invalid" {
			t.Errorf("second Validate with schema %s = %v", schema, err2)
		}
	}
}

// TestSchemaExternalRefsRefused proves that no external reference is
// followed: a file that would make the schema compile (and accept the
// instance) is never read, and an HTTP server sees no request.
func TestSchemaExternalRefsRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	refFile := filepath.Join(dir, "ref.json")
	if err := os.WriteFile(refFile, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	refs := []string{
		"file://" + refFile,
		"file:///etc/passwd",
		srv.URL + "/schema.json",
		"http://127.0.0.1:1/x",
		"https://127.0.0.1:1/x",
		"urn:example:not-here",
		"other.json",
		"other.json#/$defs/a",
		"./" + filepath.Base(refFile),
	}
	c := NewSchemaCache(0)
	for _, ref := range refs {
		for _, schema := range []string{
			fmt.Sprintf(`{"properties":{"x":{"$ref":%q}}}`, ref),
			fmt.Sprintf(`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"x":{"$ref":%q}}}`, ref),
			fmt.Sprintf(`{"$schema":%q,"type":"object"}`, ref),
		} {
			err := c.Validate([]byte(schema), []byte(`{"x":{}}`))
			if reasonOf(err) != "tool_schema_invalid" || !strings.Contains(err.Error(), "is not followed") {
				t.Errorf("schema %s: Validate = %v, want tool_schema_invalid saying the ref is not followed", schema, err)
			}
		}
	}
	// A schema with its own relative $id resolves refs against a base that
	// is not the file system either.
	schema := fmt.Sprintf(`{"$id":%q,"properties":{"x":{"$ref":"ref.json"}}}`, "file://"+dir+"/main.json")
	if err := c.Validate([]byte(schema), []byte(`{"x":{}}`)); reasonOf(err) != "tool_schema_invalid" {
		t.Errorf("$id in the temp dir and a ref beside it: %v, want tool_schema_invalid", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the HTTP server got %d requests, want 0", n)
	}
}

func TestSchemaMessages(t *testing.T) {
	c := NewSchemaCache(0)
	schema := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["need"],
		"properties":{"code":{"type":"string","pattern":"^[0-9]+$"},"n":{"type":"integer","minimum":10},
		"mail":{"type":"string","format":"email"},"kind":{"enum":["a","b"]},"list":{"type":"array","items":{"type":"string"}}},
		"additionalProperties":false}`
	instance := `{"code":"hunter2-secret","n":3,"mail":"secret-not-an-email","kind":"secret-kind","list":["ok",7],"extra":1}`
	err := c.Validate([]byte(schema), []byte(instance))
	if reasonOf(err) != "arguments_invalid" {
		t.Fatalf("Validate = %v, want arguments_invalid", err)
	}
	msg := err.Error()
	for _, want := range []string{"/code", "pattern", "/n", "minimum", "/mail", "email", "/kind", "/list/1", "need", "extra"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not mention %q", msg, want)
		}
	}
	for _, value := range []string{"hunter2", "secret", "3 "} {
		if strings.Contains(msg, value) {
			t.Errorf("message %q echoes an instance value %q", msg, value)
		}
	}

	// Many failures: the list is bounded.
	var props, inst []string
	for i := range 50 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"string"}`, i))
		inst = append(inst, fmt.Sprintf(`"p%02d":%d`, i, i))
	}
	err = c.Validate([]byte(`{"properties":{`+strings.Join(props, ",")+`}}`), []byte(`{`+strings.Join(inst, ",")+`}`))
	if reasonOf(err) != "arguments_invalid" || !strings.Contains(err.Error(), "more") || len(err.Error()) > maxSchemaMessage+200 {
		t.Errorf("50 failures: %v (%d bytes), want a bounded list ending in \"and N more\"", err, len(err.Error()))
	}
}

func TestSchemaCache(t *testing.T) {
	c := NewSchemaCache(2)
	a := `{"type":"object","properties":{"a":{"type":"string"}}}`
	aReformatted := "{ \"properties\" : { \"a\" : { \"type\" : \"string\" } } ,\n \"type\" : \"object\" }"
	b := `{"type":"object","properties":{"b":{"type":"string"}}}`
	d := `{"type":"object","properties":{"d":{"type":"string"}}}`
	validate := func(schema, inst string, ok bool) {
		t.Helper()
		if err := c.Validate([]byte(schema), []byte(inst)); (err == nil) != ok {
			t.Fatalf("Validate(%s, %s) = %v, want ok=%v", schema, inst, err, ok)
		}
	}
	validate(a, `{"a":"x"}`, true)
	validate(a, `{"a":1}`, false)
	validate(aReformatted, `{"a":1}`, false)
	if n := c.compiles.Load(); n != 1 {
		t.Errorf("after three validations against one schema (two formattings): %d compilations, want 1", n)
	}
	validate(b, `{"b":"x"}`, true)
	validate(d, `{"d":"x"}`, true) // evicts a, the least recently used
	if n := c.compiles.Load(); n != 3 {
		t.Errorf("compilations %d, want 3", n)
	}
	validate(d, `{"d":1}`, false)
	validate(b, `{"b":1}`, false)
	if n := c.compiles.Load(); n != 3 {
		t.Errorf("cached schemas compiled again: %d compilations, want 3", n)
	}
	validate(a, `{"a":1}`, false)
	if n := c.compiles.Load(); n != 4 {
		t.Errorf("evicted schema: %d compilations, want 4", n)
	}
	c.mu.Lock()
	size := c.lru.Len()
	c.mu.Unlock()
	if size != 2 {
		t.Errorf("cache holds %d schemas, want at most 2", size)
	}
}

func TestSchemaCacheConcurrent(t *testing.T) {
	c := NewSchemaCache(4)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			schema := fmt.Sprintf(`{"properties":{"v%d":{"type":"integer"}}}`, i%8)
			good := fmt.Sprintf(`{"v%d":1}`, i%8)
			bad := fmt.Sprintf(`{"v%d":"x"}`, i%8)
			if err := c.Validate([]byte(schema), []byte(good)); err != nil {
				errs <- err
				return
			}
			if err := c.Validate([]byte(schema), []byte(bad)); err == nil {
				errs <- fmt.Errorf("schema %s accepted %s", schema, bad)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
