package oauth

import (
	"net/http"
	"strings"
)

// Challenge is one Bearer challenge of a WWW-Authenticate header (RFC 6750
// section 3, RFC 9728 section 5.1), or one DPoP challenge (RFC 9449
// section 7.1), which carries the same parameters.
type Challenge struct {
	// Scheme is "Bearer" or "DPoP".
	Scheme string `json:"-"`
	// ResourceMetadata is the protected resource metadata URL the server
	// advertised, or empty.
	ResourceMetadata string `json:"resourceMetadata,omitempty"`
	// Scope is the space-separated scope the server asks for, or empty.
	Scope string `json:"scope,omitempty"`
	// Error is the error code (invalid_token, insufficient_scope, ...).
	Error string `json:"error,omitempty"`
	// Description is error_description as the server sent it; untrusted
	// text, to be cleaned before anyone sees it.
	Description string `json:"-"`
}

// InsufficientScope reports whether the challenge asks for more scope.
func (c *Challenge) InsufficientScope() bool {
	return c != nil && c.Error == "insufficient_scope"
}

// BearerChallenge returns the first Bearer challenge of the response's
// WWW-Authenticate headers.
func BearerChallenge(h http.Header) (*Challenge, bool) {
	return firstChallenge(h, "Bearer")
}

// ServerChallenge returns the first Bearer challenge of the response's
// WWW-Authenticate headers, else its first DPoP challenge: a server that
// takes DPoP-bound tokens may challenge with either or both.
func ServerChallenge(h http.Header) (*Challenge, bool) {
	if c, ok := firstChallenge(h, "Bearer"); ok {
		return c, true
	}
	return firstChallenge(h, "DPoP")
}

func firstChallenge(h http.Header, scheme string) (*Challenge, bool) {
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range parseChallenges(v) {
			if strings.EqualFold(ch.scheme, scheme) {
				c := &Challenge{
					Scheme:           scheme,
					ResourceMetadata: ch.params["resource_metadata"],
					Scope:            ch.params["scope"],
					Error:            ch.params["error"],
					Description:      ch.params["error_description"],
				}
				return c, true
			}
		}
	}
	return nil, false
}

type rawChallenge struct {
	scheme string
	params map[string]string
}

// parseChallenges reads one WWW-Authenticate field value (RFC 9110 section
// 11.6.1): challenges separated by commas, each an auth-scheme followed by
// a token68 or by comma-separated auth-params whose values are tokens or
// quoted strings. Parameter names are case-insensitive; the first of a
// repeated name wins. It never fails: what it cannot read is skipped.
func parseChallenges(v string) []rawChallenge {
	var out []rawChallenge
	p := &headerScanner{s: v}
	for {
		p.skipSpaceAndCommas()
		if p.done() {
			return out
		}
		scheme := p.token()
		if scheme == "" {
			// Not a token: skip one byte and try again.
			p.i++
			continue
		}
		ch := rawChallenge{scheme: scheme, params: map[string]string{}}
		for {
			p.skipSpace()
			save := p.i
			name := p.token()
			if name == "" {
				// token68 or garbage: skip to the next comma.
				p.skipUntilComma()
				if !p.comma() {
					break
				}
				continue
			}
			p.skipSpace()
			if p.peek() != '=' {
				// A bare token: the next challenge's scheme.
				p.i = save
				break
			}
			p.i++
			p.skipSpace()
			// token68 may end in '='; so may an empty value.
			var value string
			if p.peek() == '"' {
				value = p.quoted()
			} else {
				value = p.token()
				for p.peek() == '=' {
					value += "="
					p.i++
				}
			}
			key := strings.ToLower(name)
			if _, dup := ch.params[key]; !dup {
				ch.params[key] = value
			}
			p.skipSpace()
			if !p.comma() {
				break
			}
			// After the comma: another param of this challenge, or the
			// next challenge (a token followed by a space or the end).
			p.skipSpaceAndCommas()
			save = p.i
			tok := p.token()
			p.skipSpace()
			next := p.peek()
			p.i = save
			if tok == "" || next != '=' {
				break
			}
		}
		out = append(out, ch)
	}
}

type headerScanner struct {
	s string
	i int
}

func (p *headerScanner) done() bool { return p.i >= len(p.s) }

func (p *headerScanner) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *headerScanner) skipSpace() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *headerScanner) skipSpaceAndCommas() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *headerScanner) skipUntilComma() {
	for !p.done() && p.s[p.i] != ',' {
		if p.s[p.i] == '"' {
			p.quoted()
			continue
		}
		p.i++
	}
}

func (p *headerScanner) comma() bool {
	if p.peek() == ',' {
		p.i++
		return true
	}
	return false
}

// token reads an RFC 9110 token (tchar+), or returns "".
func (p *headerScanner) token() string {
	start := p.i
	for !p.done() && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string starting at '"', unescaping quoted-pairs. An
// unterminated string runs to the end.
func (p *headerScanner) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String()
		case '\\':
			if !p.done() {
				b.WriteByte(p.s[p.i])
				p.i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
