package contracts

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata (existing rows must still match)")

const errorCodesGolden = "testdata/error_codes.golden"

// errorCodeRow is one golden line: code, reason and the class's text.
func errorCodeRow(c ErrorCode) string {
	return fmt.Sprintf("%d\t%s\t%s", c.Code, c.Reason, c.Class)
}

// TestErrorCodesGolden freezes the error-code table: a published row may
// never change or disappear, and a new row must be frozen with -update.
func TestErrorCodesGolden(t *testing.T) {
	var rows []string
	for _, c := range ErrorCodes {
		rows = append(rows, errorCodeRow(c))
	}
	checkFrozen(t, errorCodesGolden, "# code\treason\tclass (append-only: see ErrorCodes)", "error code row", "the table is append-only", rows)
}

// checkFrozen compares rows with the golden file at path: a row in the
// file that rows lack fails (what, then why, name it), as does a row not
// in the file; -update rewrites the file (header, then rows) only when no
// frozen row is missing.
func checkFrozen(t *testing.T, path, header, what, why string, rows []string) {
	t.Helper()
	current := make(map[string]bool, len(rows))
	for _, r := range rows {
		current[r] = true
	}
	data, err := os.ReadFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatalf("reading golden: %v (run go test -update ./contracts/ to create it)", err)
	}
	frozen := make(map[string]bool)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		frozen[line] = true
		if !current[line] {
			t.Errorf("%s %q changed or was removed: %s, restore it", what, line, why)
		}
	}
	if *update {
		if t.Failed() {
			t.Fatal("not rewriting the golden file: restore the rows above first")
		}
		out := header + "\n" + strings.Join(rows, "\n") + "\n"
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, r := range rows {
		if !frozen[r] {
			t.Errorf("%s %q is not frozen: run go test -update ./contracts/", what, r)
		}
	}
}

func TestErrorCodesTable(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	codes := map[int]bool{}
	reasons := map[string]bool{}
	classes := map[error]bool{}
	for _, c := range ErrorCodes {
		if c.Code >= -32768 && c.Code <= -32000 {
			t.Errorf("code %d is inside JSON-RPC's reserved band -32768..-32000", c.Code)
		}
		if codes[c.Code] {
			t.Errorf("code %d appears twice", c.Code)
		}
		codes[c.Code] = true
		if !snake.MatchString(c.Reason) {
			t.Errorf("reason %q of code %d is not snake_case", c.Reason, c.Code)
		}
		if reasons[c.Reason] {
			t.Errorf("reason %q appears twice", c.Reason)
		}
		reasons[c.Reason] = true
		if c.Class == nil {
			t.Errorf("code %d has no class", c.Code)
		}
		if classes[c.Class] {
			t.Errorf("class %v has two codes", c.Class)
		}
		classes[c.Class] = true
	}
}

// TestErrorsIsAcrossTheWire checks that errors.Is finds the class both on
// ToError's output and on an *Error decoded from its JSON, as a client sees
// it.
func TestErrorsIsAcrossTheWire(t *testing.T) {
	for _, c := range ErrorCodes {
		t.Run(c.Reason, func(t *testing.T) {
			err := fmt.Errorf("doing something: %w", c.Class)
			we := ToError(err)
			if we.Code != c.Code {
				t.Fatalf("ToError(%v).Code = %d, want %d", err, we.Code, c.Code)
			}
			if we.Reason() != c.Reason {
				t.Errorf("ToError(%v).Reason() = %q, want %q", err, we.Reason(), c.Reason)
			}
			if !errors.Is(we, c.Class) {
				t.Errorf("errors.Is(ToError(%v), %v) = false", err, c.Class)
			}
			raw, err := json.Marshal(we)
			if err != nil {
				t.Fatal(err)
			}
			var decoded *Error
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			var wrapped error = fmt.Errorf("calling daemon: %w", decoded)
			if !errors.Is(wrapped, c.Class) {
				t.Errorf("decoded %s: errors.Is(_, %v) = false", raw, c.Class)
			}
			for _, other := range ErrorCodes {
				if other.Class != c.Class && errors.Is(wrapped, other.Class) {
					t.Errorf("decoded %s: errors.Is(_, %v) = true, want false", raw, other.Class)
				}
			}
			if decoded.Class() != c.Class {
				t.Errorf("decoded.Class() = %v, want %v", decoded.Class(), c.Class)
			}
			if !errors.Is(wrapped, &Error{Code: c.Code}) {
				t.Errorf("errors.Is(_, &Error{Code: %d}) = false", c.Code)
			}
		})
	}
}

