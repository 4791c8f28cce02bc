package sim

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// Keys of the extra values every saved shard carries, for people reading a checkpoint and for
// VerifyStep.
const (
	ExtraIteration = "iteration"
	ExtraEpoch     = "epoch"
	ExtraSeed      = "seed"
	ExtraTrainer   = "trainer"
)

// RunOptions is what one simulated trainer runs.
type RunOptions struct {
	// Assignment is the trainer's place in the plan, its restore step and its pace.
	Assignment training.Assignment
	// Dial connects to the node's checkpoint agent.
	Dial Dialer
	// Sleep waits d or until ctx ends (default: a timer); tests pass one that does not sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock the trainer paces itself by (default time.Now).
	Now func() time.Time
	// OnProgress is called after every iteration and whenever a checkpoint becomes durable,
	// from two goroutines (it must be safe for that); it must not block for long (the caller
	// throttles what it sends on).
	OnProgress func(training.Progress)
	// Store is the job's remote store. When set, the saver first discards its stage's shards
	// of steps after RestoreStep that never became durable (see DiscardUncommitted).
	Store store.Store
	// OnCommitted is called, by the saver only, for every step that becomes durable in the
	// remote store.
	OnCommitted func(training.CheckpointCommitted)
	Logger      zerolog.Logger
}

