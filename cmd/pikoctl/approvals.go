package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/pikod/pikod/contracts"
)

func (a *app) newApprovalsCmd() *cobra.Command {
	g := groupCmd("approvals", "The owner approval gate (passphrase)")
	ops := []string{contracts.PassphraseOpSet, contracts.PassphraseOpChange, contracts.PassphraseOpClear}
	g.AddCommand(&cobra.Command{
		Use:   "passphrase set|change|clear",
		Short: "Set, change or clear the owner approval passphrase (asked masked at the terminal)",
		Long: `passphrase manages the owner approval passphrase. While one is set, every
terminal-only command (approve, and later respond, resume and trust) asks for
it too, so a program that drives its own pseudo-terminal still cannot decide
for you. pikod keeps only an argon2id hash of it, in the vault. 5 wrong
passphrases in a row lock terminal-only commands for 60 seconds, twice as
long for each further lock.

The passphrases are asked on the terminal (/dev/tty), masked, after
discarding anything typed ahead; they are never taken from arguments or
stdin. This command is terminal-only itself: run it in your own terminal.`,
		ValidArgs: ops,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(ops, args[0]) {
				return usageErrorf("give one of set, change or clear")
			}
			return nil
		},
		RunE: onCancel("the approval passphrase is unchanged", func(cmd *cobra.Command, args []string) error {
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: the approval passphrase is managed by you typing at the terminal, not through a pipe"),
					"run 'pikoctl approvals passphrase "+args[0]+"' yourself in your terminal")
			}
			tty, err := a.openTTY()
			if err != nil {
				return err
			}
			defer tty.Close()
			p := contracts.PassphraseParams{Op: args[0]}
			if p.Op != contracts.PassphraseOpSet {
				if p.Passphrase, err = askPassphrase(tty, "current approval passphrase: "); err != nil {
					return err
				}
			}
			if p.Op != contracts.PassphraseOpClear {
				if p.NewPassphrase, err = askNewPassphrase(tty); err != nil {
					return err
				}
			}
			var raw json.RawMessage
			if err := a.call(cmd.Context(), contracts.MethodPassphrase, p, &raw); err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			switch p.Op {
			case contracts.PassphraseOpSet:
				fmt.Fprintln(a.stdout, "approval passphrase set: terminal-only commands now ask for it")
			case contracts.PassphraseOpChange:
				fmt.Fprintln(a.stdout, "approval passphrase changed")
			case contracts.PassphraseOpClear:
				fmt.Fprintln(a.stdout, "approval passphrase cleared: terminal-only commands rely on the terminal checks alone")
			}
			return nil
		}),
	})
	return g
}

// askNewPassphrase asks a new approval passphrase twice, masked.
func askNewPassphrase(tty ttyIO) (string, error) {
	pass, err := askPassphrase(tty, fmt.Sprintf("new approval passphrase (at least %d characters): ", contracts.PassphraseMinChars))
	if err != nil {
		return "", err
	}
	again, err := askPassphrase(tty, "the new approval passphrase again: ")
	if err != nil {
		return "", err
	}
	if again != pass {
		return "", errors.New("the two new passphrases differ: nothing was changed")
	}
	return pass, nil
}
