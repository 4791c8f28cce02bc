//go:build !agentonly

package main

import "github.com/spf13/cobra"

// addEmbeddedCommands adds the commands that link the embedded Temporal server and UI.
// Building with -tags agentonly leaves them out: the binary a GPU machine needs (node agent,
// workers, inspection) is then a fraction of the size.
func addEmbeddedCommands(root *cobra.Command, g *globals) {
	root.AddCommand(newDevCommand(g))
}
