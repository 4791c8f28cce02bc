package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// benchRecovery preempts a running job's instances one at a time, without notice, and
// times each preemption until every trainer of the next epoch has heartbeated. It runs
// twice on the default job options: with the preemption relay (the provider's event log
// tells the job at once, schooner's default) and, as the baseline, without it (the job
// finds the loss by its own instance poll, as a controller that only polls does).
func benchRecovery(ctx context.Context, n int, scale float64) error {
	with, err := timeRecoveries(ctx, n, scale, true)
	if err != nil {
		return err
	}
	without, err := timeRecoveries(ctx, n, scale, false)
	if err != nil {
		return err
	}
	fmt.Printf("\n| preemption (no notice) → every trainer of the new epoch heartbeating | n | p50 | p99 | max | goal |\n|---|---|---|---|---|---|\n")
	row := func(name string, d []time.Duration) {
		fmt.Printf("| %s | %d | %s | %s | %s | p50 ≤ 1 s, p99 ≤ 3 s |\n", name, len(d), pct(d, 0.50), pct(d, 0.99), d[len(d)-1].Round(time.Millisecond))
	}
	row("schooner (preemption relay + instance poll)", with)
	row("baseline: instance poll only", without)
	fmt.Printf("\np50 ratio baseline/schooner: %.1fx, p99 ratio: %.1fx\n",
		float64(quantile(without, 0.5))/float64(quantile(with, 0.5)), float64(quantile(without, 0.99))/float64(quantile(with, 0.99)))
	return nil
}

// timeRecoveries runs one job on a fresh stack and times n preemptions of it, sorted.
func timeRecoveries(ctx context.Context, n int, scale float64, relay bool) ([]time.Duration, error) {
	s, err := startStack(ctx, scale)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if !relay {
		s.Agents.Relay.Stop()
	}
	id := fmt.Sprintf("train-bench-recovery-relay-%t", relay)
	// Long enough never to finish during the bench; checkpoints often so restores are cheap.
	spec := s.spec("recovery", 10_000_000, 20, 2)
	if err := s.submit(ctx, id, spec, training.JobOptions{}); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var took []time.Duration
	for len(took) < n {
		epoch, err := waitAllRunning(ctx, s, id, -1, 60*time.Second)
		if err != nil {
			return nil, err
		}
		live, err := s.Market.List(ctx, map[string]string{cloud.JobTag: id})
		if err != nil || len(live) == 0 {
			continue
		}
		// Preempt at a random point of the job's poll period, as the market would, not in
		// step with the epoch's start.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(rng.Int64N(int64(3 * time.Second)))):
		}
		began := time.Now()
		if err := s.Market.Preempt(live[0].ID, 0); err != nil {
			// The market's own traces took it during the wait: that recovery is not timed.
			fmt.Printf("\rrelay %t: %s gone before it was preempted (%v); not timed\n", relay, live[0].ID, err)
			continue
		}
		if _, err := waitAllRunning(ctx, s, id, epoch, 60*time.Second); err != nil {
			return nil, err
		}
		took = append(took, time.Since(began))
		fmt.Printf("\rrelay %t: preemption %d/%d: %s   ", relay, len(took), n, took[len(took)-1].Round(time.Millisecond))
	}
	fmt.Println()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return took, nil
}

// waitAllRunning polls the job's pending RunTrainer activities until every one of them has
// heartbeated an epoch newer than after, and returns that epoch.
func waitAllRunning(ctx context.Context, s *benchStack, id string, after int, within time.Duration) (int, error) {
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

// allHeartbeating says whether every rank of the job's current plan, of an epoch after
// after, has a pending RunTrainer that heartbeated that epoch. Trainers of the lost machine
// stay pending (dead, unanswering) until their heartbeat timeout: they are not counted.
func allHeartbeating(ctx context.Context, s *benchStack, id string, after int) (int, bool) {
	st, err := s.Jobs.Status(ctx, id)
	if err != nil || st.Epoch <= after || st.Phase != training.PhaseTraining || len(st.Plans) == 0 {
		return 0, false
	}
	ranks := 0
	for _, stage := range st.Plans[len(st.Plans)-1].Plan.Stages {
		ranks += len(stage.Replicas)
	}
	d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return 0, false
	}
	running := 0
	for _, a := range d.GetPendingActivities() {
		details := a.GetHeartbeatDetails().GetPayloads()
		if a.GetActivityType().GetName() != training.ActivityRunTrainer || len(details) == 0 {
			continue
		}
		var p training.Progress
		if err := dataConverter.FromPayload(details[0], &p); err == nil && p.Epoch == st.Epoch {
			running++
		}
	}
	return st.Epoch, running == ranks
}

// quantile is the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func pct(sorted []time.Duration, q float64) string {
	return quantile(sorted, q).Round(time.Millisecond).String()
}
