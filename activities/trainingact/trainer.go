package trainingact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// JobReporter carries what a trainer learns to its job (package workers signals the
// TrainingJob workflow). It is an interface so this package does not depend on the workflows
// and tests can record the reports.
type JobReporter interface {
	Progress(ctx context.Context, jobID string, p training.Progress) error
	Committed(ctx context.Context, jobID string, c training.CheckpointCommitted) error
	Notice(ctx context.Context, jobID string, n training.PreemptionNotice) error
}

// Defaults of Trainer's cadences: heartbeats well inside the shortest heartbeat timeout a job
// uses, progress signals rare enough that 50 jobs of 16 ranks do not flood the server.
const (
	DefaultHeartbeatEvery = 500 * time.Millisecond
	DefaultProgressEvery  = 2 * time.Second
	reportTimeout         = 5 * time.Second
	shutdownGrace         = 500 * time.Millisecond
)

// ErrTypeBadAssignment is the Temporal error type of an assignment a trainer cannot run; it
// is not retryable.
const ErrTypeBadAssignment = "BadAssignment"

// ErrTypeTrainerStopped is the Temporal error type of a trainer its job stopped through
// StopTrainers (a newer epoch takes its place).
const ErrTypeTrainerStopped = "TrainerStopped"

// Trainer holds the RunTrainer activity of one node: it runs the trainers the job assigns to
// this machine, each with its own checkpoint agent. One Trainer serves every job on the node.
type Trainer struct {
	// NodeID is the machine's instance id; DataDir holds its checkpoint agents' local tiers
	// (<DataDir>/<job>/epoch-<E>/rank-<R>).
	NodeID  string
	DataDir string
	// Reporter signals progress and committed checkpoints to the job; nil reports nothing
	// (heartbeats still carry progress).
	Reporter JobReporter
	// OpenStore opens the job's checkpoint store URL (default store.Open).
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// ShmDir is where the agents put shared-memory files (the agent's default when empty).
	ShmDir string
	// HeartbeatEvery and ProgressEvery are the cadences of heartbeats and progress signals
	// (DefaultHeartbeatEvery, DefaultProgressEvery when 0).
	HeartbeatEvery time.Duration
	ProgressEvery  time.Duration
	// CommandGrace is the command trainer's SIGTERM-to-SIGKILL grace (its default when 0).
	CommandGrace time.Duration
	Logger       zerolog.Logger

	mu     sync.Mutex
	runs   map[*trainerRun]struct{}
	killed bool
}

// trainerRun is one RunTrainer in progress on this node.
type trainerRun struct {
	a      training.Assignment
	agent  *agent.Agent
	cancel context.CancelFunc
	// stopped is set by StopTrainers before it cancels the run.
	stopped atomic.Bool
}

// RunTrainer runs one trainer of an assignment to its end: it starts a checkpoint agent for
// it (local tier under DataDir, remote tier the job's store), runs the simulated trainer or
// the user's command against it, heartbeats training.Progress, and signals progress and
// durable checkpoints to the job. It returns once the final iteration is durable (for a
// stage's saver), ctx's error when the job cancels it, and, after Kill, no result at all.
func (t *Trainer) RunTrainer(ctx context.Context, a training.Assignment) (training.TrainerResult, error) {
	res := training.NoResult(a.Rank)
	if err := checkRunnable(a); err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadAssignment, err)
	}
	log := t.Logger.With().Str("node", t.NodeID).Str("job", a.JobID).Int("epoch", a.Epoch).Int("rank", a.Rank).Logger()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := t.openStore(runCtx, a.Store)
	if err != nil {
		return res, err
	}
	ag, sock, cleanup, err := t.startAgent(a, st, log)
	if err != nil {
		return res, err
	}
	run := &trainerRun{a: a, agent: ag, cancel: cancel}
	if !t.track(run) {
		cleanup(false)
		return res, fmt.Errorf("running rank %d of %s: node %s was killed", a.Rank, a.JobID, t.NodeID)
	}
	defer t.untrack(run)

	rep := newProgressReporter(t, a, log)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		rep.loop(runCtx, ctx)
	}()
	log.Info().Str("trainer", a.Trainer.Kind).Int64("restore_step", a.RestoreStep).Int64("iterations", a.Iterations).
		Bool("saver", a.Saver).Msg("trainer starting")
	res, err = t.runKind(runCtx, a, st, sock, rep, log)
	cancel()
	<-hbDone

	if t.isKilled() {
		// A dead machine answers nothing: no result, no failure. The job learns of it by the
		// heartbeat timeout and the provider, exactly as with a real lost machine.
		cleanup(false)
		return res, activity.ErrResultPending
	}
	if ctx.Err() != nil {
		cleanup(true)
		log.Info().Int64("iteration", res.FinalIteration).Msg("trainer stopped by its job")
		return res, ctx.Err()
	}
	if run.stopped.Load() {
		cleanup(true)
		log.Info().Int64("iteration", res.FinalIteration).Msg("trainer stopped by its job (a newer epoch)")
		msg := fmt.Sprintf("rank %d of %s epoch %d stopped by its job for a newer epoch", a.Rank, a.JobID, a.Epoch)
		return res, temporal.NewNonRetryableApplicationError(msg, ErrTypeTrainerStopped, nil)
	}
	cleanup(true)
	if err != nil {
		log.Error().Err(err).Msg("trainer failed")
		return res, err
	}
	rep.final(ctx, res)
	return res, nil
}

