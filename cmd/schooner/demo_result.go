//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/report"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
)

// demoStoreURL is the demo's checkpoint store: --store, or a directory of the data dir that
// outlives every simulated machine.
func demoStoreURL(dataDir, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	abs, err := filepath.Abs(filepath.Join(dataDir, "store"))
	if err != nil {
		return "", fmt.Errorf("locating the checkpoint store: %w", err)
	}
	return (&url.URL{Scheme: "file", Path: abs}).String(), nil
}

// leakedInstances counts instances the market still runs for the job, by the job's tag.
func leakedInstances(ctx context.Context, m *sim.Market, jobID string) (int, error) {
	live, err := m.List(ctx, map[string]string{cloud.JobTag: jobID})
	if err != nil {
		return 0, fmt.Errorf("listing instances of %s: %w", jobID, err)
	}
	return len(live), nil
}

// verifyFinalState checks, outside the workflow, that the job's last durable checkpoint is
// the final iteration and equals an uninterrupted simulated run bit for bit. The job checks
// this itself too; the demo does not take its word for it.
func verifyFinalState(ctx context.Context, spec training.Spec, st training.JobStatus) error {
	if spec.Trainer.Kind != training.TrainerSim {
		return fmt.Errorf("only the simulated trainer's state can be verified")
	}
	layers := modelLayers(st)
	if layers == 0 {
		return fmt.Errorf("the job recorded no plan, so no checkpoint to verify")
	}
	s, err := store.Open(ctx, st.CheckpointStore) // the job's own namespace
	if err != nil {
		return fmt.Errorf("opening checkpoint store: %w", err)
	}
	r := &checkpoint.Remote{Store: s}
	steps, err := r.Steps(ctx)
	if err != nil {
		return fmt.Errorf("listing durable checkpoints: %w", err)
	}
	latest := int64(-1)
	for _, si := range steps {
		if si.Durable {
			latest = max(latest, si.Step)
		}
	}
	if latest != spec.Iterations {
		return fmt.Errorf("the latest durable checkpoint is step %d, want the final iteration %d", latest, spec.Iterations)
	}
	return trainsim.VerifyStep(ctx, r, latest, spec.Trainer.Seed, layers)
}

// modelLayers is the model's layer count in the planner's numbering, read from the last plan
// (its last stage ends at the head layer).
func modelLayers(st training.JobStatus) int {
	if len(st.Plans) == 0 {
		return 0
	}
	stages := st.Plans[len(st.Plans)-1].Plan.Stages
	if len(stages) == 0 {
		return 0
	}
	return stages[len(stages)-1].LastLayer + 1
}

// printDemoSummary is the human end of the demo.
func printDemoSummary(out io.Writer, s report.Summary, files report.Files) {
	fmt.Fprintf(out, "\n%s\n", strings.Repeat("─", 72))
	fmt.Fprintf(out, "job %s %s: %d/%d iterations in %.1f s wall (%gx simulated time)\n", s.JobID, strings.ToUpper(s.Status), s.Iterations, s.IterationsTotal, s.WallSeconds, s.TimeScale)
	if s.SavingsBaseline == report.BaselineBestOnDemand {
		fmt.Fprintf(out, "  cost           $%.2f on spot vs $%.2f for the job on its best on-demand plan, start to end (%.1f%% saved)\n", s.CostUSD, s.BestOnDemandCostUSD, s.SavingsPct)
	} else {
		fmt.Fprintf(out, "  cost           $%.2f on spot (no best on-demand plan to compare with)\n", s.CostUSD)
	}
	fmt.Fprintf(out, "                 vs $%.2f for the same machines at on-demand prices (%.1f%% saved)\n", s.HoldingOnDemandCostUSD, s.SavingsVsHoldingPct)
	if s.BilledUSD > 0 {
		fmt.Fprintf(out, "                 billed by the simulated market: $%.2f (the job's own accounting %+.1f%%)\n", s.BilledUSD, s.AccountingOverBillPct())
	}
	fmt.Fprintf(out, "  preemptions    %d survived: %d injected by the demo, %d by the market (%d announced by a notice)\n", s.Preemptions, s.InjectedPreemptions, max(0, s.Preemptions-s.InjectedPreemptions), s.Notices)
	fmt.Fprintf(out, "  replans        %d, %d distinct plans\n", s.Replans, s.DistinctPlans)
	fmt.Fprintf(out, "  checkpoints    %d committed, %d restores, %d iterations redone (goodput %.1f%%)\n", s.CheckpointsCommitted, s.Restores, s.LostIterations, 100*s.Goodput)
	fmt.Fprintf(out, "  time lost      %.1f s wall recovering, %.0f s simulated with redone work\n", s.RecoverySeconds, s.LostSimSeconds)
	verified := "yes, bit for bit against an uninterrupted run"
	if !s.StateVerified {
		verified = "NO: " + s.VerifyError
	}
	fmt.Fprintf(out, "  state verified %s\n", verified)
	fmt.Fprintf(out, "  leaked         %d instances still tagged with the job\n", s.LeakedInstances)
	fmt.Fprintln(out, "  plan history:")
	for _, p := range s.Plans {
		fmt.Fprintf(out, "    epoch %-2d %-11s %2d GPUs from step %-5d %.3f s/iter  $%.2f/h  %s\n", p.Epoch, p.Reason, p.GPUs, p.FromStep, p.IterSeconds, p.USDPerHour, p.Summary)
	}
	fmt.Fprintf(out, "  report         %s\n                 %s\n", files.Markdown, files.Timeline)
}
