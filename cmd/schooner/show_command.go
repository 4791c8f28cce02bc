package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// newShowCommand completes c as a command that fetches one value from the cluster with get
// and prints it: as JSON with --json (jsonHelp says which JSON), else in its human form, so
// every status command offers the same two views.
func newShowCommand[T any](g *globals, c *cobra.Command, jsonHelp string,
	get func(ctx context.Context, s *session, args []string) (T, error), human func(out io.Writer, v T) error) *cobra.Command {
	var asJSON bool
	cmd := newSessionCommand(g, c, func(ctx context.Context, cmd *cobra.Command, s *session, args []string) error {
		v, err := get(ctx, s, args)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), v)
		}
		return human(cmd.OutOrStdout(), v)
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonHelp)
	return cmd
}
