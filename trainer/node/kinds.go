package node

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/checkpoint/agent"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/trainer/command"
	trainsim "github.com/schooner-ml/schooner/trainer/sim"
	"github.com/schooner-ml/schooner/training"
)

// runSim runs the simulated trainer against the agent on sock.
func runSim(ctx context.Context, a training.Assignment, st store.Store, sock string, rep *progressReporter, log zerolog.Logger) (training.TrainerResult, error) {
	return trainsim.Run(ctx, trainsim.RunOptions{
		Assignment: a, Dial: trainsim.DialSocket(sock), Store: st, Logger: log,
		OnProgress:  rep.update,
		OnCommitted: func(c training.CheckpointCommitted) { rep.committed(ctx, c) },
	})
}

// commandDurablePoll is how often the command trainer's saver asks its agent which steps are
// durable: the program reports its own progress, but a durable step is what the job restores
// from, so the node checks the store itself.
const commandDurablePoll = time.Second

// runCommand runs the user's program; for a saver it also watches the agent for steps that
// became durable and reports them.
func runCommand(ctx context.Context, a training.Assignment, st store.Store, sock string, grace time.Duration, rep *progressReporter, log zerolog.Logger) (training.TrainerResult, error) {
	if a.Saver {
		if _, err := trainsim.DiscardUncommitted(ctx, st, a.Stage, a.RestoreStep); err != nil {
			return training.NoResult(a.Rank), err
		}
	}
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if a.Saver {
			watchDurable(wctx, a, sock, rep, log)
		}
	}()
	res, err := command.Run(ctx, command.Options{Assignment: a, Socket: sock, Grace: grace, OnProgress: rep.update, Logger: log})
	if err == nil && a.Saver {
		// One last look, so the final step is reported before Run returns.
		reportDurable(ctx, a, sock, rep, &res.LastCheckpoint, log)
	}
	stop()
	<-watched
	return res, err
}

// watchDurable reports newly durable steps until ctx ends.
func watchDurable(ctx context.Context, a training.Assignment, sock string, rep *progressReporter, log zerolog.Logger) {
	last := a.RestoreStep
	t := time.NewTicker(commandDurablePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reportDurable(ctx, a, sock, rep, &last, log)
	}
}

// reportDurable asks the agent for the newest durable step and reports it when it is newer
// than *last.
func reportDurable(ctx context.Context, a training.Assignment, sock string, rep *progressReporter, last *int64, log zerolog.Logger) {
	c, err := agent.Dial(ctx, sock)
	if err != nil {
		return
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil || len(st.RemoteDurable) == 0 {
		if err != nil && ctx.Err() == nil {
			log.Debug().Err(err).Msg("asking the checkpoint agent for durable steps")
		}
		return
	}
	if newest := st.RemoteDurable[0]; newest > *last {
		*last = newest
		rep.committed(ctx, training.CheckpointCommitted{Epoch: a.Epoch, Rank: a.Rank, Step: newest})
	}
}
