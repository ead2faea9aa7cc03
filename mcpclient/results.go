package mcpclient

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// resultInputRequired is the resultType of a 2026-07-28 result that asks
// the client for input before the server can finish the request.
const resultInputRequired = string(mcp.ResultTypeInputRequired)

// resultTypeOf reads a result's resultType (fields are the result's
// members): "" for a final result (absent, as from a legacy server, or
// "complete"), resultInputRequired, or an error for any other value,
// which the revision says a client must treat as an invalid result (the
// tasks extension's "task", which pikod does not declare, among them).
// The error wraps ErrOutcomeUnknown with reason invalid_result: the server
// answered, but not with anything pikod can call an outcome.
func resultTypeOf[V ~[]byte](fields map[string]V, clean func(string, int) string) (string, error) {
	raw, ok := fields["resultType"]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var t string
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", contracts.WithReason(fmt.Errorf("the server answered with a resultType that is not a string; the outcome is unknown: %w",
			contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
	}
	switch t {
	case string(mcp.ResultTypeComplete):
		return "", nil
	case resultInputRequired:
		return t, nil
	}
	return "", contracts.WithReason(fmt.Errorf("the server answered with resultType %s, which pikod does not know; the outcome is unknown: %w",
		strconv.Quote(clean(t, 60)), contracts.ErrOutcomeUnknown), contracts.ReasonInvalidResult)
}
