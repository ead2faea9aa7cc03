package mcpclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestHeaderAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		problem string // a part of the problem; "" for valid
		none    bool   // valid without any annotation
	}{
		{"no annotation", `{"type":"object","properties":{"a":{"type":"string"}}}`, "", true},
		{"empty schema", ``, "", true},
		{"annotation as data", `{"type":"object","properties":{"x-mcp-header":{"type":"string","enum":["x-mcp-header"]}}}`, "", true},
		{"valid", `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"}}}`, "", false},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"t":{"type":"string","x-mcp-header":"Tenant"}}}}}`, "", false},
		{"boolean sibling", `{"type":"object","properties":{"free":true,"t":{"type":"string","x-mcp-header":"Tenant"}}}`, "", false},
		{"escaped key", `{"type":"object","properties":{"t":{"type":"string","x-mcp-he\u0061der":"T"}}}`, "", false},
		{"number", `{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`, "primitive", false},
		{"no type", `{"type":"object","properties":{"n":{"x-mcp-header":"N"}}}`, "primitive", false},
		{"object", `{"type":"object","properties":{"n":{"type":"object","x-mcp-header":"N"}}}`, "primitive", false},
		{"empty name", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":""}}}`, "non-empty", false},
		{"not a string", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":5}}}`, "non-empty", false},
		{"space", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":"Bad Header"}}}`, "invalid character", false},
		{"newline", `{"type":"object","properties":{"n":{"type":"string","x-mcp-header":"A\nB"}}}`, "invalid character", false},
		{"duplicate", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, "duplicate", false},
		{"duplicate nested", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"R"},"o":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"r"}}}}}`, "duplicate", false},
		{"root", `{"type":"string","x-mcp-header":"Root"}`, "root", false},
		{"items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}}`, "properties.l.items", false},
		{"items array", `{"type":"object","properties":{"l":{"type":"array","items":[{"type":"string","x-mcp-header":"I"}]}}}`, "not statically reachable", false},
		{"oneOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string","x-mcp-header":"V"}]}}}`, "oneOf", false},
		{"anyOf at root", `{"anyOf":[{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"V"}}}]}`, "anyOf.0.properties.v", false},
		{"defs", `{"type":"object","$defs":{"r":{"type":"string","x-mcp-header":"R"}},"properties":{"r":{"$ref":"#/$defs/r"}}}`, "$defs", false},
		{"additionalProperties", `{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}`, "additionalProperties", false},
		{"then", `{"type":"object","if":{"type":"object"},"then":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, "then", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, problem := headerAnnotations(json.RawMessage(tt.schema))
			switch {
			case tt.problem == "" && problem != "":
				t.Errorf("headerAnnotations(%s) problem %q, want valid", tt.schema, problem)
			case tt.problem != "" && !strings.Contains(problem, tt.problem):
				t.Errorf("headerAnnotations(%s) problem %q, want one naming %q", tt.schema, problem, tt.problem)
			case tt.problem == "" && tt.none != (sk == nil):
				t.Errorf("headerAnnotations(%s) skeleton %s; want one: %v", tt.schema, sk, !tt.none)
			}
		})
	}
}

