package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pikod/pikod/contracts"
)

// maxInput bounds what pikoctl reads from a file or stdin: the daemon's
// frame limit, so anything larger could never be sent anyway.
const maxInput = 8 << 20

// readInput reads all of r, refusing more than maxInput bytes. what names
// the input in errors.
func readInput(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(b) > maxInput {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, "input_too_large",
			"reading %s: larger than %d MiB, the daemon's message limit", what, maxInput>>20)
	}
	return b, nil
}

// jsonObject checks that b holds exactly one JSON object and returns it
// trimmed, byte for byte otherwise, so the daemon sees what the user wrote.
// Empty input means {}.
func jsonObject(b []byte, what string) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, "invalid_json", "parsing %s: %v", what, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, "invalid_json", "parsing %s: want a JSON object {...}, got %s", what, jsonKind(v))
	}
	return json.RawMessage(b), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// printRaw prints a JSON value exactly as the daemon sent it.
func printRaw(w io.Writer, raw json.RawMessage) error {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	_, err := fmt.Fprintf(w, "%s\n", raw)
	return err
}

// clean makes text that came from the daemon (and possibly from an MCP
// server behind it) safe for a terminal on one line, with the one
// sanitiser every side uses (contracts.SafeText): a hostile server cannot
// move the cursor, restyle or reorder what the owner reads.
func clean(s string) string { return contracts.SafeText(s, contracts.OneLine, 0) }

// cleanLines is clean keeping line breaks and tabs.
func cleanLines(s string) string { return contracts.SafeText(s, contracts.Lines, 0) }

// clip is clean bounded to n characters (counted after rendering).
func clip(s string, n int) string { return contracts.SafeText(s, contracts.OneLine, n) }
