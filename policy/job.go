package policy

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/schooner-ml/schooner/cloud/sim"
)

// Job is what the simulator trains: a number of iterations, checkpointed every
// CheckpointEvery, on at most MaxGPUs GPUs, at the pace Throughput gives.
type Job struct {
	Iterations      int64
	CheckpointEvery int64
	MaxGPUs         int
	// Restart is how long training stops whenever the held machines change: booting what
	// was bought, restoring the last checkpoint, planning (default 4 min: the simulated
	// market's 2-minute AWS boot plus the job's relaunch and restore).
	Restart time.Duration
	// Boot is the part of Restart that machines just bought spend booting: clouds bill from
	// running (EC2, GCE and the simulated market alike), so it is not billed, and a change
	// that buys nothing (survivors relaunched) stops training for Restart less Boot. 0: the
	// boot of the market's cloud (sim.DefaultParams: AWS 2 min, GCP 1 min); negative: none.
	Boot time.Duration
	// IgnoresNotice is for a trainer that does not checkpoint on a preemption notice: a
	// preemption then loses the progress since the last periodic checkpoint. schooner's jobs
	// save on the notice (EC2 gives 2 minutes, GCE 30 s), so by default a preemption loses
	// nothing.
	IgnoresNotice bool
	Throughput    IterTimer
}

// DefaultRestart is Job.Restart's default.
const DefaultRestart = 4 * time.Minute

// withDefaults fills the zero fields; the boot's default is the cloud of m.
func (j Job) withDefaults(m *Market) Job {
	if j.Restart <= 0 {
		j.Restart = DefaultRestart
	}
	switch {
	case j.Boot < 0:
		j.Boot = 0
	case j.Boot == 0 && m != nil:
		j.Boot = sim.DefaultParams(m.provider()).BootTime
	}
	j.Boot = min(j.Boot, j.Restart)
	if j.CheckpointEvery <= 0 {
		j.CheckpointEvery = j.Iterations
	}
	return j
}

// Validate refuses a job the simulator cannot run, naming the field.
func (j Job) Validate() error {
	switch {
	case j.Iterations <= 0:
		return fmt.Errorf("policy job: iterations must be positive, got %d", j.Iterations)
	case j.MaxGPUs <= 0:
		return fmt.Errorf("policy job: max_gpus must be positive, got %d", j.MaxGPUs)
	case j.CheckpointEvery < 0:
		return fmt.Errorf("policy job: checkpoint every must not be negative, got %d", j.CheckpointEvery)
	case j.Throughput == nil:
		return errors.New("policy job: no throughput model")
	}
	return nil
}

// duration is how long the job takes on placement p with nothing lost: one restart (the
// first boot) and every iteration at p's pace.
func (j Job) duration(p Placement) time.Duration {
	it := j.Throughput.IterSeconds(p)
	return j.Restart + seconds(float64(j.Iterations)*it)
}

// seconds converts to a duration, saturating at never (an impossible pace is +Inf).
func seconds(s float64) time.Duration {
	if s >= never.Seconds() || math.IsNaN(s) {
		return never
	}
	return time.Duration(s * float64(time.Second))
}

// never is the runtime of a placement nothing fits on: far beyond any deadline, yet small
// enough that adding restarts and margins to it cannot overflow.
const never = time.Duration(math.MaxInt64 / 4)
