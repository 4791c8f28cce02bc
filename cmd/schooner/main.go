// Command schooner is the control plane for cost-driven ML on cheap, unreliable and shared
// GPUs. Run `schooner --help` for the commands.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
