package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// Reporter carries what a trainer learns to its job. It is an interface so this package does
// not depend on how the job hears it (package workers signals the TrainingJob workflow) and
// tests can record the reports.
type Reporter interface {
	Progress(ctx context.Context, jobID string, p training.Progress) error
	Committed(ctx context.Context, jobID string, c training.CheckpointCommitted) error
}

// Heartbeat receives a run's latest progress every HeartbeatEvery (and once more at its end),
// so whoever started the run can show it is alive; the RunTrainer activity records a Temporal
// heartbeat. It must not block.
type Heartbeat func(training.Progress)

// Defaults of Supervisor's cadences: heartbeats well inside the shortest heartbeat timeout a
// job uses, progress signals rare enough that 50 jobs of 16 ranks do not flood the server.
const (
	DefaultHeartbeatEvery = 500 * time.Millisecond
	DefaultProgressEvery  = 2 * time.Second
	reportTimeout         = 5 * time.Second
	shutdownGrace         = 500 * time.Millisecond
)

// Errors of Run, checked with errors.Is.
var (
	// ErrBadAssignment marks an assignment this node cannot run: running it again cannot help.
	ErrBadAssignment = errors.New("bad assignment")
	// ErrStopped marks a run its job stopped through Stop (a newer epoch takes its place).
	ErrStopped = errors.New("trainer stopped for a newer epoch")
	// ErrVanished marks a run ended by Kill: a vanished machine answers nothing, so the caller
	// must report no result and no failure.
	ErrVanished = errors.New("node killed")
)

// runError is an error of one class (ErrBadAssignment, ErrStopped) whose message is its own.
type runError struct {
	class error
	msg   string
}

func (e *runError) Error() string        { return e.msg }
func (e *runError) Is(target error) bool { return target == e.class }

func badAssignment(format string, args ...any) error {
	return &runError{class: ErrBadAssignment, msg: fmt.Sprintf(format, args...)}
}

// Supervisor runs the trainers the jobs assign to one machine, each with its own checkpoint
// agent. One Supervisor serves every job on the node; its zero value needs only NodeID.
type Supervisor struct {
	// NodeID is the machine's instance id; DataDir holds its checkpoint agents' local tiers
	// (<DataDir>/<job>/epoch-<E>/rank-<R>; a directory under os.TempDir when empty).
	NodeID  string
	DataDir string
	// AllowedCommands are the command prefixes a job's command trainer may run on this node
	// (see allow.go); none means command trainers are refused. Set by the node's operator,
	// never by a spec: whoever may start a workflow writes specs.
	AllowedCommands []string
	// Reporter signals progress and committed checkpoints to the job; nil reports nothing
	// (heartbeats still carry progress).
	Reporter Reporter
	// OpenStore opens the job's checkpoint store URL (default store.Open).
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// ShmDir is where the agents put shared-memory files (the agent's default when empty).
	ShmDir string
	// StoreRoots are the only directories a job's file:// checkpoint store may be in (checked
	// after cleaning the path and resolving symbolic links; store.Confine). nil means
	// store.DefaultRoots(DataDir): the data directory, /var/lib/schooner and the OS temporary
	// directory. s3:// stores are not affected.
	StoreRoots []string
	// HeartbeatEvery and ProgressEvery are the cadences of heartbeats and progress signals
	// (DefaultHeartbeatEvery, DefaultProgressEvery when 0).
	HeartbeatEvery time.Duration
	ProgressEvery  time.Duration
	// CommandGrace is the command trainer's SIGTERM-to-SIGKILL grace (its default when 0).
	CommandGrace time.Duration
	Logger       zerolog.Logger

	mu     sync.Mutex
	runs   map[*run]struct{}
	killed bool
}

// run is one Run in progress on this node.
type run struct {
	a      training.Assignment
	agent  *agent.Agent
	cancel context.CancelFunc
	// stopped is set by Stop before it cancels the run.
	stopped atomic.Bool
}

