package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Limits of the mcp settings.
const (
	MaxServers       = 64
	MinTimeoutMs     = 1_000
	MaxTimeoutMs     = 600_000
	DefaultTimeoutMs = 60_000
	MinMaxBytes      = 1_024
	MaxMaxBytes      = 20_000_000
	DefaultMaxBytes  = 8_000_000
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Protocol modes.
const (
	ProtocolLegacy = "legacy"
	ProtocolAuto   = "auto"
)

// ProtocolVersions lists the MCP revisions a pin may name, newest first.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MCPSettings is the settings object of the mcp extension:
// {"servers": [...]}. Parse it with ParseMCPSettings, which decodes strictly
// and validates.
type MCPSettings struct {
	// Servers is at most MaxServers entries with unique ids.
	Servers []ServerSettings `json:"servers"`
	// Retention bounds what pikod keeps: receipts, retained results and
	// ended actions (defaults when omitted).
	Retention *RetentionSettings `json:"retention,omitempty"`
}

// ServerSettings configures one MCP server. Fields belong to one transport
// (stdio: command, args, cwd, env; http and sse: url, headers,
// allowPrivateNetwork, oauth); the others are common. Nothing here may hold
// a secret: credentials go to the vault through extensions.secret.
type ServerSettings struct {
	// ID names the server: a lowercase letter then up to 31 of a-z, 0-9, '-'.
	ID string `json:"id"`
	// Enabled servers connect at daemon start. Default true.
	Enabled *bool `json:"enabled,omitempty"`
	// Transport is stdio, http or sse. Required.
	Transport string `json:"transport"`

	// Command is the program to run (stdio, required): an absolute path or a
	// name looked up in PATH. It runs without a shell; nothing is expanded.
	Command string `json:"command,omitempty"`
	// Args are passed verbatim (stdio).
	Args []string `json:"args,omitempty"`
	// Cwd is the absolute working directory (stdio). Default: the server's
	// disposable home.
	Cwd string `json:"cwd,omitempty"`
	// Env holds non-secret environment variables for the child (stdio).
	Env map[string]string `json:"env,omitempty"`

	// URL is the exact endpoint (http, sse; required). https unless
	// AllowPrivateNetwork.
	URL string `json:"url,omitempty"`
	// Headers are non-secret request headers sent only to URL's origin.
	Headers map[string]string `json:"headers,omitempty"`
	// AllowPrivateNetwork lets URL's exact origin be http and resolve to
	// loopback, private or link-local addresses. Default false.
	AllowPrivateNetwork bool `json:"allowPrivateNetwork,omitempty"`
	// OAuth enables OAuth sign-in for this server (http, sse).
	OAuth *OAuthSettings `json:"oauth,omitempty"`
	// TLSPin pins the TLS peer of URL's origin (http, sse; URL must be
	// https): "sha256:" and 64 hex digits, the SHA-256 of the peer's leaf
	// certificate (DER) or of its public key (SubjectPublicKeyInfo, DER).
	// With a pin the peer is trusted by the pin alone (a self-signed
	// certificate such as the desktop bridge's), and any other peer is
	// refused before a request is sent. Default none (the system's roots).
	TLSPin string `json:"tlsPin,omitempty"`

	// Tools selects the executable tools by exact name. Omitted: all
	// discovered tools; []: none (discovery only).
	Tools *[]string `json:"tools,omitempty"`
	// ReadOnlyTools are executed without approval with an mcp_read receipt.
	// Must be a subset of Tools when Tools is given.
	ReadOnlyTools []string `json:"readOnlyTools,omitempty"`
	// AutonomousTools are executed without approval with an mcp_autonomous
	// receipt. Requires Tools; a subset of it, disjoint from ReadOnlyTools.
	AutonomousTools []string `json:"autonomousTools,omitempty"`
	// Resources enables resource listing and reads. Default true.
	Resources *bool `json:"resources,omitempty"`
	// Prompts enables prompt listing and retrieval. Default true.
	Prompts *bool `json:"prompts,omitempty"`
	// Roots are the file:// roots offered to the server. Default none.
	Roots []Root `json:"roots,omitempty"`
	// Sampling lets the server ask for owner-approved text completions.
	// Default false.
	Sampling bool `json:"sampling,omitempty"`
	// Elicitation lets the server ask the owner questions. Default false.
	Elicitation bool `json:"elicitation,omitempty"`
	// TimeoutMs bounds each request, MinTimeoutMs..MaxTimeoutMs. Default
	// DefaultTimeoutMs.
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// MaxBytes caps each message and result, MinMaxBytes..MaxMaxBytes.
	// Default DefaultMaxBytes.
	MaxBytes int `json:"maxBytes,omitempty"`
	// ArtifactDirectory is an absolute private directory whose files a
	// receipt may report and the owner may read or import.
	ArtifactDirectory string `json:"artifactDirectory,omitempty"`
	// Protocol is "legacy", "auto" or a pin {"pin": VERSION} (a bare VERSION
	// string is accepted and stored as a pin). Default: auto for http,
	// legacy for stdio and sse.
	Protocol *Protocol `json:"protocol,omitempty"`
	// Browser runs a stdio server as a browser with the browser preset
	// (short private TMPDIR, graceful close before stop, captures from
	// artifactDirectory imported as sources). Default none.
	Browser *BrowserSettings `json:"browser,omitempty"`
}

// Root is one file root offered to a server.
type Root struct {
	// URI is an absolute file:// URI.
	URI string `json:"uri"`
	// Name is an optional label.
	Name string `json:"name,omitempty"`
}

// Protocol selects the protocol era: Mode is legacy or auto, or Pin names
// one exact version. Exactly one of the two is set.
type Protocol struct {
	Mode string
	Pin  string
}

// MarshalJSON writes a pin as {"pin": VERSION} and a mode as its string, the
// forms ParseMCPSettings reads back.
func (p Protocol) MarshalJSON() ([]byte, error) {
	if p.Pin != "" {
		return json.Marshal(struct {
			Pin string `json:"pin"`
		}{p.Pin})
	}
	return json.Marshal(p.Mode)
}

// UnmarshalJSON reads "legacy", "auto", {"pin": VERSION} or a bare VERSION
// string (stored as a pin). It checks the shape only; Validate checks that a
// pin names a known version. ParseMCPSettings does not use it: it reports
// problems with their paths instead.
func (p *Protocol) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("decoding protocol: %w", err)
		}
		*p = Protocol{}
		if s == ProtocolLegacy || s == ProtocolAuto {
			p.Mode = s
		} else {
			p.Pin = s
		}
		return nil
	}
	var obj struct {
		Pin *string `json:"pin"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.Pin == nil || *obj.Pin == "" {
		return fmt.Errorf("%w: protocol must be \"legacy\", \"auto\" or {\"pin\": VERSION}", ErrInvalidArgument)
	}
	*p = Protocol{Pin: *obj.Pin}
	return nil
}

// OAuth grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	// GrantCrossAppAccess is enterprise-managed authorization: an identity
	// assertion from the owner's identity provider (kept in the vault) is
	// exchanged there for an authorization grant (RFC 8693), which the
	// server's authorization server turns into an access token (RFC 7523).
	GrantCrossAppAccess = "cross_app_access"
	// GrantJWTBearer is workload identity: an assertion the platform issued
	// to this workload (kept in the vault, or read from a file on each use)
	// is exchanged at the authorization server for an access token
	// (RFC 7523 §2.1), with no identity provider in between.
	GrantJWTBearer = "jwt_bearer"
)

// Token endpoint client authentication methods (RFC 7591 names).
const (
	AuthMethodClientSecretBasic = "client_secret_basic"
	AuthMethodClientSecretPost  = "client_secret_post"
	AuthMethodPrivateKeyJWT     = "private_key_jwt"
	AuthMethodNone              = "none"
)

// OAuthSettings configures OAuth for an http or sse server. An empty object
// (or no oauth at all) means discovery and registration (client ID metadata
// document or dynamic registration) with the authorization-code flow.
type OAuthSettings struct {
	// ClientID is a pre-registered client; requires Issuer.
	ClientID string `json:"clientId,omitempty"`
	// Issuer is the authorization server's exact issuer URL (https, or http
	// on the server's own host with allowPrivateNetwork).
	Issuer string `json:"issuer,omitempty"`
	// GrantType is authorization_code (default), client_credentials,
	// cross_app_access or jwt_bearer; the last three require ClientID and
	// Issuer.
	GrantType string `json:"grantType,omitempty"`
	// CallbackPort fixes the loopback callback port, 1024..65535. Default:
	// a free port. authorization_code only.
	CallbackPort int `json:"callbackPort,omitempty"`
	// Scope is the space-separated scope to request.
	Scope string `json:"scope,omitempty"`
	// ClientMetadataURL is an https client ID metadata document URL.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// TokenEndpointAuthMethod is how a pre-registered client authenticates
	// at the token endpoint: client_secret_basic, client_secret_post,
	// private_key_jwt or none. Default: private_key_jwt when a private key
	// is stored, else what the authorization server's metadata supports
	// (basic before post) when a client secret is stored, else none.
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// IdPTokenEndpoint is the identity provider's token endpoint, where the
	// identity assertion is exchanged (cross_app_access only, required).
	IdPTokenEndpoint string `json:"idpTokenEndpoint,omitempty"`
	// IdPClientID is pikod's client id at the identity provider, sent with
	// the exchange (cross_app_access only, optional).
	IdPClientID string `json:"idpClientId,omitempty"`
	// AssertionFile is an absolute path the jwt_bearer assertion is read
	// from on each use, for platforms that rotate it (jwt_bearer only;
	// without it the assertion stored as oauthAssertion is used).
	AssertionFile string `json:"assertionFile,omitempty"`
	// DPoP binds the grant's tokens to a key pair pikod makes and keeps in
	// the vault (RFC 9449): true, false or "auto". Default auto: DPoP when
	// the authorization server's metadata lists
	// dpop_signing_alg_values_supported, else Bearer tokens; true refuses
	// an authorization server that does not list it; false never uses DPoP
	// (and refuses a server that takes DPoP-bound tokens only).
	DPoP DPoPMode `json:"dpop,omitempty"`
}

// DPoPMode is OAuthSettings.DPoP: DPoPAuto (or empty), DPoPOn or DPoPOff.
// In JSON it is the boolean true or false, or the string "auto".
type DPoPMode string

// Values of DPoPMode.
const (
	DPoPAuto DPoPMode = "auto"
	DPoPOn   DPoPMode = "true"
	DPoPOff  DPoPMode = "false"
)

// Effective returns the mode with its default.
func (m DPoPMode) Effective() DPoPMode {
	if m == "" {
		return DPoPAuto
	}
	return m
}

// MarshalJSON writes true, false or "auto", the forms ParseMCPSettings
// reads back.
func (m DPoPMode) MarshalJSON() ([]byte, error) {
	switch m {
	case DPoPOn:
		return []byte("true"), nil
	case DPoPOff:
		return []byte("false"), nil
	}
	return json.Marshal(string(m))
}

// UnmarshalJSON reads true, false or "auto". ParseMCPSettings does not use
// it: it reports problems with their paths instead.
func (m *DPoPMode) UnmarshalJSON(data []byte) error {
	switch s := string(bytes.TrimSpace(data)); s {
	case "true":
		*m = DPoPOn
	case "false":
		*m = DPoPOff
	case `"auto"`:
		*m = DPoPAuto
	case "null":
	default:
		return fmt.Errorf("%w: oauth.dpop must be true, false or \"auto\"", ErrInvalidArgument)
	}
	return nil
}

// EffectiveGrantType returns GrantType with its default.
func (o *OAuthSettings) EffectiveGrantType() string {
	if o == nil || o.GrantType == "" {
		return GrantAuthorizationCode
	}
	return o.GrantType
}

// IsEnabled reports Enabled with its default.
func (s *ServerSettings) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// ResourcesEnabled reports Resources with its default.
func (s *ServerSettings) ResourcesEnabled() bool { return s.Resources == nil || *s.Resources }

// PromptsEnabled reports Prompts with its default.
func (s *ServerSettings) PromptsEnabled() bool { return s.Prompts == nil || *s.Prompts }

// Timeout returns TimeoutMs with its default.
func (s *ServerSettings) Timeout() int {
	if s.TimeoutMs == 0 {
		return DefaultTimeoutMs
	}
	return s.TimeoutMs
}

// MessageLimit returns MaxBytes with its default.
func (s *ServerSettings) MessageLimit() int {
	if s.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return s.MaxBytes
}

// ProtocolMode returns the effective protocol: "legacy", "auto" or the
// pinned version.
func (s *ServerSettings) ProtocolMode() string {
	if s.Protocol != nil {
		if s.Protocol.Pin != "" {
			return s.Protocol.Pin
		}
		return s.Protocol.Mode
	}
	if s.Transport == TransportHTTP {
		return ProtocolAuto
	}
	return ProtocolLegacy
}
