//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/training"
	"github.com/schooner-ml/schooner/workers/trainingclient"
)

// faultStep is one fault the demo injects once the job has done a share of its iterations.
type faultStep struct {
	// At is the share of the job's iterations (0..1) after which the fault fires.
	At float64
	// Notice preempts with the provider's notice period; without, the machine just dies.
	Notice bool
	// DrainZone also takes the zone's spot capacity away, so the replan must go elsewhere.
	DrainZone bool
}

// defaultFaults is the documented schedule of `schooner demo` (see its help).
func defaultFaults() []faultStep {
	return []faultStep{{At: 0.25, Notice: true}, {At: 0.55, DrainZone: true}}
}

// faultSchedule injects faultSteps into the simulated market as the job progresses, each on
// a running instance of the job that no earlier step hit.
type faultSchedule struct {
	market   *sim.Market
	jobs     *trainingclient.Client
	jobID    string
	steps    []faultStep
	out      io.Writer
	log      zerolog.Logger
	injected int
	hit      map[string]bool
}

func (f *faultSchedule) run(ctx context.Context) {
	f.hit = map[string]bool{}
	for next := 0; next < len(f.steps); {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		st, err := f.jobs.Status(ctx, f.jobID)
		if err != nil || st.Phase != training.PhaseTraining || st.Iterations == 0 {
			continue
		}
		step := f.steps[next]
		if float64(st.Iteration) < step.At*float64(st.Iterations) {
			continue
		}
		if f.inject(ctx, step, st) {
			next++
		}
	}
}

// inject fires one step on the job's oldest running instance not hit before; false when
// there is none yet (the job is between plans).
func (f *faultSchedule) inject(ctx context.Context, step faultStep, st training.JobStatus) bool {
	live, err := f.market.List(ctx, map[string]string{cloud.JobTag: f.jobID})
	if err != nil {
		return false
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].LaunchedAt.Before(live[j].LaunchedAt) })
	for _, inst := range live {
		if inst.State != cloud.StateRunning || f.hit[inst.ID] {
			continue
		}
		if err := preemptInstance(f.market, inst.ID, step.Notice); err != nil {
			f.log.Warn().Err(err).Str("instance", inst.ID).Msg("injecting preemption")
			return false
		}
		// Drained after the preemption, so the capacity it freed is gone too.
		if step.DrainZone {
			if err := drainZone(f.market, inst.Zone); err != nil {
				f.log.Warn().Err(err).Str("zone", inst.Zone).Msg("draining zone")
			}
		}
		f.hit[inst.ID] = true
		f.injected++
		how := "without notice"
		if step.Notice {
			how = "with a notice"
		}
		drained := ""
		if step.DrainZone {
			drained = fmt.Sprintf(", zone %s drained", inst.Zone)
		}
		fmt.Fprintf(f.out, "  >> injected preemption of %s (%s %s) %s at iteration %d%s\n", inst.ID, inst.Zone, inst.InstanceType, how, st.Iteration, drained)
		return true
	}
	return false
}
