package vault

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	// busenv's init settles DBUS_SESSION_BUS_ADDRESS before keyring's
	// init dials the bus: its import path sorts first (see its doc).
	"a.pikod.internal/busenv"
	"github.com/99designs/keyring"
	"github.com/godbus/dbus"

	"github.com/pikod/pikod/contracts"
)

const (
	ssName           = "org.freedesktop.secrets"
	ssPath           = "/org/freedesktop/secrets"
	ssCollectionPath = ssPath + "/collection/"
)

// openSecretService opens the Secret Service's default collection. bound
// limits the probe: BusProbe under auto, OpTimeout when chosen explicitly.
func (v *Vault) openSecretService(cfg Config, bound time.Duration) error {
	if runtime.GOOS != "linux" {
		return contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultUnavailable,
			"the secret-service backend exists only on Linux")
	}
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	coll, err := probeSecretService(addr, bound)
	if err != nil {
		return err
	}
	if !slices.Contains(keyring.AvailableBackends(), keyring.SecretServiceBackend) {
		// keyring registers the backend in init only if the session bus
		// answered then; see the package comment.
		return contracts.WithHint(contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
			"the secret service answers now, but the session bus was not reachable when pikod started"),
			"restart pikod with DBUS_SESSION_BUS_ADDRESS set to the session bus")
	}
	name, ok := collectionName(coll)
	if !ok {
		return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
			"the secret service's default collection has an unexpected path %q", coll)
	}
	ring, err := openRing(keyring.Config{
		AllowedBackends: []keyring.BackendType{keyring.SecretServiceBackend},
		ServiceName:     cfg.Service,
		// The default collection exists and needs no prompt to use; a
		// collection of our own would need a creation prompt, which needs
		// a person at the desktop and which go-libsecret awaits forever.
		LibSecretCollectionName: name,
	}, cfg.OpTimeout, "*keyring.secretsKeyring")
	if err != nil {
		return err
	}
	v.backend = BackendSecretService
	v.st = &ringStore{ring: ring, pre: unlockedCheck(coll, name)}
	v.note = fmt.Sprintf("stored in the Secret Service collection %q (GNOME Keyring or KWallet): encrypted at rest "+
		"with your keyring password and unlocked with your session; protects copies of your disk, "+
		"not a process running in your session", name)
	return nil
}

// unlockedCheck returns the check run before each secret-service call:
// keyring would answer a locked collection with an unlock prompt that
// go-libsecret awaits without a timeout (forever, on a headless machine).
func unlockedCheck(coll dbus.ObjectPath, name string) func() error {
	return func() error {
		conn, err := dbus.SessionBus() // keyring's cached connection
		if err != nil {
			return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
				"the session bus connection failed: %v", err)
		}
		val, err := conn.Object(ssName, coll).GetProperty("org.freedesktop.Secret.Collection.Locked")
		if err != nil {
			return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
				"asking the secret service about collection %q: %v", name, err)
		}
		if locked, _ := val.Value().(bool); locked {
			return contracts.WithHint(contracts.Errorf(contracts.ErrFailedPrecondition, contracts.ReasonVaultLocked,
				"the secret service collection %q is locked", name),
				"unlock your keyring (log in to the desktop session, or use Seahorse or KWalletManager)")
		}
		return nil
	}
}

// collectionName turns a collection path into the name keyring's
// secret-service backend compares against (it decodes _XX escapes).
func collectionName(p dbus.ObjectPath) (string, bool) {
	s := decodeBusPath(string(p))
	if !strings.HasPrefix(s, ssCollectionPath) || len(s) == len(ssCollectionPath) {
		return "", false
	}
	return s[len(ssCollectionPath):], true
}

