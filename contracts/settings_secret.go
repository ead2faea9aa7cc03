package contracts

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// SecretLookingEnv reports whether an environment variable would be
// refused in the settings as a credential (by its name or its value): such
// a variable belongs in the vault (extensions.secret {"env":{...}}). It
// applies the checks Validate applies, so an importer can move exactly
// what the settings would refuse.
func SecretLookingEnv(name, value string) bool {
	return looksSecretName(name) || looksLikeCredential(value) || urlPasswordRE.MatchString(value) || webhookURL(value) != ""
}

// SecretLookingHeader is SecretLookingEnv for a request header.
func SecretLookingHeader(name, value string) bool {
	return secretHeader(name) || looksLikeCredential(value) || urlPasswordRE.MatchString(value) || webhookURL(value) != ""
}

// Credential detection. These heuristics catch obvious mistakes, such as a
// token pasted into a URL, header, environment variable or argument; they
// are no guarantee. False positives cost the user one move to the vault,
// which is where a doubtful value belongs anyway.

// secretWords mark a name as naming a credential when one of them is a whole
// word of the name (split at punctuation and case changes): GITHUB_TOKEN,
// X-Api-Key, apiKey, DB_PASSWORD, session, sig.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "secret": true, "secrets": true,
	"password": true, "passwords": true, "passwd": true, "pwd": true, "pass": true,
	"passphrase": true, "key": true, "keys": true, "apikey": true, "auth": true,
	"authorization": true, "authentication": true, "credential": true,
	"credentials": true, "creds": true, "signature": true, "sig": true,
	"session": true, "sessionid": true, "sid": true, "cookie": true, "jwt": true,
	"bearer": true, "otp": true,
}

// secretParts mark a name when they occur anywhere in one word, for names
// glued without separators (MYTOKEN, accesskey, clientsecret).
var secretParts = []string{
	"token", "secret", "password", "passwd", "apikey", "credential",
	"accesskey", "privatekey", "signature", "sessionid", "authkey",
}

// safeLastWords end names that point at a credential rather than hold one,
// or describe how it is used: TOKEN_FILE, SSH_AUTH_SOCK, AUTH_URL, KEY_PATH,
// AUTH_TYPE. Their values still go through looksLikeCredential.
var safeLastWords = map[string]bool{
	"file": true, "files": true, "path": true, "dir": true, "directory": true,
	"sock": true, "socket": true, "url": true, "uri": true, "endpoint": true,
	"host": true, "port": true, "header": true, "name": true, "type": true,
	"mode": true, "method": true, "scope": true, "scopes": true, "issuer": true,
	"audience": true, "ttl": true, "expiry": true, "timeout": true,
	"enabled": true, "disabled": true, "required": true, "provider": true,
	"format": true, "length": true, "size": true, "helper": true, "command": true,
}

// negatingFirstWords start switches about a credential rather than the
// credential itself: --no-auth, DISABLE_AUTH, --skip-auth.
var negatingFirstWords = map[string]bool{
	"no": true, "disable": true, "enable": true, "skip": true, "without": true,
	"allow": true, "require": true, "use": true,
}

// looksSecretName reports whether an environment variable, header, query
// parameter or flag name looks like it names a credential.
func looksSecretName(name string) bool {
	if strings.EqualFold(name, "code") { // an OAuth authorization code in a URL
		return true
	}
	words := nameWords(name)
	if len(words) == 0 || safeLastWords[words[len(words)-1]] || negatingFirstWords[words[0]] {
		return false
	}
	for i, w := range words {
		if secretWords[w] && !(w == "key" && i > 0 && words[i-1] == "public") {
			return true
		}
		for _, p := range secretParts {
			if strings.Contains(w, p) {
				return true
			}
		}
	}
	return false
}

// nameWords splits a name into lowercase words at every non-alphanumeric
// character and at case changes (apiKey, APIKey and API_KEY all give api,
// key).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				flush()
			}
		}
		cur = append(cur, unicode.ToLower(r))
	}
	flush()
	return words
}

