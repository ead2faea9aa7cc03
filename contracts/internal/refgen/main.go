// Command refgen writes the references of docs/reference that come from
// the source: the socket API (api.md) from contracts' method table and the
// doc comments of its params and result types, every setting (settings.md)
// from the settings types, and every error code and reason word
// (errors.md) from contracts' code table, the reason constants of
// contracts/reasons.go and the Errorf, WithReason and ErrorData uses of the
// whole module (a reason given as a string literal fails the generation).
//
//	go generate ./contracts   (runs: go run ./internal/refgen -root ../ -out ../docs/reference)
//
// TestReferenceUpToDate fails when a committed file differs from what
// refgen would write now.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	out := flag.String("out", "docs/reference", "the directory to write the references to")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "refgen:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "refgen:", err)
		os.Exit(1)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "refgen:", err)
			os.Exit(1)
		}
	}
}