// runKind runs the trainer the assignment's spec names.
func (t *Trainer) runKind(ctx context.Context, a training.Assignment, st store.Store, sock string, rep *progressReporter, log zerolog.Logger) (training.TrainerResult, error) {
	switch a.Trainer.Kind {
	case "", training.TrainerSim:
		return runSim(ctx, a, st, sock, rep, log)
	case training.TrainerCommand:
		return runCommand(ctx, a, st, sock, t.CommandGrace, rep, log)
	}
	return training.NoResult(a.Rank),
		temporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown trainer kind %q", a.Trainer.Kind), ErrTypeBadAssignment, nil)
}

// startAgent starts the assignment's checkpoint agent on a fresh local directory and a Unix
// socket in a short temporary directory (socket paths are limited to about 100 bytes).
// cleanup stops it (graceful: let in-flight uploads finish for a short grace) and removes its
// local files.
func (t *Trainer) startAgent(a training.Assignment, st store.Store, log zerolog.Logger) (*agent.Agent, string, func(graceful bool), error) {
	jobDir := filepath.Join(t.dataDir(), safeName(a.JobID))
	t.removeOldEpochs(jobDir, a.JobID, a.Epoch, log)
	dir := filepath.Join(jobDir, "epoch-"+strconv.Itoa(a.Epoch), "rank-"+strconv.Itoa(a.Rank))
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", nil, fmt.Errorf("clearing checkpoint directory %s: %w", dir, err)
	}
	ag, err := agent.New(agent.Options{Dir: dir, ShmDir: t.ShmDir, Store: st, Logger: log})
	if err != nil {
		return nil, "", nil, fmt.Errorf("starting the checkpoint agent of rank %d: %w", a.Rank, err)
	}
	sockDir, err := os.MkdirTemp("", "schooner-ckpt")
	if err != nil {
		_ = ag.Close()
		return nil, "", nil, fmt.Errorf("creating the checkpoint agent's socket directory: %w", err)
	}
	sock := filepath.Join(sockDir, "agent.sock")
	l, err := agent.Listen(sock)
	if err != nil {
		_ = ag.Close()
		_ = os.RemoveAll(sockDir)
		return nil, "", nil, fmt.Errorf("starting the checkpoint agent of rank %d: %w", a.Rank, err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := ag.Serve(l); err != nil {
			log.Warn().Err(err).Msg("checkpoint agent stopped serving")
		}
	}()
	cleanup := func(graceful bool) {
		if graceful {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			if err := ag.Shutdown(sctx); err != nil {
				log.Warn().Err(err).Msg("checkpoint agent shut down with uploads unfinished")
			}
			cancel()
		} else {
			_ = ag.Close()
		}
		<-served
		_ = os.RemoveAll(sockDir)
		_ = os.RemoveAll(dir)
	}
	return ag, sock, cleanup, nil
}

// openStore opens the job's checkpoint store.
func (t *Trainer) openStore(ctx context.Context, url string) (store.Store, error) {
	open := t.OpenStore
	if open == nil {
		open = func(ctx context.Context, url string) (store.Store, error) { return store.Open(ctx, url) }
	}
	st, err := open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoint store %s: %w", url, err)
	}
	return st, nil
}

// removeOldEpochs deletes local tiers of earlier epochs of the job: a new plan restores from
// the remote store, and stale local steps would only take disk.
func (t *Trainer) removeOldEpochs(jobDir, jobID string, epoch int, log zerolog.Logger) {
	entries, err := os.ReadDir(jobDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n, ok := cutInt(e.Name(), "epoch-")
		if ok && n < epoch && !t.epochInUse(jobID, n) {
			if err := os.RemoveAll(filepath.Join(jobDir, e.Name())); err != nil {
				log.Warn().Err(err).Str("dir", e.Name()).Msg("removing an old epoch's checkpoints")
			}
		}
	}
}

func (t *Trainer) dataDir() string {
	if t.DataDir != "" {
		return t.DataDir
	}
	return filepath.Join(os.TempDir(), "schooner-node-"+safeName(t.NodeID))
}

func checkRunnable(a training.Assignment) error {
	switch {
	case a.JobID == "":
		return fmt.Errorf("assignment without a job id")
	case a.Store == "":
		return fmt.Errorf("assignment of rank %d has no checkpoint store", a.Rank)
	case a.Plan.World < 1 || a.Stage < 0 || a.Stage >= a.Plan.World:
		return fmt.Errorf("assignment of rank %d: stage %d is not in a plan of %d stages", a.Rank, a.Stage, a.Plan.World)
	}
	return nil
}

// safeName keeps a job or node id usable as one path element.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_"
	}
	return string(b)
}

func cutInt(s, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// sortedJobs lists distinct job ids in order.
func sortedJobs(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}
