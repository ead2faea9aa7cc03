package vault

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/rs/zerolog"
)

// redacted is what a Secret shows instead of its value.
const redacted = "[REDACTED]"

// Secret is a credential value that never prints itself. Every formatting,
// marshalling and logging path yields "[REDACTED]"; Reveal is the only way
// to the value. The value sits behind a pointer so that even reflection
// based printers that cannot call methods (fmt on an unexported field of
// another struct) show an address, not the text.
type Secret struct {
	v *string
}

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: &s} }

// Reveal returns the value. Call it only where the value leaves pikod for
// its intended use (a child's environment, an HTTP header, the keyring).
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// IsZero reports whether s holds no value (or the empty string).
func (s Secret) IsZero() bool { return s.v == nil || *s.v == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer.
func (s Secret) GoString() string { return "vault.Secret(" + redacted + ")" }

// Format implements fmt.Formatter, so every verb and flag (%v %+v %#v %s
// %q %x %d ...) prints the redaction, never the value.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(s.GoString()))
	case verb == 'q':
		_, _ = f.Write([]byte(`"` + redacted + `"`))
	default:
		_, _ = f.Write([]byte(redacted))
	}
}

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler (map keys, YAML, text
// encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// UnmarshalJSON reads a JSON string (or null) into s, so request params can
// carry a Secret field. Beware that "[REDACTED]" decodes to that literal
// text: a Secret does not survive a marshal/unmarshal round trip.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var p *string
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decoding secret: want a JSON string")
	}
	s.v = p
	return nil
}

// MarshalZerologObject implements zerolog.LogObjectMarshaler:
// log.Object("k", s) writes {"secret":"[REDACTED]"}.
func (s Secret) MarshalZerologObject(e *zerolog.Event) { e.Str("secret", redacted) }

// LogValue implements slog.LogValuer for libraries that log through slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }
