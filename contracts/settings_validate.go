package contracts

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

var (
	serverIDRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

var (
	timeoutMsRange    = fmt.Sprintf("must be between %d and %d milliseconds: omit it for the default %d", MinTimeoutMs, MaxTimeoutMs, DefaultTimeoutMs)
	maxBytesRange     = fmt.Sprintf("must be between %d and %d bytes: omit it for the default %d", MinMaxBytes, MaxMaxBytes, DefaultMaxBytes)
	callbackPortRange = "must be a port between 1024 and 65535: omit it to use a free port"
)

const idRule = "a lowercase letter followed by up to 31 lowercase letters, digits or hyphens"

func validServerID(id string) bool { return serverIDRE.MatchString(id) }

// Validate checks the semantic rules of the settings: ids, transports and
// the fields that belong to them, ranges, URLs, paths, tool grants, OAuth and
// the absence of obvious credentials. It returns every problem as Problems,
// or nil. It does no I/O: whether a command exists or a host resolves is
// found out on connect.
func (s *MCPSettings) Validate() error {
	if s == nil {
		return Problems{{Message: "settings are missing: give {\"servers\": [...]}"}}
	}
	return (&walker{}).result(s.validate())
}

func (s *MCPSettings) validate() []indexedProblem {
	var out []indexedProblem
	if len(s.Servers) > MaxServers {
		out = append(out, indexedProblem{index: -1, Problem: Problem{Field: "servers",
			Message: fmt.Sprintf("%d servers configured; at most %d are allowed: remove some", len(s.Servers), MaxServers)}})
	}
	first := make(map[string]int, len(s.Servers))
	for i := range s.Servers {
		srv := &s.Servers[i]
		c := &checker{index: i, label: serverLabel(srv, i)}
		c.server(srv)
		if validServerID(srv.ID) {
			if j, dup := first[srv.ID]; dup {
				c.add("id", "duplicate id: servers[%d] and servers[%d] are both %q; give each server its own id", j, i, srv.ID)
			} else {
				first[srv.ID] = i
			}
		}
		out = append(out, c.probs...)
	}
	c := &checker{index: -1}
	c.retention(s.Retention)
	return append(out, c.probs...)
}

// serverLabel names a server in problems: its id when valid, else its
// position.
func serverLabel(s *ServerSettings, i int) string {
	if validServerID(s.ID) {
		return s.ID
	}
	return "servers[" + strconv.Itoa(i) + "]"
}

// secretCommand is the command a problem tells the user to run instead of
// writing a credential into the settings.
func secretCommand(label string) string {
	if !validServerID(label) {
		label = "SERVER"
	}
	return "pikoctl mcp secret " + label
}

// checker collects the problems of one server.
type checker struct {
	index int
	label string
	probs []indexedProblem
}

func (c *checker) add(field, format string, args ...any) {
	c.probs = append(c.probs, indexedProblem{index: c.index, Problem: Problem{Server: c.label, Field: field, Message: fmt.Sprintf(format, args...)}})
}

// credential reports a credential found at field. The message names only
// the field: the value may be a live secret.
func (c *checker) credential(field, what string) {
	c.add(field, "%s looks like a credential: remove it and store it with %q", what, secretCommand(c.label))
}

func (c *checker) server(s *ServerSettings) {
	switch {
	case s.ID == "":
		c.add("id", "required: %s", idRule)
	case !validServerID(s.ID):
		c.add("id", "must be %s", idRule)
	}
	switch s.Transport {
	case TransportStdio:
		c.stdio(s)
	case TransportHTTP, TransportSSE:
		c.remote(s)
	case "":
		c.add("transport", "required: stdio, http or sse")
	default:
		c.add("transport", "must be stdio, http or sse")
	}
	c.common(s)
	if b := s.Browser; b != nil {
		switch _, known := FindBrowserPreset(b.Preset); {
		case s.Transport != TransportStdio:
			c.add("browser", "applies only to stdio servers (pikod runs the browser server itself)")
		case b.Preset == "":
			c.add("browser.preset", "required: %s, %s or %s", BrowserPlaywright, BrowserChromeDevTools, BrowserGeneric)
		case !known && b.Preset != BrowserGeneric:
			c.add("browser.preset", "must be %s, %s or %s", BrowserPlaywright, BrowserChromeDevTools, BrowserGeneric)
		}
	}
}

func (c *checker) stdio(s *ServerSettings) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"url", s.URL != ""},
		{"headers", len(s.Headers) > 0},
		{"allowPrivateNetwork", s.AllowPrivateNetwork},
		{"oauth", s.OAuth != nil},
		{"tlsPin", s.TLSPin != ""},
	} {
		if f.set {
			c.add(f.name, "applies only to http and sse servers: remove it or change the transport")
		}
	}
	switch {
	case s.Command == "":
		c.add("command", "required for stdio servers: an absolute path or a program name found in PATH")
	case strings.ContainsRune(s.Command, 0):
		c.add("command", "must not contain a NUL character")
	case looksLikeCredential(s.Command):
		c.credential("command", "command")
	}
	c.args(s.Args)
	if s.Cwd != "" {
		switch {
		case strings.ContainsRune(s.Cwd, 0):
			c.add("cwd", "must not contain a NUL character")
		case !filepath.IsAbs(s.Cwd):
			c.add("cwd", "must be an absolute path")
		}
	}
	keys, labels := sortedKeyLabels(s.Env)
	for _, k := range keys {
		f := joinPath("env", labels[k])
		v := s.Env[k]
		if !envNameRE.MatchString(k) {
			c.add(f, "is not a valid environment variable name: use letters, digits and '_', not starting with a digit")
		} else if looksSecretName(k) {
			c.add(f, "name looks like a secret: set this variable privately with %q instead", secretCommand(c.label))
			continue
		}
		switch {
		case strings.ContainsRune(v, 0):
			c.add(f, "value must not contain a NUL character")
		case looksLikeCredential(v):
			c.credential(f, "value")
		default:
			c.secretInText(f, v)
		}
	}
}

// secretInText reports a credential carried inside a longer value: a
// password in a URL (postgres://user:pw@host) or a webhook URL whose path
// is the secret. It reports whether it found one.
func (c *checker) secretInText(field, v string) bool {
	switch {
	case urlPasswordRE.MatchString(v):
		c.credential(field, "the password in this URL")
	case webhookURL(v) != "":
		c.credential(field, "this "+webhookURL(v)+" webhook URL")
	default:
		return false
	}
	return true
}

// webhookRE finds the well-known webhook URLs whose path is their secret
// (anyone holding one can post): Slack incoming webhooks and workflow
// triggers, Discord webhooks (discord.com, its ptb and canary hosts, and
// the older discordapp.com), with or without a scheme.
var webhookRE = regexp.MustCompile(`(?i)(?:^|[^a-z0-9.-])(?:(hooks\.slack\.com/(?:services|workflows|triggers)/)|((?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v[0-9]+/)?webhooks/))[^\s/?#]`)

// portLikeRE is a value -p commonly takes that is not a password: a port,
// a port range or a container port mapping ([ip:]host:container[/proto]).
var portLikeRE = regexp.MustCompile(`^(?:[0-9.]+:|\[[0-9A-Fa-f:.]+\]:)?[0-9]{1,5}(?:-[0-9]{1,5})?(?::[0-9]{1,5}(?:-[0-9]{1,5})?)?(?:/(?:tcp|udp|sctp))?$`)

// args finds NULs and credentials in command arguments: values that look
// like tokens, passwords in URLs and webhook URLs (anywhere in an
// argument, flag values included), --secret-flag=VALUE and --secret-flag
// VALUE (--password, --token, ...), -p VALUE and -p=VALUE (unless VALUE
// is a port or port mapping), -pVALUE glued (mysql), -u USER:PASS,
// -uUSER:PASS and --user=USER:PASS (curl; not a uid:gid or user:group of
// plain names, as docker's -u takes), NAME=VALUE with a secret-looking NAME,
// "Header: value" lines and URLs carrying credentials.
func (c *checker) args(args []string) {
	reported := make(map[int]bool)
	for i, a := range args {
		f := "args[" + strconv.Itoa(i) + "]"
		if reported[i] {
			continue
		}
		if strings.ContainsRune(a, 0) {
			c.add(f, "must not contain a NUL character")
			continue
		}
		if looksLikeCredential(a) {
			c.credential(f, "argument")
			continue
		}
		if c.secretInText(f, a) {
			continue
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if what := attachedSecret(args, i); what != "" {
				c.credential(f, what)
				continue
			}
			if userPassFlag(a) && i+1 < len(args) && userPassword(args[i+1]) {
				next := "args[" + strconv.Itoa(i+1) + "]"
				c.credential(next, "the user:password pair after "+a)
				reported[i+1] = true
				continue
			}
			name, val, hasEq := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "p" && !strings.HasPrefix(a, "--") {
				// -p is the password flag of mysql, redis-cli and many
				// more; a port (-p 8080, docker's -p 8080:80) is not.
				switch {
				case hasEq && val != "" && !portLikeRE.MatchString(val):
					c.credential(f, "the value of -p (a password flag)")
				case !hasEq && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !portLikeRE.MatchString(args[i+1]):
					next := "args[" + strconv.Itoa(i+1) + "]"
					c.credential(next, "the value after -p (a password flag)")
					reported[i+1] = true
				}
				continue
			}
			if !looksSecretName(name) {
				continue
			}
			switch {
			case hasEq && val != "":
				c.credential(f, "the value of this flag")
			case !hasEq && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
				next := "args[" + strconv.Itoa(i+1) + "]"
				c.credential(next, "the value after a secret-looking flag")
				reported[i+1] = true
			}
			continue
		}
		if name, val, ok := strings.Cut(a, "="); ok && envNameRE.MatchString(name) && val != "" && looksSecretName(name) {
			c.credential(f, "the value of this assignment")
			continue
		}
		if name, val, ok := strings.Cut(a, ":"); ok && headerNameRE.MatchString(strings.TrimSpace(name)) &&
			strings.TrimSpace(val) != "" && secretHeader(strings.TrimSpace(name)) {
			c.credential(f, "this header line")
			continue
		}
		if strings.Contains(a, "://") {
			if u, err := url.Parse(strings.TrimSpace(a)); err == nil && urlHasCredential(u) {
				c.credential(f, "this URL")
			}
		}
	}
}

// uidGidRE and userGroupRE are the USER:GROUP values -u takes elsewhere
// (docker run -u 1000:1000, -u app:app; names without digits), not
// passwords.
var (
	uidGidRE    = regexp.MustCompile(`^[0-9]+(?::[0-9]+)?$`)
	userGroupRE = regexp.MustCompile(`^[a-z_][a-z_-]*(?::[a-z_][a-z_-]*)?$`)
)

// headerNameRE is an HTTP field name: one or more tchar (RFC 9110).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// managedHeaders are set by pikod's MCP transport; a configured value
// would break or spoof the protocol.
var managedHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "transfer-encoding": true,
	"connection": true, "upgrade": true, "te": true, "trailer": true, "keep-alive": true,
	"accept": true, "accept-encoding": true, "mcp-session-id": true,
	"mcp-protocol-version": true, "last-event-id": true,
}

func (c *checker) remote(s *ServerSettings) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"command", s.Command != ""},
		{"args", len(s.Args) > 0},
		{"cwd", s.Cwd != ""},
		{"env", len(s.Env) > 0},
	} {
		if f.set {
			c.add(f.name, "applies only to stdio servers: remove it or change the transport")
		}
	}
	if s.URL == "" {
		c.add("url", "required for %s servers: the exact endpoint, https://...", s.Transport)
	} else {
		c.url("url", s.URL, urlRule{
			allowHTTP: s.AllowPrivateNetwork,
			httpMsg:   "url must use https (set allowPrivateNetwork for a LAN or loopback endpoint)",
		})
	}
	keys, labels := sortedKeyLabels(s.Headers)
	for _, k := range keys {
		f := joinPath("headers", labels[k])
		v := s.Headers[k]
		switch {
		case !headerNameRE.MatchString(k):
			c.add(f, "is not a valid header name: use letters, digits and - only")
			continue
		case managedHeaders[strings.ToLower(k)]:
			c.add(f, "is set by pikod itself: remove it")
			continue
		case secretHeader(k):
			c.add(f, "header looks like a credential: set it privately with %q instead", secretCommand(c.label))
			continue
		}
		switch {
		case strings.ContainsAny(v, "\r\n\x00"):
			c.add(f, "value must not contain CR, LF or NUL")
		case looksLikeCredential(v):
			c.credential(f, "value")
		default:
			c.secretInText(f, v)
		}
	}
	if s.OAuth != nil {
		c.oauth(s)
	}
	if s.TLSPin != "" {
		if _, err := ParseTLSPin(s.TLSPin); err != nil {
			c.add("tlsPin", "%v", err)
		} else if u, err := url.Parse(s.URL); err == nil && !strings.EqualFold(u.Scheme, "https") {
			c.add("tlsPin", "applies only to an https url: a pin checks the TLS peer, and plain http has none")
		}
	}
}

