package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pikod/pikod/rpc"
)

func (a *app) newRPCCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rpc METHOD [JSON|-]",
		Short: "Call any owner-API method with raw JSON params",
		Long: `rpc calls METHOD with the JSON object given as the second argument, or read
from stdin when the argument is "-" or omitted and stdin is not a terminal
(omitted on a terminal: {}). It prints the result exactly as pikod sent it.
When the connection to pikod ends while the request is out, it exits 5
(uncertain: the request may have had its effect), not 3.`,
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
			parse := jsonObject
			if what != "params" {
				// On stdin: the place for params that hold a secret.
				parse = jsonObjectPrivate
			}
			params, err := parse(in, what)
			if err != nil {
				return err
			}
			var result json.RawMessage
			if err := a.call(cmd.Context(), method, params, &result); err != nil {
				if errors.Is(err, rpc.ErrConnectionLost) {
					// The request was out when pikod went away: an approve
					// or a call may have run. Never "unreachable" (exit 3),
					// which a script could take as "start pikod and retry".
					fmt.Fprintf(a.stderr, "pikoctl: %s\n", cleanLines(err.Error()))
					fmt.Fprintf(a.stderr, "uncertain: the connection to pikod ended while %s was out; check 'pikoctl mcp actions' and the server before trying again\n", clean(method))
					return &statusExit{code: exitUncertain, msg: "connection lost during the request"}
				}
				return err
			}
			return printRaw(a.stdout, result)
		},
	}
}