func TestToError(t *testing.T) {
	if ToError(nil) != nil {
		t.Error("ToError(nil) != nil")
	}
	plain := ToError(errors.New("boom"))
	if plain.Code != 1014 || !errors.Is(plain, ErrInternal) || plain.Reason() != "internal" {
		t.Errorf("ToError(plain) = %+v, want internal 1014", plain)
	}
	we := &Error{Code: 1002, Message: "x"}
	if got := ToError(fmt.Errorf("wrapping: %w", we)); got != we {
		t.Errorf("ToError did not return the *Error in the chain: %+v", got)
	}

	withReason := ToError(fmt.Errorf("reading: %w", Errorf(ErrNotFound, "unknown_server", "no server %q", "x")))
	if withReason.Code != 1002 || withReason.Reason() != "unknown_server" {
		t.Errorf("Errorf reason: got code %d reason %q", withReason.Code, withReason.Reason())
	}
	hinted := ToError(WithHint(fmt.Errorf("connecting: %w", ErrUnavailable), "run pikoctl mcp connect x"))
	if hinted.Data.Hint != "run pikoctl mcp connect x" || !errors.Is(hinted, ErrUnavailable) {
		t.Errorf("WithHint: got %+v", hinted.Data)
	}

	ps := Problems{{Server: "a", Field: "url", Message: "bad"}, {Field: "servers", Message: "worse"}}
	pe := ToError(fmt.Errorf("configuring: %w", ps))
	if pe.Code != 1001 || !errors.Is(pe, ErrInvalidArgument) || len(pe.Data.Problems) != 2 || pe.Data.Problems[0] != ps[0] {
		t.Errorf("ToError(Problems) = %+v", pe)
	}

	for code, want := range map[int]error{CodeInvalidParams: ErrInvalidArgument, CodeMethodNotFound: ErrNotFound, CodeParseError: nil, 99999: nil} {
		if got := (&Error{Code: code}).Class(); got != want {
			t.Errorf("(&Error{Code: %s}).Class() = %v, want %v", strconv.Itoa(code), got, want)
		}
	}
}

// TestNotSent checks that a not-sent mark survives wrapping and reaches the
// wire as data.notSent, on classed, wire and unclassed errors alike, and
// that nothing else gets it.
func TestNotSent(t *testing.T) {
	classed := Errorf(ErrUnavailable, "not_sent", "connection refused")
	wire := &Error{Code: 1011, Message: "canceled", Data: &ErrorData{Reason: "canceled"}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"classed", MarkNotSent(classed), true},
		{"classed, wrapped after marking", fmt.Errorf("calling: %w", MarkNotSent(WithHint(classed, "fix it"))), true},
		{"wire error", MarkNotSent(wire), true},
		{"unclassed", MarkNotSent(errors.New("boom")), true},
		{"unmarked", classed, false},
		{"unmarked wire error", wire, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsNotSent(tc.err); got != tc.want {
				t.Errorf("IsNotSent(%v) = %v, want %v", tc.err, got, tc.want)
			}
			we := ToError(tc.err)
			if got := we.Data != nil && we.Data.NotSent; got != tc.want {
				t.Errorf("ToError(%v).Data.NotSent = %v, want %v", tc.err, got, tc.want)
			}
			if we.Message != tc.err.Error() && !strings.HasPrefix(we.Message, "internal error: ") {
				t.Errorf("ToError changed the message to %q", we.Message)
			}
			// Across the socket the mark is data: the decoded error still says so.
			b, err := json.Marshal(we)
			if err != nil {
				t.Fatal(err)
			}
			var back Error
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if IsNotSent(&back) != tc.want {
				t.Errorf("decoded %s: IsNotSent = %v, want %v", b, !tc.want, tc.want)
			}
		})
	}
	if wire.Data.NotSent {
		t.Errorf("ToError of a marked wire error changed the original")
	}
	if ToError(MarkNotSent(classed)).Data.Hint != "" || ToError(MarkNotSent(WithHint(classed, "h"))).Data.Hint != "h" {
		t.Errorf("the mark loses or invents the hint")
	}
}
