package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newArtifactCmd() *cobra.Command {
	var (
		offset, length int64
		doImport       bool
	)
	cmd := &cobra.Command{
		Use:   "artifact SERVER RECEIPT_ID PATH",
		Short: "Print a file a completed call reported inside the server's artifactDirectory",
		Long: `artifact prints the bytes of PATH (absolute, relative to the server's
artifactDirectory, or a file:// URI), which the completed call of RECEIPT_ID
must name in its result. Without --length it reads the whole file in
windows; with it, one window. The bytes go to stdout as they are (redirect
binary files to a file). pikod refuses a path outside artifactDirectory,
a symlink or ".." that leaves it, and a directory others can write to.
--json prints each window's result object (binary windows as base64).

With --import, pikod copies the whole file (at most 20 MiB) into its
retained sources instead and prints the source id: 'pikoctl mcp source ID'
reads it later, whatever the server does to the file.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if doImport {
				var raw json.RawMessage
				params := contracts.ImportParams{Server: args[0], ReceiptID: args[1], Path: args[2]}
				if err := c.Call(cmd.Context(), contracts.MethodMCPImport, params, &raw); err != nil {
					return err
				}
				if a.jsonOut {
					return printRaw(a.stdout, raw)
				}
				var res contracts.ImportResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decoding the %s result: %w", contracts.MethodMCPImport, err)
				}
				fmt.Fprintf(a.stdout, "imported %s (%d bytes, %s, sha256 %s) as source %s\n",
					clean(res.Path), res.Size, clean(res.Encoding), clean(res.SHA256), clean(res.SourceID))
				return nil
			}
			all := length == 0
			for {
				var res contracts.ArtifactResult
				params := contracts.ArtifactParams{Server: args[0], ReceiptID: args[1], Path: args[2], Offset: offset, Length: length}
				if err := c.Call(cmd.Context(), contracts.MethodMCPArtifact, params, &res); err != nil {
					return err
				}
				if a.jsonOut {
					b, _ := json.Marshal(res)
					fmt.Fprintf(a.stdout, "%s\n", b)
				} else {
					data := []byte(res.Text)
					if res.Base64 != "" {
						if data, err = base64.StdEncoding.DecodeString(res.Base64); err != nil {
							return fmt.Errorf("decoding the artifact window: %w", err)
						}
					}
					if _, err := a.stdout.Write(data); err != nil {
						return err
					}
				}
				if !all || res.EOF || res.Length == 0 {
					return nil
				}
				offset += res.Length
			}
		},
	}
	cmd.Flags().Int64Var(&offset, "offset", 0, "first byte")
	cmd.Flags().Int64Var(&length, "length", 0, "bytes to read (0: everything, in windows of 64 KiB)")
	cmd.Flags().BoolVar(&doImport, "import", false, "copy the whole file into pikod's retained sources and print the source id")
	return cmd
}
