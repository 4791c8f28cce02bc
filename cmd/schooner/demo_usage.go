//go:build !agentonly

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/devserver/stack"
)

// useUsageReport creates (or empties) the file the demo's simulated market writes its usage
// report to (sim.UsageRecord, a JSON line per machine that ran), and its directory, and sets
// it in o: the machine-by-machine bill behind the summary's cost, so a difference between two
// runs' costs (or between the stack and the trace-replay simulator) can be traced to the
// machines. Close it after the stack stops: the market writes to it until then.
func useUsageReport(o *stack.Options, path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the report directory for the market's usage report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the market's usage report: %w", err)
	}
	o.Usage = f
	return f, nil
}

// printUsageReport says where the market's bill is, and warns when lines of it could not be
// written (the file is then incomplete).
func printUsageReport(out io.Writer, path string, market *sim.Market) {
	fmt.Fprintf(out, "                 %s (the market's bill: a line per machine that ran)\n", path)
	if n := market.UsageErrors(); n > 0 {
		fmt.Fprintf(out, "  warning        %d lines of the market's bill could not be written: it is incomplete\n", n)
	}
}
