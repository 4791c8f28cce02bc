package main

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"
)

// testGlobals are the global flags a command under test gets.
func testGlobals() *globals { return &globals{logLevel: "info", logFormat: "console"} }

// execute runs a command with args, its stdout and stderr in one buffer, and returns what it
// printed and its error.
func execute(cmd *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// executeFresh executes a command that newCmd builds with the test globals (see execute), so
// no state of an earlier execution carries over.
func executeFresh(newCmd func(*globals) *cobra.Command, args ...string) (string, error) {
	return execute(newCmd(testGlobals()), args...)
}