// tokenFormatRE matches well-known credential formats: GitHub (ghp_, gho_,
// ghu_, ghs_, ghr_, github_pat_), OpenAI/Anthropic-style sk-, Stripe,
// Slack xox?-, GitLab glpat-, AWS access key ids, Google API keys, npm,
// JWTs and PEM private keys.
var tokenFormatRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:` + strings.Join([]string{
	`gh[pousr]_[A-Za-z0-9]{20,}`,
	`github_pat_[A-Za-z0-9_]{20,}`,
	`sk-[A-Za-z0-9_-]{16,}`,
	`[sr]k_(?:live|test)_[A-Za-z0-9]{10,}`,
	`xox[abprs]-[A-Za-z0-9-]{10,}`,
	`glpat-[A-Za-z0-9_-]{20,}`,
	`(?:AKIA|ASIA)[0-9A-Z]{16}`,
	`AIza[0-9A-Za-z_-]{35}`,
	`npm_[A-Za-z0-9]{36}`,
	`eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}`,
	`-----BEGIN[A-Z ]*PRIVATE KEY-----`,
}, "|") + `)`)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// looksLikeCredential reports whether a value looks like a credential: an
// HTTP authorization value (Bearer, Basic, token), a well-known token format,
// or a long random-looking string.
func looksLikeCredential(v string) bool {
	t := strings.ToLower(strings.TrimSpace(v))
	for _, p := range []string{"bearer ", "basic ", "token "} {
		if strings.HasPrefix(t, p) && strings.TrimSpace(t[len(p):]) != "" {
			return true
		}
	}
	if tokenFormatRE.MatchString(v) {
		return true
	}
	start := -1
	for i := 0; i <= len(v); i++ {
		if i < len(v) && isTokenByte(v[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 32 && randomLooking(v[start:i]) {
			return true
		}
		start = -1
	}
	return false
}

// isTokenByte is the alphabet of hex, base64 and base64url.
func isTokenByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		b == '+' || b == '/' || b == '=' || b == '_' || b == '-'
}

// randomLooking reports whether a run of at least 32 token characters looks
// random rather than like words or a path: hex with a fair mix of digits and
// letters, or letters and digits whose class (upper, lower, digit) changes
// often and whose character entropy is high. UUIDs, paths and hyphenated
// words (many separators) do not count.
func randomLooking(run string) bool {
	if uuidRE.MatchString(run) {
		return false
	}
	seps := strings.Count(run, "-") + strings.Count(run, "_") + strings.Count(run, "/")
	if seps*8 > len(run) {
		return false
	}
	alnum := strings.Map(func(r rune) rune {
		if strings.ContainsRune("-_/+=", r) {
			return -1
		}
		return r
	}, run)
	n := len(alnum)
	if n < 24 {
		return false
	}
	var upper, lower, digit, hexLetters int
	for i := 0; i < n; i++ {
		b := alnum[i]
		switch {
		case b >= '0' && b <= '9':
			digit++
		case b >= 'a' && b <= 'z':
			lower++
			if b <= 'f' {
				hexLetters++
			}
		default:
			upper++
			if b <= 'F' {
				hexLetters++
			}
		}
	}
	if digit+hexLetters == n && (upper == 0 || lower == 0) {
		return digit*5 >= n && hexLetters*10 >= n
	}
	changes := 0
	for i := 1; i < n; i++ {
		if byteClass(alnum[i]) != byteClass(alnum[i-1]) {
			changes++
		}
	}
	if upper > 0 && lower > 0 {
		// Random base62/base64 changes class about 6 times in 10;
		// CamelCase words about 3 in 10.
		return changes*10 >= n*4 && entropy(alnum) >= 4.0
	}
	// One letter case and digits (base36): words rarely mix in digits.
	return digit >= 3 && upper+lower >= 3 && changes*10 >= n*2 && entropy(alnum) >= 3.8
}

func byteClass(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return 0
	case b >= 'a' && b <= 'z':
		return 1
	}
	return 2
}

// entropy is the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// webhookURL names the service of a webhook URL inside v ("Slack",
// "Discord"), or returns "".
func webhookURL(v string) string {
	m := webhookRE.FindStringSubmatch(v)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return "Slack"
	}
	return "Discord"
}

// attachedSecret says what credential is glued to the flag args[i]:
// -pVALUE (mysql's password, unless VALUE is a port or plain lowercase
// letters such as -pthread or -project), -uUSER:PASS, --user=USER:PASS.
func attachedSecret(args []string, i int) string {
	a := args[i]
	if rest, ok := strings.CutPrefix(a, "-p"); ok && !strings.HasPrefix(a, "--") && rest != "" &&
		!strings.ContainsRune(rest, '=') && !portLikeRE.MatchString(rest) && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return "the password attached to -p (-pPASSWORD)"
	}
	if rest, ok := strings.CutPrefix(a, "-u"); ok && !strings.HasPrefix(a, "--") && userPassword(rest) {
		return "the user:password pair attached to -u"
	}
	if rest, ok := strings.CutPrefix(a, "--user="); ok && userPassword(rest) {
		return "the user:password pair of --user"
	}
	return ""
}

// userPassFlag is a flag whose value may be USER:PASSWORD (curl's -u and
// --user, wget's, many more).
func userPassFlag(a string) bool { return a == "-u" || a == "--user" }

// userPassword reports whether v is USER:PASSWORD: a colon with something
// after it, and not a uid:gid or a user:group of plain names.
func userPassword(v string) bool {
	user, pass, ok := strings.Cut(v, ":")
	return ok && user != "" && pass != "" && !strings.HasPrefix(v, "-") &&
		!uidGidRE.MatchString(v) && !userGroupRE.MatchString(v)
}

// secretHeader reports header names that carry credentials: the standard
// ones and any whose words look secret (X-Api-Key, Private-Token, ...).
func secretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return looksSecretName(name)
}

// urlHasCredential reports the URL credentials that url() rejects.
func urlHasCredential(u *url.URL) bool {
	return u.User != nil || len(secretQueryNames(u.RawQuery)) > 0 || queryValueCredential(u.RawQuery) || pathCredential(u) ||
		webhookURL(u.String()) != ""
}

// secretQueryNames returns the names of query parameters that look like
// credentials, quoted when they are plain names and counted otherwise.
func secretQueryNames(rawQuery string) []string {
	if rawQuery == "" {
		return nil
	}
	q, _ := url.ParseQuery(rawQuery) // keeps what parses; the rest cannot be a named secret
	var names []string
	hidden := 0
	for name := range q {
		if !looksSecretName(name) {
			continue
		}
		if plainKey(name) {
			names = append(names, strconv.Quote(name))
		} else {
			hidden++
		}
	}
	slices.Sort(names)
	if hidden > 0 {
		names = append(names, fmt.Sprintf("%d unnamed", hidden))
	}
	return names
}

func queryValueCredential(rawQuery string) bool {
	if rawQuery == "" {
		return false
	}
	q, _ := url.ParseQuery(rawQuery)
	for _, vs := range q {
		for _, v := range vs {
			if looksLikeCredential(v) {
				return true
			}
		}
	}
	return false
}

// pathCredential catches tokens embedded in the path, as some services put
// an API key there.
func pathCredential(u *url.URL) bool {
	for seg := range strings.SplitSeq(u.Path, "/") {
		if looksLikeCredential(seg) {
			return true
		}
	}
	return false
}

// urlPasswordRE finds scheme://user:password@ anywhere in a value. A URL
// with a user name but no password (ssh://git@host) is not a credential.
var urlPasswordRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:[^\s/?#@]+@`)