func TestParamHeaders(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"free":true,
		"region":{"type":"string","x-mcp-header":"Region"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
		"opts":{"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"}}},
		"note":{"type":"string"}}}`)
	tests := []struct {
		name string
		args string
		want map[string]string // nil: no headers at all
		bad  string            // the refused argument
	}{
		{"all", `{"region":"eu-west","count":42,"verbose":true,"opts":{"tenant":"acme"},"note":"n"}`,
			map[string]string{"Mcp-Param-Region": "eu-west", "Mcp-Param-Count": "42", "Mcp-Param-Verbose": "true", "Mcp-Param-Tenant": "acme"}, ""},
		{"absent and null", `{"region":null,"note":"n"}`, nil, ""},
		{"encoded", `{"region":" padded","opts":{"tenant":"ünï"},"count":-7,"verbose":false}`,
			map[string]string{"Mcp-Param-Region": "=?base64?IHBhZGRlZA==?=", "Mcp-Param-Tenant": "=?base64?w7xuw68=?=",
				"Mcp-Param-Count": "-7", "Mcp-Param-Verbose": "false"}, ""},
		{"sentinel lookalike", `{"region":"=?base64?abc?="}`, map[string]string{"Mcp-Param-Region": "=?base64?PT9iYXNlNjQ/YWJjPz0=?="}, ""},
		{"control character", `{"region":"a\nb"}`, map[string]string{"Mcp-Param-Region": "=?base64?YQpi?="}, ""},
		{"empty string", `{"region":""}`, map[string]string{"Mcp-Param-Region": ""}, ""},
		{"integral float", `{"count":4.0}`, map[string]string{"Mcp-Param-Count": "4"}, ""},
		{"integer too large", `{"count":9007199254740993}`, nil, "count"},
		{"fraction", `{"count":1.5}`, nil, "count"},
		{"object for a string", `{"opts":{"tenant":{"a":1}}}`, nil, "opts.tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := toolCallParams("headed", []byte(tt.args), "tok", false)
			h, err := paramHeaders(schema, params)
			if tt.bad != "" {
				if !errors.Is(err, contracts.ErrInvalidArgument) || !strings.Contains(err.Error(), `"`+tt.bad+`"`) {
					t.Fatalf("paramHeaders(%s) = %v, %v; want an invalid-argument error naming %q", tt.args, h, err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatalf("paramHeaders(%s): %v", tt.args, err)
			}
			if tt.want == nil {
				if h != nil {
					t.Errorf("paramHeaders(%s) = %v, want none", tt.args, h)
				}
				return
			}
			want := http.Header{}
			for k, v := range tt.want {
				want.Set(k, v)
			}
			if len(h) != len(want) {
				t.Errorf("paramHeaders(%s) = %v, want %v", tt.args, h, want)
			}
			for k := range want {
				if got, ok := h[k]; !ok || len(got) != 1 || got[0] != want.Get(k) {
					t.Errorf("paramHeaders(%s)[%s] = %q, want %q", tt.args, k, got, want.Get(k))
				}
			}
		})
	}
	if _, err := paramHeaders(json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`),
		toolCallParams("t", []byte(`{"n":1}`), "tok", false)); !errors.Is(err, contracts.ErrFailedPrecondition) {
		t.Errorf("paramHeaders with invalid annotations: %v, want a refusal", err)
	}
}

func TestResultTypeOf(t *testing.T) {
	clean := func(s string, _ int) string { return s }
	for _, tt := range []struct {
		result string
		want   string
		bad    bool
	}{
		{`{"content":[]}`, "", false},
		{`{"resultType":null}`, "", false},
		{`{"resultType":"complete"}`, "", false},
		{`{"resultType":"input_required","requestState":"s"}`, "input_required", false},
		{`{"resultType":"task"}`, "", true},
		{`{"resultType":"Complete"}`, "", true},
		{`{"resultType":7}`, "", true},
	} {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tt.result), &fields); err != nil {
			t.Fatal(err)
		}
		got, err := resultTypeOf(fields, clean)
		if tt.bad {
			if !errors.Is(err, contracts.ErrOutcomeUnknown) || contracts.ToError(err).Reason() != "invalid_result" {
				t.Errorf("resultTypeOf(%s) = %q, %v; want invalid_result", tt.result, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resultTypeOf(%s) = %q, %v; want %q", tt.result, got, err, tt.want)
		}
	}
}

func TestParseDiscoverResult(t *testing.T) {
	for _, tt := range []struct {
		result  string
		problem string
	}{
		{`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}`, ""},
		{`{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{"tools":{}}}`, ""},
		{`{}`, "no supportedVersions"},
		{`[]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{"supportedVersions":[],"capabilities":{}}`, "non-empty"},
		{`{"supportedVersions":"2026-07-28","capabilities":{}}`, "non-empty"},
		{`{"supportedVersions":["2026-07-28"]}`, "no capabilities"},
		{`{"supportedVersions":["2026-07-28"],"capabilities":[]}`, "not an object"},
		{`{"resultType":"input_required","supportedVersions":["2026-07-28"],"capabilities":{}}`, "resultType"},
	} {
		_, problem := parseDiscoverResult(json.RawMessage(tt.result))
		if (tt.problem == "") != (problem == "") || !strings.Contains(problem, tt.problem) {
			t.Errorf("parseDiscoverResult(%s) problem %q, want %q", tt.result, problem, tt.problem)
		}
	}
}

func TestNewestSpoken(t *testing.T) {
	all := func(string) bool { return true }
	if got := newestSpoken([]string{"2024-11-05", "2025-06-18", "2099-01-01"}, all); got != "2025-06-18" {
		t.Errorf("newestSpoken = %q, want 2025-06-18", got)
	}
	if got := newestSpoken([]string{"2099-01-01"}, all); got != "" {
		t.Errorf("newestSpoken of unknown versions = %q, want none", got)
	}
}
