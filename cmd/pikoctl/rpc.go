package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) newRPCCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rpc METHOD [JSON|-]",
		Short: "Call any owner-API method with raw JSON params",
		Long: `rpc calls METHOD with the JSON object given as the second argument, or read
from stdin when the argument is "-" or omitted and stdin is not a terminal
(omitted on a terminal: {}). It prints the result exactly as pikod sent it.`,
		Example: `  pikoctl rpc system.hello
  pikoctl rpc extensions.mcp.status '{"server":"files"}'
  echo '{"extension":"mcp"}' | pikoctl rpc extensions.settings`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			method := args[0]
			if strings.TrimSpace(method) == "" {
				return usageErrorf("the method name is empty")
			}
			var (
				in   []byte
				what = "params"
				err  error
			)
			switch {
			case len(args) == 2 && args[1] != "-":
				in = []byte(args[1])
			case len(args) == 2 || !a.stdinIsTerminal():
				what = "params from stdin"
				if in, err = readInput(a.stdin, what); err != nil {
					return err
				}
			}
			params, err := jsonObject(in, what)
			if err != nil {
				return err
			}
			var result json.RawMessage
			if err := a.call(cmd.Context(), method, params, &result); err != nil {
				return err
			}
			return printRaw(a.stdout, result)
		},
	}
}