// decodeBusPath undoes the _XX escaping of object path elements, as
// keyring's decodeKeyringString does.
func decodeBusPath(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		if src[i] != '_' {
			b.WriteByte(src[i])
			continue
		}
		if i+3 > len(src) {
			return src
		}
		n, err := strconv.ParseUint(src[i+1:i+3], 16, 8)
		if err != nil {
			return src
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String()
}

// probeSecretService connects privately to the bus at addr and returns the
// Secret Service's default collection. Every read and write has a deadline
// of now+bound, so a bus or service that never answers costs at most bound
// and leaves no goroutine behind.
func probeSecretService(addr string, bound time.Duration) (dbus.ObjectPath, error) {
	deadline := time.Now().Add(bound)
	nc, err := dialBus(addr, deadline)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "", probeTimeout(bound)
		}
		return "", err
	}
	dc := &deadlineConn{Conn: nc}
	if err := nc.SetDeadline(deadline); err != nil {
		nc.Close()
		return "", contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable, "setting a deadline on the session bus: %v", err)
	}
	conn, err := dbus.NewConn(dc)
	if err != nil {
		nc.Close()
		return "", contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable, "connecting to the session bus: %v", err)
	}
	defer conn.Close()
	fail := func(what string, err error) error {
		if dc.timedOut.Load() {
			return probeTimeout(bound)
		}
		return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable, "%s: %v", what, err)
	}
	if err := conn.Auth(nil); err != nil {
		return "", fail("authenticating to the session bus", err)
	}
	if err := conn.Hello(); err != nil {
		return "", fail("greeting the session bus", err)
	}
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, ssName).Store(&owned); err != nil {
		return "", fail("asking the session bus for the secret service", err)
	}
	if !owned {
		var names []string
		if err := conn.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil {
			return "", fail("asking the session bus for activatable services", err)
		}
		if !slices.Contains(names, ssName) {
			return "", contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
				"no secret service on the session bus (%s is neither running nor activatable)", ssName)
		}
	}
	var coll dbus.ObjectPath
	if err := conn.Object(ssName, ssPath).Call("org.freedesktop.Secret.Service.ReadAlias", 0, "default").Store(&coll); err != nil {
		return "", fail("asking the secret service for its default collection", err)
	}
	if coll == "/" || coll == "" {
		return "", contracts.WithHint(contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
			"the secret service has no default collection"),
			"create a default keyring (e.g. with Seahorse) or use the file backend")
	}
	return coll, nil
}

func probeTimeout(bound time.Duration) error {
	return contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultTimeout,
		"the session bus or the secret service did not answer within %s", bound)
}

// dialBus connects to the first usable address of a D-Bus address list
// (unix path or abstract socket, tcp).
func dialBus(addr string, deadline time.Time) (net.Conn, error) {
	switch addr {
	case "", "autolaunch:":
		return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
			"no session bus: DBUS_SESSION_BUS_ADDRESS is not set")
	}
	d := net.Dialer{Deadline: deadline}
	var errs []error
	for _, a := range strings.Split(addr, ";") {
		transport, rest, _ := strings.Cut(a, ":")
		kv := map[string]string{}
		for _, f := range strings.Split(rest, ",") {
			k, val, ok := strings.Cut(f, "=")
			if ok {
				kv[k] = unescapeBusValue(val)
			}
		}
		var network, target string
		switch {
		case transport == "disabled":
			if bus := busenv.Result(); bus.Set == addr {
				// busenv disabled it: say what it found.
				return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable, "the session bus is disabled: %s", bus.Why)
			}
			return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
				"the session bus is disabled (DBUS_SESSION_BUS_ADDRESS=%s)", addr)
		case transport == "unix" && kv["path"] != "":
			network, target = "unix", kv["path"]
		case transport == "unix" && kv["abstract"] != "":
			network, target = "unix", "@"+kv["abstract"]
		case transport == "tcp" && kv["port"] != "":
			network, target = "tcp", net.JoinHostPort(kv["host"], kv["port"])
		default:
			errs = append(errs, fmt.Errorf("unsupported bus address %q", a))
			continue
		}
		c, err := d.Dial(network, target)
		if err == nil {
			return c, nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, contracts.Errorf(contracts.ErrUnavailable, contracts.ReasonVaultUnavailable,
		"cannot reach the session bus: %v", errors.Join(errs...))
}

// unescapeBusValue undoes the %XX escaping of D-Bus address values.
func unescapeBusValue(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// deadlineConn records whether a read or write hit the deadline, so the
// probe can tell "did not answer" from "refused".
type deadlineConn struct {
	net.Conn
	timedOut atomic.Bool
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.note(err)
	return n, err
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.note(err)
	return n, err
}

func (c *deadlineConn) note(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
	}
}