func (c *checker) oauth(s *ServerSettings) {
	o := s.OAuth
	grant := o.EffectiveGrantType()
	switch o.GrantType {
	case "", GrantAuthorizationCode, GrantClientCredentials, GrantCrossAppAccess, GrantJWTBearer:
	default:
		c.add("oauth.grantType", "must be %s, %s, %s or %s", GrantAuthorizationCode, GrantClientCredentials, GrantCrossAppAccess, GrantJWTBearer)
	}
	noBrowser := grant == GrantClientCredentials || grant == GrantCrossAppAccess || grant == GrantJWTBearer
	if noBrowser && o.ClientID == "" {
		c.add("oauth.clientId", "%s requires clientId (the client secret goes to %q)", grant, secretCommand(c.label))
	}
	// OAuth endpoints in settings follow the network rule of OAuth fetches:
	// plaintext (and private addresses) only on the server's own host.
	ownHost := urlRule{
		allowHTTP: s.AllowPrivateNetwork && SameHost(o.Issuer, s.URL),
		httpMsg:   "oauth.issuer must use https (http is allowed only on the MCP server's own host, with allowPrivateNetwork)",
	}
	if o.Issuer == "" {
		switch {
		case noBrowser:
			c.add("oauth.issuer", "%s requires the authorization server's issuer URL (see 'pikoctl mcp auth %s --discover')", grant, c.label)
		case o.ClientID != "":
			c.add("oauth.issuer", "a pre-registered clientId requires the authorization server's issuer URL (see 'pikoctl mcp auth %s --discover')", c.label)
		}
	} else {
		u := c.url("oauth.issuer", o.Issuer, ownHost)
		if u != nil && (u.RawQuery != "" || u.ForceQuery) {
			c.add("oauth.issuer", "must not have a query: give the exact issuer URL")
		}
	}
	if o.ClientID != "" && !printable(o.ClientID) {
		c.add("oauth.clientId", "must be printable text without control characters")
	}
	if o.CallbackPort != 0 && (o.CallbackPort < 1024 || o.CallbackPort > 65535) {
		c.add("oauth.callbackPort", "%s", callbackPortRange)
	}
	if o.CallbackPort != 0 && noBrowser {
		c.add("oauth.callbackPort", "is used only by %s: %s needs no browser and no callback", GrantAuthorizationCode, grant)
	}
	if o.ClientMetadataURL != "" {
		u := c.url("oauth.clientMetadataUrl", o.ClientMetadataURL, urlRule{
			httpMsg: "oauth.clientMetadataUrl must use https",
		})
		if u != nil && (u.Path == "" || u.Path == "/") {
			c.add("oauth.clientMetadataUrl", "must have a path: the client ID metadata document URL, https://host/path")
		}
		if noBrowser {
			c.add("oauth.clientMetadataUrl", "is used only by %s (a client ID metadata document names a public client)", GrantAuthorizationCode)
		}
	}
	if !validScope(o.Scope) {
		c.add("oauth.scope", "must be space-separated scope tokens of printable ASCII, without '\"' or '\\'")
	}
	switch o.TokenEndpointAuthMethod {
	case "", AuthMethodClientSecretBasic, AuthMethodClientSecretPost, AuthMethodPrivateKeyJWT:
	case AuthMethodNone:
		// RFC 7523 §3.1: the assertion itself may authenticate the client.
		if noBrowser && grant != GrantJWTBearer {
			c.add("oauth.tokenEndpointAuthMethod", "%s needs client authentication: use %s, %s or %s", grant,
				AuthMethodClientSecretBasic, AuthMethodClientSecretPost, AuthMethodPrivateKeyJWT)
		}
	default:
		c.add("oauth.tokenEndpointAuthMethod", "must be %s, %s, %s or %s", AuthMethodClientSecretBasic,
			AuthMethodClientSecretPost, AuthMethodPrivateKeyJWT, AuthMethodNone)
	}
	if o.TokenEndpointAuthMethod != "" && o.ClientID == "" {
		c.add("oauth.tokenEndpointAuthMethod", "applies to a pre-registered clientId: a registered client uses the method its registration names")
	}
	if grant == GrantCrossAppAccess {
		if o.IdPTokenEndpoint == "" {
			c.add("oauth.idpTokenEndpoint", "%s requires the identity provider's token endpoint URL", grant)
		} else {
			u := c.url("oauth.idpTokenEndpoint", o.IdPTokenEndpoint, urlRule{
				allowHTTP: s.AllowPrivateNetwork && SameHost(o.IdPTokenEndpoint, s.URL),
				httpMsg:   "oauth.idpTokenEndpoint must use https (http is allowed only on the MCP server's own host, with allowPrivateNetwork)",
			})
			if u != nil && (u.RawQuery != "" || u.ForceQuery) {
				c.add("oauth.idpTokenEndpoint", "must not have a query: give the exact token endpoint URL")
			}
		}
		if o.IdPClientID != "" && !printable(o.IdPClientID) {
			c.add("oauth.idpClientId", "must be printable text without control characters")
		}
	} else {
		if o.IdPTokenEndpoint != "" {
			c.add("oauth.idpTokenEndpoint", "is used only with grantType %s", GrantCrossAppAccess)
		}
		if o.IdPClientID != "" {
			c.add("oauth.idpClientId", "is used only with grantType %s", GrantCrossAppAccess)
		}
	}
	switch o.DPoP {
	case "", DPoPAuto, DPoPOn, DPoPOff:
	default:
		c.add("oauth.dpop", `must be true, false or "auto"`)
	}
	switch {
	case o.AssertionFile != "" && grant != GrantJWTBearer:
		c.add("oauth.assertionFile", "is used only with grantType %s", GrantJWTBearer)
	case o.AssertionFile != "" && (!filepath.IsAbs(o.AssertionFile) || filepath.Clean(o.AssertionFile) != o.AssertionFile):
		c.add("oauth.assertionFile", "must be a clean absolute path (pikod expands nothing): /run/secrets/token, not ~/token")
	}
}

