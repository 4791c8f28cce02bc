package workers

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/activities/trainingact"
	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/training"
)

// PreemptionRelay tells a job at once when the provider reports one of its instances
// preempted. A preempted machine cannot say so itself (its node agent dies with it), so
// without the relay a job learns of the loss only at its next instance poll or when the
// trainer's heartbeat times out. This is the control-plane side of interruption handling, the
// way Karpenter follows EC2 state-change events through EventBridge and SQS: the provider's
// event log is read here, in the control process, and each preemption becomes a
// preemption-notice signal of kind "preempted". The job still confirms it with the provider
// before acting, so a wrong event costs one Describe, never a healthy machine.
//
// The simulated market is an event source (cloud.EventSource); the AWS and GCP adapters are
// not yet, so on a real cloud jobs rely on the node agents' notices and the instance poll.
type PreemptionRelay struct {
	Source   cloud.EventSource
	Reporter trainingact.JobReporter
	// After is the Seq of the last event not to relay: the log before the relay started
	// (sim.Market.LastSeq), whose jobs, if any, have long been told by their own polls.
	After int64
	// PollInterval is how often the event log is read (50 ms when 0).
	PollInterval time.Duration
	Logger       zerolog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start relays the events after After until Stop or ctx ends.
func (r *PreemptionRelay) Start(ctx context.Context) {
	if r.PollInterval <= 0 {
		r.PollInterval = 50 * time.Millisecond
	}
	ctx, r.cancel = context.WithCancel(ctx)
	startPolling(ctx, &r.wg, r.PollInterval, r.Relay)
}

// Stop stops relaying and waits for the signals in flight.
func (r *PreemptionRelay) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
}

// Relay reads the events after the last one seen and signals each preemption of a job's
// instance to that job. Start calls it on a ticker; tests call it directly.
func (r *PreemptionRelay) Relay(ctx context.Context) {
	events := r.Source.EventsSince(r.After)
	if len(events) == 0 {
		return
	}
	r.After = events[len(events)-1].Seq
	for _, e := range events {
		if e.Kind != cloud.EventPreempted || e.Instance.JobID == "" {
			continue
		}
		note := training.PreemptionNotice{InstanceID: e.Instance.ID, Kind: cloud.Preempted}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := r.Reporter.Notice(sctx, e.Instance.JobID, note)
		cancel()
		if err != nil {
			// A job that already ended (or a signal the server refused) is not the relay's
			// business: the job's own poll catches what a lost signal would have told it.
			r.Logger.Debug().Err(err).Str("job", e.Instance.JobID).Str("instance", e.Instance.ID).Msg("relaying a preemption")
			continue
		}
		r.Logger.Info().Str("job", e.Instance.JobID).Str("instance", e.Instance.ID).Str("zone", e.Instance.Zone).Msg("relayed a preemption reported by the provider")
	}
}
