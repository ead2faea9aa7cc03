package main

import (
	"context"
	"strings"
	"time"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

// completionTimeout bounds the daemon calls a shell completion makes: a
// stopped daemon must not hang the shell.
const completionTimeout = 2 * time.Second

// addCompletions gives every command whose usage names SERVER, TOOL or
// ACTION arguments a completion function that asks the daemon: server ids
// from status, tool names from the catalog of the server given before,
// prepared action ids from the actions list.
func (a *app) addCompletions(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		a.addCompletions(c)
	}
	if cmd.ValidArgsFunction != nil || !cmd.Runnable() {
		return
	}
	words := strings.Fields(cmd.Use)
	if len(words) < 2 {
		return
	}
	params := words[1:]
	cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= len(params) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(c.Context(), completionTimeout)
		defer cancel()
		switch strings.Trim(params[len(args)], "[]") {
		case "SERVER":
			return a.completeServers(ctx), cobra.ShellCompDirectiveNoFileComp
		case "TOOL":
			if len(args) > 0 {
				return a.completeTools(ctx, args[0]), cobra.ShellCompDirectiveNoFileComp
			}
		case "ACTION", "ACTION_ID":
			return a.completeActions(ctx), cobra.ShellCompDirectiveNoFileComp
		case "FILE", "FILE|-", "PATH":
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func (a *app) completeServers(ctx context.Context) []string {
	var st contracts.StatusResult
	if a.call(ctx, contracts.MethodMCPStatus, contracts.StatusParams{}, &st) != nil {
		return nil
	}
	out := make([]string, 0, len(st.Servers))
	for _, s := range st.Servers {
		out = append(out, clean(s.ID))
	}
	return out
}

func (a *app) completeTools(ctx context.Context, server string) []string {
	var cat contracts.CatalogResult
	if a.call(ctx, contracts.MethodMCPCatalog, contracts.ServerParams{Server: server}, &cat) != nil {
		return nil
	}
	out := make([]string, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		// A name a shell cannot take as one word is left out.
		if n := clean(t.OriginalName); n != "" && !strings.ContainsAny(n, " \t'\"\\$`") {
			out = append(out, n)
		}
	}
	return out
}

func (a *app) completeActions(ctx context.Context) []string {
	var list contracts.ActionsListResult
	if a.call(ctx, contracts.MethodMCPActionsList, contracts.ActionsListParams{State: contracts.ActionPrepared}, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list.Actions))
	for _, x := range list.Actions {
		out = append(out, clean(x.ID)+"\t"+clean(x.Server)+" "+clean(x.Tool))
	}
	return out
}
