package policy

import "time"

// Policy makes a job's spot decisions. The simulator (and the TrainingJob workflow) calls
// Decide at every step with what a controller can see, and holds what the answer asks for as
// far as the market allows. A Policy may keep state between calls; each run gets a new one.
type Policy interface {
	Decide(v *View) Request
}

// Maker names a policy and makes a fresh one for each run.
type Maker struct {
	Name string
	// About is one line on what the policy does, for tables and --help.
	About string
	New   func() Policy
}

// Request is what a policy wants to hold from now on.
type Request struct {
	// Spot is how many spot GPUs to hold, taken from Zones in order (the first zone's
	// capacity first); held spot GPUs in a zone that is not listed are released.
	Spot  int      `json:"spot"`
	Zones []string `json:"zones,omitempty"`
	// Gang asks for all Spot GPUs in one zone (SkyPilot's clusters): the first zone of Zones
	// that can hold them all; a gang that lost a member is relaunched whole.
	Gang bool `json:"gang,omitempty"`
	// OnDemand is how many on-demand GPUs to hold, in OnDemandZone (default: the zone that
	// holds the most spot GPUs, else Zones[0]). On-demand capacity is always there.
	OnDemand     int    `json:"on_demand"`
	OnDemandZone string `json:"on_demand_zone,omitempty"`
	// Why says what the decision was for; the simulator records it with every purchase of
	// on-demand capacity.
	Why string `json:"why,omitempty"`
}

// View is what a policy sees at a step.
type View struct {
	// Elapsed is the time since the job started; Deadline is when it must be done (since
	// the start; 0 means none).
	Elapsed, Deadline time.Duration
	// Done is the iterations completed (what survives a preemption is Checkpointed).
	Done, Checkpointed float64
	Job                Job
	Market             *Market
	// Capacity is how many spot GPUs each zone could launch now. A real controller learns it
	// by asking for capacity (a refused launch costs nothing); the simulator tells it.
	Capacity map[string]int
	// Spot and OnDemand are the GPUs held now, per zone, after this step's preemptions.
	Spot     Placement
	OnDemand Placement
	// Preempted are the GPUs the market took at this step, per zone.
	Preempted map[string]int
	// Restarting is true while training is stopped for a restart.
	Restarting bool
	// Baseline is the job's best on-demand plan for its deadline (the all-on-demand
	// baseline): its size, and the bill the deadline policy keeps a deferred purchase within.
	Baseline OnDemandPlan
	// SpentUSD is what the job has paid so far (0 where the controller does not know).
	SpentUSD float64
}

// Left is the iterations still to do.
func (v *View) Left() float64 { return float64(v.Job.Iterations) - v.Done }

// TimeLeft is the time to the deadline (a large value when there is none).
func (v *View) TimeLeft() time.Duration {
	if v.Deadline <= 0 {
		return never
	}
	return v.Deadline - v.Elapsed
}

// Held is every GPU held now, per zone.
func (v *View) Held() Placement { return v.Spot.Plus(v.OnDemand) }

// Pace is the seconds per iteration on p (+Inf when nothing fits).
func (v *View) Pace(p Placement) float64 { return v.Job.Throughput.IterSeconds(p) }

// Runtime is how long the iterations left take on p, with one restart.
func (v *View) Runtime(p Placement) time.Duration {
	return v.Job.Restart + seconds(v.Left()*v.Pace(p))
}
