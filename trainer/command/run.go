package command

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/internal/defaults"
	"github.com/schooner-ml/schooner/internal/procgroup"
	"github.com/schooner-ml/schooner/training"
)

// DefaultGrace is how long the program has between SIGTERM and SIGKILL when it is cancelled:
// enough to finish an emergency checkpoint hand-over, short enough for a replan.
const DefaultGrace = 10 * time.Second

// Options is what one command trainer runs.
type Options struct {
	Assignment training.Assignment
	// Command is the program and its arguments (the spec's trainer.command when empty).
	Command []string
	// Socket is the checkpoint agent's Unix socket, passed as SCHOONER_CKPT_SOCKET.
	Socket string
	// Batch is passed as SCHOONER_GLOBAL_BATCH and SCHOONER_MICRO_BATCH.
	Batch Batch
	// Dir is the working directory (the node's current one when empty).
	Dir string
	// Grace is the time between SIGTERM and SIGKILL on cancellation (DefaultGrace when 0).
	Grace time.Duration
	// OnProgress receives every progress line, converted to training.Progress.
	OnProgress func(training.Progress)
	// Logger receives the program's other output lines, one log entry each.
	Logger zerolog.Logger
}

// Run runs the program to its end. Exit status 0 is success: the result's FinalIteration is
// the last iteration it reported (a.Iterations when it reported none). When ctx ends, the
// program's process group gets SIGTERM, then SIGKILL after the grace period, and Run returns
// ctx's error once the program is gone.
func Run(ctx context.Context, o Options) (training.TrainerResult, error) {
	a := o.Assignment
	res := training.NoResult(a.Rank)
	argv := o.Command
	if len(argv) == 0 {
		argv = a.Trainer.Command
	}
	if len(argv) == 0 {
		return res, fmt.Errorf("running the command trainer: the spec's trainer has no command")
	}
	defaults.Positive(&o.Grace, DefaultGrace)
	env, err := Environment(a, o.Socket, o.Batch)
	if err != nil {
		return res, err
	}
	log := o.Logger.With().Str("job", a.JobID).Int("epoch", a.Epoch).Int("rank", a.Rank).Str("program", argv[0]).Logger()

	var mu sync.Mutex
	reported := false
	stdout := &lineWriter{fn: func(line string) {
		p, ok, err := ParseProgress(line)
		switch {
		case err != nil:
			log.Warn().Err(err).Msg("bad progress line from the trainer program")
		case ok:
			mu.Lock()
			reported = true
			res.FinalIteration = p.Iteration
			if p.LastCheckpoint != nil {
				res.LastCheckpoint = *p.LastCheckpoint
			}
			prog := training.Progress{Epoch: a.Epoch, Rank: a.Rank, InstanceID: a.InstanceID,
				Iteration: p.Iteration, LastCheckpoint: res.LastCheckpoint}
			mu.Unlock()
			if o.OnProgress != nil {
				o.OnProgress(prog)
			}
		default:
			log.Info().Str("stream", "stdout").Msg(line)
		}
	}}
	stderr := &lineWriter{fn: func(line string) { log.Info().Str("stream", "stderr").Msg(line) }}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, o.Dir, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// WaitDelay lets Wait return even if a grandchild keeps the output pipes open after the
	// program is gone.
	cmd.WaitDelay = o.Grace + time.Second
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting trainer program %s: %w", argv[0], err)
	}
	log.Info().Int("pid", cmd.Process.Pid).Msg("trainer program started")
	exited := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		killGroupOnCancel(ctx, cmd.Process.Pid, o.Grace, exited, log)
	}()
	werr := cmd.Wait()
	close(exited)
	<-stopped
	// Whatever the program left in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	stdout.flush()
	stderr.flush()

	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return res, fmt.Errorf("trainer program %s failed: %w", argv[0], werr)
		}
		return res, fmt.Errorf("waiting for trainer program %s: %w", argv[0], werr)
	}
	if !reported {
		res.FinalIteration = a.Iterations
	}
	log.Info().Int64("iteration", res.FinalIteration).Msg("trainer program finished")
	return res, nil
}

// killGroupOnCancel sends the process group SIGTERM when ctx ends and SIGKILL after grace,
// unless the program exits first.
func killGroupOnCancel(ctx context.Context, pid int, grace time.Duration, exited <-chan struct{}, log zerolog.Logger) {
	select {
	case <-exited:
		return
	case <-ctx.Done():
	}
	log.Info().Dur("grace", grace).Msg("stopping trainer program: SIGTERM to its process group")
	if procgroup.Terminate(pid, grace, exited) {
		log.Warn().Msg("trainer program outlived its grace period: SIGKILL to its process group")
	}
}
