// Package vault owns pikod's secret store: server credentials and OAuth
// grants kept through 99designs/keyring in one explicitly chosen backend
// (macOS Keychain, a Linux Secret Service such as GNOME Keyring or KWallet,
// or an encrypted file directory), the Secret type that redacts itself
// wherever it is printed, marshalled or logged, and redaction: the
// Redactor holds the set of known secret values, each under the server it
// belongs to (the daemon feeds it the stored credentials and OAuth
// values), and is the one place that finds them in JSON values and text
// (redact.go). Everything else calls it: the socket's frames, results
// before they are retained, errors, stderr lines, receipts and both log
// outputs. Values shorter than MinRedactChars are not protected.
//
// Redaction must not be an oracle. Removing every value from every answer
// would let a caller send guesses and see which come back removed. So an
// answer is redacted through a View of the request it answers
// (scope.go): what the caller sent is left alone (it knows it; found in
// every spelling the Redactor finds, so "%34%39..." exempts the value it
// spells), and an answer that carries one server's output is redacted of
// that server's values, of values that belong to no server, and of other
// servers' values of at least CrossServerChars characters. Why that is
// enough for server A's values in server B's output: pikod gives B only
// B's own credentials, the caller's arguments and the owner's answers, so
// B can hold a value of A only if A and B share it (then it is B's too and
// removed) or if something outside pikod gave it to B (a process running
// as the owner reading A's environment or files: the caller could do that
// itself, so removing it tells nothing new, but would make every B tool
// that hands back caller-arranged text, such as a file the caller wrote,
// a test of the caller's guesses against A's short values). A value long
// enough cannot be guessed, so removing it everywhere costs nothing. What
// pikod keeps from a server (stderr, logs, receipts) is redacted of every
// value, with the Redactor itself. The approval passphrase is never a
// redaction value: it never goes to a server.
//
// Credentials are bound to the server they were entered for: Identity
// (identity.go) is the digest of what decides what runs or where the
// request goes (a stdio server's command, arguments, working directory and
// env; a remote one's URL and OAuth account), and the daemon stores and
// checks it with every credential record.
//
// Backends are never chosen by falling through: Open asks keyring for
// exactly one backend and checks what it got. "auto" picks the Keychain on
// macOS, the Secret Service when the session bus answers within
// Config.BusProbe, and otherwise the file backend; Status says which one
// and what it protects against, and Reason why auto chose it (the daemon
// pins the first choice and says so). There is no plaintext backend.
//
// Migrate (migrate.go) moves every item to another backend in place: the
// Vault keeps serving the same callers from the new store. Item keys do
// not depend on the backend, so an item moves as its bytes, identity
// binding and all. The order is what makes it safe: write and read back
// each item, compare every one again, record the switch (MigrationLog,
// durable, with the pin), use the new store, and only then remove the old
// copies; every other call waits meanwhile. A durable Migration record
// (item keys only) lives from before the first write until the last old
// copy is gone, so CleanUp can remove leftovers after a crash on either
// side of the switch. A file vault lists its items; a keyring cannot tell
// one instance's items from another's, so the caller names what to move.
//
// Every keyring call runs under one mutex with Config.OpTimeout. A call
// that times out leaves its goroutine behind (keyring offers no way to
// cancel it); until it returns, later calls fail at once with reason
// vault_timeout instead of piling up more goroutines. Item names are hashed
// (hex SHA-256 of service, NUL, name), so no name can climb out of the
// file backend's directory and the keyring shows no server names. Every
// write is read back and compared.
//
// File backend. Items are JWE files (PBES2-HS256+A128KW, A256GCM; jose2go
// v1.11.0, which bounds the PBKDF2 count on decrypt) in Config.Dir. The
// password is a random key from $CREDENTIALS_DIRECTORY/pikod-vault-key, or
// from Config.KeyFile (generated 0600 when missing and the directory holds
// no vault), or in "file-unlock" mode a key derived with PBKDF2-SHA256 from
// a passphrase given to Unlock and held in memory only. A check item is
// read before anything is written, so a wrong key is refused without
// touching a file. keyring writes a file in place without fsync; vault
// writes through a second keyring rooted at Dir/.staging and renames the
// result into place after an fsync, then syncs the directory, so a crash
// leaves either the old or the new item.
//
// D-Bus facts (checked in keyring v1.2.2 and godbus of 2019-07-26):
//
//   - On Linux, importing keyring calls dbus.SessionBus() in an init
//     function. With DBUS_SESSION_BUS_ADDRESS unset (or "autolaunch:"),
//     godbus tries /run/user/UID/bus and /run/user/UID/dbus-session, then
//     execs dbus-launch, which starts a dbus-daemon that outlives the
//     process (checked: one per run). vault therefore imports
//     a.pikod.internal/busenv (vault/internal/busenv, a module of its own),
//     whose init runs before keyring's because its import path sorts first
//     (Go's specified initialization order): it keeps a set address, else
//     uses $XDG_RUNTIME_DIR/bus or /run/user/UID/bus when one is a socket,
//     else sets "disabled:". No program or test that links vault can start
//     a bus; a "disabled:" address makes the Secret Service unavailable,
//     and the probe's error (auto's reason in status) quotes busenv.
//   - keyring registers its secret-service backend only if that init call
//     succeeded, and godbus caches the connection for the process. A bus
//     that appears later, or comes back after dying, needs a pikod restart.
//   - A bus that accepts the connection but never answers blocks that init
//     call, and with it the process, before main runs. Nothing here can
//     bound it; vault's own probe (a private connection with deadlines)
//     only bounds what happens after start.
//   - go-libsecret waits for a prompt's Completed signal with no timeout,
//     and a prompt (unlocking a collection, creating one) needs a person at
//     the desktop; headless, that wait is forever. vault therefore stores
//     in the service's default collection and checks before each call that
//     it is unlocked: a locked collection is reported as vault_locked
//     instead of becoming a stuck call.
//
// Owner approval passphrase. SetApprovalPassphrase stores only an
// argon2id hash (golang.org/x/crypto/argon2; 64 MiB, 3 passes, 4 lanes, a
// random 16-byte salt, recorded with the hash in PHC form) under the item
// "approvals/passphrase"; CheckApprovalPassphrase derives with the stored
// parameters (bounded, so a tampered item cannot exhaust memory) and
// compares in constant time.
//
// Files, by concern:
//
//	vault.go                  Open, the backends' common store, status, lock
//	file.go                   the file backend (JWE items, key file or passphrase)
//	secretservice.go          the Secret Service backend and the bus probe
//	keychain*.go              the macOS Keychain backend
//	migrate.go                moving every item to another backend
//	owner_*.go                ownership checks of the vault's files
//	secret.go                 Secret, which redacts itself
//	redact.go, scope.go,      redaction: the Redactor, the views of a request,
//	window.go                 windows of text
//	approval.go               the owner approval passphrase (argon2id hash)
//	identity.go               what credentials are bound to
//
// vault may import contracts, 99designs/keyring, godbus/dbus (keyring's own
// D-Bus library, for the probe), a.pikod.internal/busenv, zerolog, the
// standard library, x/sys, x/term and x/crypto (argon2); never daemon, rpc,
// mcpclient or approvals.
package vault
