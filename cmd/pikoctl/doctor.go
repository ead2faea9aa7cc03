package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/rpc"
	"github.com/spf13/cobra"
)

// doctorCheck is one line of 'pikoctl doctor'.
type doctorCheck struct {
	level string // ok, warn, fail
	what  string
	say   string
}

func (a *app) newDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the daemon, its socket, the vault, the session bus, node/npx/uvx and the clock",
		Long: `doctor checks what pikod needs and says what to do about each problem:
whether pikod answers on its socket (and speaks this pikoctl's API), the
socket's owner and mode, the vault backend pikod uses, why (what auto found
at the first start), that it is pinned and how to move it, the D-Bus
session bus the keyring backend needs, whether node, npx and uvx are on the
PATH stdio servers get (the installed service's PATH when there is one,
else this shell's), and the system clock. Exit 0 when nothing failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := a.doctor(cmd.Context())
			failed := 0
			for _, c := range checks {
				if c.level == "fail" {
					failed++
				}
				fmt.Fprintf(a.stdout, "%-4s  %-10s %s\n", c.level, c.what, clean(c.say))
			}
			if failed > 0 {
				return &statusExit{code: exitFailure, msg: fmt.Sprintf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
}

func (a *app) doctor(ctx context.Context) []doctorCheck {
	var out []doctorCheck
	add := func(level, what, format string, args ...any) {
		out = append(out, doctorCheck{level, what, fmt.Sprintf(format, args...)})
	}
	instance, socket, err := a.target()
	if err != nil {
		add("fail", "instance", "%v", err)
		return out
	}
	// The socket itself.
	if fi, err := os.Lstat(socket); err != nil {
		add("fail", "socket", "%s: %v; start pikod ('pikod --instance %s', or 'systemctl --user start %s')", socket, err, instance, systemdUnitName(instance))
	} else {
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode()&os.ModeSocket == 0:
			add("fail", "socket", "%s is not a socket", socket)
		case st != nil && int(st.Uid) != a.uid:
			add("fail", "socket", "%s belongs to uid %d, not you (%d)", socket, st.Uid, a.uid)
		case fi.Mode().Perm()&0o077 != 0:
			add("warn", "socket", "%s has mode %04o; pikod makes it 0600", socket, fi.Mode().Perm())
		default:
			add("ok", "socket", "%s (yours, mode %04o)", socket, fi.Mode().Perm())
		}
	}
	// The daemon.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var hello contracts.HelloResult
	daemonUp := false
	if err := a.call(cctx, contracts.MethodHello, contracts.HelloParams{APIVersion: contracts.APIVersion, ClientVersion: version}, &hello); err != nil {
		add("fail", "daemon", "not answering: %v", err)
	} else {
		daemonUp = true
		if advice := rpc.APIAdvice(hello); advice != "" {
			add("warn", "daemon", "%s", advice)
		} else {
			add("ok", "daemon", "pikod %s, pid %d, instance %s, up since %s, state %s", hello.DaemonVersion, hello.PID, hello.Instance, hello.StartedAt, hello.StateDir)
		}
	}
	// The vault, as the daemon uses it.
	if daemonUp {
		var st contracts.StatusResult
		if err := a.call(cctx, contracts.MethodMCPStatus, contracts.StatusParams{}, &st); err != nil {
			add("fail", "vault", "reading status: %v", err)
		} else {
			level, why := "ok", st.Vault.Note
			switch {
			case st.Vault.Locked:
				level, why = "warn", "locked: servers with credentials cannot connect until 'pikoctl vault unlock'"
			case st.Vault.Backend == "" || st.Vault.Backend == "none":
				level = "warn"
			}
			add(level, "vault", "backend %s: %s", st.Vault.Backend, why)
			// How it was chosen, why, whether it is pinned, how to move.
			if st.Vault.Chosen != "" {
				add("ok", "vault", "%s", st.Vault.Chosen)
			}
			if st.Vault.Warning != "" {
				add("warn", "vault", "%s", st.Vault.Warning)
			}
			if s := st.Storage; s != nil {
				level := "ok"
				if s.LastPrune != nil && s.LastPrune.Error != "" {
					level = "warn"
				}
				line := fmt.Sprintf("pikod.db %s (%s in free pages); %d receipts, %s", byteSize(s.DatabaseBytes), byteSize(s.FreeBytes),
					s.Receipts, byteSize(s.ReceiptBytes))
				if s.OldestReceipt != "" {
					line += ", the oldest from " + clean(s.OldestReceipt)
				}
				line += fmt.Sprintf("; retained results %s of %s", byteSize(s.SourceBytes), byteSize(s.SourceCapBytes))
				if s.BytesPerDay > 0 {
					line += fmt.Sprintf("; receipts grow about %s a day at the rate since pikod started", byteSize(int64(s.BytesPerDay)))
				}
				if s.LastPrune != nil {
					line += fmt.Sprintf("; last prune %s removed %d", clean(s.LastPrune.At), s.LastPrune.Pruned)
					if s.LastPrune.Error != "" {
						line += " and failed: " + clean(s.LastPrune.Error)
					}
				}
				if c := s.LastCompaction; c != nil {
					if c.Error != "" {
						level = "warn"
						line += fmt.Sprintf("; last compaction (%s, %s) failed: %s", clean(c.Trigger), clean(c.At), clean(c.Error))
					} else {
						line += fmt.Sprintf("; last compaction (%s, %s) %s -> %s", clean(c.Trigger), clean(c.At), byteSize(c.BeforeBytes), byteSize(c.AfterBytes))
					}
				}
				if s.DiskFreeBytes >= 0 {
					line += fmt.Sprintf("; %s free on its disk", byteSize(s.DiskFreeBytes))
				}
				add(level, "storage", "%s", line)
				if s.HeldOutcomes > 0 {
					add("warn", "storage", "%d outcomes of sent calls are held until the disk has room to record them (they are in pikod's reserve file too; freeing space records them)", s.HeldOutcomes)
				}
				if s.DiskFull {
					add("fail", "storage", "the disk holding pikod's state is full (a write failed for want of space at %s; %s free): calls that must be recorded are refused with storage_full until space is freed; pikod resumes by itself",
						clean(s.DiskFullAt), byteSize(s.DiskFreeBytes))
				}
			}
		}
	}
	// The session bus the keyring backend talks to.
	if bus := a.getenv("DBUS_SESSION_BUS_ADDRESS"); bus == "" || bus == "disabled:" {
		add("warn", "bus", "no D-Bus session bus in this environment (DBUS_SESSION_BUS_ADDRESS=%q): the keyring backend needs one; a service needs 'systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS' or the dbus-user-session package, else use the file vault", bus)
	} else {
		add("ok", "bus", "DBUS_SESSION_BUS_ADDRESS is set in this environment")
	}
	// node, npx and uvx on the PATH servers get.
	path, from := a.getenv("PATH"), "this shell's PATH"
	if o, err := a.serviceOptions(""); err == nil {
		if _, unit, err := a.serviceFile(a.goos, o); err == nil {
			if p := unitPATH(unit); p != "" {
				path, from = p, "the PATH of "+unit
			}
		}
	}
	for _, tool := range []string{"node", "npx", "uvx"} {
		if p, ok := lookIn(tool, path); ok {
			add("ok", tool, "%s (on %s)", p, from)
		} else {
			add("warn", tool, "not found on %s: servers started with %s will fail; install it or fix PATH, then 'pikoctl service install --force'", from, tool)
		}
	}
	// The clock: approvals expire and OAuth tokens are checked by time.
	now := time.Now()
	switch {
	case now.Year() < 2025:
		add("fail", "clock", "the system clock says %s: set the time (approvals and OAuth tokens depend on it)", now.UTC().Format(time.RFC3339))
	default:
		sync := ""
		if out, err := exec.CommandContext(cctx, "timedatectl", "show", "-p", "NTPSynchronized", "--value").Output(); err == nil {
			sync = strings.TrimSpace(string(out))
		}
		switch sync {
		case "no":
			add("warn", "clock", "%s, not synchronised (timedatectl): enable NTP", now.UTC().Format(time.RFC3339))
		case "yes":
			add("ok", "clock", "%s, synchronised", now.UTC().Format(time.RFC3339))
		default:
			add("ok", "clock", "%s (synchronisation unknown)", now.UTC().Format(time.RFC3339))
		}
	}
	return out
}

// unitPATH returns the PATH an installed systemd unit sets
// (Environment=PATH=...), or "".
func unitPATH(unit string) string {
	f, err := os.Open(unit)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Environment="); ok {
			v = strings.Trim(v, `"`)
			if p, ok := strings.CutPrefix(v, "PATH="); ok {
				return strings.ReplaceAll(p, "$$", "$")
			}
		}
	}
	return ""
}

// lookIn finds an executable name in the absolute entries of path.
func lookIn(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// byteSize writes n bytes for a person: 812 B, 3.4 KiB, 12.0 MiB, 1.2 GiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
