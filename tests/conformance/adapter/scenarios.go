package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// spec is what the adapter does for one scenario: the owner's settings,
// credentials and actions. Everything else is pikod's business.
type spec struct {
	// Tool and Args are the call the scenario waits for; Args is a JSON
	// object. Without a tool the adapter only connects (initialize).
	Tool string
	Args string
	// OAuth is the server entry's oauth object as a template (see fill);
	// empty means no oauth member, pikod's default (discovery and the
	// authorization-code flow when the server asks for a token).
	OAuth string
	// Secret is the credential object given to 'pikoctl mcp secret', as a
	// template; empty means none.
	Secret string
	// Extra holds more members of the server entry, as a JSON object.
	Extra string
	// SignIn says the owner signs in with 'pikoctl mcp auth' whenever
	// status says needs_auth.
	SignIn bool
	// Browser says that sign-in uses a browser (authorization_code);
	// otherwise 'pikoctl mcp auth' is expected to finish without one.
	Browser bool
	// Refusal says pikod must refuse to sign in (the scenario serves a
	// malicious protected-resource document): the adapter succeeds only
	// if pikod refused, and logs why.
	Refusal bool
	// GiveUpOK says pikod may end the scenario by giving up on signing in
	// (the server never accepts any token).
	GiveUpOK bool
	// Elicit says the tool asks the owner a question while it runs.
	Elicit bool
}

// placeholders in templates: {{issuer}} is what 'pikoctl mcp auth SERVER
// --discover' reports; the other names are members of
// MCP_CONFORMANCE_CONTEXT. Each is replaced by a JSON string.
var placeholder = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// scenarios lists every client scenario of the suite
// (@modelcontextprotocol/conformance 0.1.16). The runner refuses to run a
// scenario this table does not name.
var scenarios = map[string]spec{
	"initialize":                          {},
	"tools_call":                          {Tool: "add_numbers", Args: `{"a":2,"b":3}`},
	"elicitation-sep1034-client-defaults": {Tool: "test_client_elicitation_defaults", Args: `{}`, Extra: `{"elicitation":true}`, Elicit: true},
	"sse-retry":                           {Tool: "test_reconnection", Args: `{}`},

	"auth/metadata-default":                     browser(),
	"auth/metadata-var1":                        browser(),
	"auth/metadata-var2":                        browser(),
	"auth/metadata-var3":                        browser(),
	"auth/basic-cimd":                           withOAuth(browser(), `{"clientMetadataUrl":"https://conformance-test.local/client-metadata.json"}`),
	"auth/scope-from-www-authenticate":          browser(),
	"auth/scope-from-scopes-supported":          browser(),
	"auth/scope-omitted-when-undefined":         browser(),
	"auth/scope-step-up":                        browser(),
	"auth/scope-retry-limit":                    giveUpOK(browser()),
	"auth/token-endpoint-auth-basic":            browser(),
	"auth/token-endpoint-auth-post":             browser(),
	"auth/token-endpoint-auth-none":             browser(),
	"auth/2025-03-26-oauth-metadata-backcompat": browser(),
	"auth/2025-03-26-oauth-endpoint-fallback":   browser(),
	"auth/resource-mismatch":                    refusal(browser()),
	"auth/offline-access-scope":                 browser(),
	"auth/offline-access-not-supported":         browser(),
	"auth/pre-registration": withSecret(withOAuth(browser(),
		`{"clientId":{{client_id}},"issuer":{{issuer}}}`),
		`{"oauthClientSecret":{{client_secret}}}`),

	"auth/client-credentials-basic": withSecret(withOAuth(silent(),
		`{"grantType":"client_credentials","clientId":{{client_id}},"issuer":{{issuer}}}`),
		`{"oauthClientSecret":{{client_secret}}}`),
	"auth/client-credentials-jwt": withSecret(withOAuth(silent(),
		`{"grantType":"client_credentials","clientId":{{client_id}},"issuer":{{issuer}}}`),
		`{"oauthPrivateKey":{{private_key_pem}}}`),
	"auth/cross-app-access-complete-flow": withSecret(withOAuth(silent(),
		`{"grantType":"cross_app_access","clientId":{{client_id}},"issuer":{{issuer}},`+
			`"idpTokenEndpoint":{{idp_token_endpoint}},"idpClientId":{{idp_client_id}}}`),
		`{"oauthClientSecret":{{client_secret}},"oauthIdentityAssertion":{{idp_id_token}}}`),
}

// browser is an OAuth scenario with the default settings (no oauth
// member: discovery, registration as the server allows, the
// authorization-code flow), a browser sign-in, then test-tool.
func browser() spec {
	return spec{Tool: "test-tool", Args: `{}`, SignIn: true, Browser: true}
}

// silent is an OAuth scenario whose grant needs no browser.
func silent() spec {
	s := browser()
	s.Browser = false
	return s
}

func withOAuth(s spec, oauth string) spec   { s.OAuth = oauth; return s }
func withSecret(s spec, secret string) spec { s.Secret = secret; return s }
func refusal(s spec) spec                   { s.Refusal = true; return s }
func giveUpOK(s spec) spec                  { s.GiveUpOK = true; return s }

// needsIssuer reports whether the settings need the discovered issuer:
// the adapter then configures twice (see run).
func (s spec) needsIssuer() bool { return strings.Contains(s.OAuth, "{{issuer}}") }

// fill replaces the placeholders of tmpl with JSON strings from vals and
// checks that the outcome is a JSON object. A placeholder without a value
// is an error naming it.
func fill(tmpl string, vals map[string]string) (json.RawMessage, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
			return `""`
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("no value for %s (the context has no such member, or discovery found no issuer)", strings.Join(missing, ", "))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		return nil, fmt.Errorf("the template %q is not a JSON object once filled: %w", tmpl, err)
	}
	return json.RawMessage(out), nil
}
