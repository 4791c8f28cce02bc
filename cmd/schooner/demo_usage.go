//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// usageReport is the file the demo's simulated market writes its usage report to
// (sim.UsageRecord, a JSON line per machine that ran): the machine-by-machine bill behind the
// summary's cost, so a difference between two runs' costs (or between the stack and the
// trace-replay simulator) can be traced to the machines. The file (and its directory) is
// created, or emptied, at the first line, so a run refused before any machine ran leaves
// nothing behind.
type usageReport struct {
	path string
	mu   sync.Mutex // the market writes while the demo may print
	f    *os.File
	err  error
}

func (u *usageReport) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil && u.err == nil {
		u.f, u.err = createFileAndDir(u.path)
	}
	if u.err != nil {
		return 0, u.err
	}
	return u.f.Write(p)
}

// Close closes the file, if a line made it; call it after the stack stops (its market
// writes until then). If none did, it removes an earlier run's bill at the path: beside this
// run's report it would read as this run's.
func (u *usageReport) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		if err := os.Remove(u.path); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("removing an earlier run's usage report: %w", err)
		}
		return nil
	}
	return u.f.Close()
}

// createFileAndDir creates (or empties) path, and its directory.
func createFileAndDir(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the report directory for the market's usage report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the market's usage report: %w", err)
	}
	return f, nil
}

// useUsageReport sets a usage report at path in o; close it after the stack stops.
func useUsageReport(o *stack.Options, path string) *usageReport {
	u := &usageReport{path: path}
	o.Usage = u
	return u
}

// printUsageReport says where the market's bill is, and warns when the market could not write
// failed lines of it (sim.Market.UsageErrors; the file is then incomplete, or missing).
func printUsageReport(out io.Writer, u *usageReport, failed int) {
	u.mu.Lock()
	started, err := u.f != nil, u.err
	u.mu.Unlock()
	switch {
	case started:
		fmt.Fprintf(out, "                 %s (the market's bill: a line per machine that ran)\n", u.path)
	case err == nil:
		fmt.Fprintf(out, "                 no machine has been billed yet: nothing written to %s\n", u.path)
	}
	if failed > 0 {
		fmt.Fprintf(out, "  warning        %d lines of the market's bill could not be written (%v): it is incomplete\n", failed, err)
	}
}
