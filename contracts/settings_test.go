package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// baseSettings is a valid configuration that uses nearly every field; each
// case of TestParseProblems breaks it in one place.
const baseSettings = `{"servers": [
  {"id": "local", "enabled": true, "transport": "stdio",
   "command": "/usr/bin/srv", "args": ["--verbose", "--root", "/srv/project"],
   "cwd": "/srv/work", "env": {"LOG_LEVEL": "debug"},
   "tools": ["read", "write", "search"], "readOnlyTools": ["read"], "autonomousTools": ["write"],
   "resources": true, "prompts": false,
   "roots": [{"uri": "file:///srv/project", "name": "Project"}],
   "sampling": true, "elicitation": false, "timeoutMs": 30000, "maxBytes": 100000,
   "artifactDirectory": "/srv/artifacts", "protocol": "legacy"},
  {"id": "remote", "transport": "http", "url": "https://mcp.example.com/mcp",
   "headers": {"X-Tenant": "acme"},
   "oauth": {"clientId": "pikod-client", "issuer": "https://auth.example.com",
     "grantType": "authorization_code", "callbackPort": 8765, "scope": "read write",
     "clientMetadataUrl": "https://pikod.example.com/client.json", "dpop": true},
   "protocol": {"pin": "2026-07-28"}}
]}`

// The reference's two examples, verbatim in shape.
const learnExample = `{
  "servers": [
    {
      "id": "learn",
      "enabled": true,
      "transport": "http",
      "url": "https://learn.microsoft.com/api/mcp",
      "tools": ["microsoft_docs_search", "microsoft_docs_fetch"],
      "readOnlyTools": ["microsoft_docs_search", "microsoft_docs_fetch"],
      "resources": true,
      "prompts": true,
      "timeoutMs": 60000,
      "maxBytes": 8000000
    }
  ]
}`

const localExample = `{"servers": [{
  "id": "local",
  "enabled": true,
  "transport": "stdio",
  "command": "/absolute/path/to/an-already-installed-server",
  "args": [],
  "cwd": "/explicit/working/directory",
  "tools": [],
  "readOnlyTools": [],
  "roots": [{ "uri": "file:///explicit/project", "name": "Selected project" }]
}]}`

// canary is planted wherever a credential could be; it must never show up
// in a problem.
const canary = "ghp_CANARYc4n4ryCANARYc4n4ry0123456789"

type tree = map[string]any

func decodeTree(t testing.TB, raw string) tree {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var m tree
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding test settings: %v", err)
	}
	return m
}

func srv(m tree, i int) tree { return m["servers"].([]any)[i].(tree) }
func local(m tree) tree      { return srv(m, 0) }
func remote(m tree) tree     { return srv(m, 1) }
func oauth(m tree) tree      { return remote(m)["oauth"].(tree) }

// withGrant sets the remote server's oauth.grantType to a grant without a
// browser and drops the fields only authorization_code takes; it returns
// the oauth object.
func withGrant(m tree, grant string) tree {
	o := oauth(m)
	o["grantType"] = grant
	delete(o, "callbackPort")
	delete(o, "clientMetadataUrl")
	return o
}

func problemsOf(t *testing.T, err error) Problems {
	t.Helper()
	if err == nil {
		return nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v (%T) is not Problems", err, err)
	}
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("error %v is not ErrInvalidArgument", err)
	}
	return ps
}

