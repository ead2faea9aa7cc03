package main

import (
	"encoding/json"
	"fmt"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// versionOutput is what "pikoctl --json version" prints. Daemon is the
// system.hello result as received, or null when pikod is unreachable.
type versionOutput struct {
	Client struct {
		Version    string `json:"version"`
		APIVersion string `json:"apiVersion"`
	} `json:"client"`
	Daemon json.RawMessage `json:"daemon"`
}

func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of pikoctl and of the pikod it talks to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			params := contracts.HelloParams{ClientVersion: version, APIVersion: contracts.APIVersion}
			callErr := a.call(cmd.Context(), contracts.MethodHello, params, &raw)

			if !a.jsonOut {
				fmt.Fprintf(a.stdout, "pikoctl %s (api %s)\n", version, contracts.APIVersion)
			}
			if callErr != nil {
				if a.jsonOut {
					out := versionOutput{Daemon: json.RawMessage("null")}
					out.Client.Version, out.Client.APIVersion = version, contracts.APIVersion
					if b, err := json.Marshal(out); err == nil {
						fmt.Fprintf(a.stdout, "%s\n", b)
					}
				}
				return callErr
			}

			var hello contracts.HelloResult
			if err := json.Unmarshal(raw, &hello); err != nil {
				return fmt.Errorf("decoding the system.hello result: %w", err)
			}
			a.warnAPI(hello)
			if a.jsonOut {
				out := versionOutput{Daemon: raw}
				out.Client.Version, out.Client.APIVersion = version, contracts.APIVersion
				b, err := json.Marshal(out)
				if err != nil {
					return fmt.Errorf("encoding the version: %w", err)
				}
				fmt.Fprintf(a.stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintf(a.stdout, "pikod %s (api %s), instance %s, pid %d, socket %s\n",
				clean(hello.DaemonVersion), clean(hello.APIVersion), clean(hello.Instance), hello.PID, clean(hello.Socket))
			return nil
		},
	}
}
