package mcpclient

import (
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/mcpclient/oauth"
)

// OAuthRecord is one server's OAuth state as the vault keeps it: a client
// registered dynamically (bound to the issuer that registered it) and the
// grant (bound to the settings, issuer and resource it was made for).
type OAuthRecord struct {
	Registration *StoredRegistration `json:"registration,omitempty"`
	Grant        *StoredGrant        `json:"grant,omitempty"`
}

// Values returns the secret values of the record, for redaction.
func (r *OAuthRecord) Values() []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Registration != nil && r.Registration.ClientSecret != "" {
		out = append(out, r.Registration.ClientSecret)
	}
	if g := r.Grant; g != nil {
		for _, v := range []string{g.AccessToken, g.RefreshToken} {
			if v != "" {
				out = append(out, v)
			}
		}
		if k := g.DPoP; k != nil {
			out = append(out, oauth.DPoPSecretValues(k.Alg, k.PrivateKey)...)
		}
	}
	return out
}

func (r *OAuthRecord) clone() *OAuthRecord {
	if r == nil {
		return &OAuthRecord{}
	}
	out := &OAuthRecord{}
	if r.Registration != nil {
		reg := *r.Registration
		out.Registration = &reg
	}
	if r.Grant != nil {
		g := *r.Grant
		if g.DPoP != nil {
			k := *g.DPoP
			g.DPoP = &k
		}
		out.Grant = &g
	}
	return out
}

// StoredRegistration is a dynamically registered client.
type StoredRegistration struct {
	// Issuer registered the client; it is used with no other.
	Issuer string `json:"issuer"`
	// ServerURL is the MCP endpoint it was registered for.
	ServerURL       string    `json:"serverUrl"`
	ClientID        string    `json:"clientId"`
	ClientSecret    string    `json:"clientSecret,omitempty"`
	AuthMethod      string    `json:"authMethod,omitempty"`
	RegisteredAt    time.Time `json:"registeredAt"`
	SecretExpiresAt int64     `json:"secretExpiresAt,omitempty"`
}

// Registration sources of a grant's client.
const (
	regSettings = "settings"
	regMetadata = "metadata_document"
	regDynamic  = "dynamic"
)

// StoredGrant is an access token (and maybe a refresh token) with what it
// is bound to and how to renew it.
type StoredGrant struct {
	// Binding is grantBinding of the settings the grant was made under.
	Binding   string `json:"binding"`
	GrantType string `json:"grantType"`
	Issuer    string `json:"issuer"`
	Resource  string `json:"resource"`
	// TokenEndpoint is the issuer's, where refreshes go.
	TokenEndpoint string `json:"tokenEndpoint"`
	ClientID      string `json:"clientId"`
	AuthMethod    string `json:"authMethod"`
	// Registration is regSettings, regMetadata or regDynamic.
	Registration   string    `json:"registration"`
	SigningAlgs    []string  `json:"signingAlgs,omitempty"`
	AccessToken    string    `json:"accessToken"`
	RefreshToken   string    `json:"refreshToken,omitempty"`
	Scope          string    `json:"scope,omitempty"`
	RequestedScope string    `json:"requestedScope,omitempty"`
	ExpiresAt      time.Time `json:"expiresAt,omitzero"`
	ObtainedAt     time.Time `json:"obtainedAt"`
	// DPoP is the key the grant's tokens are bound to (RFC 9449); nil for
	// Bearer tokens. It lives and dies with the grant.
	DPoP *StoredDPoPKey `json:"dpop,omitempty"`
}

// StoredDPoPKey is a grant's proof-of-possession key pair. The private
// half is kept here, in the vault, and in pikod's memory only: it is in
// the redaction set, and logs, errors and status name the key by its
// thumbprint.
type StoredDPoPKey struct {
	Alg string `json:"alg"`
	// PrivateKey is the PKCS#8 DER key, base64url (oauth.DPoPKey's
	// EncodePrivate).
	PrivateKey string `json:"privateKey"`
	// Thumbprint is the RFC 7638 thumbprint of the public half.
	Thumbprint string `json:"jkt"`
}

