package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// readPrivate reads one private line: from a terminal with echo off (and
// a prompt on stderr), else all of stdin. Secrets never come from
// arguments, which other users can see in ps.
//
// At a terminal the line is read from /dev/tty, like every other question
// pikoctl asks there, so Ctrl-C at the prompt cancels it (errInterrupted)
// with echo turned back on.
func (a *app) readPrivate(prompt string) ([]byte, error) {
	if a.stdinIsTerminal() {
		if tty, err := a.openTTY(); err == nil {
			defer tty.Close()
			line, err := tty.AskHidden(prompt)
			if err != nil {
				return nil, err
			}
			return []byte(line), nil
		}
		// stdin is a terminal, but not the controlling one.
		f, ok := a.stdin.(*os.File)
		if !ok {
			return nil, errors.New("stdin is a terminal but cannot be read without echo")
		}
		fmt.Fprint(a.stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, fmt.Errorf("reading from the terminal: %w", err)
		}
		return b, nil
	}
	return readInput(a.stdin, "stdin")
}

func (a *app) newSecretCmd() *cobra.Command {
	var (
		merge  bool
		fields []string
	)
	cmd := &cobra.Command{
		Use:   "secret SERVER [--merge] [--fields NAME,...]",
		Short: "Replace (or with --merge, add to) a server's private credentials (JSON from stdin or a masked prompt)",
		Long: `secret stores one JSON object of credentials for SERVER in the vault:

  stdio servers:   {"env":{"NAME":"VALUE"}}
  http/sse:        {"headers":{"Authorization":"Bearer VALUE"}}
  with oauth:      {"oauthClientSecret":"VALUE"}
                   {"oauthPrivateKey":"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n"}
                     (private_key_jwt, with oauth.clientId; pipe it, the prompt reads one line)
                   {"oauthIdentityAssertion":"ID TOKEN"} (grantType cross_app_access)
                   {"oauthAssertion":"JWT"} (grantType jwt_bearer, unless oauth.assertionFile)

Pipe it on stdin, or type it at the masked prompt (nothing is echoed; an
empty line keeps what is stored; JSON that does not parse is dropped and
asked again, its line and column named, never its text). {} clears the
stored credentials. The
credentials are bound to the server's command, arguments and working
directory (or URL): if those change, pikod stops sending them until you
enter them again. A connected server keeps its old credentials until you
disconnect and connect it.

With --merge the fields given replace or add to the stored ones and the
others stay as stored: {"env":{"NEW_TOKEN":"VALUE"}} adds one variable
and keeps the rest. A merge cannot remove a field (an empty value is
refused: send the whole set without --merge) and, when nothing changes,
writes nothing and keeps the generation.

--fields NAME,... asks each field's value alone at the terminal, masked,
instead of one JSON line: env.NAME, headers.NAME, oauthClientSecret or
oauthIdentityAssertion (oauthPrivateKey spans lines: pipe it).
  pikoctl mcp secret gh --fields env.GITHUB_TOKEN
  pikoctl mcp secret api --merge --fields headers.Authorization

pikod removes every stored value from what it writes (results, errors,
status, logs), but only values of at least 6 characters: a shorter one
("1796", "false") is stored and used, and a warning names its field.`,
		Args: cobra.ExactArgs(1),
		RunE: onCancel("nothing was sent: the stored credentials are unchanged", func(cmd *cobra.Command, args []string) error {
			var obj map[string]any
			if len(fields) > 0 {
				var err error
				if obj, err = a.askFields(args[0], fields); err != nil {
					return err
				}
			} else {
				for {
					in, err := a.readPrivate("credentials for " + args[0] + " as JSON (hidden; empty keeps the stored ones): ")
					if err != nil {
						return err
					}
					if strings.TrimSpace(string(in)) == "" {
						if a.stdinIsTerminal() {
							fmt.Fprintln(a.stdout, "nothing entered: the stored credentials are unchanged")
							return nil
						}
						return errors.New(`no credentials on stdin: send a JSON object, or {} to clear`)
					}
					obj, err = credentialsObject(in)
					if err == nil {
						break
					}
					if !a.stdinIsTerminal() {
						return err
					}
					// Typed at the terminal: nothing of it is kept; ask
					// again rather than make the owner start over.
					fmt.Fprintf(a.stderr, "pikoctl: %s\nnothing was kept or sent: type it again (Ctrl-C stops)\n", clean(err.Error()))
				}
			}
			var raw json.RawMessage
			if err := a.call(cmd.Context(), contracts.MethodSecret,
				contracts.SecretParams{Extension: contracts.ExtensionMCP, Server: args[0], Credentials: obj, Merge: merge}, &raw); err != nil {
				return err
			}
			var res contracts.SecretResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("decoding the extensions.secret result: %w", err)
			}
			if res.Warning != "" {
				// Stored, but not protected in output: say so where the
				// owner looks, whatever the output format.
				fmt.Fprintf(a.stderr, "warning: %s\n", clean(res.Warning))
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			switch {
			case res.Unchanged:
				fmt.Fprintf(a.stdout, "nothing changed: %s keeps %s (generation %d)\n", clean(res.Server), clean(strings.Join(res.Fields, ", ")), res.Generation)
			case res.Cleared:
				fmt.Fprintf(a.stdout, "cleared the credentials of %s (generation %d)\n", clean(res.Server), res.Generation)
			default:
				fmt.Fprintf(a.stdout, "stored %s for %s (generation %d)\n", clean(strings.Join(res.Fields, ", ")), clean(res.Server), res.Generation)
			}
			if res.ReconnectRequired {
				fmt.Fprintf(a.stdout, "%s is connected with the old credentials: pikod refuses its calls (reconnect_required) until you run 'pikoctl mcp reconnect %s'\n",
					clean(res.Server), clean(res.Server))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&merge, "merge", false, "add to or replace the fields given and keep the other stored ones")
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "ask these fields one by one at the terminal, masked (env.NAME, headers.NAME, oauthClientSecret, oauthIdentityAssertion)")
	return cmd
}

// askFields asks the value of each field named, masked, at the terminal,
// and returns the credentials object they make. An empty answer asks
// that field again.
func (a *app) askFields(server string, names []string) (map[string]any, error) {
	obj := map[string]any{}
	maps := map[string]map[string]any{}
	for _, n := range names {
		kind, name, dotted := strings.Cut(n, ".")
		switch {
		case dotted && (kind == "env" || kind == "headers") && name != "":
			if _, dup := maps[kind][name]; dup {
				return nil, usageErrorf("--fields: %s is given twice", n)
			}
			if maps[kind] == nil {
				maps[kind] = map[string]any{}
				obj[kind] = maps[kind]
			}
			maps[kind][name] = nil
		case n == "oauthClientSecret" || n == "oauthIdentityAssertion":
			obj[n] = nil
		case n == "oauthPrivateKey":
			return nil, usageErrorf(`--fields: oauthPrivateKey spans several lines, which a masked prompt cannot read: pipe it, e.g. jq -n --rawfile k key.pem '{oauthPrivateKey: $k}' | pikoctl mcp secret %s`, server)
		default:
			return nil, usageErrorf("--fields: %q is not a credential field: give env.NAME, headers.NAME, oauthClientSecret or oauthIdentityAssertion", n)
		}
	}
	if !a.stdinIsTerminal() {
		return nil, contracts.WithHint(errors.New("--fields asks each value at the terminal, and stdin is not one"),
			"pipe the credentials as one JSON object instead, e.g. {\"env\":{\"NAME\":\"VALUE\"}}")
	}
	tty, err := a.openTTY()
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	for _, n := range names {
		for {
			v, err := tty.AskHidden(fmt.Sprintf("%s for %s (hidden): ", n, clean(server)))
			if err != nil {
				return nil, err
			}
			if v == "" {
				fmt.Fprintf(a.stderr, "%s: nothing typed: type its value (Ctrl-C stores nothing)\n", n)
				continue
			}
			if kind, name, ok := strings.Cut(n, "."); ok {
				maps[kind][name] = v
			} else {
				obj[n] = v
			}
			break
		}
	}
	return obj, nil
}

// credentialsObject decodes the credentials typed or piped to secret. Its
// errors say where the JSON is wrong, never what it holds: it holds
// secrets.
func credentialsObject(in []byte) (map[string]any, error) {
	var obj map[string]any
	err := json.Unmarshal(in, &obj)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, fmt.Errorf(`the credentials are not valid JSON: %s (not shown: they are secret); send one object such as {"env":{"NAME":"VALUE"}}`, jsonSyntax(in, err, false))
	case err != nil || obj == nil:
		return nil, errors.New(`the credentials are not one JSON object: send e.g. {"env":{"NAME":"VALUE"}}`)
	}
	return obj, nil
}

func (a *app) newVaultCmd() *cobra.Command {
	v := groupCmd("vault", "The credential vault")
	v.AddCommand(&cobra.Command{
		Use:   "unlock",
		Short: "Unlock a file vault in unlock mode with its passphrase (masked prompt or stdin)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pass, err := a.readPrivate("vault passphrase: ")
			if err != nil {
				return err
			}
			p := strings.TrimRight(string(pass), "\r\n")
			if p == "" {
				return errors.New("empty passphrase: nothing was sent")
			}
			var res contracts.VaultUnlockResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodVaultUnlock, contracts.VaultUnlockParams{Passphrase: p}, &res); printed || err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "vault unlocked: %s\n", clean(res.Vault.Backend))
			return nil
		},
	})
	v.AddCommand(a.newVaultMigrateCmd())
	return v
}

