package main

import (
	"fmt"
	"io"
	"os"

	"github.com/schooner-ml/schooner/internal/specfile"
)

// checkedSpec is a spec users write in a file (training.Spec, serving.Spec): defaults fill
// what the file leaves out, then Validate names every bad field.
type checkedSpec[S any] interface {
	WithDefaults() S
	Validate() error
}

// loadSpecFile reads a spec file of kind ("training", "serving") with parse, applies the
// defaults and validates it. Every problem is printed to errOut, so the user fixes the file
// in one go instead of one submission per mistake.
func loadSpecFile[S checkedSpec[S]](path, kind string, parse func([]byte, specfile.Format) (S, error), errOut io.Writer) (S, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("reading spec: %w", err)
	}
	spec, err := parse(data, specfile.FormatOf(path))
	if err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		if problems := specfile.Problems(err); len(problems) > 0 {
			fmt.Fprintf(errOut, "%s is not a valid %s spec:\n", path, kind)
			for _, p := range problems {
				fmt.Fprintf(errOut, "  %s\n", p)
			}
			noun := "problems"
			if len(problems) == 1 {
				noun = "problem"
			}
			return spec, fmt.Errorf("%s: %d %s, nothing started", path, len(problems), noun)
		}
		return spec, err
	}
	return spec, nil
}
