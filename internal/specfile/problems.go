package specfile

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with a spec, named by the field's path as the spec spells it
// ("checkpoint.every"), so a user can find it in their file.
type FieldError struct {
	Field   string
	Problem string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Problem }

// ValidationError lists every problem of a spec at once: fixing a file one error per
// submission is a poor way to spend an afternoon. Kind names the spec ("training").
type ValidationError struct {
	Kind     string `json:"kind,omitempty"`
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return fmt.Sprintf("invalid %s spec (%d problems):\n  %s", e.Kind, len(e.Problems), strings.Join(lines, "\n  "))
}

// Problems returns the field errors of err when it is a *ValidationError.
func Problems(err error) []FieldError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Problems
	}
	return nil
}

// Collector gathers the problems a validation finds.
type Collector struct {
	problems []FieldError
}

// Add records a problem of field.
func (c *Collector) Add(field, format string, args ...any) {
	c.problems = append(c.problems, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// Record records a problem already worded, for checks that report through a
// func(field, problem string) (fleet.Resources.Check).
func (c *Collector) Record(field, problem string) {
	c.problems = append(c.problems, FieldError{Field: field, Problem: problem})
}

// Err is a *ValidationError of kind with every problem found, or nil.
func (c *Collector) Err(kind string) error {
	if len(c.problems) == 0 {
		return nil
	}
	return &ValidationError{Kind: kind, Problems: c.problems}
}
