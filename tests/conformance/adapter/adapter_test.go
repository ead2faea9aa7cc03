package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	got, err := fill(`{"clientId":{{client_id}},"issuer":{{issuer}}}`, map[string]string{"client_id": `a"b`, "issuer": "http://localhost:1"})
	if err != nil || string(got) != `{"clientId":"a\"b","issuer":"http://localhost:1"}` {
		t.Fatalf("fill = %s, %v", got, err)
	}
	if _, err := fill(`{"k":{{private_key_pem}}}`, map[string]string{}); err == nil || !strings.Contains(err.Error(), "private_key_pem") {
		t.Fatalf("a missing value gave %v, want an error naming it", err)
	}
}

// TestScenarioTemplates fills every scenario's templates with the members
// its context has (as the suite sends them) and the discovered issuer.
func TestScenarioTemplates(t *testing.T) {
	contexts := map[string][]string{
		"auth/pre-registration":               {"client_id", "client_secret"},
		"auth/client-credentials-basic":       {"client_id", "client_secret"},
		"auth/client-credentials-jwt":         {"client_id", "private_key_pem", "signing_algorithm"},
		"auth/cross-app-access-complete-flow": {"client_id", "client_secret", "idp_client_id", "idp_id_token", "idp_issuer", "idp_token_endpoint"},
	}
	for name, sp := range scenarios {
		vals := map[string]string{"name": name}
		for _, k := range contexts[name] {
			vals[k] = "v-" + k
		}
		if sp.needsIssuer() {
			vals["issuer"] = "http://localhost:9"
		}
		for _, tmpl := range []string{sp.OAuth, sp.Secret, sp.Extra} {
			if tmpl == "" {
				continue
			}
			b, err := fill(tmpl, vals)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(b, &obj); err != nil {
				t.Errorf("%s: %s is not an object: %v", name, b, err)
			}
		}
		if sp.Tool != "" && !json.Valid([]byte(sp.Args)) {
			t.Errorf("%s: Args %q is not JSON", name, sp.Args)
		}
		if sp.Secret != "" && sp.OAuth == "" {
			t.Errorf("%s: credentials without oauth settings", name)
		}
	}
}

func TestRedactURL(t *testing.T) {
	u := "http://localhost:5/authorize?response_type=code&client_id=c&state=S3CRET&code_challenge=CH&scope=mcp%3Abasic&redirect_uri=http%3A%2F%2F127.0.0.1%3A7%2Fcb"
	got := redactURL(u)
	for _, hidden := range []string{"S3CRET", "CH"} {
		if strings.Contains(got, hidden) {
			t.Errorf("redactURL kept %q: %s", hidden, got)
		}
	}
	for _, kept := range []string{"response_type=code", "client_id=c", "scope=mcp%3Abasic", "state=(hidden)", "redirect_uri="} {
		if !strings.Contains(got, kept) {
			t.Errorf("redactURL lost %q: %s", kept, got)
		}
	}
	if got := redactLine("callback http://127.0.0.1:7/cb?code=abc&state=x done"); strings.Contains(got, "abc") {
		t.Errorf("redactLine kept the code: %s", got)
	}
}

func TestAuthorizationURL(t *testing.T) {
	line := "server http://localhost:3/mcp needs sign-in: open http://localhost:4/authorize?response_type=code&client_id=x in your browser"
	if got := authorizationURL(line); got != "http://localhost:4/authorize?response_type=code&client_id=x" {
		t.Errorf("authorizationURL = %q", got)
	}
	if got := authorizationURL("waiting for http://127.0.0.1:5/callback"); got != "" {
		t.Errorf("authorizationURL picked %q from a line without one", got)
	}
}

func TestFindString(t *testing.T) {
	var v any
	_ = json.Unmarshal([]byte(`{"resource":"r","authorizationServer":{"metadataUrl":"m","issuer":"http://localhost:8"}}`), &v)
	if got := findString(v, "issuer"); got != "http://localhost:8" {
		t.Errorf("findString = %q", got)
	}
	_ = json.Unmarshal([]byte(`{"issuer":"top","x":{"issuer":"nested"}}`), &v)
	if got := findString(v, "issuer"); got != "top" {
		t.Errorf("findString = %q, want the top-level member", got)
	}
}