// migrateBackends are the backends 'vault migrate --to' accepts.
var migrateBackends = []string{contracts.VaultSecretService, contracts.VaultKeychain, contracts.VaultFile, contracts.VaultFileUnlock}

func (a *app) newVaultMigrateCmd() *cobra.Command {
	var to string
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "migrate --to secret-service|keychain|file|file-unlock",
		Short: "Move every stored credential to another vault backend and pin it (terminal only)",
		Long: `migrate moves every credential the vault holds to another backend, and makes
that the backend pikod uses from now on: it is pinned in pikod.db, so a start
with --vault auto (the default) keeps it, whatever is reachable then.

  pikoctl vault migrate --to secret-service   GNOME Keyring or KWallet (Linux)
  pikoctl vault migrate --to keychain         the macOS login Keychain
  pikoctl vault migrate --to file             STATE/vault, key in STATE/vault.key
  pikoctl vault migrate --to file-unlock      STATE/vault, under a passphrase you type

What moves: each server's credentials with their identity binding (they keep
working for the same command, arguments, working directory or URL), OAuth
grants and registered clients, and the approval passphrase's hash. From a
file vault every item moves, also those of servers no longer configured; a
keyring cannot tell this instance's items from other programs', so from one
move the items of the configured servers, the passphrase hash and the
items an earlier migration brought there; anything else stays where it is.

How: pikod writes each item to the new backend and reads it back, then reads
every one back again and compares it byte for byte, then records the new
backend as pinned, and only then removes the old copies (an emptied file
vault loses its check item too, so either file mode can use the directory
later). A failure before that record removes what was written and changes
nothing. An interruption (a crash, a kill) loses nothing either: every item
is where the pinned backend finds it, and pikod removes the leftover copies
at its next start. Only item names are ever printed or logged.

It refuses, changing nothing, when the new backend is not available (the
secret service must be reachable on the session bus when pikod starts: set
DBUS_SESSION_BUS_ADDRESS for pikod, or its service, and restart it), when it
is the backend in use, between file and file-unlock (one directory: go
through secret-service or keychain), while the vault is locked ('pikoctl
vault unlock' first), and when the new backend already holds different
values under the same names (--overwrite replaces them with the ones in
use).

Moving the credentials decides for you, so this is terminal-only: it asks
you to type the backend's name, the file-unlock passphrase (twice) and the
approval passphrase when one is set. A pikod started with --vault (or
PIKO_VAULT) opens that backend again at its next start: drop the flag after
migrating. 'pikoctl doctor' and 'pikoctl mcp status' show the backend, why
it was chosen and whether it is pinned.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(migrateBackends, to) {
				return usageErrorf("give --to %s", strings.Join(migrateBackends, "|"))
			}
			hint := "run 'pikoctl vault migrate --to " + to + "' yourself in your terminal"
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: moving the credentials needs you typing at the terminal, not a pipe"), hint)
			}
			var st contracts.StatusResult
			if err := a.call(cmd.Context(), contracts.MethodMCPStatus, contracts.StatusParams{}, &st); err != nil {
				return err
			}
			from := st.Vault.Backend
			switch {
			case st.Vault.Locked:
				return contracts.WithHint(errors.New("the vault is locked, so its credentials cannot be read to move them: nothing was asked or sent"),
					"run 'pikoctl vault unlock', then migrate")
			case from == to && to != contracts.VaultFile: // status says "file" for file-unlock too: the daemon tells them apart
				return contracts.WithHint(fmt.Errorf("the vault already uses the %s backend: nothing to move", clean(to)),
					"'pikoctl doctor' shows the backend in use; name another one")
			}
			tty, err := a.openTTY()
			if err != nil {
				return contracts.WithHint(err, hint)
			}
			defer tty.Close()
			gate, err := a.approvalGate(cmd.Context())
			if err != nil {
				return err
			}
			answer, err := tty.Ask(fmt.Sprintf("This moves every stored credential from the %s backend to %s and pins %s for this instance.\n"+
				"Type the backend's name (%s) to move, anything else to keep everything as it is: ", clean(from), to, to, to))
			if err != nil {
				return err
			}
			if strings.TrimSpace(answer) != to {
				fmt.Fprintln(a.stderr, "not moved: the vault stays as it is")
				return &statusExit{code: exitFailure, msg: "not moved"}
			}
			params := contracts.VaultMigrateParams{To: to, Overwrite: overwrite}
			if to == contracts.VaultFileUnlock {
				pass, err := askPassphrase(tty, "passphrase of the file-unlock vault (the one it has, or a new one): ")
				if err != nil {
					return err
				}
				again, err := askPassphrase(tty, "the passphrase again: ")
				if err != nil {
					return err
				}
				if again != pass {
					return errors.New("the two passphrases differ: nothing was sent")
				}
				params.VaultPassphrase = pass
			}
			if gate.PassphraseSet {
				if params.Passphrase, err = askPassphrase(tty, "approval passphrase: "); err != nil {
					return err
				}
			}
			var res contracts.VaultMigrateResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodVaultMigrate, params, &res); printed || err != nil {
				if printed && res.Warning != "" {
					fmt.Fprintf(a.stderr, "warning: %s\n", clean(res.Warning))
				}
				return err
			}
			names := "nothing was stored"
			if len(res.Moved) > 0 {
				names = strings.Join(res.Moved, ", ")
			}
			if res.Unnamed > 0 {
				names += fmt.Sprintf(" and %d item(s) of servers no longer configured", res.Unnamed)
			}
			fmt.Fprintf(a.stdout, "moved %d item(s) from %s to %s: %s\n", len(res.Moved)+res.Unnamed, clean(res.From), clean(res.To), clean(names))
			fmt.Fprintln(a.stdout, "each was written, read back and compared byte for byte before the new backend was pinned and the old copies removed")
			if res.Replaced > 0 {
				fmt.Fprintf(a.stdout, "replaced %d different value(s) %s held (--overwrite)\n", res.Replaced, clean(res.To))
			}
			if len(res.Kept)+res.KeptUnnamed > 0 {
				kept := strings.Join(res.Kept, ", ")
				if res.KeptUnnamed > 0 {
					kept = strings.TrimPrefix(kept+fmt.Sprintf(", %d item(s) of no configured server", res.KeptUnnamed), ", ")
				}
				fmt.Fprintf(a.stdout, "kept what %s already held and %s did not: %s\n", clean(res.To), clean(res.From), clean(kept))
			}
			fmt.Fprintf(a.stdout, "pikod now uses %s, pinned for this instance\n", clean(res.Vault.Backend))
			if res.Warning != "" {
				fmt.Fprintf(a.stderr, "warning: %s\n", clean(res.Warning))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the backend to move to: "+strings.Join(migrateBackends, ", "))
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "let the values in use replace different ones the new backend already holds under the same names")
	return cmd
}
