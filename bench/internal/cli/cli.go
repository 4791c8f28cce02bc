// Package cli is the frame of the bench commands written as run(args, out): main only wires
// the process to run, so a test calls run with its own arguments and reads what it printed.
package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Main runs run with the process's arguments and standard output; when it fails, it prints
// "name: error" on standard error and exits with status 1.
func Main(name string, run func(args []string, out io.Writer) error) {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// FlagSet is the flag set of command name: a bad flag is returned as an error instead of
// exiting, and usage goes to out, so a test sees both.
func FlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

// BuildSchooner builds the schooner CLI into dir (run from the repository root), so a bench
// runs exactly what users run; it returns the binary's path.
func BuildSchooner(dir string) (string, error) {
	bin := filepath.Join(dir, "schooner")
	c := exec.Command("go", "build", "-o", bin, "./cmd/schooner")
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("building the CLI: %w", err)
	}
	return bin, nil
}

// ReadJSON decodes the JSON file at path into v, naming the file in errors.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v to path as indented JSON with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
