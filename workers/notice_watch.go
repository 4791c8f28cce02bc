package workers

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// NoticeWatch is the node agent's ear on its own machine: it polls the cloud's instance
// metadata (AWS IMDS spot/instance-action, the GCE metadata server's preempted flag) and, when
// a preemption is announced, passes it to the checkpoint agents of the trainers running here
// (they ask their savers for an emergency checkpoint) and tells each job concerned, as the
// simulated nodes of `schooner dev` do from the market. Without it a node agent in its own
// process learnt of a preemption only when its job did, through the control plane's relay,
// and the job restored from its last periodic checkpoint.
type NoticeWatch struct {
	// NodeID is this machine's instance id, as the jobs know it.
	NodeID  string
	Watcher cloud.InterruptionWatcher
	// Trainers hears the notice (node.Supervisor): it returns the jobs it runs trainers of.
	Trainers interface {
		Notice(deadline time.Time) []string
	}
	// Reporter signals the jobs (Reporter).
	Reporter interface {
		Notice(ctx context.Context, jobID string, n training.PreemptionNotice) error
	}
	// Every is the poll interval (default a second: EC2 gives two minutes of notice).
	Every  time.Duration
	Logger zerolog.Logger
}

// Run polls until ctx ends. While a notice stands it passes it to the trainers at every poll
// (one started after the notice hears it too) and tells each job once.
func (w *NoticeWatch) Run(ctx context.Context) error {
	every := w.Every
	if every <= 0 {
		every = time.Second
	}
	told := map[string]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		w.poll(ctx, told)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// poll asks the metadata once and acts on a notice.
func (w *NoticeWatch) poll(ctx context.Context, told map[string]bool) {
	intr, err := w.Watcher.Poll(ctx)
	if err != nil {
		w.Logger.Debug().Err(err).Msg("polling the instance metadata for a preemption notice")
		return
	}
	if intr == nil {
		return
	}
	jobs := w.Trainers.Notice(intr.Deadline)
	note := training.PreemptionNotice{InstanceID: w.NodeID, Kind: intr.Kind, Deadline: intr.Deadline}
	if note.Kind == "" {
		note.Kind = cloud.Notice
	}
	for _, job := range jobs {
		key := job + "/" + string(note.Kind)
		if told[key] {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.Reporter.Notice(rctx, job, note)
		cancel()
		if err != nil {
			w.Logger.Warn().Err(err).Str("job", job).Msg("telling the job of this machine's preemption notice")
			continue
		}
		told[key] = true
		w.Logger.Warn().Str("node", w.NodeID).Str("job", job).Str("kind", string(note.Kind)).Time("deadline", intr.Deadline).
			Msg("preemption notice on this machine: told the job, emergency checkpoint asked")
	}
}
