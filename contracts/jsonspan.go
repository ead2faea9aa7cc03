package contracts

// JSONSpan is one value's JSON text inside a larger document that outlives
// it: decoded into, it aliases the document's bytes instead of copying them
// (json.RawMessage copies), so looking at a few members of a result of many
// megabytes does not make a second copy of the rest. The document must stay
// unchanged while the span is used.
type JSONSpan []byte

// UnmarshalJSON keeps data itself: encoding/json hands an Unmarshaler a
// slice of its input.
func (s *JSONSpan) UnmarshalJSON(data []byte) error {
	*s = data
	return nil
}
