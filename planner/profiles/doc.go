// Package profiles reads and writes the planner's model and network profiles: schooner's
// own JSON files (docs/profiles.md), Sailor's published measurements (imported as they are
// laid out in Sailor's repository), and a bundled copy of those measurements for the
// built-in models. Load and LoadNetwork are what commands call: measured data where there
// is some, derived estimates for every other GPU type, built-in defaults for the rest.
//
// The planner package itself does no I/O; this package does it for it.
package profiles

import "fmt"

// FileError is a problem with one input file.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }

// fileErrorf makes a FileError for path with a formatted message.
func fileErrorf(path, format string, args ...any) error {
	return &FileError{Path: path, Err: fmt.Errorf(format, args...)}
}