// Run runs one trainer of an assignment to its end: it starts a checkpoint agent for it
// (local tier under DataDir, remote tier the job's store), runs the simulated trainer or the
// user's command against it, passes progress to hb, and signals progress and durable
// checkpoints to the job. It returns once the final iteration is durable (for a stage's
// saver); ctx's error when ctx ends first; an ErrStopped error when Stop ended it; an
// ErrBadAssignment error for an assignment it cannot run; and, after Kill, ErrVanished.
func (s *Supervisor) Run(ctx context.Context, a training.Assignment, hb Heartbeat) (training.TrainerResult, error) {
	res := training.NoResult(a.Rank)
	if err := checkRunnable(a); err != nil {
		return res, err
	}
	log := s.Logger.With().Str("node", s.NodeID).Str("job", a.JobID).Int("epoch", a.Epoch).Int("rank", a.Rank).Logger()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := s.openStore(runCtx, a.Store)
	if err != nil {
		return res, err
	}
	ag, sock, cleanup, err := s.startAgent(a, st, log)
	if err != nil {
		return res, err
	}
	r := &run{a: a, agent: ag, cancel: cancel}
	if !s.track(r) {
		cleanup(false)
		return res, fmt.Errorf("running rank %d of %s: node %s was killed", a.Rank, a.JobID, s.NodeID)
	}
	defer s.untrack(r)

	rep := newProgressReporter(s, a, hb, log)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		rep.loop(runCtx, ctx)
	}()
	log.Info().Str("trainer", a.Trainer.Kind).Int64("restore_step", a.RestoreStep).Int64("iterations", a.Iterations).
		Bool("saver", a.Saver).Msg("trainer starting")
	res, err = s.runKind(runCtx, a, st, sock, rep, log)
	cancel()
	<-hbDone

	if s.isKilled() {
		// A dead machine answers nothing: no result, no failure. The job learns of it by the
		// heartbeat timeout and the provider, exactly as with a real lost machine.
		cleanup(false)
		return res, ErrVanished
	}
	if ctx.Err() != nil {
		cleanup(true)
		log.Info().Int64("iteration", res.FinalIteration).Msg("trainer stopped by its job")
		return res, ctx.Err()
	}
	if r.stopped.Load() {
		cleanup(true)
		log.Info().Int64("iteration", res.FinalIteration).Msg("trainer stopped by its job (a newer epoch)")
		return res, &runError{class: ErrStopped,
			msg: fmt.Sprintf("rank %d of %s epoch %d stopped by its job for a newer epoch", a.Rank, a.JobID, a.Epoch)}
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
func (s *Supervisor) runKind(ctx context.Context, a training.Assignment, st store.Store, sock string, rep *progressReporter, log zerolog.Logger) (training.TrainerResult, error) {
	switch a.Trainer.Kind {
	case "", training.TrainerSim:
		return runSim(ctx, a, st, sock, rep, log)
	case training.TrainerCommand:
		if err := checkCommand(a.Trainer.Command, a.Trainer.Env, s.AllowedCommands); err != nil {
			return training.NoResult(a.Rank), err
		}
		return runCommand(ctx, a, st, sock, s.CommandGrace, rep, log)
	}
	return training.NoResult(a.Rank), badAssignment("unknown trainer kind %q", a.Trainer.Kind)
}

func checkRunnable(a training.Assignment) error {
	switch {
	case a.JobID == "":
		return badAssignment("assignment without a job id")
	case a.Store == "":
		return badAssignment("assignment of rank %d has no checkpoint store", a.Rank)
	case a.Plan.World < 1 || a.Stage < 0 || a.Stage >= a.Plan.World:
		return badAssignment("assignment of rank %d: stage %d is not in a plan of %d stages", a.Rank, a.Stage, a.Plan.World)
	}
	return nil
}
