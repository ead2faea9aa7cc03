package contracts

// Operations of extensions.mcp.auth.
const (
	// AuthOpStart starts signing in: for authorization_code it returns the
	// authorization URL of a new flow (status "pending"); for
	// client_credentials and cross_app_access it obtains a token at once
	// (status "authorized").
	AuthOpStart = "start"
	// AuthOpDiscover reports what discovery finds, without signing in.
	AuthOpDiscover = "discover"
	// AuthOpWait waits for the server's pending flow to end.
	AuthOpWait = "wait"
	// AuthOpComplete gives the pending flow the URL the browser was sent to
	// (for a browser on another machine), then waits like AuthOpWait.
	AuthOpComplete = "complete"
)

// Statuses of an AuthResult.
const (
	AuthPending    = "pending"
	AuthAuthorized = "authorized"
)

// AuthParams is the params of extensions.mcp.auth. Op defaults to "start".
// FlowID, for wait and complete, names the flow (default: the server's
// pending flow). RedirectURL, for complete, is the whole URL the browser
// was redirected to (http://127.0.0.1:PORT/callback?code=...&state=...).
type AuthParams struct {
	Server      string `json:"server"`
	Op          string `json:"op,omitempty"`
	FlowID      string `json:"flowId,omitempty"`
	RedirectURL string `json:"redirectUrl,omitempty"`
}

// AuthResult is the result of extensions.mcp.auth. A pending flow carries
// the AuthorizationURL to open in a browser (pikod never opens it), the
// RedirectURI its callback listens on and when it expires (RFC 3339). An
// authorized server carries the committed Grant and the server's State
// after the handshake with the new token. Discovery is set for op
// "discover" only.
type AuthResult struct {
	Server           string          `json:"server"`
	Status           string          `json:"status,omitempty"`
	GrantType        string          `json:"grantType,omitempty"`
	FlowID           string          `json:"flowId,omitempty"`
	AuthorizationURL string          `json:"authorizationUrl,omitempty"`
	RedirectURI      string          `json:"redirectUri,omitempty"`
	ExpiresAt        string          `json:"expiresAt,omitempty"`
	Issuer           string          `json:"issuer,omitempty"`
	Resource         string          `json:"resource,omitempty"`
	Scope            string          `json:"scope,omitempty"`
	Grant            *OAuthGrantInfo `json:"grant,omitempty"`
	State            string          `json:"state,omitempty"`
	Discovery        *AuthDiscovery  `json:"discovery,omitempty"`
	// PreviousIssuer is set on a pending result that continues a sign-in
	// at another authorization server: the server refused the grant of
	// PreviousIssuer (where the sign-in began) and now names Issuer. Open
	// the new AuthorizationURL and wait for the new FlowID.
	PreviousIssuer string `json:"previousIssuer,omitempty"`
}

// OAuthGrantInfo describes a committed grant, never its tokens. ExpiresAt
// is empty when the authorization server gave no lifetime.
type OAuthGrantInfo struct {
	GrantType    string `json:"grantType"`
	Issuer       string `json:"issuer"`
	Resource     string `json:"resource"`
	Scope        string `json:"scope,omitempty"`
	ExpiresAt    string `json:"expiresAt,omitempty"`
	ObtainedAt   string `json:"obtainedAt,omitempty"`
	Refreshable  bool   `json:"refreshable"`
	ClientID     string `json:"clientId,omitempty"`
	Registration string `json:"registration,omitempty"`
	// TokenType is "DPoP" when the tokens are bound to a key pikod holds
	// (RFC 9449), else "Bearer".
	TokenType string `json:"tokenType,omitempty"`
	// DPoPKey is the RFC 7638 thumbprint of that key's public half (the
	// private half never leaves the vault and pikod's memory).
	DPoPKey string `json:"dpopJkt,omitempty"`
}

// Fallbacks discovery can take for servers of the 2025-03-26 revision,
// which publish no protected resource metadata.
const (
	FallbackRootMetadata     = "2025-03-26 metadata"
	FallbackDefaultEndpoints = "2025-03-26 default endpoints"
)

