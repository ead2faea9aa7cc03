package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newAuthCmds() []*cobra.Command {
	var cancel contracts.AuthCancelResult
	var logout contracts.LogoutResult
	return []*cobra.Command{
		a.newAuthCmd(),
		a.serverCmd("cancel", "Cancel a server's pending OAuth sign-in (the previous grant is kept)", contracts.MethodMCPAuthCancel, &cancel,
			func(w *errWriter) error {
				fmt.Fprintf(w, "%s: %s\n", clean(cancel.Server), clean(cancel.Message))
				return w.err
			}),
		a.serverCmd("logout", "Remove a server's local OAuth state (tokens and registered client)", contracts.MethodMCPLogout, &logout,
			func(w *errWriter) error {
				fmt.Fprintf(w, "signed out of %s: its OAuth tokens and registered client are removed from the vault", clean(logout.Server))
				if logout.CancelledFlow {
					fmt.Fprint(w, "; the pending sign-in was cancelled")
				}
				if logout.WasConnected {
					fmt.Fprint(w, "; the connection was closed")
				}
				fmt.Fprintln(w, "\n(the authorization server may still remember its consent; credentials entered with 'pikoctl mcp secret' stay)")
				return w.err
			}),
	}
}

func (a *app) newAuthCmd() *cobra.Command {
	var (
		paste, discover, noWait, wait bool
	)
	cmd := &cobra.Command{
		Use:   "auth SERVER",
		Short: "Sign in to a server with OAuth (prints the link to open, waits for the sign-in)",
		Long: `auth signs pikod in to SERVER with OAuth.

For the authorization-code flow (the default) it prints a link: open it in
a browser, sign in and consent. The browser is then sent to pikod's
callback on http://127.0.0.1:PORT/callback on the machine pikod runs on,
and auth reports the outcome. pikod never opens the link itself. The
sign-in expires after 10 minutes; 'pikoctl mcp cancel SERVER' ends it
early, keeping the previous grant. When the server refuses the new grant
because it moved to another authorization server meanwhile, the sign-in
continues there: auth prints the new link and waits again.

When the browser runs on another machine (an SSH session), the callback
page will not load: use --paste, and paste the whole address the browser
was sent to (it starts with the redirect URI auth shows).

For client_credentials, cross_app_access and jwt_bearer there is no
browser: auth gets a token at once and reports it. After the authorization
server refused such a grant, pikod asks no more until you run auth again.

--discover only reports what discovery finds (the authorization server's
issuer, endpoints, methods and scopes), for writing oauth.issuer into the
settings; it signs nothing in.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			server := args[0]
			if discover {
				return a.authOnce(ctx, contracts.AuthParams{Server: server, Op: contracts.AuthOpDiscover})
			}
			first := contracts.AuthParams{Server: server, Op: contracts.AuthOpStart}
			if wait {
				first.Op = contracts.AuthOpWait
			}
			res, err := a.authCall(ctx, first)
			if err != nil {
				return err
			}
			if noWait {
				return nil
			}
			// A pending answer is a flow to wait for: the one just started,
			// or the same sign-in continuing at another authorization server
			// (the server moved). Its link was printed.
			for res.Status == contracts.AuthPending {
				next := contracts.AuthParams{Server: server, Op: contracts.AuthOpWait, FlowID: res.FlowID}
				if paste {
					url, err := a.readPasted(res.RedirectURI)
					if err != nil {
						return err
					}
					next.Op, next.RedirectURL = contracts.AuthOpComplete, url
				} else if !a.jsonOut {
					fmt.Fprintln(a.stderr, "waiting for the sign-in to finish (Ctrl-C stops waiting; the sign-in stays pending until it expires or 'pikoctl mcp cancel "+clean(server)+"')...")
				}
				if res, err = a.authCall(ctx, next); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&paste, "paste", false, "read the address the browser was redirected to from stdin (for a browser on another machine)")
	cmd.Flags().BoolVar(&discover, "discover", false, "only report what discovery finds; sign nothing in")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "print the link and return; 'pikoctl mcp auth SERVER --wait' waits later")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the pending sign-in to finish")
	cmd.MarkFlagsMutuallyExclusive("paste", "discover", "no-wait", "wait")
	return cmd
}

// authOnce makes one extensions.mcp.auth call and prints it.
func (a *app) authOnce(ctx context.Context, p contracts.AuthParams) error {
	_, err := a.authCall(ctx, p)
	return err
}

// authCall makes one extensions.mcp.auth call and prints its result (raw
// with --json, one line per call).
func (a *app) authCall(ctx context.Context, p contracts.AuthParams) (*contracts.AuthResult, error) {
	var raw json.RawMessage
	if err := a.call(ctx, contracts.MethodMCPAuth, p, &raw); err != nil {
		return nil, err
	}
	var res contracts.AuthResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the %s result: %w", contracts.MethodMCPAuth, err)
	}
	if a.jsonOut {
		return &res, printRaw(a.stdout, raw)
	}
	w := &errWriter{w: a.stdout}
	writeAuthResult(w, &res)
	return &res, w.err
}

func writeAuthResult(w *errWriter, r *contracts.AuthResult) {
	switch {
	case r.Discovery != nil:
		writeDiscovery(w, r)
	case r.Status == contracts.AuthPending:
		if r.PreviousIssuer != "" {
			fmt.Fprintf(w, "%s refused the grant of %s and now names another authorization server, %s: the sign-in continues there.\n",
				clean(r.Server), clean(r.PreviousIssuer), clean(r.Issuer))
		}
		fmt.Fprintf(w, "To sign in to %s, open this link in a browser:\n\n  %s\n\n", clean(r.Server), clean(r.AuthorizationURL))
		fmt.Fprintf(w, "authorization server: %s\n", clean(r.Issuer))
		if r.Scope != "" {
			fmt.Fprintf(w, "scope:      %s\n", clean(r.Scope))
		}
		fmt.Fprintf(w, "redirect:   %s (on the machine pikod runs on)\n", clean(r.RedirectURI))
		fmt.Fprintf(w, "expires:    %s\n", clean(r.ExpiresAt))
	case r.Status == contracts.AuthAuthorized:
		fmt.Fprintf(w, "signed in to %s (%s)\n", clean(r.Server), clean(r.GrantType))
		if g := r.Grant; g != nil {
			writeGrant(w, "", g)
		}
		if r.State != "" {
			fmt.Fprintf(w, "state:      %s\n", clean(r.State))
		}
	}
}

func writeGrant(w io.Writer, indent string, g *contracts.OAuthGrantInfo) {
	fmt.Fprintf(w, "%sissuer:     %s\n", indent, clean(g.Issuer))
	fmt.Fprintf(w, "%sresource:   %s\n", indent, clean(g.Resource))
	if g.Scope != "" {
		fmt.Fprintf(w, "%sscope:      %s\n", indent, clean(g.Scope))
	}
	exp := "not given by the authorization server"
	if g.ExpiresAt != "" {
		exp = clean(g.ExpiresAt)
	}
	refresh := "no refresh token: sign in again when it expires"
	if g.Refreshable {
		refresh = "renewed by pikod when it expires"
	}
	fmt.Fprintf(w, "%sexpires:    %s (%s)\n", indent, exp, refresh)
	if g.DPoPKey != "" {
		fmt.Fprintf(w, "%stoken:      DPoP-bound to key %s (RFC 9449)\n", indent, clean(g.DPoPKey))
	}
}

func writeDiscovery(w *errWriter, r *contracts.AuthResult) {
	d := r.Discovery
	fmt.Fprintf(w, "server:                 %s\n", clean(r.Server))
	if d.ResourceMetadataURL != "" {
		fmt.Fprintf(w, "resource metadata:      %s\n", clean(d.ResourceMetadataURL))
	}
	if d.Fallback != "" {
		fmt.Fprintf(w, "fallback:               %s (the server publishes no resource metadata)\n", clean(d.Fallback))
	}
	fmt.Fprintf(w, "resource:               %s\n", clean(d.Resource))
	if len(d.AuthorizationServers) > 0 {
		fmt.Fprintf(w, "authorization servers:  %s\n", clean(strings.Join(d.AuthorizationServers, ", ")))
	}
	fmt.Fprintf(w, "issuer:                 %s   (write this into oauth.issuer)\n", clean(d.Issuer))
	if d.MetadataURL != "" {
		fmt.Fprintf(w, "metadata:               %s\n", clean(d.MetadataURL))
	}
	for _, l := range []struct{ k, v string }{
		{"authorization endpoint", d.AuthorizationEndpoint},
		{"token endpoint", d.TokenEndpoint},
		{"registration endpoint", d.RegistrationEndpoint},
		{"challenge scope", d.ChallengeScope},
		{"resource scopes", strings.Join(d.ResourceScopes, " ")},
		{"server scopes", strings.Join(d.ScopesSupported, " ")},
		{"grant types", strings.Join(d.GrantTypes, ", ")},
		{"pkce methods", strings.Join(d.CodeChallengeMethods, ", ")},
		{"client auth methods", strings.Join(d.TokenEndpointAuthMethods, ", ")},
		{"signing algorithms", strings.Join(d.TokenEndpointSigningAlgs, ", ")},
		{"dpop algorithms", strings.Join(d.DPoPSigningAlgs, ", ")},
		{"resource dpop algs", strings.Join(d.ResourceDPoPAlgs, ", ")},
	} {
		if l.v != "" {
			fmt.Fprintf(w, "%-23s %s\n", l.k+":", clean(l.v))
		}
	}
	fmt.Fprintf(w, "client id documents:    %s\n", yesNo(d.ClientIDMetadataDocuments))
	fmt.Fprintf(w, "dynamic registration:   %s\n", yesNo(d.DynamicRegistrationPossible))
	if d.DPoPRequired {
		fmt.Fprintf(w, "dpop required:          yes (the resource takes DPoP-bound tokens only)\n")
	}
}

// readPasted reads the address the browser was sent to: one line from
// stdin (it carries a one-time code, so it is not echoed on a terminal).
func (a *app) readPasted(redirectURI string) (string, error) {
	prompt := "after signing in, paste the whole address the browser was sent to (it starts with " + redirectURI + "): "
	if a.stdinIsTerminal() {
		b, err := a.readPrivate(prompt)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	fmt.Fprint(a.stderr, prompt)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("reading the pasted address from stdin: %w", err)
	}
	return strings.TrimSpace(line), nil
}