// SameHost reports whether two URLs name the same host (the same name or
// the same address literal, whatever the port and scheme). OAuth endpoints
// on the MCP server's own host share its allowPrivateNetwork exception:
// settings validation and the sign-in flow apply this one rule.
func SameHost(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	ha, hb := strings.ToLower(ua.Hostname()), strings.ToLower(ub.Hostname())
	if ipa, ipb := net.ParseIP(ha), net.ParseIP(hb); ipa != nil && ipb != nil {
		return ipa.Equal(ipb)
	}
	return ha != "" && ha == hb
}

// validScope follows RFC 6749 section 3.3: scope tokens of %x21 / %x23-5B /
// %x5D-7E separated by spaces.
func validScope(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b == ' ' || (b >= 0x21 && b <= 0x7e && b != '"' && b != '\\') {
			continue
		}
		return false
	}
	return true
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// urlRule says what one URL field allows beyond https.
type urlRule struct {
	allowHTTP bool
	httpMsg   string
}

// url checks an absolute URL field: parseable, https (or http when allowed),
// with a host, without a fragment and without credentials. It returns the
// parsed URL for further checks, or nil when it could not be parsed.
func (c *checker) url(field, raw string, r urlRule) *url.URL {
	if strings.ContainsFunc(raw, unicode.IsControl) || strings.ContainsRune(raw, ' ') {
		c.add(field, "must be a URL without spaces or control characters")
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		c.add(field, "is not a valid URL: give an absolute https URL")
		return nil
	}
	if u.User != nil {
		c.credential(field, "the user:password@ part")
	}
	if names := secretQueryNames(u.RawQuery); len(names) == 1 {
		c.credential(field, "query parameter "+names[0])
	} else if len(names) > 1 {
		c.add(field, "query parameters %s look like credentials: remove them and store credentials with %q", strings.Join(names, ", "), secretCommand(c.label))
	} else if queryValueCredential(u.RawQuery) || pathCredential(u) {
		c.credential(field, "part of the URL")
	} else if svc := webhookURL(raw); svc != "" {
		c.credential(field, "this "+svc+" webhook URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !r.allowHTTP {
			c.add(field, "%s", r.httpMsg)
		}
	default:
		c.add(field, "must be an absolute https URL")
		return u
	}
	if u.Host == "" || u.Hostname() == "" {
		c.add(field, "must include a host: give an absolute https URL")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		c.add(field, "must not have a fragment (#...): give the exact endpoint")
	}
	return u
}

