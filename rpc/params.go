package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// DecodeParams decodes raw into v strictly: unknown fields are rejected,
// absent or null params decode as an empty object, and trailing data is an
// error. A failure is a *contracts.Error with code -32602 and reason
// invalid_params, naming the field and the expected type when it can.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("unexpected data after the params object")
	}
	if err == nil {
		return nil
	}
	field, msg := describeDecodeError(err)
	we := &contracts.Error{
		Code:    contracts.CodeInvalidParams,
		Message: "invalid params: " + msg,
		Data:    &contracts.ErrorData{Reason: contracts.ReasonInvalidParams},
	}
	if field != "" {
		we.Message = "invalid params: " + field + ": " + msg
		we.Data.Problems = []contracts.Problem{{Field: field, Message: msg}}
	}
	return we
}

func describeDecodeError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			return "", fmt.Sprintf("params must be %s, got %s", jsonKind(te.Type), te.Value)
		}
		return te.Field, fmt.Sprintf("want %s, got %s", jsonKind(te.Type), te.Value)
	case errors.As(err, &se):
		return "", fmt.Sprintf("malformed JSON at offset %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return strings.Trim(name, `"`), "unknown field"
	}
	return "", strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
