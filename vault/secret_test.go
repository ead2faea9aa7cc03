package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const canary = "canary-7f3a9c-do-not-print"

func TestSecretFormatting(t *testing.T) {
	s := NewSecret(canary)
	type inner struct {
		Exported   Secret
		unexported Secret
		Ptr        *Secret
	}
	in := inner{Exported: s, unexported: s, Ptr: &s}
	values := map[string]any{
		"value":   s,
		"pointer": &s,
		"struct":  in,
		"map":     map[string]Secret{"k": s},
		"slice":   []Secret{s, s},
		"any":     []any{s},
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%-12v", "%T"}
	for name, val := range values {
		for _, verb := range verbs {
			got := fmt.Sprintf(verb, val)
			if strings.Contains(got, canary) || strings.Contains(got, fmt.Sprintf("%x", canary)) {
				t.Errorf("Sprintf(%q, %s) = %q: shows the secret", verb, name, got)
			}
		}
	}
	for _, tc := range []struct{ verb, want string }{
		{"%v", "[REDACTED]"},
		{"%s", "[REDACTED]"},
		{"%q", `"[REDACTED]"`},
		{"%#v", "vault.Secret([REDACTED])"},
		{"%+v", "[REDACTED]"},
	} {
		if got := fmt.Sprintf(tc.verb, s); got != tc.want {
			t.Errorf("Sprintf(%q, secret) = %q, want %q", tc.verb, got, tc.want)
		}
	}
	if got := s.String() + s.GoString(); strings.Contains(got, canary) {
		t.Errorf("String/GoString = %q", got)
	}
	if err := fmt.Errorf("using %v: %w", s, errors.New("x")); strings.Contains(err.Error(), canary) {
		t.Errorf("error text shows the secret: %q", err)
	}
}

func TestSecretJSON(t *testing.T) {
	s := NewSecret(canary)
	type holder struct {
		Token  Secret  `json:"token"`
		Ptr    *Secret `json:"ptr"`
		hidden Secret
	}
	for name, val := range map[string]any{
		"value":  s,
		"struct": holder{Token: s, Ptr: &s, hidden: s},
		"map":    map[string]Secret{"a": s},
		"mapkey": map[Secret]int{s: 1},
		"slice":  []any{s, &s},
	} {
		b, err := json.Marshal(val)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		if bytes.Contains(b, []byte(canary)) || !bytes.Contains(b, []byte("[REDACTED]")) {
			t.Errorf("json.Marshal(%s) = %s", name, b)
		}
	}
	if b, _ := json.Marshal(s); string(b) != `"[REDACTED]"` {
		t.Errorf("json.Marshal(secret) = %s", b)
	}
	if b, _ := s.MarshalText(); string(b) != "[REDACTED]" {
		t.Errorf("MarshalText = %s", b)
	}
}

func TestSecretUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     string
		wantZero bool
		wantErr  bool
	}{
		{in: `"abc"`, want: "abc"},
		{in: `""`, wantZero: true},
		{in: `null`, wantZero: true},
		{in: `12`, wantErr: true},
		{in: `{"x":1}`, wantErr: true},
	} {
		var p struct {
			S Secret `json:"s"`
		}
		err := json.Unmarshal([]byte(`{"s":`+tc.in+`}`), &p)
		if (err != nil) != tc.wantErr {
			t.Errorf("Unmarshal(%s) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if p.S.Reveal() != tc.want || p.S.IsZero() != tc.wantZero {
			t.Errorf("Unmarshal(%s) = (%q, zero %v), want (%q, zero %v)", tc.in, p.S.Reveal(), p.S.IsZero(), tc.want, tc.wantZero)
		}
	}
	var zero Secret
	if !zero.IsZero() || zero.Reveal() != "" || NewSecret("x").IsZero() || NewSecret("x").Reveal() != "x" {
		t.Errorf("zero value or NewSecret misbehave")
	}
}

func TestSecretLogging(t *testing.T) {
	s := NewSecret(canary)
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Interface("iface", s).Msg("a")
	log.Info().Object("obj", s).Msg("b")
	log.Info().Stringer("str", s).Msg("c")
	log.Info().Any("any", map[string]any{"s": s, "p": &s}).Msg("d")
	log.Info().Interface("struct", struct{ S Secret }{s}).Msg("e")
	log.Info().Msgf("f %v %s", s, &s)
	child := log.With().Interface("ctx", s).Logger()
	child.Info().Msg("g")
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("h", "s", s, "p", &s)
	out := buf.String()
	if strings.Contains(out, canary) {
		t.Fatalf("log output shows the secret:\n%s", out)
	}
	if !strings.Contains(out, `"obj":{"secret":"[REDACTED]"}`) {
		t.Errorf("Object(secret) not logged as {\"secret\":\"[REDACTED]\"}:\n%s", out)
	}
	if n := strings.Count(out, "[REDACTED]"); n < 10 {
		t.Errorf("only %d redactions in the log:\n%s", n, out)
	}
}
