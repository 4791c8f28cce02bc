//go:build agentonly

package main

import "github.com/spf13/cobra"

// addDemoCommand adds nothing to an agentonly build: the demo needs the embedded server.
func addDemoCommand(*cobra.Command, *globals) {}
