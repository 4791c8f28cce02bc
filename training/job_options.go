package training

import (
	"time"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/internal/defaults"
)

// JobOptions tunes a job's control loop. Durations marked wall are workflow (wall) time;
// those marked simulated are converted with the job's TimeScale, so a demo at 60× and a real
// cloud at 1× steer the same way. Zero fields take the defaults below.
type JobOptions struct {
	// HeartbeatTimeout (wall, default 10 s): a trainer silent this long is suspected lost and
	// confirmed with the provider.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// ScheduleToStartTimeout (wall, default 2 min): a trainer task no node picked up by then
	// is treated like a heartbeat timeout (its machine is gone or stuck).
	ScheduleToStartTimeout time.Duration `json:"schedule_to_start_timeout,omitempty"`
	// WarmScheduleToStartTimeout (wall, default 3 × HeartbeatTimeout) replaces it for a
	// machine whose node agent already ran a trainer of this job: a live agent picks a task
	// up at once, so a relaunch that waits longer means the agent died while the machine
	// runs on, and the machine is replaced.
	WarmScheduleToStartTimeout time.Duration `json:"warm_schedule_to_start_timeout,omitempty"`
	// PollInterval (wall, default 3 s, or a minute of the provider's time when that is
	// shorter: see ScaledTo): how often held instances are described, to catch a machine lost
	// without a notice, and the deadline and budget are checked.
	PollInterval time.Duration `json:"poll_interval,omitempty"`
	// UnavailableTTL (simulated, default 3 min): how long a short offering is left out.
	UnavailableTTL time.Duration `json:"unavailable_ttl,omitempty"`
	// AvoidZoneTTL (simulated, default 10 min): how long a zone that just preempted is
	// avoided (a zone that preempts tends to preempt again soon).
	AvoidZoneTTL time.Duration `json:"avoid_zone_ttl,omitempty"`
	// RetryWait (wall, default 5 s, or two minutes of the provider's time when that is
	// shorter): the wait before planning again when nothing fits.
	RetryWait time.Duration `json:"retry_wait,omitempty"`
	// ScaleUpEvery (simulated, default 10 min): how often a running job plans again on what
	// it holds plus what is offered, to move to a plan at least 25% better on capacity that
	// came back; the better plan must also save at least this much time over the rest of
	// the run.
	ScaleUpEvery time.Duration `json:"scale_up_every,omitempty"`
	// MaxAcquireRounds (default 3): plan → acquire rounds before planning on what is held.
	MaxAcquireRounds int `json:"max_acquire_rounds,omitempty"`
	// MaxWaitForCapacity (simulated, default 6 h): how long a job that finds no plan waits for
	// capacity, from the first round that found none, before it fails. It is provider time so
	// the same spec survives the same drought at any time scale (a count of wall-clock rounds
	// made a real cloud give up after 5 minutes and a 120× demo after 10 simulated hours).
	MaxWaitForCapacity time.Duration `json:"max_wait_for_capacity,omitempty"`
	// HoldWhileWaiting (simulated, default 10 min): how long a job that finds no plan keeps the
	// machines it holds (survivors of a loss, what a short acquisition got) before it gives
	// them back and buys anew once a plan fits. Held, they are billed while nothing runs on
	// them; given back, the next plan pays a boot and a relaunch (about 4–5 minutes) and
	// may not find them again. Holding for about twice that bounds what waiting can cost to
	// a few times what a restart does, whether the drought lasts minutes or hours.
	HoldWhileWaiting time.Duration `json:"hold_while_waiting,omitempty"`
	// MaxPlanFailures (default 0: no limit but MaxWaitForCapacity): consecutive rounds with no
	// plan before the job fails. Runs recorded before MaxWaitForCapacity existed count rounds
	// only, 60 when this is zero.
	MaxPlanFailures int `json:"max_plan_failures,omitempty"`
	// MaxTrainerFailures (default 5): consecutive trainer failures on live machines, with no
	// new checkpoint in between, before the job fails.
	MaxTrainerFailures int `json:"max_trainer_failures,omitempty"`
	// ContinueAsNewAfter (default 0: only when the server suggests it) continues as new
	// after this many events in one run; tests use it.
	ContinueAsNewAfter int `json:"continue_as_new_after,omitempty"`
}

// WithDefaults fills the zero fields.
func (o JobOptions) WithDefaults() JobOptions {
	defaults.Positive(&o.HeartbeatTimeout, 10*time.Second)
	defaults.Positive(&o.ScheduleToStartTimeout, 2*time.Minute)
	defaults.Positive(&o.WarmScheduleToStartTimeout, 3*o.HeartbeatTimeout)
	defaults.Positive(&o.PollInterval, 3*time.Second)
	defaults.Positive(&o.UnavailableTTL, 3*time.Minute)
	defaults.Positive(&o.AvoidZoneTTL, 10*time.Minute)
	defaults.Positive(&o.RetryWait, 5*time.Second)
	defaults.Positive(&o.MaxAcquireRounds, 3)
	defaults.Positive(&o.ScaleUpEvery, 10*time.Minute)
	defaults.Positive(&o.MaxWaitForCapacity, 6*time.Hour)
	defaults.Positive(&o.HoldWhileWaiting, 10*time.Minute)
	defaults.Positive(&o.MaxTrainerFailures, 5)
	return o
}

// ScaledTo fills the PollInterval and RetryWait the caller left zero from the provider's
// time scale: a minute and two minutes of the provider's time, no longer than the wall
// defaults (3 s, 5 s) and no shorter than minWallPoll. With wall-clock constants alone a
// simulated market at 240× noticed a machine lost without notice up to 12 simulated minutes
// late and waited 20 simulated minutes between plans, so the same job cost more the faster
// it was simulated; now it checks as often, in the provider's time, at any scale above 3×.
// Fields the caller set are kept; the rest take WithDefaults.
func (o JobOptions) ScaledTo(s cloud.TimeScale) JobOptions {
	clamp := func(d, most time.Duration) time.Duration { return min(max(d, minWallPoll), most) }
	if o.PollInterval <= 0 {
		o.PollInterval = clamp(s.Wall(time.Minute), 3*time.Second)
	}
	if o.RetryWait <= 0 {
		o.RetryWait = clamp(s.Wall(2*time.Minute), 5*time.Second)
	}
	return o.WithDefaults()
}

// minWallPoll is the shortest poll and retry ScaledTo sets: each poll is an activity and
// events in the job's history.
const minWallPoll = 250 * time.Millisecond

// LegacyMaxPlanFailures is the round limit of runs recorded before MaxWaitForCapacity.
func (o JobOptions) LegacyMaxPlanFailures() int {
	if o.MaxPlanFailures > 0 {
		return o.MaxPlanFailures
	}
	return 60
}
