package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// Identity is what credentials are bound to: the exact command, arguments,
// working directory and settings env of a stdio server, the exact URL of a
// remote one, and the OAuth account (client and issuer). Credentials entered for one
// identity are never sent to another.
func Identity(s *contracts.ServerSettings) string {
	h := sha256.New()
	part := func(v string) { fmt.Fprintf(h, "%d:%s;", len(v), v) }
	part(s.Transport)
	switch s.Transport {
	case contracts.TransportStdio:
		part(s.Command)
		for _, a := range s.Args {
			part(a)
		}
		part("cwd")
		part(s.Cwd)
		// The settings' env decides what actually runs too (PATH finds a
		// bare command; LD_PRELOAD, NODE_OPTIONS and the like load code).
		part("env")
		names := make([]string, 0, len(s.Env))
		for k := range s.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			part(k)
			part(s.Env[k])
		}
	default:
		part(s.URL)
		if s.TLSPin != "" {
			// A new pin is a new peer: the token paired with one bridge
			// is not sent to another at the same address.
			part("tlsPin")
			part(strings.ToLower(s.TLSPin))
		}
		if s.OAuth != nil {
			part(s.OAuth.ClientID)
			part(s.OAuth.Issuer)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
