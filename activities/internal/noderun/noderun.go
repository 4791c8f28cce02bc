// Package noderun turns the errors of a node's supervisor (a trainer's, a serving stage's)
// into the Temporal errors its activity returns, the same way for every node activity.
package noderun

import (
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// NonRetryable is a class of supervisor error that running again cannot help: an error that
// matches Class (errors.Is) becomes a non-retryable application error of Type, with the
// supervisor's error as its cause when WithCause is set.
type NonRetryable struct {
	Class     error
	Type      string
	WithCause bool
}

// Err maps err, the error of a supervisor's Run: nil stays nil; vanished (the machine was
// killed) becomes activity.ErrResultPending, so the activity reports nothing, as a vanished
// machine would; the first of classes that matches makes it non-retryable; any other error is
// returned as it is.
func Err(err, vanished error, classes ...NonRetryable) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, vanished) {
		return activity.ErrResultPending
	}
	for _, c := range classes {
		if errors.Is(err, c.Class) {
			var cause error
			if c.WithCause {
				cause = err
			}
			return temporal.NewNonRetryableApplicationError(err.Error(), c.Type, cause)
		}
	}
	return err
}