// String names the key by its thumbprint: a key formatted by mistake
// shows nothing secret.
func (k StoredDPoPKey) String() string { return "DPoP key " + k.Thumbprint }

// GoString keeps %#v from printing the private key.
func (k StoredDPoPKey) GoString() string { return k.String() }

// newStoredDPoPKey makes a fresh key pair for alg.
func newStoredDPoPKey(alg string) (*StoredDPoPKey, error) {
	k, err := oauth.NewDPoPKey(alg)
	if err != nil {
		return nil, err
	}
	enc, err := k.EncodePrivate()
	if err != nil {
		return nil, err
	}
	return &StoredDPoPKey{Alg: alg, PrivateKey: enc, Thumbprint: k.Thumbprint()}, nil
}

// key reads the stored key; one whose thumbprint is not the stored one is
// refused (the grant's tokens are bound to that thumbprint).
func (k *StoredDPoPKey) key() (*oauth.DPoPKey, error) {
	dk, err := oauth.ParseDPoPKey(k.Alg, k.PrivateKey)
	if err != nil {
		return nil, contracts.WithHint(err, "sign in again to make a new key")
	}
	if dk.Thumbprint() != k.Thumbprint {
		return nil, contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonOAuthBadDPoPKey,
			"the stored DPoP key is not the key %s the grant is bound to", k.Thumbprint), "sign in again to make a new key")
	}
	return dk, nil
}

// tokenType is the grant's token type.
func (g *StoredGrant) tokenType() string {
	if g.DPoP != nil {
		return oauth.TokenTypeDPoP
	}
	return oauth.TokenTypeBearer
}

// thumbprint is the key's thumbprint; "" for no key.
func (k *StoredDPoPKey) thumbprint() string {
	if k == nil {
		return ""
	}
	return k.Thumbprint
}

// jkt is the thumbprint of the grant's DPoP key, or "".
func (g *StoredGrant) jkt() string {
	if g.DPoP == nil {
		return ""
	}
	return g.DPoP.Thumbprint
}

// expiryMargin is how long before its expiry a token counts as expired:
// the request it goes on takes time, and clocks drift.
func (g *StoredGrant) expiryMargin() time.Duration {
	if g.ExpiresAt.IsZero() {
		return 0
	}
	life := g.ExpiresAt.Sub(g.ObtainedAt)
	return min(30*time.Second, life/4)
}

// expired reports whether the token is expired (or about to be) at now.
func (g *StoredGrant) expired(now time.Time) bool {
	return !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt.Add(-g.expiryMargin()))
}

// renewable reports whether pikod can get a new token without the owner.
func (g *StoredGrant) renewable() bool {
	return g.RefreshToken != "" || noOwnerGrant(g.GrantType)
}

// scopeSet is the scope the grant holds: what the server said it granted,
// else what was asked for.
func (g *StoredGrant) scopeSet() []string {
	if g.Scope != "" {
		return strings.Fields(g.Scope)
	}
	return strings.Fields(g.RequestedScope)
}

func (g *StoredGrant) info() *contracts.OAuthGrantInfo {
	in := &contracts.OAuthGrantInfo{GrantType: g.GrantType, Issuer: g.Issuer, Resource: g.Resource, Scope: g.Scope,
		Refreshable: g.renewable(), ClientID: g.ClientID, Registration: g.Registration,
		ObtainedAt: g.ObtainedAt.UTC().Format(time.RFC3339), TokenType: g.tokenType(), DPoPKey: g.jkt()}
	if in.Scope == "" {
		in.Scope = g.RequestedScope
	}
	if !g.ExpiresAt.IsZero() {
		in.ExpiresAt = g.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return in
}

// GrantStore keeps each server's OAuthRecord (the daemon's is the vault).
type GrantStore interface {
	// Load returns the record (nil, nil when there is none).
	Load(server string) (*OAuthRecord, error)
	// Save replaces the record; it returns once the store has it, read
	// back and compared.
	Save(server string, rec *OAuthRecord) error
	// Delete removes the record; removing an absent one is not an error.
	Delete(server string) error
}
