package jobwf

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// End is what Finish needs of a job: its status and the steps that differ between a
// TrainingJob and a ServingDeployment.
type End[S any] struct {
	// Snapshot is the status handed out as the result.
	Snapshot func() S
	// Error is the status's error text.
	Error *string
	// Interrupt stops what still runs (a training epoch, the stage runs) before cleanup.
	Interrupt func()
	// SetPhase records a phase (an event: it may upsert search attributes).
	SetPhase func(ctx workflow.Context, phase string)
	// Cleanup releases every instance the job holds or left behind.
	Cleanup func(ctx workflow.Context) error
	// Done marks the job finished (update handlers waiting on it return).
	Done func()
	// The phases of releasing at the end, of a cancelled job and of a failed one.
	Releasing, Cancelled, Failed string
}

// Finish turns the main loop's end (err) into the workflow's result. Continue-as-new passes
// through; success waits for the update handlers; on cancel or failure it releases every
// instance in a disconnected context, so cleanup runs even though ctx is cancelled. A
// cancelled job ends in e.Cancelled without an error text, a failed one in e.Failed.
func Finish[S any](ctx workflow.Context, err error, e End[S]) (S, error) {
	var can *workflow.ContinueAsNewError
	if errors.As(err, &can) {
		return e.Snapshot(), err
	}
	if err == nil {
		e.Done()
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return e.Snapshot(), nil
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	cancelled := temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled)
	e.Interrupt()
	*e.Error = err.Error()
	e.SetPhase(dctx, e.Releasing)
	if cerr := e.Cleanup(dctx); cerr != nil {
		err = errors.Join(err, cerr)
		*e.Error = err.Error()
	}
	e.Done()
	if cancelled {
		*e.Error = ""
		e.SetPhase(dctx, e.Cancelled)
		return e.Snapshot(), err
	}
	e.SetPhase(dctx, e.Failed)
	return e.Snapshot(), err
}
