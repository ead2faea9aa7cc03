package contracts

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hosts a person must read: an internationalised domain shows in Unicode,
// where a Cyrillic а passes for a Latin a. HostASCII gives the form that
// tells them apart (each label as its ACE, "xn--" and RFC 3492 punycode),
// HostUnicode the form a browser may show for an ACE label, and
// MixedScripts the scripts a host mixes. No IDNA mapping (UTS 46 case
// folding, NFC) is applied: the labels are encoded as they came, lowercased.

// acePrefix starts every punycode label (RFC 5890's A-label).
const acePrefix = "xn--"

// RFC 3492 parameters for IDNA.
const (
	pcBase        = 36
	pcTMin        = 1
	pcTMax        = 26
	pcSkew        = 38
	pcDamp        = 700
	pcInitialBias = 72
	pcInitialN    = 128
	// maxLabelRunes bounds a label to encode or decode (a DNS label has at
	// most 63 bytes), so no input makes the quadratic loops long.
	maxLabelRunes = 256
)

var errPunycode = errors.New("not a valid punycode label")

// HostASCII returns host with every label that holds a non-ASCII character
// replaced by its ACE form ("xn--" and its punycode, RFC 3492), and
// reports whether any was. ASCII labels are kept as they are.
func HostASCII(host string) (string, bool, error) {
	labels := strings.Split(host, ".")
	changed := false
	for i, l := range labels {
		if isASCII(l) {
			continue
		}
		if !utf8.ValidString(l) {
			return "", false, errors.New("the host is not valid UTF-8")
		}
		enc, err := punyEncode([]rune(strings.ToLower(l)))
		if err != nil {
			return "", false, err
		}
		labels[i], changed = acePrefix+enc, true
	}
	return strings.Join(labels, "."), changed, nil
}

// HostUnicode returns host with every ACE label ("xn--...") decoded, and
// reports whether any was. A label that does not decode is kept as it is.
func HostUnicode(host string) (string, bool) {
	labels := strings.Split(host, ".")
	changed := false
	for i, l := range labels {
		if len(l) <= len(acePrefix) || !strings.EqualFold(l[:len(acePrefix)], acePrefix) {
			continue
		}
		dec, err := punyDecode(strings.ToLower(l[len(acePrefix):]))
		if err != nil {
			continue
		}
		labels[i], changed = string(dec), true
	}
	return strings.Join(labels, "."), changed
}

// MixedScripts returns the scripts (Unicode script names, sorted) of the
// letters and digits of host when they are more than one, nil otherwise.
// Common and Inherited characters (ASCII digits, hyphens, combining marks)
// belong to none. Latin with Han and the Japanese, Korean or Chinese
// phonetic scripts are not mixing (UTS 39's "highly restrictive" sets),
// so "例え.jp" is not reported; "аccounts.google.com" (Cyrillic а) is.
func MixedScripts(host string) []string {
	seen := map[string]bool{}
	for _, r := range host {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			continue
		}
		if s := scriptOf(r); s != "" {
			seen[s] = true
		}
	}
	if len(seen) < 2 {
		return nil
	}
	names := make([]string, 0, len(seen))
	for s := range seen {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, allowed := range [][]string{
		{"Han", "Hiragana", "Katakana", "Latin"},
		{"Han", "Hangul", "Latin"},
		{"Bopomofo", "Han", "Latin"},
	} {
		if !slices.ContainsFunc(names, func(s string) bool { return !slices.Contains(allowed, s) }) {
			return nil
		}
	}
	return names
}

// scriptOf names r's Unicode script, "" for Common, Inherited and unknown.
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return "Latin"
		}
		return ""
	}
	for name, table := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func pcAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= pcDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((pcBase-pcTMin)*pcTMax)/2 {
		delta /= pcBase - pcTMin
		k += pcBase
	}
	return k + (pcBase-pcTMin+1)*delta/(delta+pcSkew)
}

func pcDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

func pcThreshold(k, bias int) int {
	switch {
	case k <= bias:
		return pcTMin
	case k >= bias+pcTMax:
		return pcTMax
	}
	return k - bias
}

// punyEncode is RFC 3492 section 6.3 (without case annotation).
func punyEncode(in []rune) (string, error) {
	if len(in) > maxLabelRunes {
		return "", errors.New("a host label is too long")
	}
	var out []byte
	for _, r := range in {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	h := b
	if b > 0 {
		out = append(out, '-')
	}
	n, delta, bias := pcInitialN, 0, pcInitialBias
	for h < len(in) {
		m := int(utf8.MaxRune) + 1
		for _, r := range in {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		delta += (m - n) * (h + 1) // at most 0x110000 * 257: no overflow
		n = m
		for _, r := range in {
			if int(r) < n {
				delta++
			}
			if int(r) != n {
				continue
			}
			q := delta
			for k := pcBase; ; k += pcBase {
				t := pcThreshold(k, bias)
				if q < t {
					break
				}
				out = append(out, pcDigit(t+(q-t)%(pcBase-t)))
				q = (q - t) / (pcBase - t)
			}
			out = append(out, pcDigit(q))
			bias = pcAdapt(delta, h+1, h == b)
			delta = 0
			h++
		}
		delta++
		n++
	}
	return string(out), nil
}

// punyDecode is RFC 3492 section 6.2.
func punyDecode(s string) ([]rune, error) {
	if len(s) > 8*maxLabelRunes || !isASCII(s) {
		return nil, errPunycode
	}
	var out []rune
	rest := s
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		for _, c := range []byte(s[:i]) {
			out = append(out, rune(c))
		}
		rest = s[i+1:]
	}
	n, i, bias := pcInitialN, 0, pcInitialBias
	for pos := 0; pos < len(rest); {
		oldi, w := i, 1
		for k := pcBase; ; k += pcBase {
			if pos >= len(rest) {
				return nil, errPunycode
			}
			c := rest[pos]
			pos++
			var d int
			switch {
			case 'a' <= c && c <= 'z':
				d = int(c - 'a')
			case 'A' <= c && c <= 'Z':
				d = int(c - 'A')
			case '0' <= c && c <= '9':
				d = int(c-'0') + 26
			default:
				return nil, errPunycode
			}
			i += d * w
			if i > int(utf8.MaxRune)*(maxLabelRunes+1) {
				return nil, errPunycode
			}
			t := pcThreshold(k, bias)
			if d < t {
				break
			}
			w *= pcBase - t
			if w > int(utf8.MaxRune)*(maxLabelRunes+1) {
				return nil, errPunycode // and no overflow on a long run of digits
			}
		}
		bias = pcAdapt(i-oldi, len(out)+1, oldi == 0)
		n += i / (len(out) + 1)
		i %= len(out) + 1
		if n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) || n < pcInitialN {
			return nil, errPunycode
		}
		if len(out) >= maxLabelRunes {
			return nil, errPunycode
		}
		out = slices.Insert(out, i, rune(n))
		i++
	}
	return out, nil
}
