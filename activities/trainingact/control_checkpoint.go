package trainingact

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// remote opens the job's checkpoint store as the remote tier.
func (t *Control) remote(ctx context.Context, url string) (*checkpoint.Remote, error) {
	roots := t.StoreRoots
	if roots == nil {
		roots = store.DefaultRoots("")
	}
	if err := store.Confine(url, roots); err != nil {
		// A store outside the allowed roots (file:///etc, a path climbing out with ..) is
		// the spec's fault: no retry makes it right.
		return nil, temporal.NewNonRetryableApplicationError("checkpoint store: "+err.Error(), training.ErrTypeInvalidSpec, err)
	}
	s, err := store.Opener(t.OpenStore).Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &checkpoint.Remote{Store: s}, nil
}

// LatestDurableCheckpoint reads the newest step whose every shard is in the job's store
// (-1: none). The job decides restores from the store itself, never from signals alone.
func (t *Control) LatestDurableCheckpoint(ctx context.Context, storeURL string) (int64, error) {
	r, err := t.remote(ctx, storeURL)
	if err != nil {
		return 0, err
	}
	steps, err := r.DurableSteps(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading durable steps: %w", err)
	}
	if err := claim(ctx, r, storeURL, steps); err != nil {
		return 0, err
	}
	if len(steps) == 0 {
		return -1, nil
	}
	return steps[0], nil
}

// VerifyTrainedState compares the durable step with an uninterrupted run of the simulated
// trainer computed from scratch: the proof that preemptions, replans and restores lost
// nothing. A mismatch is non-retryable; a store error retries.
func (t *Control) VerifyTrainedState(ctx context.Context, req training.VerifyStateRequest) error {
	if t.Verify == nil {
		return temporal.NewNonRetryableApplicationError("no simulated-state verifier configured on this worker", training.ErrTypeStateMismatch, nil)
	}
	r, err := t.remote(ctx, req.Store)
	if err != nil {
		return err
	}
	if err := t.Verify(ctx, r, req.Step, req.Seed, req.ModelLayers); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("verifying step %d: %v", req.Step, err), training.ErrTypeStateMismatch, err)
	}
	return nil
}
