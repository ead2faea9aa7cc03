// Package oauth holds the OAuth 2.1 client pieces pikod's MCP sessions use,
// without any session state: parsing WWW-Authenticate challenges (RFC 6750,
// RFC 9728), discovery of protected resource metadata and authorization
// server metadata in the MCP authorization spec's order (RFC 9728, RFC 8414,
// OpenID Connect Discovery, and the 2025-03-26 fallbacks), dynamic client
// registration (RFC 7591), PKCE (RFC 7636), token requests with every client
// authentication method pikod supports (client_secret_basic,
// client_secret_post, none, private_key_jwt per RFC 7523), the grants
// (authorization_code, refresh_token, client_credentials, RFC 8693 token
// exchange and RFC 7523 JWT bearer), and the loopback callback listener.
//
// Every request goes through the *http.Client the caller passes in: the
// caller (mcpclient) gives it the guarded client with the OAuth network
// policy, so nothing here decides which addresses may be reached. Response
// bodies are bounded by that client and again here.
//
// Errors never carry a token, a client secret, an authorization code or a
// private key: messages name fields and endpoints, never values.
//
// It may import contracts, golang.org/x/oauth2 and the standard library;
// never mcpclient, daemon, rpc, vault or approvals.
package oauth