func (c *checker) common(s *ServerSettings) {
	if s.TimeoutMs != 0 && (s.TimeoutMs < MinTimeoutMs || s.TimeoutMs > MaxTimeoutMs) {
		c.add("timeoutMs", "%s", timeoutMsRange)
	}
	if s.MaxBytes != 0 && (s.MaxBytes < MinMaxBytes || s.MaxBytes > MaxMaxBytes) {
		c.add("maxBytes", "%s", maxBytesRange)
	}
	if p := s.Protocol; p != nil {
		switch {
		case p.Pin != "" && p.Mode != "":
			c.add("protocol", "set either a mode or a pin, not both")
		case p.Pin != "":
			if !slices.Contains(ProtocolVersions, p.Pin) {
				c.add("protocol", "must be \"legacy\", \"auto\" or a pinned version, one of %s", strings.Join(ProtocolVersions, ", "))
			}
		case p.Mode != ProtocolLegacy && p.Mode != ProtocolAuto:
			c.add("protocol", "must be \"legacy\", \"auto\" or {\"pin\": VERSION}")
		}
	}
	if d := s.ArtifactDirectory; d != "" {
		switch {
		case strings.ContainsRune(d, 0):
			c.add("artifactDirectory", "must not contain a NUL character")
		case !filepath.IsAbs(d):
			c.add("artifactDirectory", "must be an absolute path")
		case filepath.Clean(d) != d:
			c.add("artifactDirectory", "must be a clean path (no \"..\", \".\", repeated or trailing slashes)")
		case d == "/":
			c.add("artifactDirectory", "must not be the root directory: name the private directory the server writes its output to")
		case sharedTemp(d):
			c.add("artifactDirectory", "must not be in a shared temporary directory (/tmp, /var/tmp, /dev/shm): other users can plant files there; use a private directory such as ~/.local/share/NAME")
		}
	}
	for i, r := range s.Roots {
		f := "roots[" + strconv.Itoa(i) + "]"
		if r.URI == "" {
			c.add(f+".uri", "required: an absolute file:// URI such as file:///home/me/project")
		} else if !validRootURI(r.URI) {
			c.add(f+".uri", "must be an absolute file:// URI with a path, such as file:///home/me/project, without query or fragment")
		}
		if !printable(r.Name) {
			c.add(f+".name", "must be printable text without control characters")
		}
	}
	c.tools(s)
}

// sharedTemp reports a clean absolute path that is, or is inside, a
// directory every user may write to.
func sharedTemp(p string) bool {
	for _, t := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if p == t || strings.HasPrefix(p, t+"/") {
			return true
		}
	}
	return false
}

func validRootURI(raw string) bool {
	if strings.ContainsFunc(raw, unicode.IsControl) {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "file") || u.Opaque != "" || u.User != nil {
		return false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return false
	}
	return strings.HasPrefix(u.Path, "/") && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && !strings.Contains(raw, "#")
}

// tools checks the three tool lists: non-empty unique names, readOnlyTools
// and autonomousTools inside an explicit tools list, and no tool both
// read-only and autonomous.
func (c *checker) tools(s *ServerSettings) {
	var selected map[string]bool
	if s.Tools != nil {
		selected = c.toolList("tools", *s.Tools)
	}
	readOnly := c.toolList("readOnlyTools", s.ReadOnlyTools)
	c.toolList("autonomousTools", s.AutonomousTools)
	for i, n := range s.ReadOnlyTools {
		if n != "" && s.Tools != nil && !selected[n] {
			c.add("readOnlyTools["+strconv.Itoa(i)+"]", "tool %s is not in tools: add it to tools or remove it here", toolName(n))
		}
	}
	if len(s.AutonomousTools) > 0 && s.Tools == nil {
		c.add("autonomousTools", "requires an explicit tools list that names every autonomous tool")
		return
	}
	for i, n := range s.AutonomousTools {
		if n == "" {
			continue
		}
		f := "autonomousTools[" + strconv.Itoa(i) + "]"
		if !selected[n] {
			c.add(f, "tool %s is not in tools: add it to tools or remove it here", toolName(n))
		}
		if readOnly[n] {
			c.add(f, "tool %s is also in readOnlyTools: a tool is either read-only or autonomous", toolName(n))
		}
	}
}

func (c *checker) toolList(field string, names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for i, n := range names {
		f := field + "[" + strconv.Itoa(i) + "]"
		switch {
		case n == "":
			c.add(f, "tool name must not be empty")
		case set[n]:
			c.add(f, "tool %s is listed twice: list each tool once", toolName(n))
		}
		set[n] = true
	}
	return set
}

// toolName quotes a tool name for a message when it is a plain name.
func toolName(n string) string {
	if plainKey(n) {
		return strconv.Quote(n)
	}
	return "(this name)"
}