func hasProblem(ps Problems, server, field, msg string) bool {
	for _, p := range ps {
		if p.Server == server && p.Field == field && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

func TestBaseSettingsValid(t *testing.T) {
	s, err := ParseMCPSettings([]byte(baseSettings))
	if err != nil {
		t.Fatalf("ParseMCPSettings(base) = %v", err)
	}
	if len(s.Servers) != 2 || s.Servers[1].Protocol.Pin != "2026-07-28" || s.Servers[0].Protocol.Mode != ProtocolLegacy {
		t.Errorf("unexpected parse: %+v", s.Servers)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate(base) = %v", err)
	}
}

func TestParseProblems(t *testing.T) {
	longID := strings.Repeat("a", 33)
	secretHint := "pikoctl mcp secret local"
	remoteHint := "pikoctl mcp secret remote"
	cases := []struct {
		name          string
		edit          func(m tree)
		raw           func(base string) string // instead of edit, for what a tree cannot express
		server, field string
		msg           string // substring of the message, optional
	}{
		// ids
		{name: "id pattern", edit: func(m tree) { local(m)["id"] = "Local" }, server: "servers[0]", field: "id"},
		{name: "id empty", edit: func(m tree) { local(m)["id"] = "" }, server: "servers[0]", field: "id", msg: "required"},
		{name: "id missing", edit: func(m tree) { delete(local(m), "id") }, server: "servers[0]", field: "id", msg: "required"},
		{name: "id too long", edit: func(m tree) { local(m)["id"] = longID }, server: "servers[0]", field: "id"},
		{name: "id starts with digit", edit: func(m tree) { local(m)["id"] = "1abc" }, server: "servers[0]", field: "id"},
		{name: "id duplicate", edit: func(m tree) { remote(m)["id"] = "local" }, server: "local", field: "id", msg: "servers[0] and servers[1]"},
		{name: "too many servers", edit: func(m tree) {
			var list []any
			for i := range MaxServers + 1 {
				list = append(list, tree{"id": fmt.Sprintf("s%d", i), "transport": "stdio", "command": "x"})
			}
			m["servers"] = list
		}, server: "", field: "servers", msg: "at most 64"},

		// transport and the fields that belong to it
		{name: "transport missing", edit: func(m tree) { delete(local(m), "transport") }, server: "local", field: "transport", msg: "required"},
		{name: "transport unknown", edit: func(m tree) { local(m)["transport"] = "ws" }, server: "local", field: "transport"},
		{name: "stdio url", edit: func(m tree) { local(m)["url"] = "https://x.example" }, server: "local", field: "url", msg: "only to http and sse"},
		{name: "stdio headers", edit: func(m tree) { local(m)["headers"] = tree{"X-A": "b"} }, server: "local", field: "headers"},
		{name: "stdio allowPrivateNetwork", edit: func(m tree) { local(m)["allowPrivateNetwork"] = true }, server: "local", field: "allowPrivateNetwork"},
		{name: "stdio oauth", edit: func(m tree) { local(m)["oauth"] = tree{} }, server: "local", field: "oauth"},
		{name: "http command", edit: func(m tree) { remote(m)["command"] = "/bin/x" }, server: "remote", field: "command", msg: "only to stdio"},
		{name: "http args", edit: func(m tree) { remote(m)["args"] = []any{"a"} }, server: "remote", field: "args"},
		{name: "http cwd", edit: func(m tree) { remote(m)["cwd"] = "/tmp" }, server: "remote", field: "cwd"},
		{name: "http env", edit: func(m tree) { remote(m)["env"] = tree{"A": "b"} }, server: "remote", field: "env"},

		// stdio
		{name: "command missing", edit: func(m tree) { delete(local(m), "command") }, server: "local", field: "command", msg: "required"},
		{name: "command empty", edit: func(m tree) { local(m)["command"] = "" }, server: "local", field: "command"},
		{name: "command NUL", edit: func(m tree) { local(m)["command"] = "/bin/x\x00y" }, server: "local", field: "command", msg: "NUL"},
		{name: "arg NUL", edit: func(m tree) { local(m)["args"] = []any{"ok", "a\x00b"} }, server: "local", field: "args[1]", msg: "NUL"},
		{name: "cwd relative", edit: func(m tree) { local(m)["cwd"] = "work" }, server: "local", field: "cwd", msg: "absolute"},
		{name: "env name", edit: func(m tree) { local(m)["env"] = tree{"1BAD": "x"} }, server: "local", field: "env.1BAD"},
		{name: "env name dash", edit: func(m tree) { local(m)["env"] = tree{"MY-VAR": "x"} }, server: "local", field: "env.MY-VAR"},
		{name: "env value NUL", edit: func(m tree) { local(m)["env"] = tree{"LOG_LEVEL": "a\x00"} }, server: "local", field: "env.LOG_LEVEL", msg: "NUL"},

		// http and sse
		{name: "url missing", edit: func(m tree) { delete(remote(m), "url") }, server: "remote", field: "url", msg: "required"},
		{name: "url relative", edit: func(m tree) { remote(m)["url"] = "/mcp" }, server: "remote", field: "url"},
		{name: "url no host", edit: func(m tree) { remote(m)["url"] = "https:///mcp" }, server: "remote", field: "url", msg: "host"},
		{name: "url http", edit: func(m tree) { remote(m)["url"] = "http://mcp.example.com/mcp" }, server: "remote", field: "url",
			msg: "url must use https (set allowPrivateNetwork for a LAN or loopback endpoint)"},
		{name: "url ftp", edit: func(m tree) { remote(m)["url"] = "ftp://mcp.example.com/mcp" }, server: "remote", field: "url", msg: "https"},
		{name: "url fragment", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp#x" }, server: "remote", field: "url", msg: "fragment"},
		{name: "url unparsable", edit: func(m tree) { remote(m)["url"] = "https://[::1" }, server: "remote", field: "url"},
		{name: "url space", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/a b" }, server: "remote", field: "url"},
		{name: "header name", edit: func(m tree) { remote(m)["headers"] = tree{"Bad Header": "x"} }, server: "remote", field: "headers[#0]", msg: "header name"},
		{name: "header value CRLF", edit: func(m tree) { remote(m)["headers"] = tree{"X-Tenant": "a\r\nX-Evil: 1"} }, server: "remote", field: "headers.X-Tenant", msg: "CR"},
		{name: "header managed", edit: func(m tree) { remote(m)["headers"] = tree{"Host": "evil.example"} }, server: "remote", field: "headers.Host", msg: "pikod"},
		{name: "sse url http", edit: func(m tree) { remote(m)["transport"] = "sse"; remote(m)["url"] = "http://x.example/sse" }, server: "remote", field: "url", msg: "allowPrivateNetwork"},
		{name: "stdio tlsPin", edit: func(m tree) {
			local(m)["tlsPin"] = "sha256:abababababababababababababababababababababababababababababababab"
		}, server: "local", field: "tlsPin", msg: "only to http and sse"},
		{name: "tlsPin no prefix", edit: func(m tree) { remote(m)["tlsPin"] = "abababababababababababababababababababababababababababababababab" }, server: "remote", field: "tlsPin", msg: `"sha256:" followed by the 64 hex digits`},
		{name: "tlsPin short", edit: func(m tree) { remote(m)["tlsPin"] = "sha256:abcd" }, server: "remote", field: "tlsPin", msg: "64 hex digits"},
		{name: "tlsPin not hex", edit: func(m tree) {
			remote(m)["tlsPin"] = "sha256:zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
		}, server: "remote", field: "tlsPin", msg: "0-9, a-f"},
		{name: "tlsPin on http", edit: func(m tree) {
			remote(m)["url"] = "http://127.0.0.1:9000/mcp"
			remote(m)["allowPrivateNetwork"] = true
			remote(m)["tlsPin"] = "sha256:abababababababababababababababababababababababababababababababab"
		}, server: "remote", field: "tlsPin", msg: "only to an https url"},
		{name: "tlsPin not a string", edit: func(m tree) { remote(m)["tlsPin"] = true }, server: "remote", field: "tlsPin"},

		// ranges
		{name: "timeoutMs low", edit: func(m tree) { local(m)["timeoutMs"] = 999 }, server: "local", field: "timeoutMs", msg: "between 1000 and 600000"},
		{name: "timeoutMs high", edit: func(m tree) { local(m)["timeoutMs"] = 600001 }, server: "local", field: "timeoutMs"},
		{name: "timeoutMs explicit zero", edit: func(m tree) { local(m)["timeoutMs"] = 0 }, server: "local", field: "timeoutMs"},
		{name: "timeoutMs negative", edit: func(m tree) { local(m)["timeoutMs"] = -5 }, server: "local", field: "timeoutMs"},
		{name: "timeoutMs huge", raw: func(b string) string { return strings.Replace(b, `"timeoutMs": 30000`, `"timeoutMs": 1e400`, 1) }, server: "local", field: "timeoutMs"},
		{name: "timeoutMs overflow", raw: func(b string) string {
			return strings.Replace(b, `"timeoutMs": 30000`, `"timeoutMs": 99999999999999999999999`, 1)
		}, server: "local", field: "timeoutMs", msg: "between"},
		{name: "timeoutMs fraction", raw: func(b string) string { return strings.Replace(b, `"timeoutMs": 30000`, `"timeoutMs": 30000.5`, 1) }, server: "local", field: "timeoutMs", msg: "whole number"},
		{name: "timeoutMs string", edit: func(m tree) { local(m)["timeoutMs"] = "30000" }, server: "local", field: "timeoutMs", msg: "whole number"},
		{name: "maxBytes low", edit: func(m tree) { local(m)["maxBytes"] = 1023 }, server: "local", field: "maxBytes", msg: "between 1024 and 20000000"},
		{name: "maxBytes high", edit: func(m tree) { local(m)["maxBytes"] = 20000001 }, server: "local", field: "maxBytes"},
		{name: "maxBytes explicit zero", edit: func(m tree) { local(m)["maxBytes"] = 0 }, server: "local", field: "maxBytes"},

		// protocol
		{name: "protocol unknown pin", edit: func(m tree) { local(m)["protocol"] = "2025-01-01" }, server: "local", field: "protocol", msg: "2026-07-28"},
		{name: "protocol object unknown pin", edit: func(m tree) { remote(m)["protocol"] = tree{"pin": "1999-01-01"} }, server: "remote", field: "protocol"},
		{name: "protocol object empty", edit: func(m tree) { remote(m)["protocol"] = tree{} }, server: "remote", field: "protocol", msg: "pin"},
		{name: "protocol object unknown key", edit: func(m tree) { remote(m)["protocol"] = tree{"mode": "auto"} }, server: "remote", field: "protocol.mode", msg: "unknown"},
		{name: "protocol pin number", edit: func(m tree) { remote(m)["protocol"] = tree{"pin": 2026} }, server: "remote", field: "protocol.pin"},
		{name: "protocol number", edit: func(m tree) { local(m)["protocol"] = 1 }, server: "local", field: "protocol"},
		{name: "protocol empty string", edit: func(m tree) { local(m)["protocol"] = "" }, server: "local", field: "protocol"},

		// artifactDirectory
		{name: "artifactDirectory relative", edit: func(m tree) { local(m)["artifactDirectory"] = "out" }, server: "local", field: "artifactDirectory", msg: "absolute"},
		{name: "artifactDirectory dotdot", edit: func(m tree) { local(m)["artifactDirectory"] = "/srv/a/../b" }, server: "local", field: "artifactDirectory", msg: "clean"},
		{name: "artifactDirectory tmp", edit: func(m tree) { local(m)["artifactDirectory"] = "/tmp" }, server: "local", field: "artifactDirectory", msg: "shared temporary"},
		{name: "artifactDirectory under tmp", edit: func(m tree) { local(m)["artifactDirectory"] = "/tmp/out" }, server: "local", field: "artifactDirectory", msg: "shared temporary"},
		{name: "artifactDirectory dev shm", edit: func(m tree) { local(m)["artifactDirectory"] = "/dev/shm/x" }, server: "local", field: "artifactDirectory", msg: "shared temporary"},
		{name: "artifactDirectory root", edit: func(m tree) { local(m)["artifactDirectory"] = "/" }, server: "local", field: "artifactDirectory", msg: "root"},
		{name: "artifactDirectory trailing slash", edit: func(m tree) { local(m)["artifactDirectory"] = "/srv/a/" }, server: "local", field: "artifactDirectory"},

		// roots
		{name: "root http", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "https://x.example/p"}} }, server: "local", field: "roots[0].uri"},
		{name: "root remote host", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "file://host/p"}} }, server: "local", field: "roots[0].uri"},
		{name: "root no path", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "file://"}} }, server: "local", field: "roots[0].uri"},
		{name: "root relative", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "file:p"}} }, server: "local", field: "roots[0].uri"},
		{name: "root plain path", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "/srv/project"}} }, server: "local", field: "roots[0].uri"},
		{name: "root missing uri", edit: func(m tree) { local(m)["roots"] = []any{tree{"name": "x"}} }, server: "local", field: "roots[0].uri", msg: "required"},
		{name: "root second", edit: func(m tree) {
			local(m)["roots"] = []any{tree{"uri": "file:///a"}, tree{"uri": "file:///b#frag"}}
		}, server: "local", field: "roots[1].uri"},

		// tools
		{name: "tools empty name", edit: func(m tree) { local(m)["tools"] = []any{"read", "", "write"} }, server: "local", field: "tools[1]", msg: "empty"},
		{name: "tools duplicate", edit: func(m tree) { local(m)["tools"] = []any{"read", "write", "read"} }, server: "local", field: "tools[2]", msg: "twice"},
		{name: "readOnlyTools duplicate", edit: func(m tree) { local(m)["readOnlyTools"] = []any{"read", "read"} }, server: "local", field: "readOnlyTools[1]"},
		{name: "readOnlyTools empty name", edit: func(m tree) { local(m)["readOnlyTools"] = []any{""} }, server: "local", field: "readOnlyTools[0]"},
		{name: "readOnlyTools outside tools", edit: func(m tree) { local(m)["readOnlyTools"] = []any{"read", "delete"} }, server: "local", field: "readOnlyTools[1]", msg: "not in tools"},
		{name: "readOnlyTools outside empty tools", edit: func(m tree) { local(m)["tools"] = []any{}; delete(local(m), "autonomousTools") }, server: "local", field: "readOnlyTools[0]"},
		{name: "autonomousTools without tools", edit: func(m tree) { delete(local(m), "tools") }, server: "local", field: "autonomousTools", msg: "explicit tools"},
		{name: "autonomousTools outside tools", edit: func(m tree) { local(m)["autonomousTools"] = []any{"write", "delete"} }, server: "local", field: "autonomousTools[1]", msg: "not in tools"},
		{name: "autonomousTools also read-only", edit: func(m tree) { local(m)["autonomousTools"] = []any{"read"} }, server: "local", field: "autonomousTools[0]", msg: "readOnlyTools"},
		{name: "autonomousTools duplicate", edit: func(m tree) { local(m)["autonomousTools"] = []any{"write", "write"} }, server: "local", field: "autonomousTools[1]"},

		// oauth
		{name: "oauth grantType", edit: func(m tree) { oauth(m)["grantType"] = "implicit" }, server: "remote", field: "oauth.grantType"},
		{name: "oauth clientId needs issuer", edit: func(m tree) { delete(oauth(m), "issuer") }, server: "remote", field: "oauth.issuer", msg: "clientId"},
		{name: "oauth client_credentials needs clientId", edit: func(m tree) {
			oauth(m)["grantType"] = "client_credentials"
			delete(oauth(m), "clientId")
		}, server: "remote", field: "oauth.clientId", msg: remoteHint},
		{name: "oauth client_credentials needs issuer", edit: func(m tree) {
			remote(m)["oauth"] = tree{"grantType": "client_credentials", "clientId": "c"}
		}, server: "remote", field: "oauth.issuer"},
		{name: "oauth issuer http", edit: func(m tree) { oauth(m)["issuer"] = "http://auth.example.com" }, server: "remote", field: "oauth.issuer", msg: "https"},
		{name: "oauth issuer http private non-loopback", edit: func(m tree) {
			remote(m)["allowPrivateNetwork"] = true
			oauth(m)["issuer"] = "http://10.0.0.5:9000"
		}, server: "remote", field: "oauth.issuer", msg: "own host"},
		{name: "oauth issuer loopback on another host", edit: func(m tree) {
			remote(m)["allowPrivateNetwork"] = true
			remote(m)["url"] = "http://127.0.0.1:9000/mcp"
			oauth(m)["issuer"] = "http://localhost:9001"
		}, server: "remote", field: "oauth.issuer", msg: "own host"},
		{name: "oauth grantType cross_app_access needs idpTokenEndpoint", edit: func(m tree) {
			withGrant(m, "cross_app_access")
		}, server: "remote", field: "oauth.idpTokenEndpoint", msg: "identity provider"},
		{name: "oauth idpTokenEndpoint without cross_app_access", edit: func(m tree) {
			oauth(m)["idpTokenEndpoint"] = "https://idp.example.com/token"
		}, server: "remote", field: "oauth.idpTokenEndpoint", msg: "cross_app_access"},
		{name: "oauth idpClientId without cross_app_access", edit: func(m tree) {
			oauth(m)["idpClientId"] = "idp-client"
		}, server: "remote", field: "oauth.idpClientId", msg: "cross_app_access"},
		{name: "oauth idpTokenEndpoint http", edit: func(m tree) {
			withGrant(m, "cross_app_access")["idpTokenEndpoint"] = "http://idp.example.com/token"
		}, server: "remote", field: "oauth.idpTokenEndpoint", msg: "https"},
		{name: "oauth client_credentials callbackPort", edit: func(m tree) {
			oauth(m)["grantType"] = "client_credentials"
			delete(oauth(m), "clientMetadataUrl")
		}, server: "remote", field: "oauth.callbackPort", msg: "authorization_code"},
		{name: "oauth client_credentials clientMetadataUrl", edit: func(m tree) {
			oauth(m)["grantType"] = "client_credentials"
			delete(oauth(m), "callbackPort")
		}, server: "remote", field: "oauth.clientMetadataUrl", msg: "authorization_code"},
		{name: "oauth tokenEndpointAuthMethod unknown", edit: func(m tree) {
			oauth(m)["tokenEndpointAuthMethod"] = "tls_client_auth"
		}, server: "remote", field: "oauth.tokenEndpointAuthMethod", msg: "private_key_jwt"},
		{name: "oauth tokenEndpointAuthMethod none for client_credentials", edit: func(m tree) {
			withGrant(m, "client_credentials")["tokenEndpointAuthMethod"] = "none"
		}, server: "remote", field: "oauth.tokenEndpointAuthMethod", msg: "client authentication"},
		{name: "oauth tokenEndpointAuthMethod without clientId", edit: func(m tree) {
			remote(m)["oauth"] = tree{"tokenEndpointAuthMethod": "client_secret_post"}
		}, server: "remote", field: "oauth.tokenEndpointAuthMethod", msg: "pre-registered"},
		{name: "oauth issuer loopback without allowPrivateNetwork", edit: func(m tree) { oauth(m)["issuer"] = "http://127.0.0.1:9000" }, server: "remote", field: "oauth.issuer"},
		{name: "oauth issuer relative", edit: func(m tree) { oauth(m)["issuer"] = "auth.example.com" }, server: "remote", field: "oauth.issuer"},
		{name: "oauth issuer query", edit: func(m tree) { oauth(m)["issuer"] = "https://auth.example.com?tenant=a" }, server: "remote", field: "oauth.issuer", msg: "query"},
		{name: "oauth callbackPort low", edit: func(m tree) { oauth(m)["callbackPort"] = 80 }, server: "remote", field: "oauth.callbackPort", msg: "1024 and 65535"},
		{name: "oauth callbackPort high", edit: func(m tree) { oauth(m)["callbackPort"] = 70000 }, server: "remote", field: "oauth.callbackPort"},
		{name: "oauth callbackPort zero", edit: func(m tree) { oauth(m)["callbackPort"] = 0 }, server: "remote", field: "oauth.callbackPort"},
		{name: "oauth clientMetadataUrl http", edit: func(m tree) { oauth(m)["clientMetadataUrl"] = "http://pikod.example.com/c.json" }, server: "remote", field: "oauth.clientMetadataUrl", msg: "https"},
		{name: "oauth clientMetadataUrl no path", edit: func(m tree) { oauth(m)["clientMetadataUrl"] = "https://pikod.example.com/" }, server: "remote", field: "oauth.clientMetadataUrl", msg: "path"},
		{name: "oauth scope control", edit: func(m tree) { oauth(m)["scope"] = "read\twrite" }, server: "remote", field: "oauth.scope"},
		{name: "oauth scope quote", edit: func(m tree) { oauth(m)["scope"] = `read "write"` }, server: "remote", field: "oauth.scope"},
		{name: "oauth not object", edit: func(m tree) { remote(m)["oauth"] = true }, server: "remote", field: "oauth"},
		{name: "oauth dpop word", edit: func(m tree) { oauth(m)["dpop"] = "always" }, server: "remote", field: "oauth.dpop", msg: `true, false or "auto"`},
		{name: "oauth dpop quoted boolean", edit: func(m tree) { oauth(m)["dpop"] = "false" }, server: "remote", field: "oauth.dpop", msg: "boolean false"},
		{name: "oauth dpop number", edit: func(m tree) { oauth(m)["dpop"] = 1 }, server: "remote", field: "oauth.dpop", msg: `true, false or "auto"`},

		// credentials
		{name: "url userinfo", edit: func(m tree) { remote(m)["url"] = "https://user:pw@mcp.example.com/mcp" }, server: "remote", field: "url", msg: remoteHint},
		{name: "url secret query", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp?api_key=abc" }, server: "remote", field: "url", msg: `"api_key"`},
		{name: "url access_token query", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp?access_token=abc" }, server: "remote", field: "url", msg: "credential"},
		{name: "url sig query", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp?x=1&sig=abc" }, server: "remote", field: "url", msg: "credential"},
		{name: "url token in value", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp?q=" + canary }, server: "remote", field: "url", msg: "credential"},
		{name: "url token in path", edit: func(m tree) { remote(m)["url"] = "https://mcp.example.com/mcp/" + canary + "/sse" }, server: "remote", field: "url", msg: "credential"},
		{name: "issuer userinfo", edit: func(m tree) { oauth(m)["issuer"] = "https://a:b@auth.example.com" }, server: "remote", field: "oauth.issuer", msg: "credential"},
		{name: "clientMetadataUrl secret query", edit: func(m tree) { oauth(m)["clientMetadataUrl"] = "https://p.example.com/c.json?token=x" }, server: "remote", field: "oauth.clientMetadataUrl", msg: "credential"},
		{name: "header Authorization", edit: func(m tree) { remote(m)["headers"] = tree{"Authorization": "x"} }, server: "remote", field: "headers.Authorization", msg: remoteHint},
		{name: "header Proxy-Authorization", edit: func(m tree) { remote(m)["headers"] = tree{"Proxy-Authorization": "x"} }, server: "remote", field: "headers.Proxy-Authorization"},
		{name: "header Cookie", edit: func(m tree) { remote(m)["headers"] = tree{"Cookie": "a=b"} }, server: "remote", field: "headers.Cookie"},
		{name: "header X-Api-Key", edit: func(m tree) { remote(m)["headers"] = tree{"X-Api-Key": "x"} }, server: "remote", field: "headers.X-Api-Key"},
		{name: "header Private-Token", edit: func(m tree) { remote(m)["headers"] = tree{"Private-Token": "x"} }, server: "remote", field: "headers.Private-Token"},
		{name: "header X-Auth", edit: func(m tree) { remote(m)["headers"] = tree{"X-Auth": "x"} }, server: "remote", field: "headers.X-Auth"},
		{name: "header bearer value", edit: func(m tree) { remote(m)["headers"] = tree{"X-Upstream": "Bearer abcdef"} }, server: "remote", field: "headers.X-Upstream", msg: "credential"},
		{name: "header basic value", edit: func(m tree) { remote(m)["headers"] = tree{"X-Upstream": "basic dXNlcjpwYXNz"} }, server: "remote", field: "headers.X-Upstream"},
		{name: "header JWT value", edit: func(m tree) {
			remote(m)["headers"] = tree{"X-Upstream": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"}
		}, server: "remote", field: "headers.X-Upstream"},
		{name: "header random value", edit: func(m tree) { remote(m)["headers"] = tree{"X-Upstream": "q8Zr4TnW2xLp9KdV7sYb3HcJ6mFg1QaE"} }, server: "remote", field: "headers.X-Upstream"},
		{name: "env secret name", edit: func(m tree) { local(m)["env"] = tree{"GITHUB_TOKEN": "x"} }, server: "local", field: "env.GITHUB_TOKEN", msg: secretHint},
		{name: "env secret name password", edit: func(m tree) { local(m)["env"] = tree{"DB_PASSWORD": "x"} }, server: "local", field: "env.DB_PASSWORD"},
		{name: "env secret name api key", edit: func(m tree) { local(m)["env"] = tree{"OPENAI_API_KEY": "x"} }, server: "local", field: "env.OPENAI_API_KEY"},
		{name: "env secret name glued", edit: func(m tree) { local(m)["env"] = tree{"MYAPIKEY": "x"} }, server: "local", field: "env.MYAPIKEY"},
		{name: "env secret name session", edit: func(m tree) { local(m)["env"] = tree{"AWS_SESSION_TOKEN": "x"} }, server: "local", field: "env.AWS_SESSION_TOKEN"},
		{name: "env ghp value", edit: func(m tree) { local(m)["env"] = tree{"LOG_LEVEL": canary} }, server: "local", field: "env.LOG_LEVEL", msg: secretHint},
		{name: "env AKIA value", edit: func(m tree) { local(m)["env"] = tree{"REGION_HINT": "AKIAIOSFODNN7EXAMPLE"} }, server: "local", field: "env.REGION_HINT"},
		{name: "env sk- value", edit: func(m tree) { local(m)["env"] = tree{"MODEL": "sk-proj-abcdefghijklmnopqrstuvwx"} }, server: "local", field: "env.MODEL"},
		{name: "env slack value", edit: func(m tree) { local(m)["env"] = tree{"CHANNEL": "xoxb-1234567890-abcdefghij"} }, server: "local", field: "env.CHANNEL"},
		{name: "env gitlab value", edit: func(m tree) { local(m)["env"] = tree{"GL": "glpat-abcdefghij0123456789"} }, server: "local", field: "env.GL"},
		{name: "env github_pat value", edit: func(m tree) { local(m)["env"] = tree{"GH": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"} }, server: "local", field: "env.GH"},
		{name: "env hex value", edit: func(m tree) {
			local(m)["env"] = tree{"X": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
		}, server: "local", field: "env.X"},
		{name: "arg flag=value", edit: func(m tree) { local(m)["args"] = []any{"--verbose", "--token=abc"} }, server: "local", field: "args[1]", msg: secretHint},
		{name: "arg flag value", edit: func(m tree) { local(m)["args"] = []any{"--verbose", "--api-key", "abc"} }, server: "local", field: "args[2]", msg: "credential"},
		{name: "arg short password flag", edit: func(m tree) { local(m)["args"] = []any{"-password", "hunter2"} }, server: "local", field: "args[1]"},
		{name: "arg token value", edit: func(m tree) { local(m)["args"] = []any{"serve", canary} }, server: "local", field: "args[1]"},
		{name: "arg assignment", edit: func(m tree) { local(m)["args"] = []any{"run", "-e", "GITHUB_TOKEN=abc"} }, server: "local", field: "args[2]"},
		{name: "arg header line", edit: func(m tree) { local(m)["args"] = []any{"--header", "Authorization: Bearer abc"} }, server: "local", field: "args[1]"},
		{name: "arg url userinfo", edit: func(m tree) { local(m)["args"] = []any{"postgres://u:pw@db.internal/app"} }, server: "local", field: "args[0]"},
		{name: "arg -p value", edit: func(m tree) { local(m)["args"] = []any{"-u", "root", "-p", "hunter2"} }, server: "local", field: "args[3]", msg: "-p (a password flag)"},
		{name: "arg -pVALUE", edit: func(m tree) { local(m)["args"] = []any{"-u", "root", "-pHunter2"} }, server: "local", field: "args[2]", msg: "-pPASSWORD"},
		{name: "arg -u user:pass", edit: func(m tree) { local(m)["args"] = []any{"-u", "admin:hunter2", "https://x.example"} }, server: "local", field: "args[1]", msg: "user:password"},
		{name: "arg -uuser:pass", edit: func(m tree) { local(m)["args"] = []any{"-uadmin:S3cret"} }, server: "local", field: "args[0]", msg: "user:password"},
		{name: "arg --user=user:pass", edit: func(m tree) { local(m)["args"] = []any{"--user=admin:S3cret"} }, server: "local", field: "args[0]", msg: "user:password"},
		{name: "arg -p=value", edit: func(m tree) { local(m)["args"] = []any{"-p=hunter2"} }, server: "local", field: "args[0]", msg: secretHint},
		{name: "arg --password value", edit: func(m tree) { local(m)["args"] = []any{"--user", "me", "--password", "hunter2"} }, server: "local", field: "args[3]", msg: secretHint},
		{name: "arg --password=value", edit: func(m tree) { local(m)["args"] = []any{"--password=hunter2"} }, server: "local", field: "args[0]", msg: secretHint},
		{name: "arg --token value", edit: func(m tree) { local(m)["args"] = []any{"--token", "abc123"} }, server: "local", field: "args[1]", msg: secretHint},
		{name: "arg --token=value", edit: func(m tree) { local(m)["args"] = []any{"--token=abc123"} }, server: "local", field: "args[0]"},
		{name: "arg url password in flag", edit: func(m tree) { local(m)["args"] = []any{"--db=mysql://app:pw@localhost/x"} }, server: "local", field: "args[0]", msg: "password in this URL"},
		{name: "arg slack webhook", edit: func(m tree) {
			local(m)["args"] = []any{"--notify", "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX"}
		}, server: "local", field: "args[1]", msg: "Slack webhook"},
		{name: "arg slack webhook in flag", edit: func(m tree) {
			local(m)["args"] = []any{"--webhook=hooks.slack.com/services/T0000/B0000/XXXXXXXX"}
		}, server: "local", field: "args[0]", msg: "Slack webhook"},
		{name: "arg discord webhook", edit: func(m tree) {
			local(m)["args"] = []any{"https://discord.com/api/webhooks/123456/abcdef"}
		}, server: "local", field: "args[0]", msg: "Discord webhook"},
		{name: "arg discordapp webhook", edit: func(m tree) {
			local(m)["args"] = []any{"https://discordapp.com/api/v10/webhooks/123456/abcdef"}
		}, server: "local", field: "args[0]", msg: "Discord webhook"},
		{name: "env url password", edit: func(m tree) { local(m)["env"] = tree{"DATABASE_URL": "postgres://user:pw@db.internal:5432/app"} }, server: "local", field: "env.DATABASE_URL", msg: "password in this URL"},
		{name: "env url password no user", edit: func(m tree) { local(m)["env"] = tree{"REDIS_URL": "redis://:pw@cache:6379/0"} }, server: "local", field: "env.REDIS_URL", msg: secretHint},
		{name: "env url password in text", edit: func(m tree) { local(m)["env"] = tree{"DSN": "primary=postgres://a:b@h/d replica=x"} }, server: "local", field: "env.DSN"},
		{name: "env slack webhook", edit: func(m tree) {
			local(m)["env"] = tree{"NOTIFY_URL": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX"}
		}, server: "local", field: "env.NOTIFY_URL", msg: "Slack webhook"},
		{name: "env slack workflow", edit: func(m tree) {
			local(m)["env"] = tree{"NOTIFY_URL": "https://hooks.slack.com/triggers/T0000/123/abc"}
		}, server: "local", field: "env.NOTIFY_URL", msg: "Slack webhook"},
		{name: "env discord webhook", edit: func(m tree) {
			local(m)["env"] = tree{"HOOK": "https://ptb.discord.com/api/webhooks/123/abc"}
		}, server: "local", field: "env.HOOK", msg: "Discord webhook"},
		{name: "url slack webhook", edit: func(m tree) { remote(m)["url"] = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX" }, server: "remote", field: "url", msg: "Slack webhook"},
		{name: "url discord webhook", edit: func(m tree) { remote(m)["url"] = "https://DISCORD.com/api/webhooks/1/abc" }, server: "remote", field: "url", msg: "Discord webhook"},
		{name: "header webhook value", edit: func(m tree) {
			remote(m)["headers"] = tree{"X-Notify": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX"}
		}, server: "remote", field: "headers.X-Notify", msg: "Slack webhook"},

		// unknown properties and types
		{name: "unknown top level", edit: func(m tree) { m["version"] = 1 }, server: "", field: "version", msg: "unknown"},
		{name: "unknown server property", edit: func(m tree) { local(m)["foo"] = 1 }, server: "local", field: "foo", msg: "unknown"},
		{name: "unknown server property case", edit: func(m tree) { local(m)["TimeoutMs"] = 1000 }, server: "local", field: "TimeoutMs", msg: `"timeoutMs"`},
		{name: "unknown secret property", edit: func(m tree) { remote(m)["apiKey"] = "x" }, server: "remote", field: "apiKey", msg: remoteHint},
		{name: "unknown oauth property", edit: func(m tree) { oauth(m)["clientSecret"] = "x" }, server: "remote", field: "oauth.clientSecret", msg: remoteHint},
		{name: "unknown root property", edit: func(m tree) { local(m)["roots"] = []any{tree{"uri": "file:///a", "path": "/a"}} }, server: "local", field: "roots[0].path"},
		{name: "settings not object", raw: func(string) string { return `[]` }, server: "", field: "", msg: "object"},
		{name: "settings null", raw: func(string) string { return `null` }, server: "", field: "", msg: "null"},
		{name: "settings empty", raw: func(string) string { return `  ` }, server: "", field: "", msg: "empty"},
		{name: "settings invalid JSON", raw: func(b string) string { return b[:len(b)-3] }, server: "", field: "", msg: "not valid JSON"},
		{name: "settings trailing data", raw: func(b string) string { return b + ` {}` }, server: "", field: "", msg: "after"},
		{name: "servers missing", raw: func(string) string { return `{}` }, server: "", field: "servers", msg: "required"},
		{name: "servers null", edit: func(m tree) { m["servers"] = nil }, server: "", field: "servers", msg: "null"},
		{name: "servers object", edit: func(m tree) { m["servers"] = tree{} }, server: "", field: "servers"},
		{name: "server not object", edit: func(m tree) { m["servers"] = append(m["servers"].([]any), "x") }, server: "servers[2]", field: "", msg: "server object"},
		{name: "enabled string", edit: func(m tree) { local(m)["enabled"] = "yes" }, server: "local", field: "enabled", msg: "true or false"},
		{name: "sampling null", edit: func(m tree) { local(m)["sampling"] = nil }, server: "local", field: "sampling", msg: "null"},
		{name: "id number", edit: func(m tree) { local(m)["id"] = 7 }, server: "servers[0]", field: "id", msg: "string"},
		{name: "args string", edit: func(m tree) { local(m)["args"] = "--verbose" }, server: "local", field: "args", msg: "list"},
		{name: "args element number", edit: func(m tree) { local(m)["args"] = []any{"a", 2} }, server: "local", field: "args[1]", msg: "string"},
		{name: "env value number", edit: func(m tree) { local(m)["env"] = tree{"PORT": 8080} }, server: "local", field: "env.PORT", msg: "string"},
		{name: "headers list", edit: func(m tree) { remote(m)["headers"] = []any{} }, server: "remote", field: "headers", msg: "object"},
		{name: "tools string", edit: func(m tree) { local(m)["tools"] = "all" }, server: "local", field: "tools"},
		{name: "roots object", edit: func(m tree) { local(m)["roots"] = tree{} }, server: "local", field: "roots"},
		{name: "root not object", edit: func(m tree) { local(m)["roots"] = []any{"file:///a"} }, server: "local", field: "roots[0]"},
		{name: "duplicate key id", raw: func(b string) string {
			return strings.Replace(b, `"id": "local",`, `"id": "local", "id": "other",`, 1)
		}, server: "local", field: "id", msg: "more than once"},
		{name: "duplicate env key", raw: func(b string) string {
			return strings.Replace(b, `"LOG_LEVEL": "debug"`, `"LOG_LEVEL": "debug", "LOG_LEVEL": "info"`, 1)
		}, server: "local", field: "env.LOG_LEVEL", msg: "more than once"},
		{name: "duplicate top-level key", raw: func(b string) string { return strings.Replace(b, `{"servers": [`, `{"servers": [], "servers": [`, 1) }, server: "", field: "servers", msg: "more than once"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			if tc.raw != nil {
				raw = []byte(tc.raw(baseSettings))
			} else {
				m := decodeTree(t, baseSettings)
				tc.edit(m)
				var err error
				if raw, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ParseMCPSettings(raw)
			if err == nil {
				t.Fatalf("ParseMCPSettings accepted %s", raw)
			}
			if s != nil {
				t.Errorf("ParseMCPSettings returned settings with an error")
			}
			ps := problemsOf(t, err)
			if !hasProblem(ps, tc.server, tc.field, tc.msg) {
				t.Errorf("no problem {server %q, field %q, message ~%q}; got:\n%v", tc.server, tc.field, tc.msg, err)
			}
		})
	}
}

// TestParseReportsEveryProblem checks that one input with many mistakes,
// of every kind, reports all of them in one error.
func TestParseReportsEveryProblem(t *testing.T) {
	raw := `{"servers": [
	  {"id": "a", "transport": "stdio", "command": "x", "timeoutMs": 5, "bogus": true, "env": {"API_TOKEN": "t"}},
	  {"id": "Bad", "transport": "http", "url": "http://example.com", "maxBytes": "big"},
	  {"id": "a", "transport": "sse", "url": "https://example.com/sse", "oauth": {"grantType": "client_credentials"}},
	  {"id": "c", "transport": "stdio", "command": "y", "autonomousTools": ["t"], "protocol": {"pin": "2026-07-28", "x": 1}}
	], "extra": 1}`
	_, err := ParseMCPSettings([]byte(raw))
	ps := problemsOf(t, err)
	want := []struct{ server, field string }{
		{"", "extra"},
		{"a", "timeoutMs"},
		{"a", "bogus"},
		{"a", "env.API_TOKEN"},
		{"servers[1]", "id"},
		{"servers[1]", "url"},
		{"servers[1]", "maxBytes"},
		{"a", "id"}, // the duplicate
		{"a", "oauth.clientId"},
		{"a", "oauth.issuer"},
		{"c", "autonomousTools"},
		{"c", "protocol.x"},
	}
	for _, w := range want {
		if !hasProblem(ps, w.server, w.field, "") {
			t.Errorf("missing problem {%q, %q}", w.server, w.field)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(ps), len(want), err)
	}
	// Problems come in server order, instance-wide ones first.
	if ps[0].Field != "extra" {
		t.Errorf("first problem = %v, want the top-level one", ps[0])
	}
	we := ToError(err)
	if we.Code != 1001 || len(we.Data.Problems) != len(ps) {
		t.Errorf("ToError: code %d with %d problems, want 1001 with %d", we.Code, len(we.Data.Problems), len(ps))
	}
}

func TestParseBoundsProblemCount(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"servers": [`)
	for i := range 300 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id": "X"}`)
	}
	b.WriteString(`]}`)
	_, err := ParseMCPSettings([]byte(b.String()))
	ps := problemsOf(t, err)
	if len(ps) != maxProblems+1 || !strings.Contains(ps[maxProblems].Message, "more problems") {
		t.Errorf("got %d problems, want %d ending with a summary", len(ps), maxProblems+1)
	}
}

func TestParseDeepNesting(t *testing.T) {
	raw := `{"servers": [], "x": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	_, err := ParseMCPSettings([]byte(raw))
	if ps := problemsOf(t, err); len(ps) != 1 || !strings.Contains(ps[0].Message, "nested") {
		t.Errorf("deep nesting: got %v", err)
	}
}

func validConfigs() map[string]string {
	pin := func(s, after string) string {
		return strings.Replace(s, after, after+` "protocol": {"pin": "2026-07-28"},`, 1)
	}
	return map[string]string{
		"base":             baseSettings,
		"learn":            learnExample,
		"learn pinned":     pin(learnExample, `"enabled": true,`),
		"local":            localExample,
		"local pinned":     pin(localExample, `"enabled": true,`),
		"empty servers":    `{"servers": []}`,
		"tls pin":          `{"servers": [{"id": "pinned", "transport": "http", "url": "https://127.0.0.1:8765/mcp", "allowPrivateNetwork": true, "tlsPin": "sha256:AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01AB01"}]}`,
		"bare version":     `{"servers": [{"id": "s", "transport": "sse", "url": "https://x.example/sse", "protocol": "2025-06-18"}]}`,
		"auto":             `{"servers": [{"id": "s", "transport": "stdio", "command": "srv", "protocol": "auto"}]}`,
		"private http":     `{"servers": [{"id": "lan", "transport": "http", "url": "http://192.168.1.5:8080/mcp", "allowPrivateNetwork": true}]}`,
		"loopback issuer":  `{"servers": [{"id": "dev", "transport": "http", "url": "http://127.0.0.1:9000/mcp", "allowPrivateNetwork": true, "oauth": {"clientId": "c", "issuer": "http://127.0.0.1:9001", "grantType": "client_credentials", "scope": "a b"}}]}`,
		"cross app access": `{"servers": [{"id": "xaa", "transport": "http", "url": "http://localhost:9000/mcp", "allowPrivateNetwork": true, "oauth": {"clientId": "c", "issuer": "http://localhost:9001", "grantType": "cross_app_access", "idpTokenEndpoint": "http://localhost:9002/token", "idpClientId": "idp-c", "tokenEndpointAuthMethod": "client_secret_basic"}}]}`,
		"private key jwt":  `{"servers": [{"id": "cc", "transport": "http", "url": "https://mcp.example.com/mcp", "oauth": {"clientId": "c", "issuer": "https://auth.example.com", "grantType": "client_credentials", "tokenEndpointAuthMethod": "private_key_jwt"}}]}`,
		"empty oauth":      `{"servers": [{"id": "o", "transport": "http", "url": "https://x.example/mcp", "oauth": {}}]}`,
		"dpop auto":        `{"servers": [{"id": "o", "transport": "http", "url": "https://x.example/mcp", "oauth": {"dpop": "auto"}}]}`,
		"dpop off":         `{"servers": [{"id": "o", "transport": "sse", "url": "https://x.example/sse", "oauth": {"dpop": false}}]}`,
		"ordinary args": `{"servers": [{"id": "fs", "transport": "stdio", "command": "npx",
		  "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Projects/ClientWebsite2024", "--token-file", "/run/secrets/t", "--no-auth", "--id", "123e4567-e89b-12d3-a456-426614174000"],
		  "env": {"NODE_ENV": "production", "SSH_AUTH_SOCK": "/run/user/1000/ssh", "PUBLIC_KEY_PATH": "/etc/k.pub", "LANG": "en_US.UTF-8"}}]}`,
		"ports and plain urls": `{"servers": [{"id": "dk", "transport": "stdio", "command": "docker",
		  "args": ["run", "-i", "--rm", "-p", "8080:80", "-p", "127.0.0.1:9000:9000/tcp", "-p=3000", "mkdir", "-p", "--port", "5432", "-p8080", "-pthread", "-project", "-u", "1000:1000", "-u", "app:app", "-uroot",
		    "https://api.slack.com/apps", "https://discord.com/developers/docs", "--url=https://db.example.com:5432/app"],
		  "env": {"REPO": "ssh://git@github.com/me/repo.git", "DB_URL": "postgres://db.internal:5432/app", "SLACK_DOCS": "https://hooks.slack.com/"}}]}`,
		"max servers": func() string {
			var parts []string
			for i := range MaxServers {
				parts = append(parts, fmt.Sprintf(`{"id": "s%d", "transport": "stdio", "command": "x"}`, i))
			}
			return `{"servers": [` + strings.Join(parts, ",") + `]}`
		}(),
		"limits": `{"servers": [{"id": "l", "transport": "stdio", "command": "x", "timeoutMs": 1000, "maxBytes": 20000000},
		  {"id": "h", "transport": "stdio", "command": "x", "timeoutMs": 600000, "maxBytes": 1024}]}`,
	}
}

func TestParseValid(t *testing.T) {
	for name, raw := range validConfigs() {
		t.Run(name, func(t *testing.T) {
			s, err := ParseMCPSettings([]byte(raw))
			if err != nil {
				t.Fatalf("ParseMCPSettings = %v", err)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("Validate after parse = %v", err)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	s, err := ParseMCPSettings([]byte(learnExample))
	if err != nil {
		t.Fatal(err)
	}
	l := s.Servers[0]
	if l.ID != "learn" || !l.IsEnabled() || l.Transport != TransportHTTP || l.TimeoutMs != 60000 ||
		l.MaxBytes != 8000000 || l.Tools == nil || len(*l.Tools) != 2 || len(l.ReadOnlyTools) != 2 ||
		l.ProtocolMode() != ProtocolAuto {
		t.Errorf("learn parsed as %+v", l)
	}
	s, err = ParseMCPSettings([]byte(localExample))
	if err != nil {
		t.Fatal(err)
	}
	lo := s.Servers[0]
	if lo.Tools == nil || len(*lo.Tools) != 0 {
		t.Errorf("tools: [] must parse as an explicit empty selection, got %v", lo.Tools)
	}
	if lo.Args != nil || lo.ReadOnlyTools != nil || len(lo.Roots) != 1 || lo.Roots[0].Name != "Selected project" ||
		lo.ProtocolMode() != ProtocolLegacy || lo.Timeout() != DefaultTimeoutMs {
		t.Errorf("local parsed as %+v", lo)
	}
	s, err = ParseMCPSettings([]byte(validConfigs()["bare version"]))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Servers[0].Protocol; p == nil || p.Pin != "2025-06-18" || p.Mode != "" {
		t.Errorf("bare version parsed as %+v, want a pin", p)
	}
}

// TestDPoPModeJSON: oauth.dpop is the boolean true or false, or "auto",
// both through ParseMCPSettings and encoding/json.
func TestDPoPModeJSON(t *testing.T) {
	for _, c := range []struct {
		json string
		mode DPoPMode
	}{{"true", DPoPOn}, {"false", DPoPOff}, {`"auto"`, DPoPAuto}} {
		s, err := ParseMCPSettings([]byte(`{"servers": [{"id": "o", "transport": "http", "url": "https://x.example/mcp", "oauth": {"dpop": ` + c.json + `}}]}`))
		if err != nil || s.Servers[0].OAuth.DPoP != c.mode {
			t.Errorf("ParseMCPSettings(dpop %s) = %v, %v; want %q", c.json, s, err, c.mode)
		}
		var m DPoPMode
		if err := json.Unmarshal([]byte(c.json), &m); err != nil || m != c.mode {
			t.Errorf("json.Unmarshal(%s) = %q, %v", c.json, m, err)
		}
		if b, err := json.Marshal(c.mode); err != nil || string(b) != c.json {
			t.Errorf("json.Marshal(%q) = %s, %v; want %s", c.mode, b, err, c.json)
		}
	}
	var m DPoPMode
	if err := json.Unmarshal([]byte(`"true"`), &m); err == nil {
		t.Error(`json.Unmarshal("true") took a string for the boolean`)
	}
	if (DPoPMode("")).Effective() != DPoPAuto {
		t.Error("the default of oauth.dpop is not auto")
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	for name, raw := range validConfigs() {
		t.Run(name, func(t *testing.T) {
			s, err := ParseMCPSettings([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			c := s.Canonical()
			s2, err := ParseMCPSettings(c)
			if err != nil {
				t.Fatalf("ParseMCPSettings(Canonical()) = %v\n%s", err, c)
			}
			if !reflect.DeepEqual(s, s2) {
				t.Errorf("round trip changed the settings:\n got %+v\nwant %+v", s2, s)
			}
			if c2 := s2.Canonical(); !bytes.Equal(c, c2) {
				t.Errorf("Canonical is not stable:\n%s\n%s", c, c2)
			}
			if bytes.ContainsAny(c, " \n") && !strings.Contains(raw, " ") {
				t.Errorf("Canonical is not compact: %s", c)
			}
		})
	}
}

func TestCanonicalForm(t *testing.T) {
	a := `{"servers": [{"transport": "stdio", "id": "x", "command": "c", "env": {"B": "2", "A": "1"}, "tools": [], "protocol": "2025-06-18"}]}`
	b := `{"servers":[{"env":{"A":"1","B":"2"},"protocol":{"pin":"2025-06-18"},"tools":[],"command":"c","id":"x","transport":"stdio"}]}`
	sa, err := ParseMCPSettings([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ParseMCPSettings([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"servers":[{"id":"x","transport":"stdio","command":"c","env":{"A":"1","B":"2"},"tools":[],"protocol":{"pin":"2025-06-18"}}]}`
	if got := string(sa.Canonical()); got != want {
		t.Errorf("Canonical() =\n%s\nwant\n%s", got, want)
	}
	if !bytes.Equal(sa.Canonical(), sb.Canonical()) {
		t.Errorf("key order changed Canonical:\n%s\n%s", sa.Canonical(), sb.Canonical())
	}
	if sa.Servers[0].Digest() != sb.Servers[0].Digest() {
		t.Error("key order changed Digest")
	}
	if got := string((&MCPSettings{}).Canonical()); got != `{"servers":[]}` {
		t.Errorf("empty Canonical() = %s", got)
	}
	var nilSettings *MCPSettings
	if got := string(nilSettings.Canonical()); got != `{"servers":[]}` {
		t.Errorf("nil Canonical() = %s", got)
	}
	// A hand-built explicit empty selection must stay [] (not null).
	empty := []string(nil)
	hand := &MCPSettings{Servers: []ServerSettings{{ID: "h", Transport: TransportStdio, Command: "c", Tools: &empty}}}
	if _, err := ParseMCPSettings(hand.Canonical()); err != nil {
		t.Errorf("hand-built settings do not round-trip: %v\n%s", err, hand.Canonical())
	}
}

func TestDigest(t *testing.T) {
	base := func() ServerSettings {
		s, err := ParseMCPSettings([]byte(baseSettings))
		if err != nil {
			t.Fatal(err)
		}
		return s.Servers[0]
	}
	b := base()
	d := b.Digest()
	if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		t.Fatalf("Digest() = %q, want 64 hex digits", d)
	}
	if again := base(); again.Digest() != d {
		t.Error("Digest is not stable")
	}
	f := false
	edits := map[string]func(s *ServerSettings){
		"id":                func(s *ServerSettings) { s.ID = "other" },
		"enabled":           func(s *ServerSettings) { s.Enabled = &f },
		"enabled default":   func(s *ServerSettings) { s.Enabled = nil },
		"transport":         func(s *ServerSettings) { s.Transport = TransportSSE },
		"command":           func(s *ServerSettings) { s.Command = "/usr/bin/other" },
		"args":              func(s *ServerSettings) { s.Args = append(s.Args[:2:2], "/srv/other") },
		"args order":        func(s *ServerSettings) { s.Args[0], s.Args[1] = s.Args[1], s.Args[0] },
		"cwd":               func(s *ServerSettings) { s.Cwd = "/srv" },
		"env value":         func(s *ServerSettings) { s.Env = map[string]string{"LOG_LEVEL": "info"} },
		"env name":          func(s *ServerSettings) { s.Env = map[string]string{"LOG": "debug"} },
		"url":               func(s *ServerSettings) { s.URL = "https://x.example" },
		"headers":           func(s *ServerSettings) { s.Headers = map[string]string{"A": "b"} },
		"private":           func(s *ServerSettings) { s.AllowPrivateNetwork = true },
		"oauth":             func(s *ServerSettings) { s.OAuth = &OAuthSettings{} },
		"oauth scope":       func(s *ServerSettings) { s.OAuth = &OAuthSettings{Scope: "a"} },
		"tools":             func(s *ServerSettings) { t := []string{"read"}; s.Tools = &t },
		"tools all":         func(s *ServerSettings) { s.Tools = nil },
		"tools none":        func(s *ServerSettings) { t := []string{}; s.Tools = &t },
		"readOnlyTools":     func(s *ServerSettings) { s.ReadOnlyTools = nil },
		"autonomousTools":   func(s *ServerSettings) { s.AutonomousTools = []string{"search"} },
		"resources":         func(s *ServerSettings) { s.Resources = &f },
		"prompts":           func(s *ServerSettings) { s.Prompts = nil },
		"roots":             func(s *ServerSettings) { s.Roots = []Root{{URI: "file:///other"}} },
		"root name":         func(s *ServerSettings) { s.Roots = []Root{{URI: "file:///srv/project"}} },
		"sampling":          func(s *ServerSettings) { s.Sampling = false },
		"elicitation":       func(s *ServerSettings) { s.Elicitation = true },
		"timeoutMs":         func(s *ServerSettings) { s.TimeoutMs = 30001 },
		"maxBytes":          func(s *ServerSettings) { s.MaxBytes = 0 },
		"artifactDirectory": func(s *ServerSettings) { s.ArtifactDirectory = "/srv/out" },
		"protocol auto":     func(s *ServerSettings) { s.Protocol = &Protocol{Mode: ProtocolAuto} },
		"protocol pin":      func(s *ServerSettings) { s.Protocol = &Protocol{Pin: "2026-07-28"} },
		"protocol default":  func(s *ServerSettings) { s.Protocol = nil },
	}
	seen := map[string]string{d: "base"}
	for name, edit := range edits {
		s := base()
		edit(&s)
		got := s.Digest()
		if prev, dup := seen[got]; dup {
			t.Errorf("edit %q gives the same digest as %q", name, prev)
		}
		seen[got] = name
	}
}

func TestValidateStruct(t *testing.T) {
	var nilSettings *MCPSettings
	if err := nilSettings.Validate(); err == nil || !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil Validate() = %v", err)
	}
	if err := (&MCPSettings{}).Validate(); err != nil {
		t.Errorf("empty Validate() = %v", err)
	}
	s := &MCPSettings{Servers: []ServerSettings{
		{ID: "ok", Transport: TransportStdio, Command: "x", TimeoutMs: 10},
		{ID: "p", Transport: TransportHTTP, URL: "https://x.example", Protocol: &Protocol{Mode: "auto", Pin: "2026-07-28"}},
		{ID: "q", Transport: TransportHTTP, URL: "https://x.example", Protocol: &Protocol{}},
	}}
	ps := problemsOf(t, s.Validate())
	for _, w := range []struct{ server, field string }{{"ok", "timeoutMs"}, {"p", "protocol"}, {"q", "protocol"}} {
		if !hasProblem(ps, w.server, w.field, "") {
			t.Errorf("missing problem {%q, %q} in %v", w.server, w.field, ps)
		}
	}
	if len(ps) != 3 {
		t.Errorf("got %d problems, want 3: %v", len(ps), ps)
	}
}

// TestProblemsNeverContainSecrets plants a canary credential everywhere a
// user might paste one and checks that no part of the error shows it.
func TestProblemsNeverContainSecrets(t *testing.T) {
	c := canary
	raw := fmt.Sprintf(`{"servers": [
	  {"id": "s", "transport": "stdio", "command": %[1]q,
	   "args": ["--token=%[2]s", "--api-key", %[1]q, %[1]q, "GITHUB_TOKEN=%[2]s", "Authorization: Bearer %[2]s", "https://u:%[2]s@x.example/?token=%[2]s",
	     "-p", "CANARYpw", "--password", "CANARYpw", "--token", "CANARYtk", "--password=CANARYpw", "mysql://u:CANARYpw@h/d",
	     "https://hooks.slack.com/services/T0/B0/CANARY", "https://discord.com/api/webhooks/1/CANARY"],
	   "env": {"GITHUB_TOKEN": %[1]q, "LOG_LEVEL": %[1]q, %[1]q: "x", "DB_URL": "postgres://u:CANARYpw@db/app",
	     "HOOK": "https://hooks.slack.com/services/T0/B0/CANARY", "DHOOK": "https://discordapp.com/api/webhooks/1/CANARY"}, %[1]q: 1, "cwd": %[1]q, "artifactDirectory": %[1]q},
	  {"id": %[1]q, "transport": "http", "url": "https://user:%[2]s@x.example/mcp/%[2]s?api_key=%[2]s&%[2]s=1#%[2]s",
	   "headers": {"Authorization": "Bearer %[2]s", "X-Custom": %[1]q, %[1]q: "v", "X-Other": "Bearer %[2]s"},
	   "oauth": {"issuer": "https://%[2]s@auth.example/?code=%[2]s", "clientMetadataUrl": "http://a:%[2]s@m.example", "clientSecret": %[1]q, "scope": "\u0001%[2]s"},
	   "protocol": {"pin": %[1]q, %[1]q: 1}, "tools": [%[1]q, %[1]q], "readOnlyTools": [%[1]q, %[1]q], "roots": [{"uri": "https://%[2]s"}]}
	], %[1]q: {}}`, c, c)
	_, err := ParseMCPSettings([]byte(raw))
	ps := problemsOf(t, err)
	if len(ps) < 20 {
		t.Errorf("expected many problems, got %d:\n%v", len(ps), err)
	}
	check := func(where, text string) {
		if strings.Contains(text, "CANARY") {
			t.Errorf("%s shows the planted secret: %s", where, text)
		}
	}
	for _, p := range ps {
		check("Problem.Server", p.Server)
		check("Problem.Field", p.Field)
		check("Problem.Message", p.Message)
	}
	check("Error()", err.Error())
	wire, _ := json.Marshal(ToError(err))
	check("wire error", string(wire))

	// A syntax error near the secret does not quote it either.
	_, err = ParseMCPSettings([]byte(`{"servers": [{"id": "s", "env": {"A": "` + c + `"`))
	check("syntax error", err.Error())
	_, err = ParseMCPSettings([]byte(`{"servers": [` + c + `]}`))
	check("syntax error", err.Error())
}

func TestProtocolJSON(t *testing.T) {
	cases := []struct {
		in      string
		want    Protocol
		out     string
		wantErr bool
	}{
		{in: `"legacy"`, want: Protocol{Mode: "legacy"}, out: `"legacy"`},
		{in: `"auto"`, want: Protocol{Mode: "auto"}, out: `"auto"`},
		{in: `{"pin":"2026-07-28"}`, want: Protocol{Pin: "2026-07-28"}, out: `{"pin":"2026-07-28"}`},
		{in: `"2025-06-18"`, want: Protocol{Pin: "2025-06-18"}, out: `{"pin":"2025-06-18"}`},
		{in: `{"pin":"2026-07-28","x":1}`, wantErr: true},
		{in: `{}`, wantErr: true},
		{in: `5`, wantErr: true},
	}
	for _, tc := range cases {
		var p Protocol
		err := json.Unmarshal([]byte(tc.in), &p)
		if tc.wantErr {
			if err == nil {
				t.Errorf("Unmarshal(%s) = %+v, want an error", tc.in, p)
			}
			continue
		}
		if err != nil || p != tc.want {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", tc.in, p, err, tc.want)
			continue
		}
		out, err := json.Marshal(p)
		if err != nil || string(out) != tc.out {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", p, out, err, tc.out)
		}
	}
	// Settings decoded with plain encoding/json read protocol the same way.
	var s ServerSettings
	if err := json.Unmarshal([]byte(`{"protocol":"2024-11-05"}`), &s); err != nil || s.Protocol == nil || s.Protocol.Pin != "2024-11-05" {
		t.Errorf("json.Unmarshal(ServerSettings) protocol = %+v, %v", s.Protocol, err)
	}
}

func TestLooksLikeCredential(t *testing.T) {
	secret := []string{
		"Bearer abc", "basic dXNlcjpwYXNz", "token abcdef", canary, "gho_abcdefghijklmnopqrstuvwxyz",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "sk-ant-api03-abcdefghijklmnop",
		"xoxp-123456789012-abcdef", "AKIAIOSFODNN7EXAMPLE", "glpat-abcdefghij0123456789",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "-----BEGIN RSA PRIVATE KEY-----",
		"q8Zr4TnW2xLp9KdV7sYb3HcJ6mFg1QaE", "9f86d081884c7d659a2feaa0c55ad015",
		"x=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A", "k3j9x2m8q7w4z1p6r5t0y8u3i2o9a7s6",
	}
	for _, v := range secret {
		if !looksLikeCredential(v) {
			t.Errorf("looksLikeCredential(%q) = false, want true", v)
		}
	}
	ordinary := []string{
		"", "debug", "production", "en_US.UTF-8", "/usr/local/bin/node", "https://learn.microsoft.com/api/mcp",
		"@modelcontextprotocol/server-filesystem", "/usr/local/lib/node_modules/@modelcontextprotocol/server-filesystem",
		"ghcr.io/github/github-mcp-server:latest", "123e4567-e89b-12d3-a456-426614174000",
		"--allowed-directories=/home/user/projects/some-long-directory-name2",
		"MyVeryLongComponentNameVersion2ServerImplementation", "model-context-protocol-server-filesystem-2025",
		"/home/alice/Projects/ClientWebsite2024/src/components", "token", "Bearer", "desk-topabcdefghijklmnopqrstuvwxyz",
		"projects/my-gcp-project-123456/locations/us-central1", "application/vnd.github.v3+json",
	}
	for _, v := range ordinary {
		if looksLikeCredential(v) {
			t.Errorf("looksLikeCredential(%q) = true, want false", v)
		}
	}
}

func TestLooksSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "X-Api-Key": true, "apiKey": true, "APIKey": true, "api_key": true,
		"DB_PASSWORD": true, "PGPASSWORD": true, "AWS_SECRET_ACCESS_KEY": true, "OAUTHTOKEN": true,
		"X-Auth-Token": true, "Private-Token": true, "access_token": true, "code": true, "sig": true,
		"session": true, "client_secret": true, "credentials": true,
		"PATH": false, "HOME": false, "NODE_ENV": false, "LOG_LEVEL": false, "SSH_AUTH_SOCK": false,
		"PUBLIC_KEY": false, "TOKEN_FILE": false, "no-auth": false, "author": false, "keyword": false,
		"lang_code": false, "X-Tenant": false, "AUTH_URL": false, "monkey": false,
	} {
		if got := looksSecretName(name); got != want {
			t.Errorf("looksSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzParseMCPSettings checks that no input panics the parser and that
// every accepted input survives a trip through Canonical.
func FuzzParseMCPSettings(f *testing.F) {
	for _, raw := range validConfigs() {
		f.Add([]byte(raw))
	}
	f.Add([]byte(`{"servers": [{"id": "a", "transport": "stdio", "command": "x", "id": "b"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseMCPSettings(raw)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error %v is not a non-empty Problems", err)
			}
			if s != nil {
				t.Fatal("settings returned with an error")
			}
			return
		}
		c := s.Canonical()
		s2, err := ParseMCPSettings(c)
		if err != nil {
			t.Fatalf("Canonical() of accepted settings is rejected: %v\ninput %q\ncanonical %s", err, raw, c)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed settings:\n%+v\n%+v", s, s2)
		}
		if !bytes.Equal(c, s2.Canonical()) {
			t.Fatal("Canonical is not stable")
		}
		for i := range s.Servers {
			if s.Servers[i].Digest() != s2.Servers[i].Digest() {
				t.Fatal("Digest changed across the round trip")
			}
		}
	})
}

// TestFuzzSeedsExist keeps the checked-in seed corpus from silently
// disappearing.
func TestFuzzSeedsExist(t *testing.T) {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzParseMCPSettings/*")
	if len(seeds) == 0 {
		t.Fatal("no seeds in testdata/fuzz/FuzzParseMCPSettings")
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(data, []byte("go test fuzz v1\n")) {
			t.Errorf("seed %s is not a go fuzz corpus file: %v", p, err)
		}
	}
}

// TestSameHost pins the "server's own host" rule that settings validation
// and the sign-in flow's authorization endpoint check share.
func TestSameHost(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:9001/authorize", "http://127.0.0.1:9000/mcp", true},
		{"http://Auth.Example.COM/x", "https://auth.example.com:8443/mcp", true},
		{"http://[::1]:1/a", "http://[0:0:0:0:0:0:0:1]:2/mcp", true},
		{"http://localhost:9001", "http://127.0.0.1:9000/mcp", false},
		{"http://10.0.0.5:9000", "http://10.0.0.6:9000/mcp", false},
		{"http:///path", "http:///mcp", false},
		{"://bad", "http://127.0.0.1/mcp", false},
	}
	for _, c := range cases {
		if got := SameHost(c.a, c.b); got != c.want {
			t.Errorf("SameHost(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestParseMCPServersNamesImport: Claude Desktop's and Cursor's file sent
// as settings is refused with the command that reads it.
func TestParseMCPServersNamesImport(t *testing.T) {
	_, err := ParseMCPSettings([]byte(`{"mcpServers":{"files":{"command":"npx"}}}`))
	if err == nil || !strings.Contains(err.Error(), "pikoctl mcp import FILE") {
		t.Errorf("ParseMCPSettings(mcpServers) = %v, want a problem naming 'pikoctl mcp import FILE'", err)
	}
}