// AuthDiscovery is what discovery found for one server: where the
// protected resource metadata was (empty on a Fallback), the resource
// tokens are bound to, the authorization server chosen and its metadata.
// Write Issuer into oauth.issuer to pre-register a client or use
// client_credentials.
type AuthDiscovery struct {
	ResourceMetadataURL         string   `json:"resourceMetadataUrl,omitempty"`
	Resource                    string   `json:"resource"`
	AuthorizationServers        []string `json:"authorizationServers,omitempty"`
	ResourceScopes              []string `json:"resourceScopes,omitempty"`
	ChallengeScope              string   `json:"challengeScope,omitempty"`
	Issuer                      string   `json:"issuer"`
	MetadataURL                 string   `json:"metadataUrl,omitempty"`
	Fallback                    string   `json:"fallback,omitempty"`
	AuthorizationEndpoint       string   `json:"authorizationEndpoint,omitempty"`
	TokenEndpoint               string   `json:"tokenEndpoint,omitempty"`
	RegistrationEndpoint        string   `json:"registrationEndpoint,omitempty"`
	ScopesSupported             []string `json:"scopesSupported,omitempty"`
	GrantTypes                  []string `json:"grantTypesSupported,omitempty"`
	CodeChallengeMethods        []string `json:"codeChallengeMethodsSupported,omitempty"`
	TokenEndpointAuthMethods    []string `json:"tokenEndpointAuthMethodsSupported,omitempty"`
	TokenEndpointSigningAlgs    []string `json:"tokenEndpointAuthSigningAlgValuesSupported,omitempty"`
	ClientIDMetadataDocuments   bool     `json:"clientIdMetadataDocumentSupported,omitempty"`
	IssParameterSupported       bool     `json:"authorizationResponseIssParameterSupported,omitempty"`
	DynamicRegistrationPossible bool     `json:"dynamicRegistration"`
	// DPoPSigningAlgs is the authorization server's
	// dpop_signing_alg_values_supported: set when it issues DPoP-bound
	// tokens (RFC 9449).
	DPoPSigningAlgs []string `json:"dpopSigningAlgValuesSupported,omitempty"`
	// ResourceDPoPAlgs is the protected resource's
	// dpop_signing_alg_values_supported (RFC 9728).
	ResourceDPoPAlgs []string `json:"resourceDpopSigningAlgValuesSupported,omitempty"`
	// DPoPRequired is the protected resource's
	// dpop_bound_access_tokens_required: it takes DPoP-bound tokens only.
	DPoPRequired bool `json:"dpopBoundAccessTokensRequired,omitempty"`
}

// AuthCancelResult is the result of extensions.mcp.auth.cancel (params
// ServerParams). Cancelled is false when no flow was pending, or when its
// grant was already committed (a commit cannot be undone: log out instead).
type AuthCancelResult struct {
	Server    string `json:"server"`
	Cancelled bool   `json:"cancelled"`
	Message   string `json:"message"`
}

// LogoutResult is the result of extensions.mcp.logout (params
// ServerParams): the server's local OAuth state (tokens and a dynamically
// registered client) is removed from the vault, which a read-back
// confirmed. Provider-side authorization and the credentials entered with
// extensions.secret stay as they are.
type LogoutResult struct {
	Server        string `json:"server"`
	Removed       bool   `json:"removed"`
	WasConnected  bool   `json:"wasConnected"`
	CancelledFlow bool   `json:"cancelledFlow"`
}

// OAuthStatus is a server's OAuth state in extensions.mcp.status. Grant is
// "none", "stored", "stale" (stored for other settings: not used until the
// owner signs in again) or "unknown" (the vault is locked or unreadable);
// Info describes a stored grant. Pending is the flow waiting for the
// browser. RequiredScope is what the server last asked for in a 401 or 403
// challenge.
type OAuthStatus struct {
	GrantType     string          `json:"grantType"`
	Grant         string          `json:"grant"`
	Info          *OAuthGrantInfo `json:"info,omitempty"`
	Pending       *OAuthPending   `json:"pending,omitempty"`
	RequiredScope string          `json:"requiredScope,omitempty"`
}

// OAuthPending is a browser flow waiting for its callback.
type OAuthPending struct {
	FlowID    string `json:"flowId"`
	ExpiresAt string `json:"expiresAt"`
	Scope     string `json:"scope,omitempty"`
}
