//go:build agentonly

package main

import "github.com/spf13/cobra"

// addEmbeddedCommands adds nothing in the agent-only build: see embedded.go.
func addEmbeddedCommands(*cobra.Command, *globals) {}
