package mcpclient

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

func TestCheckPromptArguments(t *testing.T) {
	def := promptDef{Name: "args-prompt", Arguments: []promptArg{{Name: "city", Required: true}, {Name: "state"}}}
	none := promptDef{Name: "simple"}
	tests := []struct {
		name   string
		def    promptDef
		args   string
		fields []string // the fields of the problems, in order; none: accepted
	}{
		{"required only", def, `{"city":"Paris"}`, nil},
		{"required and optional", def, `{"city":"Paris","state":"IDF"}`, nil},
		{"empty string is present", def, `{"city":""}`, nil},
		{"no arguments for none", none, `{}`, nil},
		{"missing required", def, `{"state":"IDF"}`, []string{`arguments."city"`}},
		{"missing everything", def, `{}`, []string{`arguments."city"`}},
		{"unknown argument", def, `{"city":"x","country":"FR"}`, []string{`arguments."country"`}},
		{"unknown for a prompt without arguments", none, `{"x":"y"}`, []string{`arguments."x"`}},
		{"number", def, `{"city":42}`, []string{`arguments."city"`}},
		{"every kind of non-string", def, `{"city":null,"state":{"a":"b"}}`, []string{`arguments."city"`, `arguments."state"`}},
		{"all problems at once", def, `{"country":"FR","state":true}`, []string{`arguments."country"`, `arguments."state"`, `arguments."city"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			canon, err := CanonicalArguments(json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			err = checkPromptArguments("srv", tc.def, canon, strconv.Quote)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("checkPromptArguments(%s) = %v, want accepted", tc.args, err)
				}
				return
			}
			we := contracts.ToError(err)
			if we == nil || we.Reason() != "invalid_prompt_arguments" || !errors.Is(err, contracts.ErrInvalidArgument) {
				t.Fatalf("checkPromptArguments(%s) = %v, want invalid_prompt_arguments", tc.args, err)
			}
			var got []string
			for _, p := range we.Data.Problems {
				got = append(got, p.Field)
				if p.Server != "srv" || p.Message == "" {
					t.Errorf("problem %+v lacks the server or a message", p)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.fields, " ") {
				t.Errorf("problem fields %q, want %q", got, tc.fields)
			}
			if !strings.Contains(we.Message, "nothing was sent") || we.Data.Hint == "" {
				t.Errorf("message %q hint %q: want both to say what happened and what to do", we.Message, we.Data.Hint)
			}
		})
	}
	// What a problem says.
	canon, _ := CanonicalArguments(json.RawMessage(`{"city":7,"zip":"x"}`))
	we := contracts.ToError(checkPromptArguments("srv", def, canon, strconv.Quote))
	msgs := we.Data.Problems[0].Message + " | " + we.Data.Problems[1].Message
	for _, want := range []string{"must be a string, not a number", `no such argument (it declares "city", "state")`} {
		if !strings.Contains(msgs, want) {
			t.Errorf("problems %q do not say %q", msgs, want)
		}
	}
}

func TestCheckComplete(t *testing.T) {
	tests := []struct {
		raw, reason string
	}{
		{`{"contents":[]}`, ""},
		{`{"resultType":"complete","messages":[]}`, ""},
		{`{"resultType":"input_required","inputRequests":{}}`, "input_required"},
		{`{"resultType":"task"}`, "invalid_result"},
		{`{"resultType":7}`, "invalid_result"},
		{`[]`, "invalid_result"},
		{`"x"`, "invalid_result"},
		{``, "invalid_result"},
	}
	for _, tc := range tests {
		err := checkComplete(json.RawMessage(tc.raw))
		if tc.reason == "" {
			if err != nil {
				t.Errorf("checkComplete(%s) = %v, want nil", tc.raw, err)
			}
			continue
		}
		if got := contracts.ToError(err).Reason(); got != tc.reason {
			t.Errorf("checkComplete(%s) = %v (reason %q), want reason %q", tc.raw, err, got, tc.reason)
		}
	}
}

func TestCompletionBounds(t *testing.T) {
	s := NewSupervisor(Options{Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2secret", "[REDACTED]") }})
	t.Cleanup(s.Close)
	var values []string
	for i := range 120 {
		values = append(values, "v"+strconv.Itoa(i))
	}
	values[3] = strings.Repeat("x", contracts.MaxCompletionValueChars+1)
	values[4] = "tok hunter2secret"
	values[5] = "esc\x1b[2J\nnext"
	b, _ := json.Marshal(map[string]any{"completion": map[string]any{"values": values, "total": 500}})
	out, err := s.completion(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Values) != contracts.MaxCompletionValues || out.Omitted != 20 || !out.HasMore || out.Total != 500 {
		t.Fatalf("%d values, omitted %d, hasMore %v, total %d; want 100, 20 (one too long, 19 past the cap), true, 500",
			len(out.Values), out.Omitted, out.HasMore, out.Total)
	}
	if out.Values[3] != "tok [REDACTED]" || out.Values[4] != `esc\u{001B}[2J\u{000A}next` || out.Values[99] != "v100" {
		t.Errorf("values[3:5] = %q, values[99] = %q", out.Values[3:5], out.Values[99])
	}
	for _, bad := range []string{`{}`, `{"completion":{}}`, `{"completion":{"values":[1]}}`, `{"completion":{"values":"a"}}`} {
		if _, err := s.completion(json.RawMessage(bad)); contracts.ToError(err).Reason() != "invalid_result" {
			t.Errorf("completion(%s) = %v, want invalid_result", bad, err)
		}
	}
}
