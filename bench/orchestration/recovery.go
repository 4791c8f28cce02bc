package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workflows"
)

// benchRecovery preempts a running job's instances one at a time, without notice, and
// times each preemption until every trainer of the next epoch has heartbeated.
func benchRecovery(ctx context.Context, n int, scale float64) error {
	s, err := startStack(ctx, scale)
	if err != nil {
		return err
	}
	defer s.stop()
	id := "train-bench-recovery"
	// Long enough never to finish during the bench; checkpoints often so restores are cheap.
	spec := s.spec("recovery", 10_000_000, 20, 2)
	// A short heartbeat timeout is what a no-notice loss costs when nothing else tells the
	// job; the market's state poll is faster, so set both as a deployment would.
	opts := workflows.JobOptions{HeartbeatTimeout: 2 * time.Second, PollInterval: 250 * time.Millisecond, RetryWait: 200 * time.Millisecond}
	if err := s.submit(ctx, id, spec, opts); err != nil {
		return err
	}
	var took []time.Duration
	for len(took) < n {
		epoch, err := waitAllRunning(ctx, s, id, -1, 60*time.Second)
		if err != nil {
			return err
		}
		live, err := s.market.List(ctx, map[string]string{cloud.JobTag: id})
		if err != nil || len(live) == 0 {
			continue
		}
		began := time.Now()
		if err := s.market.Preempt(live[0].ID, 0); err != nil {
			return fmt.Errorf("preempting %s: %w", live[0].ID, err)
		}
		if _, err := waitAllRunning(ctx, s, id, epoch, 60*time.Second); err != nil {
			return err
		}
		took = append(took, time.Since(began))
		fmt.Printf("\rpreemption %d/%d: %s   ", len(took), n, took[len(took)-1].Round(time.Millisecond))
	}
	fmt.Println()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	fmt.Printf("\n| measurement | n | p50 | p99 | max | goal |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| preemption (no notice) → every trainer of the new epoch heartbeating | %d | %s | %s | %s | p50 ≤ 1 s, p99 ≤ 3 s |\n",
		len(took), pct(took, 0.50), pct(took, 0.99), took[len(took)-1].Round(time.Millisecond))
	return nil
}

// waitAllRunning polls the job's pending RunTrainer activities until every one of them has
// heartbeated an epoch newer than after, and returns that epoch.
func waitAllRunning(ctx context.Context, s *stack, id string, after int, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if epoch, ok := allHeartbeating(ctx, s, id, after); ok {
			return epoch, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("job %s: trainers of an epoch after %d not all running within %s", id, after, within)
}

func allHeartbeating(ctx context.Context, s *stack, id string, after int) (int, bool) {
	d, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return 0, false
	}
	epoch, n := -1, 0
	for _, a := range d.GetPendingActivities() {
		if a.GetActivityType().GetName() != workflows.ActivityRunTrainer {
			continue
		}
		var p training.Progress
		details := a.GetHeartbeatDetails().GetPayloads()
		if len(details) == 0 {
			return 0, false
		}
		if err := dataConverter.FromPayload(details[0], &p); err != nil || p.Epoch <= after {
			return 0, false
		}
		if epoch >= 0 && p.Epoch != epoch {
			return 0, false
		}
		epoch = p.Epoch
		n++
	}
	if n == 0 {
		return 0, false
	}
	st, err := s.status(ctx, id)
	if err != nil || st.Epoch != epoch || st.Phase != workflows.PhaseTraining {
		return 0, false
	}
	return epoch, true
}

// pct is the q-quantile of sorted durations (nearest rank).
func pct(sorted []time.Duration, q float64) string {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i].Round(time.Millisecond).String()
}
