package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/schooner-ml/schooner/checkpoint"
)

// verifyTarget is one step to verify and, for an incomplete remote step, the ranks it has.
type verifyTarget struct {
	step    int64
	durable bool
	ranks   []int // nil: ranks 0..World-1 of the step's plan
	world   int
}

func newCkptVerifyCommand(g *globals) *cobra.Command {
	var url string
	var step int64
	var all bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Read every shard of a checkpoint and check all its checksums",
		Long: `verify downloads every rank's shard of a step and checks the metadata against the step's
COMMIT and every chunk's CRC-32C and the whole shard's. It prints one line per shard (OK,
CORRUPT or MISSING, with the reason) and exits non-zero if any shard of a durable step fails.

By default it verifies the newest durable step; --step picks one, --all every step in the
store, incomplete ones included (their missing ranks are reported, not counted as failures).

  schooner ckpt verify --store s3://ckpts/job-7
  schooner ckpt verify --store s3://ckpts/job-7 --step 1200
  schooner ckpt verify --store file:///mnt/nfs/ckpt --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all && cmd.Flags().Changed("step") {
				return errors.New("--step and --all exclude each other")
			}
			src, remote, _, err := openCkptSource(cmd, g, url)
			if err != nil {
				return err
			}
			targets, err := verifyTargets(cmd.Context(), src, remote, step, all)
			if err != nil {
				return err
			}
			for i, t := range targets {
				// The COMMIT names every rank, so a corrupt rank 0 does not hide the others.
				if c, err := commitOf(cmd.Context(), remote, t); err == nil {
					targets[i].world = c.World
				}
			}
			return runVerify(cmd.Context(), cmd.OutOrStdout(), src, targets)
		},
	}
	cmd.Flags().StringVar(&url, "store", "", storeFlagHelp)
	cmd.Flags().Int64Var(&step, "step", -1, "the step to verify (default: the newest durable step)")
	cmd.Flags().BoolVar(&all, "all", false, "verify every step in the store, incomplete ones included")
	return cmd
}

// verifyTargets decides which steps to read.
func verifyTargets(ctx context.Context, src checkpoint.Source, remote *checkpoint.Remote, step int64, all bool) ([]verifyTarget, error) {
	switch {
	case all && remote != nil:
		infos, err := remote.Steps(ctx)
		if err != nil {
			return nil, err
		}
		var ts []verifyTarget
		for _, in := range infos {
			t := verifyTarget{step: in.Step, durable: in.Durable, world: in.World}
			if !in.Durable {
				t.ranks = in.Ranks
			}
			ts = append(ts, t)
		}
		return ts, nil
	case all:
		steps, err := src.DurableSteps(ctx)
		if err != nil {
			return nil, err
		}
		var ts []verifyTarget
		for _, s := range sortedDesc(steps) {
			ts = append(ts, verifyTarget{step: s, durable: true})
		}
		return ts, nil
	case step >= 0:
		return []verifyTarget{{step: step, durable: true}}, nil
	}
	steps, err := src.DurableSteps(ctx)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s holds no durable checkpoint", src)
	}
	return []verifyTarget{{step: sortedDesc(steps)[0], durable: true}}, nil
}

// runVerify reads each target's shards, printing a line per shard, and fails if any shard of
// a durable step is corrupt or missing.
func runVerify(ctx context.Context, out io.Writer, src checkpoint.Source, targets []verifyTarget) error {
	var checked, failed int
	for _, t := range targets {
		ranks := t.ranks
		if ranks == nil {
			ranks = []int{0} // the rest follow from rank 0's plan
		}
		world := t.world
		for i := 0; i < len(ranks); i++ {
			rank := ranks[i]
			start := time.Now()
			_, meta, err := src.ReadShard(ctx, t.step, rank)
			checked++
			switch {
			case err == nil:
				fmt.Fprintf(out, "step %d rank %d: OK (%s, %d chunks, %.1fs)\n", t.step, rank, humanBytes(meta.Size), len(meta.Chunks), time.Since(start).Seconds())
				world = max(world, meta.Plan.World)
			case errors.Is(err, checkpoint.ErrCorrupt):
				failed++
				fmt.Fprintf(out, "step %d rank %d: CORRUPT: %v\n", t.step, rank, err)
			case errors.Is(err, checkpoint.ErrNoCheckpoint):
				if t.durable {
					failed++
				}
				fmt.Fprintf(out, "step %d rank %d: MISSING: %v\n", t.step, rank, err)
			default:
				return fmt.Errorf("verifying step %d rank %d: %w", t.step, rank, err)
			}
			if t.ranks == nil && i == len(ranks)-1 {
				for r := len(ranks); r < world; r++ {
					ranks = append(ranks, r)
				}
			}
		}
		if !t.durable && world > 0 {
			fmt.Fprintf(out, "step %d: incomplete, %d of %d ranks uploaded\n", t.step, len(t.ranks), world)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d shards failed verification", failed, checked)
	}
	fmt.Fprintf(out, "all %d shards verified\n", checked)
	return nil
}

// commitOf reads a durable remote step's COMMIT.
func commitOf(ctx context.Context, remote *checkpoint.Remote, t verifyTarget) (checkpoint.StepCommit, error) {
	if remote == nil || !t.durable || t.world > 0 {
		return checkpoint.StepCommit{}, errors.New("no commit to read")
	}
	return remote.Commit(ctx, t.step)
}
