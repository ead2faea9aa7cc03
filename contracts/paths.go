package contracts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// DefaultInstance is the instance used when none is named.
const DefaultInstance = "default"

// Environment variables both binaries read.
const (
	EnvInstance = "PIKO_INSTANCE"
	EnvSocket   = "PIKO_SOCKET"
	EnvStateDir = "PIKO_STATE_DIR"
)

var instanceRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// ValidInstance reports whether name is a valid instance name: a lowercase
// letter followed by up to 31 of a-z, 0-9 and '-'.
func ValidInstance(name string) error {
	if !instanceRE.MatchString(name) {
		return Errorf(ErrInvalidArgument, ReasonInvalidInstance,
			"invalid instance name %q: use a lowercase letter followed by up to 31 lowercase letters, digits or hyphens", name)
	}
	return nil
}

// Getenv looks up an environment variable; tests pass their own.
type Getenv func(string) string

// ResolveInstance returns flag, else $PIKO_INSTANCE, else DefaultInstance,
// validated.
func ResolveInstance(flag string, getenv Getenv) (string, error) {
	name := flag
	if name == "" {
		name = getenv(EnvInstance)
	}
	if name == "" {
		name = DefaultInstance
	}
	return name, ValidInstance(name)
}

// SocketPath returns the owner socket of instance: flag, else $PIKO_SOCKET,
// else $XDG_RUNTIME_DIR/pikod/NAME.sock, else $TMPDIR/pikod-UID/NAME.sock.
func SocketPath(instance, flag string, getenv Getenv) string {
	if flag != "" {
		return flag
	}
	if p := getenv(EnvSocket); p != "" {
		return p
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "pikod", instance+".sock")
	}
	tmp := getenv("TMPDIR")
	if tmp == "" || !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "pikod-"+strconv.Itoa(os.Getuid()), instance+".sock")
}

// StateDir returns the state directory of instance: flag, else
// $PIKO_STATE_DIR, else $XDG_STATE_HOME/pikod/NAME, else
// ~/.local/state/pikod/NAME.
func StateDir(instance, flag string, getenv Getenv) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if p := getenv(EnvStateDir); p != "" {
		return filepath.Abs(p)
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "pikod", instance), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the state directory: no HOME; set --state-dir or %s: %w", EnvStateDir, ErrFailedPrecondition)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "pikod", instance), nil
}