// Run restores the assignment's stage from RestoreStep (unless it is -1), trains to
// a.Iterations and returns once the final state is durable in the remote store (for the
// stage's saver; other replicas return when they reach the last iteration). It returns ctx's
// error when ctx ends first: that is how a preemption or a replan stops it.
func Run(ctx context.Context, o RunOptions) (training.TrainerResult, error) {
	a := o.Assignment
	res := training.NoResult(a.Rank)
	if err := checkAssignment(a); err != nil {
		return res, err
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger.With().Str("job", a.JobID).Int("epoch", a.Epoch).Int("rank", a.Rank).Int("stage", a.Stage).Logger()
	main, err := o.Dial(ctx)
	if err != nil {
		return res, fmt.Errorf("connecting to the checkpoint agent: %w", err)
	}
	defer main.Close()
	// The checkpoint world is the plan's stages: rank = stage index.
	if _, err := main.Hello(ctx, a.Stage, a.Plan); err != nil {
		return res, fmt.Errorf("greeting the checkpoint agent as stage %d: %w", a.Stage, err)
	}
	r := &runner{o: o, a: a, agent: main, log: log}
	r.durable.Store(-1)
	if err := r.restore(ctx); err != nil {
		return res, err
	}
	if a.Saver && o.Store != nil {
		cleaned, err := DiscardUncommitted(ctx, o.Store, a.Stage, a.RestoreStep)
		if err != nil {
			return res, err
		}
		if len(cleaned) > 0 {
			log.Info().Ints64("steps", cleaned).Msg("discarded stale shards an earlier plan left")
		}
	}
	if a.Saver {
		if r.commits, err = startCommitter(ctx, o.Dial, r); err != nil {
			return res, err
		}
		defer r.commits.stop()
	}
	err = r.train(ctx)
	res.FinalIteration, res.LastCheckpoint = r.it, r.durable.Load()
	if err != nil {
		return res, err
	}
	if a.Saver {
		if err := r.finish(ctx); err != nil {
			return res, err
		}
		res.LastCheckpoint = r.durable.Load()
	}
	log.Info().Int64("iteration", r.it).Int64("last_checkpoint", res.LastCheckpoint).Msg("simulated trainer finished")
	return res, nil
}

// runner is one run's mutable state.
type runner struct {
	o       RunOptions
	a       training.Assignment
	agent   Agent
	log     zerolog.Logger
	layers  []*layerState
	it      int64        // the training loop's iteration
	iter    atomic.Int64 // it, for the commit watcher's progress reports
	saved   int64        // newest step this run saved or restored, -1 for none
	noticed bool         // a preemption notice reached the agent
	durable atomic.Int64
	commits *committer
}

// restore loads the stage's layers of RestoreStep by name, whatever plan saved them, or starts
// from the initial state.
func (r *runner) restore(ctx context.Context) error {
	a := r.a
	r.saved = -1
	if a.RestoreStep < 0 {
		for l := a.Layers.First; l < a.Layers.End; l++ {
			r.layers = append(r.layers, freshLayer(a.Seed, l))
		}
		r.log.Info().Msg("simulated trainer starting from scratch")
		return nil
	}
	got, err := r.agent.Load(ctx, agent.LoadRequest{Step: a.RestoreStep, Layers: []int{a.Layers.First, a.Layers.End}})
	if err != nil {
		return fmt.Errorf("restoring step %d for layers [%d,%d): %w", a.RestoreStep, a.Layers.First, a.Layers.End, err)
	}
	if got.Step != a.RestoreStep {
		return fmt.Errorf("restoring step %d: the agent returned step %d", a.RestoreStep, got.Step)
	}
	byName := make(map[string]checkpoint.Tensor, len(got.Tensors))
	for _, t := range got.Tensors {
		byName[t.Name] = t
	}
	for l := a.Layers.First; l < a.Layers.End; l++ {
		s, err := layerFromTensors(l, byName)
		if err != nil {
			return fmt.Errorf("restoring step %d layer %d from %s: %w", a.RestoreStep, l, got.Source, err)
		}
		r.layers = append(r.layers, s)
	}
	r.it, r.saved = got.Step, got.Step
	r.iter.Store(r.it)
	r.durable.Store(got.Step)
	r.log.Info().Int64("step", got.Step).Str("source", got.Source).Int("world_then", got.Plan.World).
		Int("world_now", a.Plan.World).Msg("simulated trainer restored its layers")
	return nil
}

// train runs iterations until the last one, saving on the cadence and on an agent's
// emergency request.
//
// Iteration k ends k iteration times after training started, by the clock, not k sleeps
// later: what the host spends between sleeps (stepping the layers, reporting progress,
// saving a checkpoint) is taken out of the next sleep. A simulated trainer then runs at the
// planner's pace however busy the host is, so a job's simulated time and cost do not grow
// with the load of the machine that simulates it (they did, by up to 15%, when every
// iteration slept its whole time). Checkpoint saves of the simulated trainer therefore cost
// no simulated time unless the host falls behind the schedule.
func (r *runner) train(ctx context.Context) error {
	a := r.a
	wall := iterWall(a)
	r.progress()
	next := r.o.Now()
	for r.it < a.Iterations {
		if a.Saver {
			if err := r.emergencyCheck(ctx); err != nil {
				return err
			}
		}
		next = next.Add(wall)
		if d := next.Sub(r.o.Now()); d > 0 {
			if err := r.o.Sleep(ctx, d); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, l := range r.layers {
			l.step(a.Seed, r.it)
		}
		r.it++
		r.iter.Store(r.it)
		r.progress()
		if a.Saver && a.CheckpointEvery > 0 && r.it%a.CheckpointEvery == 0 && r.it < a.Iterations {
			if err := r.save(ctx, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// emergencyCheck saves when a preemption notice reached the agent. A single-stage plan saves
// at once. With several stages a step is durable only once every stage saved it, and the
// stages' trainers are not in lockstep, so after a notice each saver saves on a dense common
// grid (every emergencyEvery iterations) until the machine goes: the stages meet on the first
// grid step they all reach, however far apart their iterations were when the notice came.
func (r *runner) emergencyCheck(ctx context.Context) error {
	p, err := r.agent.Poll(ctx)
	if err != nil {
		return fmt.Errorf("polling the checkpoint agent: %w", err)
	}
	if p.Deadline.IsZero() {
		return nil
	}
	if !r.noticed {
		r.noticed = true
		r.log.Warn().Int64("iteration", r.it).Time("deadline", p.Deadline).Int64("grid", emergencyEvery(r.a)).
			Msg("preemption notice: emergency checkpoints")
	}
	if r.saved == r.it {
		return nil
	}
	if (r.a.Plan.World == 1 && p.CheckpointNow) || r.it%emergencyEvery(r.a) == 0 {
		return r.save(ctx, true)
	}
	return nil
}

// emergencyEvery is the grid of emergency checkpoints: a fifth of the regular interval, so
// the stages meet within a fraction of a regular interval.
func emergencyEvery(a training.Assignment) int64 {
	return max(1, a.CheckpointEvery/5)
}

// save hands the stage's state at the current iteration to the agent and queues the step for
// the committer; it does not wait for durability.
func (r *runner) save(ctx context.Context, emergency bool) error {
	a := r.a
	shard := checkpoint.Shard{Rank: a.Stage}
	for _, l := range r.layers {
		shard.Tensors = append(shard.Tensors, l.tensors()...)
	}
	extra := map[string]string{
		ExtraIteration: strconv.FormatInt(r.it, 10),
		ExtraEpoch:     strconv.Itoa(a.Epoch),
		ExtraSeed:      strconv.FormatInt(a.Seed, 10),
		ExtraTrainer:   "sim (simulated state)",
	}
	em, err := r.agent.Save(ctx, r.it, shard, extra, emergency)
	if err != nil {
		return fmt.Errorf("saving step %d of stage %d: %w", r.it, a.Stage, err)
	}
	r.saved = r.it
	r.commits.add(ctx, pendingStep{step: r.it, emergency: em})
	return nil
}

// finish saves the final iteration (unless it already is saved) and waits until it is durable.
func (r *runner) finish(ctx context.Context) error {
	if r.saved != r.it {
		if err := r.save(ctx, false); err != nil {
			return err
		}
	}
	if err := r.commits.drain(ctx); err != nil {
		return err
	}
	if d := r.durable.Load(); d < r.it {
		return fmt.Errorf("final step %d of stage %d is not durable (newest durable: %d)", r.it, r.a.Stage, d)
	}
	return nil
}

// progress reports the current iteration and durable step; the training loop and the commit
// watcher both call it.
func (r *runner) progress() {
	if r.o.OnProgress == nil {
		return
	}
	r.o.OnProgress(training.Progress{Epoch: r.a.Epoch, Rank: r.a.Rank, InstanceID: r.a.InstanceID,
		Iteration: r.iter.Load(), LastCheckpoint: r.durable.Load()})
}

// iterWall is the wall time of one iteration: the planner's simulated time over the time scale.
func iterWall(a training.Assignment) time.Duration {
	return cloud.TimeScale(a.TimeScale).Wall(time.Duration(a.IterSeconds * float64(time.Second)))
}

func checkAssignment(a training.Assignment) error {
	switch {
	case a.Layers.First < 0 || a.Layers.End <= a.Layers.First:
		return fmt.Errorf("running the simulated trainer: layers [%d,%d) are empty", a.Layers.First, a.Layers.End)
	case a.Iterations < 0:
		return fmt.Errorf("running the simulated trainer: %d iterations", a.Iterations)
	case a.RestoreStep > a.Iterations:
		return fmt.Errorf("running the simulated trainer: restore step %d is past the last iteration %d", a.RestoreStep, a.Iterations)
	case a.Stage < 0 || a.Plan.World < 1 || a.Stage >= a.Plan.World:
		return fmt.Errorf("running the simulated trainer: stage %d is not in a plan of %d stages", a.Stage, a.Plan.World)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
